"""Several records for one question: grouped by trace, scored the same in any line order."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from spanchor_core.corpus import Corpus
from spanchor_core.evaluate import evaluate, evaluate_file, write_evaluation
from spanchor_core.gold import GoldQuery, GoldSet, anchor_from_text
from spanchor_core.runs import RetrievalRecord, RetrievedResult, Run, RunHeader, write_run

TEXT = "Alpha is first. Beta is second. Gamma is third. Delta is fourth."


@pytest.fixture
def corpus() -> Corpus:
    return Corpus.from_texts({"doc": TEXT})


@pytest.fixture
def gold(corpus: Corpus) -> GoldSet:
    return GoldSet(
        [
            GoldQuery("q1", "which is second?", (anchor_from_text(corpus, "Beta is second."),)),
            GoldQuery("q2", "which is third?", (anchor_from_text(corpus, "Gamma is third."),)),
        ]
    )


def _rec(qid: str, *texts: str, **provenance: object) -> RetrievalRecord:
    results = tuple(RetrievedResult(rank, text) for rank, text in enumerate(texts, start=1))
    return RetrievalRecord(qid, f"question {qid}", results, **provenance)  # type: ignore[arg-type]


def _hybrid() -> list[RetrievalRecord]:
    return [
        # q1: a hybrid retriever, two retrievals in one trace, neither alone has the evidence at 1
        _rec("q1", "Alpha is first.", "Beta is second.", source="bm25", trace_id="t1", sequence=0),
        _rec(
            "q1", "Delta is fourth.", "Gamma is third.", source="dense", trace_id="t1", sequence=1
        ),
        # q2: retrieval then the reranked context the model saw
        _rec("q2", "Alpha is first.", "Gamma is third.", stage="retrieval", trace_id="t2"),
        _rec("q2", "Gamma is third.", stage="context", source="prompt", trace_id="t2"),
    ]


def test_a_trace_is_merged_by_interleaving_ranks(corpus: Corpus, gold: GoldSet) -> None:
    evaluation = evaluate(corpus, gold, Run(RunHeader(), _hybrid()), k=(1, 2, 3))
    q1 = evaluation["q1"]
    # bm25 first: Alpha (bm25 #1), Delta (dense #1), Beta (bm25 #2), Gamma (dense #2)
    assert [r.start for r in q1.results] == [
        TEXT.index("Alpha"),
        TEXT.index("Delta"),
        TEXT.index("Beta"),
        TEXT.index("Gamma"),
    ]
    assert (q1["recall@2"], q1["recall@3"]) == (0.0, 1.0)
    assert q1.traces[0].sources == ("bm25", "dense")
    assert q1.traces[0].records == 2
    # the context stage wins over the trace's raw retrieval
    assert evaluation["q2"]["recall@1"] == 1.0
    assert evaluation["q2"].traces[0].stage == "context"
    assert evaluation.repeated == ()


def test_the_same_records_in_any_order_give_the_same_file(
    corpus: Corpus, gold: GoldSet, tmp_path: Path
) -> None:
    texts = []
    for seed in range(6):
        records = _hybrid()
        random.Random(seed).shuffle(records)
        run_path = tmp_path / f"run{seed}.jsonl"
        write_run(Run(RunHeader(created_at="2026-01-01T00:00:00Z"), records), run_path)
        out = tmp_path / f"eval{seed}.json"
        write_evaluation(evaluate_file(corpus, gold, run_path, k=(1, 3)), out)
        data = json.loads(out.read_text(encoding="utf-8"))
        data["created_at"] = None
        data["settings"]["run_path"] = None
        texts.append(json.dumps(data))
    assert len(set(texts)) == 1


def test_a_question_asked_twice_is_a_repeat_scored_by_the_mean(
    corpus: Corpus, gold: GoldSet
) -> None:
    records = [
        _rec("q1", "Beta is second.", trace_id="a"),
        _rec("q1", "Alpha is first.", trace_id="b"),
        _rec("q2", "Gamma is third."),
    ]
    evaluation = evaluate(corpus, gold, Run(RunHeader(), records), k=(1,))
    assert evaluation.repeated == ("q1",)
    assert evaluation["q1"]["recall@1"] == 0.5
    assert [t.trace_id for t in evaluation["q1"].traces] == ["a", "b"]
    assert evaluation["q2"].traces == ()


def test_group_rule_chooses_another_view(corpus: Corpus, gold: GoldSet) -> None:
    run = Run(RunHeader(), _hybrid())
    only_bm25 = evaluate(corpus, gold, run, k=(1, 2), group="source:bm25")
    assert only_bm25["q1"]["recall@2"] == 1.0
    assert only_bm25.settings.group == "source:bm25"
    raw = evaluate(corpus, gold, run, k=(1, 2), group="stage:retrieval")
    assert raw["q2"]["recall@1"] == 0.0
