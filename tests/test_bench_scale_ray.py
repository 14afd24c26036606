"""The generator of bench/bench_scale_ray.py writes what it claims: a BEIR corpus whose
documents, gold anchors and run chunks agree with each other, read back by spanchor itself.

The benchmark's numbers are only worth something if its chunks are where it says they are
(the corpus is streamed to disk and the chunks read back by byte offset, so an off-by-one in
the title prefix or the JSON head would silently turn every "exact" chunk into a search miss).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from spanchor_core.corpus import load_corpus_file, sha256_text
from spanchor_core.gold import read_gold
from spanchor_core.pipeline import run_evaluation

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_scale_ray.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_scale_ray", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_scale_ray"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generated(bench: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("scale")
    bench.generate(work, 0.6, 40, seed=3)
    return work


def _run_results(work: Path) -> list[dict[str, object]]:
    lines = (work / "run.jsonl").read_text().splitlines()
    return [r for line in lines[1:] for r in json.loads(line)["results"]]


def test_documents_have_the_planned_size_and_edges(bench: ModuleType, generated: Path) -> None:
    corpus = load_corpus_file(generated / "corpus.jsonl")
    assert len(corpus) == 30  # 0.6 MB / 20,000 characters
    for n, doc_id in enumerate(sorted(corpus)):
        text = corpus.text(doc_id)
        prefix = f"Document {n}\n\n"
        assert doc_id == f"d{n:07d}"
        assert text.startswith(prefix)
        body = text[len(prefix) :]
        assert len(body) == bench.DOC_CHARS
        assert body[0] != " "
        assert body[-1] != " "
        assert set(body) <= set("abcdefghijklmnopqrstuvwxyz ")


def test_gold_anchors_hash_to_the_corpus_text(generated: Path) -> None:
    corpus = load_corpus_file(generated / "corpus.jsonl")
    gold = read_gold(generated / "gold.jsonl")
    anchors = [a for q in gold.values() for a in q.anchors]
    assert len(anchors) >= 80
    for anchor in anchors:
        piece = corpus.text(anchor.document_id)[anchor.start : anchor.end]
        assert sha256_text(piece) == anchor.hash


def test_chunks_with_offsets_and_verbatim_chunks_are_in_their_documents(
    generated: Path,
) -> None:
    corpus = load_corpus_file(generated / "corpus.jsonl")
    results = _run_results(generated)
    assert len(results) == 400
    with_offsets = [r for r in results if r.get("start") is not None]
    assert with_offsets
    for r in with_offsets:
        text = corpus.text(str(r["document_id"]))
        assert text[int(str(r["start"])) : int(str(r["end"]))] == r["text"]
    absent = [r for r in results if str(r["text"]).startswith("nothing like this")]
    assert absent
    assert all(not any(str(r["text"]) in corpus.text(d) for d in corpus) for r in absent)


def test_the_run_maps_as_its_mix_says(bench: ModuleType, generated: Path) -> None:
    info = json.loads((generated / "generated.json").read_text())
    kinds = info["kinds"]
    assert sum(kinds.values()) == 400
    outcome = run_evaluation(
        load_corpus_file(generated / "corpus.jsonl"),
        generated / "gold.jsonl",
        generated / "run.jsonl",
        max_unmapped_rate=1.0,
    )
    counts = outcome.evaluation.mapping.counts
    # verbatim chunks (text only, or with their document id) are found exactly or verified
    assert counts["exact"] + counts["verified"] >= kinds["exact"] + kinds["offsets"]
    assert counts["unmapped"] >= kinds["absent"]
    assert counts["normalised"] + counts["fuzzy"] > 0


def test_compare_counts_the_results_that_differ(bench: ModuleType, tmp_path: Path) -> None:
    result = {"rank": 1, "status": "exact", "document_id": "d1", "start": 3, "end": 9}
    first = {"created_at": "a", "queries": [{"query_id": "q1", "metrics": {}, "results": [result]}]}
    moved = {**result, "start": 4}
    second = {"created_at": "b", "queries": [{"query_id": "q1", "metrics": {}, "results": [moved]}]}
    (tmp_path / "one.json").write_text(json.dumps(first))
    (tmp_path / "same.json").write_text(json.dumps({**first, "created_at": "c"}))
    (tmp_path / "two.json").write_text(json.dumps(second))
    assert bench.compare(tmp_path, "same.json", "one.json") == {"identical": True}
    found = bench.compare(tmp_path, "two.json", "one.json")
    assert found["identical"] is False
    assert found["differing_results"] == 1
    assert found["examples"][0]["this"]["start"] == 4
