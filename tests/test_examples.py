"""The bundled quickstart example is reproducible and tells the story the README tells."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from spanchor_core import evaluate, load_corpus, read_gold, read_run, validate_gold

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart"


def _without_created_at(path: Path) -> list[object]:
    lines: list[object] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        data = json.loads(raw)
        if isinstance(data, dict):
            data.pop("created_at", None)
        lines.append(data)
    return lines


def test_make_example_regenerates_the_committed_files(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_example", QUICKSTART / "make_example.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(tmp_path)
    assert (tmp_path / "gold.jsonl").read_bytes() == (QUICKSTART / "gold.jsonl").read_bytes()
    for name in ("baseline", "candidate", "candidate-overlap"):
        fresh = _without_created_at(tmp_path / "runs" / f"{name}.jsonl")
        assert fresh == _without_created_at(QUICKSTART / "runs" / f"{name}.jsonl"), name


def test_quickstart_gold_is_valid_and_candidate_regresses() -> None:
    corpus = load_corpus(QUICKSTART / "docs")
    gold = read_gold(QUICKSTART / "gold.jsonl")
    assert validate_gold(gold, corpus) == []
    assert len(gold) >= 20
    base = evaluate(corpus, gold, read_run(QUICKSTART / "runs" / "baseline.jsonl"))
    cand = evaluate(corpus, gold, read_run(QUICKSTART / "runs" / "candidate.jsonl"))
    assert base.mapping.unmapped_rate == 0.0
    assert cand.mean("recall@5") < base.mean("recall@5") - 0.1
    lost = [qid for qid in gold if cand[qid]["recall@5"] < base[qid]["recall@5"]]
    assert lost, "the candidate chunking should lose evidence for some questions"


@pytest.mark.parametrize("name", ["baseline", "candidate", "candidate-overlap"])
def test_runs_record_their_provenance(name: str) -> None:
    corpus = load_corpus(QUICKSTART / "docs")
    gold = read_gold(QUICKSTART / "gold.jsonl")
    run = read_run(QUICKSTART / "runs" / f"{name}.jsonl")
    assert run.header.corpus_fingerprint == corpus.fingerprint
    assert run.header.gold_sha256 == gold.sha256
    assert len(run.records) == len(gold)
