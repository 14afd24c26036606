"""The quickstart, diagnosed: a cause for each of its 14 regressions, its chunk inventories, and
the chunking / ranking split of its recall@5 change (figures quoted in the report and README)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

from spanchor_core import compare, load_corpus, load_policy, read_gold
from spanchor_core.corpus import Corpus
from spanchor_core.diagnosis import (
    ChunkInventory,
    DroppedCause,
    SplitCause,
    chunk_report,
    chunking_split,
    diagnose_regressions,
    load_inventory,
    with_diagnosis,
)
from spanchor_core.evaluate import Evaluation, evaluate_file
from spanchor_core.gold import GoldSet
from spanchor_core.locate import Locator

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
CHUNKINGS = {
    "baseline": "paragraphs",
    "candidate": "windows-200",
    "candidate-overlap": "windows-400-overlap-200",
}


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return load_corpus(QUICKSTART / "docs")


@pytest.fixture(scope="module")
def gold() -> GoldSet:
    return read_gold(QUICKSTART / "gold.jsonl")


@pytest.fixture(scope="module")
def locator(corpus: Corpus) -> Locator:
    return Locator(corpus)


@pytest.fixture(scope="module")
def evaluations(corpus: Corpus, gold: GoldSet, locator: Locator) -> dict[str, Evaluation]:
    return {
        run: evaluate_file(corpus, gold, QUICKSTART / "runs" / f"{run}.jsonl", locator=locator)
        for run in CHUNKINGS
    }


@pytest.fixture(scope="module")
def inventories(corpus: Corpus, locator: Locator) -> dict[str, ChunkInventory]:
    return {
        run: load_inventory(QUICKSTART / "chunks" / f"{name}.jsonl", corpus, locator=locator)
        for run, name in CHUNKINGS.items()
    }


def test_every_regressed_query_gets_a_cause(
    evaluations: dict[str, Evaluation], inventories: dict[str, ChunkInventory]
) -> None:
    baseline, candidate = evaluations["baseline"], evaluations["candidate"]
    comparison = compare(baseline, candidate, load_policy(QUICKSTART / "spanchor.toml"))
    diagnosis = diagnose_regressions(
        comparison, baseline, candidate, candidate_chunks=inventories["candidate"]
    )
    assert comparison.counts["regressed"] == 14
    assert list(diagnosis) == [row.query_id for row in comparison.regressions()]
    assert all(row.causes for row in diagnosis.values())
    assert diagnosis.note is None
    assert diagnosis.summary.line() == "14 regressed: 12 split, 2 dropped"
    assert json.loads(json.dumps(diagnosis.to_json()))["summary"]["regressed"] == 14

    # q05 (the README's example): "A full kettle boils in about four minutes on a 230 V
    # supply." was cut after "A full kettle boils" by the window boundary at offset 400.
    (q05,) = diagnosis["q05"].causes
    assert isinstance(q05, SplitCause)
    assert q05.evidence_span.document_id == "kettle-manual"
    assert (q05.evidence_span.start, q05.evidence_span.end) == (380, 440)
    assert q05.boundaries == (400,)
    assert q05.coverage_before == 1.0
    assert q05.coverage_after == pytest.approx(1 / 3)
    # q01: no window in the top 5 touches "the MAX mark (1.7 litres)", yet one window of the
    # candidate's index holds it whole: it ranked below the depth the run recorded.
    (q01,) = diagnosis["q01"].causes
    assert isinstance(q01, DroppedCause)
    assert (q01.piece.start, q01.piece.end, q01.rank_before) == (151, 176, 3)
    assert q01.indexed == 1.0


def test_the_overlap_fix_has_nothing_to_diagnose(evaluations: dict[str, Evaluation]) -> None:
    baseline, fixed = evaluations["baseline"], evaluations["candidate-overlap"]
    comparison = compare(baseline, fixed, load_policy(QUICKSTART / "spanchor.toml"))
    assert diagnose_regressions(comparison, baseline, fixed).summary.line() == "0 regressed"


def test_the_inventories_are_the_indexes_of_the_runs(
    evaluations: dict[str, Evaluation], inventories: dict[str, ChunkInventory]
) -> None:
    for run, inventory in inventories.items():
        assert inventory.unmapped == 0
        header = evaluations[run].settings.run_header
        assert header is not None
        assert len(inventory) == header["retriever"]["parameters"]["chunks"]
        indexed = {item.span for item in inventory}
        for query in evaluations[run].values():
            assert {result.span for result in query.results} <= indexed


def test_recall_at_5_is_lost_to_ranking_recall_at_1_to_chunking(
    evaluations: dict[str, Evaluation], inventories: dict[str, ChunkInventory]
) -> None:
    def split(k: int) -> str:
        return chunking_split(
            evaluations["baseline"],
            evaluations["candidate"],
            inventories["baseline"],
            inventories["candidate"],
            k=k,
        ).line(3)

    # Every piece of evidence fits in two 200-character windows, so five slots could still
    # hold all of it: the recall@5 loss is the ranking's (cut fragments rank lower).
    assert split(5) == "recall@5 -0.119: +0.000 chunking (oracle 1.000 → 1.000), -0.119 ranking"
    assert split(1) == "recall@1 -0.105: -0.108 chunking (oracle 0.992 → 0.884), +0.003 ranking"


def test_chunk_reports_compare_the_three_chunkers(
    corpus: Corpus, gold: GoldSet, inventories: dict[str, ChunkInventory]
) -> None:
    reports = {run: chunk_report(corpus, gold, inv) for run, inv in inventories.items()}
    at_1 = {run: (round(r.mean_oracle(1), 3), r.fully_served(1)) for run, r in reports.items()}
    assert at_1 == {
        "baseline": (0.992, 56),
        "candidate": (0.884, 34),
        "candidate-overlap": (1.0, 57),
    }
    assert all(not report.unservable for report in reports.values())


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_chunks", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _stable(path: Path) -> list[object]:
    lines: list[object] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        data = json.loads(raw)
        if "kind" in data:
            data.pop("created_at")
            data.pop("spanchor_version")
        lines.append(data)
    return lines


def test_make_chunks_regenerates_the_committed_inventories(tmp_path: Path) -> None:
    pytest.importorskip("bm25s")  # make_example.py, whose chunkers it reuses, imports it
    written = _load(QUICKSTART / "chunks" / "make_chunks.py").main(tmp_path)
    assert [path.name for path in written] == [f"{name}.jsonl" for name in CHUNKINGS.values()]
    for path in written:
        assert _stable(path) == _stable(QUICKSTART / "chunks" / path.name)


def test_the_chunks_readme_python_block_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (QUICKSTART / "chunks" / "README.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    monkeypatch.chdir(QUICKSTART.parents[1])
    exec(compile(block, "chunks/README.md", "exec"), {"__name__": "__readme__"})
    assert "| 1 | 0.884 | 34 of 57 |" in capsys.readouterr().out


def test_causes_md_quotes_what_the_diagnosis_says(
    evaluations: dict[str, Evaluation], inventories: dict[str, ChunkInventory]
) -> None:
    baseline, candidate = evaluations["baseline"], evaluations["candidate"]
    comparison = with_diagnosis(
        compare(baseline, candidate, load_policy(QUICKSTART / "spanchor.toml")),
        baseline,
        candidate,
        baseline_chunks=inventories["baseline"],
        candidate_chunks=inventories["candidate"],
    )
    diagnosis = comparison.diagnosis
    assert diagnosis is not None
    text = (QUICKSTART / "CAUSES.md").read_text(encoding="utf-8")
    assert f"why: {diagnosis.summary.line()}" in text
    for qid in ("q01", "q02", "q05"):
        (cause,) = diagnosis[qid].causes
        shown = cause.describe().split("; the index holds")[0]  # the gate has no inventory
        assert f"  {qid}: {shown}\n" in text, qid
    splits = {split.metric: split.line() for split in diagnosis.splits}
    assert splits["recall@1"] in text
    assert splits["recall@5"] in text
    assert "the index holds 100% of it in one chunk" in diagnosis["q01"].causes[0].describe()
