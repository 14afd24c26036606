"""The public surface is curated and pinned, and importing the core stays light."""

from __future__ import annotations

import subprocess
import sys

import spanchor_core

EXPECTED_CORE_API = {
    "AnchorError",
    "Corpus",
    "CorpusError",
    "DocSpan",
    "Document",
    "EvaluationFileError",
    "GoldError",
    "InputError",
    "RecorderError",
    "RunError",
    "Span",
    "SpanchorError",
    "__version__",
    "canonicalize",
    "load_corpus",
    "sha256_text",
}


def test_core_all_is_pinned() -> None:
    assert set(spanchor_core.__all__) == EXPECTED_CORE_API
    assert sorted(spanchor_core.__all__) == spanchor_core.__all__


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
