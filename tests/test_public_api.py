"""The public surface is curated and pinned, and importing the core stays light."""

from __future__ import annotations

import collections.abc
import inspect
import subprocess
import sys
import types
import typing
from typing import Any

import spanchor_core

EXPECTED_CORE_API = {
    "replace_anchor",
    "ReplacedAnchor",
    "ProcessLocator",
    "WorkerError",
    "ReviewDecision",
    "select_candidates",
    "MetricNoise",
    "NoiseReport",
    "RepeatedBaseline",
    "measure_noise",
    "repeated_baseline",
    "INVENTORY_TAG",
    "ChunkInventory",
    "ChunkReport",
    "RegressionDiagnosis",
    "chunk_report",
    "diagnose_regressions",
    "load_inventory",
    "with_diagnosis",
    "write_chunks",
    "NoiseOutcome",
    "run_noise",
    "with_noise",
    "write_policy",
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
    "Comparison",
    "Corpus",
    "CorpusCheck",
    "CorpusError",
    "DEFAULT_GLOBS",
    "DEFAULT_K",
    "DEFAULT_METRICS",
    "DEFAULT_MIN_OVERLAP",
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
    "MetricSummary",
    "Occurrence",
    "OffsetMap",
    "OffsetUnit",
    "PairedStatistics",
    "Policy",
    "ProgressCallback",
    "PromotionReport",
    "QueryChange",
    "QueryEvaluation",
    "QueryStatus",
    "RankedCoverage",
    "RecorderError",
    "RetrievalRecord",
    "RetrievedResult",
    "RetrieverInfo",
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
    "combine_exit_codes",
    "compare",
    "comparison_html",
    "comparison_junit",
    "comparison_markdown",
    "compute_metrics",
    "default_policy",
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
    "open_corpus_file",
    "LazyCorpus",
    "load_pair",
    "load_policy",
    "load_side",
    "locate_text",
    "lost_evidence",
    "measure_coverage",
    "metric_direction",
    "metric_names",
    "metric_parts",
    "paired_statistics",
    "policy_from_mapping",
    "policy_from_pyproject",
    "promote_candidates",
    "propose_candidates",
    "read_candidates",
    "read_decisions",
    "read_comparison",
    "read_evaluation",
    "read_gold",
    "read_run",
    "read_settings",
    "resolve_query_ids",
    "result_from_mapping",
    "review_candidate",
    "review_candidates",
    "run_evaluation",
    "run_gate",
    "score_run",
    "sha256_text",
    "split_metric_name",
    "validate_gold",
    "write_candidates",
    "write_comparison",
    "write_evaluation",
    "write_gold",
    "write_report",
    "write_run",
    "write_squad_documents",
}


def test_core_all_is_pinned() -> None:
    assert set(spanchor_core.__all__) == EXPECTED_CORE_API
    assert len(spanchor_core.__all__) == len(EXPECTED_CORE_API), "duplicate names in __all__"


def test_every_exported_name_exists() -> None:
    for name in spanchor_core.__all__:
        assert hasattr(spanchor_core, name), name


def test_import_core_pulls_in_no_framework_and_no_cli_libraries() -> None:
    forbidden = [
        "langchain_core",
        "llama_index",
        "typer",
        "rich",
        "click",
        "pytest",
        "_pytest",
        "matplotlib",
    ]
    code = (
        "import sys, spanchor_core\n"
        f"bad = [m for m in {forbidden!r} if any(k == m or k.startswith(m + '.') "
        "for k in sys.modules)]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout.strip()
    assert out == ""


# Where a return type may come from without being re-exported: the language and its library.
_STANDARD_MODULES = {"builtins", "pathlib", "collections", "collections.abc", "typing", "types"}


def _classes_in(annotation: Any) -> typing.Iterator[type]:
    """The classes an annotation names, through Optional/unions and container arguments
    (the language's own classes left out)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal or annotation is None or annotation is type(None):
        return
    if origin is not None:
        if isinstance(origin, type) and origin.__module__ not in _STANDARD_MODULES:
            yield origin
        for argument in typing.get_args(annotation):
            if argument is not Ellipsis and not isinstance(argument, list):
                yield from _classes_in(argument)
            elif isinstance(argument, list):  # Callable[[...], R]
                for inner in argument:
                    yield from _classes_in(inner)
        return
    if isinstance(annotation, type) and annotation.__module__ not in _STANDARD_MODULES:
        yield annotation


def test_every_type_a_public_function_returns_is_exported() -> None:
    missing = []
    for name in spanchor_core.__all__:
        function = getattr(spanchor_core, name)
        if not inspect.isfunction(function):
            continue
        returned = typing.get_type_hints(function).get("return")
        for cls in _classes_in(returned):
            if getattr(spanchor_core, cls.__name__, None) is not cls:
                missing.append(f"{name} returns {cls.__module__}.{cls.__qualname__}")
    assert missing == []


def test_the_return_type_walk_sees_through_containers() -> None:
    found = set(_classes_in(dict[str, list[spanchor_core.Anchor]] | None))
    assert found == {spanchor_core.Anchor}
    iterator = collections.abc.Iterator[tuple[spanchor_core.DocSpan, ...]]
    assert set(_classes_in(iterator)) == {spanchor_core.DocSpan}
    assert set(_classes_in(types.NoneType)) == set()
