"""The public surface is curated and pinned, and importing the core stays light."""

from __future__ import annotations

import subprocess
import sys

import spanchor_core

EXPECTED_CORE_API = {
    "Anchor",
    "AnchorError",
    "ChangeStatus",
    "Comparison",
    "Corpus",
    "CorpusError",
    "DEFAULT_K",
    "DEFAULT_MIN_OVERLAP",
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
}


def test_core_all_is_pinned() -> None:
    assert set(spanchor_core.__all__) == EXPECTED_CORE_API
    assert len(spanchor_core.__all__) == len(EXPECTED_CORE_API), "duplicate names in __all__"


def test_every_exported_name_exists() -> None:
    for name in spanchor_core.__all__:
        assert hasattr(spanchor_core, name), name


def test_import_core_pulls_in_no_framework_and_no_cli_libraries() -> None:
    forbidden = ["langchain_core", "llama_index", "typer", "rich", "click"]
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
