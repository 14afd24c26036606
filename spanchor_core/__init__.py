"""spanchor: regression tests for RAG retrieval against source-document anchors.

A few verbs cover the library::

    corpus = load_corpus("docs/")                 # canonical documents + fingerprint
    gold = read_gold("gold.jsonl")                # queries -> source-span anchors
    run = read_run("runs/candidate.jsonl")        # what a retriever returned
    evaluation = evaluate(corpus, gold, run, k=[1, 3, 5, 10])
    evaluation["q1"]["recall@5"], evaluation.mean("recall@5")
    comparison = compare(baseline_evaluation, evaluation, load_policy("policy.toml"))
    comparison.exit_code                          # 0 pass, 1 regression: the CI gate

The public API is re-exported here (every type a public function returns is among it);
everything else is internal. ARCHITECTURE.md maps the packages.

Importing this package is nearly free: each public name is imported from its module the first
time it is used (PEP 562 ``__getattr__``), so ``spanchor --help`` or a script that needs
``read_gold`` does not pay for numpy, pydantic and every module of the library. The objects are
the very ones the modules define; type checkers see ordinary imports (``TYPE_CHECKING``). It
never imports a framework (LangChain, LlamaIndex), the CLI's typer and rich, matplotlib or
pytest. The first name that brings in the :class:`Evaluation` or :class:`Comparison` model
also imports the HTML renderers, which register their notebook display
(:mod:`spanchor_core._display`).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from spanchor_core._version import __version__

if TYPE_CHECKING:
    from spanchor_core.authoring import (
        AnchorCheck,
        AnchorFate,
        BatchReview,
        Candidate,
        CandidateStatus,
        CorpusCheck,
        Occurrence,
        PromotionReport,
        ReplacedAnchor,
        ReviewDecision,
        add_anchor,
        check_corpus,
        fix_gold,
        locate_text,
        promote_candidates,
        propose_candidates,
        read_candidates,
        read_decisions,
        replace_anchor,
        review_candidate,
        review_candidates,
        select_candidates,
        write_candidates,
    )
    from spanchor_core.compare import (
        AggregateChange,
        ChangeStatus,
        Comparison,
        Finding,
        MetricChange,
        PairedStatistics,
        QueryChange,
        Severity,
        compare,
        paired_statistics,
        read_comparison,
        write_comparison,
    )
    from spanchor_core.compare.noise import (
        MetricNoise,
        NoiseReport,
        RepeatedBaseline,
        measure_noise,
        repeated_baseline,
    )
    from spanchor_core.corpus import (
        DEFAULT_GLOBS,
        Corpus,
        Document,
        LazyCorpus,
        canonicalize,
        document_id_for,
        load_corpus,
        open_corpus_file,
        sha256_text,
    )
    from spanchor_core.diagnosis import (
        INVENTORY_TAG,
        ChunkInventory,
        ChunkReport,
        RegressionDiagnosis,
        diagnose_regressions,
        load_inventory,
        with_diagnosis,
        write_chunks,
    )

    # from its own module: mypy takes the submodule of the same name for a second definition
    from spanchor_core.diagnosis.chunk_report import chunk_report
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
        EvaluationSettings,
        LocatedResult,
        MappingStats,
        MetricSummary,
        ProgressCallback,
        QueryEvaluation,
        QueryStatus,
        check_gold,
        check_run_provenance,
        evaluate,
        evaluate_file,
        evaluate_stream,
        read_evaluation,
        write_evaluation,
    )
    from spanchor_core.exit_codes import ExitCode, combine_exit_codes
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
    from spanchor_core.importers import (
        SquadImport,
        SquadProblem,
        import_legacy_gold,
        import_squad,
        write_squad_documents,
    )
    from spanchor_core.locate import LocateRequest, Location, Locator, LocatorSettings, MatchStatus
    from spanchor_core.metrics import (
        DEFAULT_K,
        DEFAULT_METRICS,
        DEFAULT_MIN_OVERLAP,
        Metric,
        MetricFunction,
        RankedCoverage,
        check_k,
        check_min_overlap,
        compute_metrics,
        measure_coverage,
        metric_names,
        metric_parts,
        split_metric_name,
    )
    from spanchor_core.offsets import OffsetMap, OffsetUnit, canonical_span
    from spanchor_core.parallel import ProcessLocator, WorkerError
    from spanchor_core.pipeline import (
        EvaluationOutcome,
        EvaluationSource,
        GateOutcome,
        GoldHashPolicy,
        NoiseOutcome,
        file_kind,
        load_pair,
        load_side,
        run_evaluation,
        run_gate,
        run_noise,
        score_run,
    )
    from spanchor_core.policy import (
        AggregateGate,
        BootstrapSettings,
        Direction,
        Policy,
        default_policy,
        load_policy,
        metric_direction,
        policy_from_mapping,
        policy_from_pyproject,
        with_noise,
        write_policy,
    )
    from spanchor_core.render import (
        comparison_html,
        comparison_junit,
        comparison_markdown,
        escape_control,
        evaluation_html,
        evaluation_markdown,
        lost_evidence,
        write_report,
    )
    from spanchor_core.runs import (
        RetrievalRecord,
        RetrievedResult,
        RetrieverInfo,
        Run,
        RunHeader,
        RunRecorder,
        RunStream,
        iter_run,
        read_run,
        resolve_query_ids,
        result_from_mapping,
        write_run,
    )
    from spanchor_core.settings import (
        GateConfig,
        SpanchorSettings,
        gate_config_from_pyproject,
        read_settings,
    )
    from spanchor_core.spans import DocSpan, Span

# Where each public name lives: resolved on first use by __getattr__ below, then cached.
_EXPORTS: dict[str, str] = {
    "authoring": (
        "AnchorCheck AnchorFate BatchReview Candidate CandidateStatus CorpusCheck Occurrence "
        "PromotionReport ReplacedAnchor ReviewDecision add_anchor check_corpus fix_gold "
        "locate_text promote_candidates propose_candidates read_candidates read_decisions "
        "replace_anchor review_candidate review_candidates select_candidates write_candidates"
    ),
    "compare": (
        "AggregateChange ChangeStatus Comparison Finding MetricChange PairedStatistics "
        "QueryChange Severity compare paired_statistics read_comparison write_comparison"
    ),
    "compare.noise": "MetricNoise NoiseReport RepeatedBaseline measure_noise repeated_baseline",
    "corpus": (
        "DEFAULT_GLOBS Corpus Document LazyCorpus canonicalize document_id_for load_corpus "
        "open_corpus_file sha256_text"
    ),
    "diagnosis": (
        "INVENTORY_TAG ChunkInventory ChunkReport RegressionDiagnosis chunk_report "
        "diagnose_regressions load_inventory with_diagnosis write_chunks"
    ),
    "errors": (
        "AnchorError CorpusError EvaluationFileError GoldError InputError RecorderError "
        "RunError SpanchorError"
    ),
    "evaluate": (
        "Evaluation EvaluationSettings LocatedResult MappingStats MetricSummary "
        "ProgressCallback QueryEvaluation QueryStatus check_gold check_run_provenance "
        "evaluate evaluate_file evaluate_stream read_evaluation write_evaluation"
    ),
    "exit_codes": "ExitCode combine_exit_codes",
    "gold": (
        "Anchor GoldProblem GoldQuery GoldSet anchor_from_text read_gold validate_gold write_gold"
    ),
    "importers": "SquadImport SquadProblem import_legacy_gold import_squad write_squad_documents",
    "locate": "LocateRequest Location Locator LocatorSettings MatchStatus",
    "metrics": (
        "DEFAULT_K DEFAULT_METRICS DEFAULT_MIN_OVERLAP Metric MetricFunction RankedCoverage "
        "check_k check_min_overlap compute_metrics measure_coverage metric_names metric_parts "
        "split_metric_name"
    ),
    "offsets": "OffsetMap OffsetUnit canonical_span",
    "parallel": "ProcessLocator WorkerError",
    "pipeline": (
        "EvaluationOutcome EvaluationSource GateOutcome GoldHashPolicy NoiseOutcome file_kind "
        "load_pair load_side run_evaluation run_gate run_noise score_run"
    ),
    "policy": (
        "AggregateGate BootstrapSettings Direction Policy default_policy load_policy "
        "metric_direction policy_from_mapping policy_from_pyproject with_noise write_policy"
    ),
    "render": (
        "comparison_html comparison_junit comparison_markdown escape_control evaluation_html "
        "evaluation_markdown lost_evidence write_report"
    ),
    "runs": (
        "RetrievalRecord RetrievedResult RetrieverInfo Run RunHeader RunRecorder RunStream "
        "iter_run read_run resolve_query_ids result_from_mapping write_run"
    ),
    "settings": "GateConfig SpanchorSettings gate_config_from_pyproject read_settings",
    "spans": "DocSpan Span",
}

_MODULE_OF: dict[str, str] = {
    name: f"spanchor_core.{module}" for module, names in _EXPORTS.items() for name in names.split()
}
# Public functions named like the subpackage that defines them: importing the subpackage must
# not replace the function on this package (``spanchor_core.evaluate(...)`` stays callable).
_SHADOWED = frozenset(name for name in _MODULE_OF if name in _EXPORTS)
# The models that have a notebook display, which the HTML renderers register.
_DISPLAYED = ("spanchor_core.evaluate.model", "spanchor_core.compare.model")


def _resolve(name: str) -> Any:
    """The public name ``name`` from its module (kept here after), or a subpackage."""
    module = _MODULE_OF.get(name)
    if module is None and name.startswith("__"):  # probed by tools (__wrapped__, ...): no such
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if module is None:  # a subpackage used as an attribute, as when this package imported all
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as missing:
            if missing.name != f"{__name__}.{name}":
                raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    if "spanchor_core.render.html" not in sys.modules and any(
        model in sys.modules for model in _DISPLAYED
    ):
        importlib.import_module("spanchor_core.render.html")
    return value


class _Package(types.ModuleType):
    """This package's module type: keeps the functions in ``_SHADOWED`` over their subpackage."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SHADOWED and isinstance(value, types.ModuleType):
            return  # the import system binds the subpackage here; sys.modules still has it
        super().__setattr__(name, value)


if not TYPE_CHECKING:  # to a type checker every name is an ordinary import (above)

    def __getattr__(name: str) -> Any:
        return _resolve(name)

    def __dir__() -> list[str]:
        return sorted(set(globals()) | set(__all__))

    sys.modules[__name__].__class__ = _Package


__all__ = [
    "DEFAULT_GLOBS",
    "DEFAULT_K",
    "DEFAULT_METRICS",
    "DEFAULT_MIN_OVERLAP",
    "INVENTORY_TAG",
    "AggregateChange",
    "AggregateGate",
    "Anchor",
    "AnchorCheck",
    "AnchorError",
    "AnchorFate",
    "BatchReview",
    "BootstrapSettings",
    "Candidate",
    "CandidateStatus",
    "ChangeStatus",
    "ChunkInventory",
    "ChunkReport",
    "Comparison",
    "Corpus",
    "CorpusCheck",
    "CorpusError",
    "Direction",
    "DocSpan",
    "Document",
    "Evaluation",
    "EvaluationFileError",
    "EvaluationOutcome",
    "EvaluationSettings",
    "EvaluationSource",
    "ExitCode",
    "Finding",
    "GateConfig",
    "GateOutcome",
    "GoldError",
    "GoldHashPolicy",
    "GoldProblem",
    "GoldQuery",
    "GoldSet",
    "InputError",
    "LazyCorpus",
    "LocateRequest",
    "LocatedResult",
    "Location",
    "Locator",
    "LocatorSettings",
    "MappingStats",
    "MatchStatus",
    "Metric",
    "MetricChange",
    "MetricFunction",
    "MetricNoise",
    "MetricSummary",
    "NoiseOutcome",
    "NoiseReport",
    "Occurrence",
    "OffsetMap",
    "OffsetUnit",
    "PairedStatistics",
    "Policy",
    "ProcessLocator",
    "ProgressCallback",
    "PromotionReport",
    "QueryChange",
    "QueryEvaluation",
    "QueryStatus",
    "RankedCoverage",
    "RecorderError",
    "RegressionDiagnosis",
    "RepeatedBaseline",
    "ReplacedAnchor",
    "RetrievalRecord",
    "RetrievedResult",
    "RetrieverInfo",
    "ReviewDecision",
    "Run",
    "RunError",
    "RunHeader",
    "RunRecorder",
    "RunStream",
    "Severity",
    "Span",
    "SpanchorError",
    "SpanchorSettings",
    "SquadImport",
    "SquadProblem",
    "WorkerError",
    "__version__",
    "add_anchor",
    "anchor_from_text",
    "canonical_span",
    "canonicalize",
    "check_corpus",
    "check_gold",
    "check_k",
    "check_min_overlap",
    "check_run_provenance",
    "chunk_report",
    "combine_exit_codes",
    "compare",
    "comparison_html",
    "comparison_junit",
    "comparison_markdown",
    "compute_metrics",
    "default_policy",
    "diagnose_regressions",
    "document_id_for",
    "escape_control",
    "evaluate",
    "evaluate_file",
    "evaluate_stream",
    "evaluation_html",
    "evaluation_markdown",
    "file_kind",
    "fix_gold",
    "gate_config_from_pyproject",
    "import_legacy_gold",
    "import_squad",
    "iter_run",
    "load_corpus",
    "load_inventory",
    "load_pair",
    "load_policy",
    "load_side",
    "locate_text",
    "lost_evidence",
    "measure_coverage",
    "measure_noise",
    "metric_direction",
    "metric_names",
    "metric_parts",
    "open_corpus_file",
    "paired_statistics",
    "policy_from_mapping",
    "policy_from_pyproject",
    "promote_candidates",
    "propose_candidates",
    "read_candidates",
    "read_comparison",
    "read_decisions",
    "read_evaluation",
    "read_gold",
    "read_run",
    "read_settings",
    "repeated_baseline",
    "replace_anchor",
    "resolve_query_ids",
    "result_from_mapping",
    "review_candidate",
    "review_candidates",
    "run_evaluation",
    "run_gate",
    "run_noise",
    "score_run",
    "select_candidates",
    "sha256_text",
    "split_metric_name",
    "validate_gold",
    "with_diagnosis",
    "with_noise",
    "write_candidates",
    "write_chunks",
    "write_comparison",
    "write_evaluation",
    "write_gold",
    "write_policy",
    "write_report",
    "write_run",
    "write_squad_documents",
]
