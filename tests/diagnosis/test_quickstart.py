"""The quickstart, diagnosed: a cause for each of its 14 regressions, its chunk inventories, and
the chunking / ranking split of its recall@5 change (figures quoted in the report and README)."""

from __future__ import annotations

import json
import math
import re
from itertools import combinations
from pathlib import Path

import pytest

from spanchor_core import compare, load_corpus, load_policy, read_gold
from spanchor_core.cli import main as cli_main
from spanchor_core.corpus import Corpus
from spanchor_core.diagnosis import (
    INVENTORY_TAG,
    ChunkInventory,
    DroppedCause,
    SplitCause,
    chunk_report,
    chunking_split,
    diagnose_regressions,
    inventory_path,
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


def test_each_run_header_points_to_its_index_inventory(
    evaluations: dict[str, Evaluation],
) -> None:
    for run, name in CHUNKINGS.items():
        header = evaluations[run].settings.run_header
        assert header is not None
        assert header["tags"] == {INVENTORY_TAG: f"../chunks/{name}.jsonl"}
        found = inventory_path(header, QUICKSTART / "runs" / f"{run}.jsonl")
        assert found is not None
        assert found.resolve() == (QUICKSTART / "chunks" / f"{name}.jsonl").resolve()


def _chunk_spans(corpus: Corpus, name: str) -> list[tuple[str, int, int]]:
    """The inventory's chunks as ``(document, start, end)``, found without the locator: each
    chunk is searched in its document from where the previous chunk of that document began."""
    spans: list[tuple[str, int, int]] = []
    cursor: dict[str, int] = {}
    lines = (QUICKSTART / "chunks" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    for raw in lines[1:]:
        chunk = json.loads(raw)
        doc, text = chunk["document_id"], chunk["text"]
        start = corpus.text(doc).index(text, cursor.get(doc, 0))
        cursor[doc] = start + 1
        spans.append((doc, start, start + len(text)))
    return spans


def _brute_force_oracle(
    gold: GoldSet, chunks: list[tuple[str, int, int]], k: int
) -> dict[str, float]:
    """Best recall@k over every choice of at most k chunks among those touching the gold (the
    others add nothing), as a share of the query's gold characters."""
    best: dict[str, float] = {}
    for qid, query in gold.items():
        wanted = {(a.document_id, i) for a in query.anchors for i in range(a.start, a.end)}
        touching = [
            chars
            for doc, start, end in chunks
            if (chars := {(doc, i) for i in range(start, end)} & wanted)
        ]
        size = min(k, len(touching))
        best[qid] = max(
            (len(set().union(*combo)) / len(wanted) for combo in combinations(touching, size)),
            default=0.0,
        )
    return best


def _expected_split(
    gold: GoldSet,
    before: Evaluation,
    after: Evaluation,
    chunks: tuple[list[tuple[str, int, int]], list[tuple[str, int, int]]],
    k: int,
) -> str:
    metric = f"recall@{k}"
    ids = list(before.queries)

    def mean(values: dict[str, float]) -> float:
        return math.fsum(values[qid] for qid in ids) / len(ids)

    oracle_before = mean(_brute_force_oracle(gold, chunks[0], k))
    oracle_after = mean(_brute_force_oracle(gold, chunks[1], k))
    delta = mean({q: after[q][metric] for q in ids}) - mean({q: before[q][metric] for q in ids})
    chunking = oracle_after - oracle_before
    line = (
        f"{metric} {delta:+.2f}: {chunking:+.2f} chunking "
        f"(oracle {oracle_before:.2f} → {oracle_after:.2f}), {delta - chunking:+.2f} ranking"
    )
    deepest = max(len(side[q].results) for side in (before, after) for q in ids)
    if deepest < k:  # top-5 runs scored at K = 10: the oracle's 10 chunks are out of reach
        line += (
            f" (the runs hold at most {deepest} results per query, fewer than the oracle's K: "
            "part of 'ranking' is that depth)"
        )
    return line


def test_the_gate_prints_the_split_the_inventories_imply(
    corpus: Corpus,
    gold: GoldSet,
    evaluations: dict[str, Evaluation],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``spanchor gate`` in the quickstart, as demo.py runs it: both run headers point to an
    inventory, so under ``why:`` it splits every recall@K it scores (k = 1, 3, 5, 10)."""
    chunks = {run: _chunk_spans(corpus, name) for run, name in CHUNKINGS.items()}
    config = ["gate", "--config", str(QUICKSTART / "spanchor.toml")]
    readme = (QUICKSTART / "README.md").read_text(encoding="utf-8")
    for run, code in (("candidate", 1), ("candidate-overlap", 0)):
        candidate = QUICKSTART / "runs" / f"{run}.jsonl"
        assert cli_main([*config, "--candidate", str(candidate)]) == code
        printed = capsys.readouterr().out
        for k in (1, 3, 5, 10):
            line = _expected_split(
                gold,
                evaluations["baseline"],
                evaluations[run],
                (chunks["baseline"], chunks[run]),
                k,
            )
            assert f"\n  {line}\n" in printed, (run, k)
            if run == "candidate":  # the README quotes the failing gate's block
                assert f"\n  {line}\n" in readme, k
    # The overlap fix's figures the README quotes, as text.
    assert "  recall@1 +0.01: +0.01 chunking (oracle 0.99 → 1.00), +0.00 ranking\n" in printed
    assert "`recall@5 +0.00: +0.00 chunking (oracle 1.00 → 1.00), +0.00 ranking`" in readme
    one = _brute_force_oracle(gold, chunks["candidate"], 1)
    assert sum(value == 1.0 for value in one.values()) == 34  # "only 34 questions"
    assert one["q05"] == pytest.approx(40 / 60)  # the window [400:600] holds 40 of its 60


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
        assert f"  {qid}: {cause.describe()}\n" in text, qid  # as the gate prints it
    splits = {split.metric: split.line() for split in diagnosis.splits}
    assert sorted(splits) == ["recall@1", "recall@10", "recall@3", "recall@5"]
    for line in splits.values():
        assert f"\n  {line}\n" in text  # in the gate's block
        assert f"\n{line}\n" in text  # and in "Chunking or ranking?"
    assert "the index holds 100% of it in one chunk" in diagnosis["q01"].causes[0].describe()
