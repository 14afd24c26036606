"""spanchor: regression tests for RAG retrieval against source-document anchors.

A few verbs cover the library::

    corpus = load_corpus("docs/")                 # canonical documents + fingerprint
    gold = read_gold("gold.jsonl")                # queries -> source-span anchors
    run = read_run("runs/candidate.jsonl")        # what a retriever returned
    evaluation = evaluate(corpus, gold, run, k=[1, 3, 5, 10])
    evaluation["q1"]["recall@5"], evaluation.mean("recall@5")
    comparison = compare(baseline_evaluation, evaluation, load_policy("policy.toml"))
    comparison.exit_code                          # 0 pass, 1 regression: the CI gate

The public API is re-exported here; everything else is internal. Importing this package
never imports a framework (LangChain, LlamaIndex) nor the CLI's typer and rich.
"""

from spanchor_core._version import __version__
from spanchor_core.compare import (
    ChangeStatus,
    Comparison,
    compare,
    read_comparison,
    write_comparison,
)
from spanchor_core.corpus import Corpus, Document, canonicalize, load_corpus, sha256_text
from spanchor_core.errors import (
    AnchorError,
    CorpusError,
    EvaluationFileError,
    GoldError,
    InputError,
    RecorderError,
    RunError,
    SpanchorError,
)
from spanchor_core.evaluate import (
    Evaluation,
    MappingStats,
    MetricSummary,
    QueryEvaluation,
    evaluate,
    evaluate_file,
    read_evaluation,
    write_evaluation,
)
from spanchor_core.gold import (
    Anchor,
    GoldProblem,
    GoldQuery,
    GoldSet,
    anchor_from_text,
    read_gold,
    validate_gold,
    write_gold,
)
from spanchor_core.locate import LocateRequest, Location, Locator, MatchStatus
from spanchor_core.metrics import DEFAULT_K, DEFAULT_MIN_OVERLAP, metric_names
from spanchor_core.offsets import OffsetMap, OffsetUnit, canonical_span
from spanchor_core.policy import Policy, default_policy, load_policy, policy_from_pyproject
from spanchor_core.runs import (
    RetrievalRecord,
    RetrievedResult,
    Run,
    RunHeader,
    RunRecorder,
    RunStream,
    iter_run,
    read_run,
    resolve_query_ids,
    write_run,
)
from spanchor_core.spans import DocSpan, Span

__all__ = [
    "DEFAULT_K",
    "DEFAULT_MIN_OVERLAP",
    "Anchor",
    "AnchorError",
    "ChangeStatus",
    "Comparison",
    "Corpus",
    "CorpusError",
    "DocSpan",
    "Document",
    "Evaluation",
    "EvaluationFileError",
    "GoldError",
    "GoldProblem",
    "GoldQuery",
    "GoldSet",
    "InputError",
    "LocateRequest",
    "Location",
    "Locator",
    "MappingStats",
    "MatchStatus",
    "MetricSummary",
    "OffsetMap",
    "OffsetUnit",
    "Policy",
    "QueryEvaluation",
    "RecorderError",
    "RetrievalRecord",
    "RetrievedResult",
    "Run",
    "RunError",
    "RunHeader",
    "RunRecorder",
    "RunStream",
    "Span",
    "SpanchorError",
    "__version__",
    "anchor_from_text",
    "canonical_span",
    "canonicalize",
    "compare",
    "default_policy",
    "evaluate",
    "evaluate_file",
    "iter_run",
    "load_corpus",
    "load_policy",
    "metric_names",
    "policy_from_pyproject",
    "read_comparison",
    "read_evaluation",
    "read_gold",
    "read_run",
    "resolve_query_ids",
    "sha256_text",
    "validate_gold",
    "write_comparison",
    "write_evaluation",
    "write_gold",
    "write_run",
]
