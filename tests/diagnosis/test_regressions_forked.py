"""Half of a large comparison's regressions judged on a forked child: the same diagnosis, in
the same order, whether the child answers or dies."""

from __future__ import annotations

import os

import pytest

from spanchor_core.compare import compare
from spanchor_core.diagnosis import diagnose_regressions, regressions
from spanchor_core.evaluate import (
    Evaluation,
    EvaluationSettings,
    LocatedResult,
    MappingStats,
    QueryEvaluation,
)
from spanchor_core.evaluate.file_fork import Forked, can_fork
from spanchor_core.policy import Policy
from spanchor_core.spans import DocSpan

pytestmark = pytest.mark.skipif(not can_fork(), reason="needs fork and two CPUs")

N = 60


def _side(candidate: bool) -> Evaluation:
    queries = {}
    for i in range(N):
        doc = f"d{i % 3}"
        case = i % 4 if candidate else 0
        span = [(doc, 100, 200), (doc, 150, 250), ("other", 0, 90), None][case]
        results = (
            ()
            if span is None
            else (LocatedResult(1, "exact", *span, 1.0), LocatedResult(2, "exact", doc, 0, 40, 1.0))
        )
        recall = [1.0, 0.5, 0.0, 0.0][case]
        qid = f"q{(i * 37) % N:03d}"  # not in id order: the rows' order is the comparison's
        queries[qid] = QueryEvaluation(
            query_id=qid,
            metrics={"recall@1": recall, "recall@2": recall},
            gold=(DocSpan(doc, 100, 200),),
            results=results,
            mapping=MappingStats.of(results),
        )
    return Evaluation(
        queries=queries,
        settings=EvaluationSettings(k=(1, 2), created_at="2026-01-01T00:00:00+00:00"),
        metric_names=("recall@1", "recall@2"),
        records=N,
    )


BASELINE, CANDIDATE = _side(False), _side(True)
COMPARISON = compare(BASELINE, CANDIDATE, Policy(max_drop={"recall@1": 0.0}))


def _diagnosis() -> object:
    diagnosis = diagnose_regressions(COMPARISON, BASELINE, CANDIDATE)
    return list(diagnosis), diagnosis.to_json()


def test_the_child_s_half_is_judged_as_this_process_judges_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    alone = _diagnosis()
    assert len(alone[0]) == 45  # type: ignore[index]  # three cases in four regress
    assert "dropped" in str(alone)
    assert "split" in str(alone) or "rank" in str(alone)
    started: list[object] = []

    class Counted(Forked[object]):
        def __init__(self, work: object) -> None:
            started.append(work)
            super().__init__(work)  # type: ignore[arg-type]

    monkeypatch.setattr(regressions, "_FORK_ROWS", 1)
    monkeypatch.setattr(regressions, "Forked", Counted)
    assert _diagnosis() == alone
    assert len(started) == 1


def test_a_child_that_dies_leaves_its_half_to_this_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    alone = _diagnosis()

    class Dies(Forked[object]):
        def __init__(self, work: object) -> None:
            super().__init__(lambda: os._exit(3))

    monkeypatch.setattr(regressions, "_FORK_ROWS", 1)
    monkeypatch.setattr(regressions, "Forked", Dies)
    assert _diagnosis() == alone
