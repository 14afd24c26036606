"""The LangChain and LlamaIndex examples run, gate as their READMEs say, and write sound runs.

Each example's ``run_all.py`` runs once per module, in-process (a subprocess would pay the
framework imports again), into a temporary directory. The tests then check its exit code, the
two verdicts again through the Python API, the run files against the quickstart corpus and gold
set, the figures the READMEs quote, and the apps' own entry points. Skipped when the framework
is not installed.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from spanchor_core import (
    Evaluation,
    Locator,
    compare,
    evaluate,
    load_corpus,
    load_policy,
    read_gold,
    read_run,
)

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "examples" / "quickstart"
LANGCHAIN_APP = ROOT / "examples" / "langchain_app"
LLAMAINDEX_EVAL = ROOT / "examples" / "llamaindex_eval"


@dataclass(frozen=True)
class Example:
    """One example's ``run_all`` after it ran: its modules, exit code, output and run files."""

    modules: dict[str, ModuleType]
    exit_code: int
    output: str
    runs: Path


@contextlib.contextmanager
def _example_modules(folder: Path, siblings: tuple[str, ...]) -> Iterator[dict[str, ModuleType]]:
    """Import an example's scripts as Python does when ``run_all.py`` is run.

    The siblings are imported by their bare names (``run_all`` imports them so), ``run_all``
    itself under a name of its own (both examples have one). All are removed from
    ``sys.modules`` afterwards: the examples are scripts, not packages.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(folder))
        before = set(sys.modules)
        try:
            modules = {name: importlib.import_module(name) for name in siblings}
            unique = f"{folder.name}_run_all"
            spec = importlib.util.spec_from_file_location(unique, folder / "run_all.py")
            assert spec is not None
            assert spec.loader is not None
            modules["run_all"] = sys.modules[unique] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(modules["run_all"])
            yield modules
        finally:
            for name in set(sys.modules) - before:
                if name in {*siblings, unique}:
                    del sys.modules[name]


def _run_example(folder: Path, names: tuple[str, ...], out: Path) -> Iterator[Example]:
    with _example_modules(folder, names) as modules:
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            code = modules["run_all"].main([str(out)])
        yield Example(modules, code, buffer.getvalue(), out / "runs")


def _evaluate(path: Path) -> Evaluation:
    return evaluate(
        load_corpus(QUICKSTART / "docs"), read_gold(QUICKSTART / "gold.jsonl"), read_run(path)
    )


def _check_run(path: Path, expected_records: int = 57) -> Evaluation:
    """The run file reads, was recorded against the quickstart, and maps completely."""
    corpus = load_corpus(QUICKSTART / "docs")
    gold = read_gold(QUICKSTART / "gold.jsonl")
    run = read_run(path)
    assert run.warnings == []
    assert run.header.corpus_fingerprint == corpus.fingerprint
    assert run.header.gold_sha256 == gold.sha256
    assert len(run.records) == expected_records
    assert {record.query_id for record in run.records} == set(gold)
    assert all(record.error is None and len(record.results) == 5 for record in run.records)
    evaluation = evaluate(corpus, gold, run, k=(1, 3, 5))
    assert evaluation.mapping.unmapped_rate == 0.0
    return evaluation


def _rejected_hint_documents(path: Path) -> set[str | None]:
    """Documents whose results came with offsets that did not match the canonical text."""
    locator = Locator(load_corpus(QUICKSTART / "docs"))
    return {
        location.document_id
        for record in read_run(path).records
        for result in record.results
        if (
            location := locator.locate(
                result.text, document_id=result.document_id, start=result.start, end=result.end
            )
        ).hint_rejected
    }


def _gate_exit_code(config: Path, baseline: Path, candidate: Path) -> int:
    return compare(_evaluate(baseline), _evaluate(candidate), load_policy(config)).exit_code


# -- LangChain ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def langchain_example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Example]:
    pytest.importorskip("langchain_core")
    pytest.importorskip("langchain_text_splitters")
    out = tmp_path_factory.mktemp("langchain_app")
    yield from _run_example(LANGCHAIN_APP, ("app", "record"), out)


def test_langchain_run_all_gates_as_expected(langchain_example: Example) -> None:
    assert langchain_example.exit_code == 0
    output = langchain_example.output
    assert "FAIL: 57 queries compared — 18 regressed, 0 improved, 39 unchanged" in output
    assert "PASS: 57 queries compared — 0 regressed, 2 improved, 55 unchanged" in output
    assert output.count("as expected") == 2
    runs, config = langchain_example.runs, LANGCHAIN_APP / "spanchor.toml"
    assert _gate_exit_code(config, runs / "baseline.jsonl", runs / "candidate.jsonl") == 1
    assert _gate_exit_code(config, runs / "baseline.jsonl", runs / "candidate-800.jsonl") == 0


def test_langchain_runs_map_onto_the_quickstart(langchain_example: Example) -> None:
    means: dict[str, float] = {}
    for name in ("baseline", "candidate", "candidate-800"):
        path = langchain_example.runs / f"{name}.jsonl"
        evaluation = _check_run(path)
        means[name] = round(evaluation.mean("recall@5"), 3)
        # start_index hints are checked: only the NFD-stored French guide has offsets that
        # count combining characters, and its chunks are re-anchored by text.
        assert evaluation.mapping.counts["verified"] > 0
        assert _rejected_hint_documents(path) == {"guide-rapide-fr"}
        parameters = read_run(path).header.retriever.parameters
        assert parameters["chunk_size"] == langchain_example.modules["run_all"].CHUNKINGS[name]
    assert means == {"baseline": 0.965, "candidate": 0.748, "candidate-800": 1.0}


def test_langchain_run_all_shows_answers_the_candidate_lost(langchain_example: Example) -> None:
    output = langchain_example.output
    assert "q14 Who pays for return shipping?" in output
    assert "500: Return shipping is free inside the European Union." in output
    assert "120: Return shipping is free\n" in output


def test_langchain_app_answers_questions(
    langchain_example: Example, capsys: pytest.CaptureFixture[str]
) -> None:
    app = langchain_example.modules["app"]
    assert app.main(["How long is the warranty?", "Can I wash the burrs in water?"]) == 0
    printed = capsys.readouterr().out
    assert "A: Every Orbit appliance carries a two-year warranty from the date of purchase." in (
        printed
    )
    assert "Never wash the burrs in water: they rust." in printed
    chain = app.build_chain(app.build_retriever(chunk_size=500))
    assert chain.invoke("What is the capital of Peru?") == (
        "Sorry, I could not find that in the documentation."
    )


def test_langchain_record_cli_is_deterministic(
    langchain_example: Example, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = langchain_example.modules["record"]
    out = tmp_path / "baseline.jsonl"
    assert record.main(["--chunk-size", "500", "--out", str(out)]) == 0
    assert f"recorded 57 retrievals into {out}" in capsys.readouterr().out
    fresh = read_run(out).records
    earlier = read_run(langchain_example.runs / "baseline.jsonl").records
    assert [(r.query_id, r.results) for r in fresh] == [(r.query_id, r.results) for r in earlier]
    # A re-run into the same file starts it afresh: the handler's default is to append.
    first_bytes = out.read_bytes()
    assert record.main(["--chunk-size", "500", "--out", str(out)]) == 0
    assert len(read_run(out).records) == 57
    assert out.read_bytes().count(b"\n") == first_bytes.count(b"\n") == 58


# -- LlamaIndex -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def llamaindex_example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Example]:
    pytest.importorskip("llama_index.core")
    pytest.importorskip("llama_index.retrievers.bm25")
    out = tmp_path_factory.mktemp("llamaindex_eval")
    yield from _run_example(LLAMAINDEX_EVAL, ("eval_suite",), out)


def test_llamaindex_run_all_gates_as_expected(llamaindex_example: Example) -> None:
    assert llamaindex_example.exit_code == 0
    output = llamaindex_example.output
    assert "FAIL: 57 queries compared — 5 regressed, 0 improved, 52 unchanged" in output
    assert "PASS: 57 queries compared — 0 regressed, 0 improved, 57 unchanged" in output
    assert "error: 5 queries regressed (hit@5: 4, recall@5: 5): q01, q02, q07, q23, q21" in output
    runs, config = llamaindex_example.runs, LLAMAINDEX_EVAL / "spanchor.toml"
    assert _gate_exit_code(config, runs / "baseline.jsonl", runs / "candidate.jsonl") == 1
    assert _gate_exit_code(config, runs / "baseline.jsonl", runs / "candidate-overlap.jsonl") == 0


def test_llamaindex_table_puts_span_metrics_next_to_hit_rate_and_mrr(
    llamaindex_example: Example,
) -> None:
    table = llamaindex_example.output.splitlines()[:5]
    assert table[0].split() == [
        "chunking",
        "nodes",
        "hit_rate",
        "mrr",
        "span_hit@5",
        "span_recall@5",
        "span_mrr",
    ]
    assert table[2].split()[4:] == ["20", "0.982", "0.870", "0.982", "0.982", "0.870"]
    assert table[3].split()[4:] == ["41", "0.912", "0.831", "0.912", "0.904", "0.831"]
    assert table[4].split()[4:] == ["26", "0.982", "0.880", "0.982", "0.982", "0.880"]


def test_llamaindex_runs_map_onto_the_quickstart(llamaindex_example: Example) -> None:
    means: dict[str, float] = {}
    for name in ("baseline", "candidate", "candidate-overlap"):
        path = llamaindex_example.runs / f"{name}.jsonl"
        evaluation = _check_run(path)
        means[name] = round(evaluation.mean("recall@5"), 3)
        # LlamaIndex's start_char_idx are exact for the loaded text, which keeps the toaster
        # manual's CRLF line ends and the French guide's NFD accents; the recorder translates
        # those raw offsets to canonical ones, so no hint is rejected any more.
        assert _rejected_hint_documents(path) == set()
        assert read_run(path).header.tags["chunk_size"] in {64, 128}
    assert means == {"baseline": 0.982, "candidate": 0.904, "candidate-overlap": 0.982}


def test_llamaindex_eval_suite_cli_and_clean_registry(
    llamaindex_example: Example, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from llama_index.core.evaluation.retrieval.metrics import METRIC_REGISTRY

    suite = llamaindex_example.modules["eval_suite"]
    out = tmp_path / "runs" / "baseline.jsonl"
    assert suite.main(["--chunk-size", "128", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[2].split()[4:] == [
        "20",
        "0.982",
        "0.870",
        "0.982",
        "0.982",
        "0.870",
    ]
    assert f"recorded 57 retrievals into {out}" in printed
    assert not [name for name in METRIC_REGISTRY if name.startswith("span_")]
    # Stable document and node ids: the same retrievals as run_all's baseline, in any order.
    fresh = {r.query_id: r.results for r in read_run(out).records}
    earlier = {
        r.query_id: r.results for r in read_run(llamaindex_example.runs / "baseline.jsonl").records
    }
    assert fresh == earlier
    top = fresh["q09"][0]  # "How long is the warranty?"
    assert top.metadata["node_id"].startswith(f"{top.metadata['ref_doc_id']}#")
    assert top.metadata["ref_doc_id"] == top.document_id
