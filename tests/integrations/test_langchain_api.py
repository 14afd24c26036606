"""The public surface of spanchor_langchain is curated and pinned, and importing it stays light."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

pytest.importorskip("langchain_core")

EXPECTED_API = {
    "DEFAULT_SCORE_KEYS",
    "QUERY_ID_KEY",
    "RUN_FILE_ENV",
    "DocumentIdRule",
    "EnvRunFileHandler",
    "NestedPolicy",
    "RecordingRetriever",
    "RecordingWarning",
    "ScoredVectorStoreRetriever",
    "SpanchorCallbackHandler",
    "active_handler",
    "arun_gold_set",
    "documents_to_chunks",
    "documents_to_results",
    "inventory_from_documents",
    "langsmith_examples",
    "record",
    "record_retrievals",
    "recorded",
    "run_gold_set",
    "source_to_document_id",
    "span_evaluator",
    "span_recall_evaluator",
    "span_summary_evaluator",
    "vector_store_documents",
    "write_inventory",
}

MODULES = [
    "_handler_state",
    "_lines",
    "activation",
    "callbacks",
    "documents",
    "evaluators",
    "inventory",
    "manual",
    "recording",
    "retriever",
    "runner",
    "scope",
    "shared",
    "traces",
]


def test_all_is_pinned_and_every_name_exists() -> None:
    import spanchor_langchain

    assert set(spanchor_langchain.__all__) == EXPECTED_API
    assert len(spanchor_langchain.__all__) == len(EXPECTED_API)
    for name in EXPECTED_API:
        assert getattr(spanchor_langchain, name) is not None, name


@pytest.mark.parametrize("name", MODULES)
def test_every_module_says_what_it_holds_and_exports_what_it_defines(name: str) -> None:
    module = importlib.import_module(f"spanchor_langchain.{name}")
    assert module.__doc__
    assert len(module.__doc__.strip()) > 40
    for exported in module.__all__:
        assert hasattr(module, exported), f"{name}.{exported}"


def test_importing_pulls_in_no_community_package_nor_rich() -> None:
    code = (
        "import sys, spanchor_langchain; "
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('langchain_community', 'langchain', 'rich', 'llama_index', 'typer')]; "
        "print(','.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == ""


def test_py_typed_ships_with_the_package() -> None:
    import spanchor_langchain

    assert spanchor_langchain.__file__ is not None
    from pathlib import Path

    assert (Path(spanchor_langchain.__file__).parent / "py.typed").is_file()


def test_importing_without_langchain_core_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['langchain_core'] = None\n"
        "try:\n    import spanchor_langchain\n"
        "except ImportError as exc:\n    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.startswith("ImportError ")
    assert 'pip install "spanchor[langchain]"' in out
