"""Causes of a regression, each built so that exactly that cause applies, then combinations.

Rank and dropped exclude each other and one of them always applies to a lost piece (something
overlaps it below K, or nothing does); split, unmapped and missing come on top. So "exactly
split" means split wins and ``also`` holds only the rank/dropped reading of the fragment.
"""

from __future__ import annotations

import json

import pytest

from spanchor_core.corpus import Corpus
from spanchor_core.diagnosis import (
    CAUSE_KINDS,
    CauseSummary,
    DroppedCause,
    MissingCause,
    RankCause,
    SplitCause,
    UnmappedCause,
    lost_evidence,
    map_inventory,
    primary_cause,
    regression_causes,
    summarise,
)
from spanchor_core.diagnosis.inventory import Chunk
from spanchor_core.errors import InputError
from spanchor_core.evaluate import LocatedResult, QueryEvaluation, QueryStatus
from spanchor_core.spans import DocSpan

GOLD = (DocSpan("a", 10, 30),)
Result = tuple[str, int, int] | None


def query(
    *ranked: Result, status: QueryStatus = QueryStatus.SCORED, gold: tuple[DocSpan, ...] = GOLD
) -> QueryEvaluation:
    """A query evaluation whose ranked results are ``(doc, start, end)`` or ``None`` (unmapped)."""
    results = tuple(
        LocatedResult(rank, "unmapped", None, None, None, 0.0)
        if item is None
        else LocatedResult(rank, "exact", item[0], item[1], item[2], 1.0)
        for rank, item in enumerate(ranked, start=1)
    )
    return QueryEvaluation("q", {}, status=status, gold=gold, results=results)


BASELINE = query(("a", 0, 40))


def test_split_the_evidence_is_cut_and_the_fragment_is_gone() -> None:
    (cause,) = regression_causes(BASELINE, query(("a", 0, 20), ("b", 0, 9)), 1)
    assert isinstance(cause, SplitCause)
    assert cause.piece == DocSpan("a", 20, 30)
    assert cause.evidence_span == DocSpan("a", 10, 30)
    assert cause.boundaries == (20,)
    assert (cause.coverage_before, cause.coverage_after) == (1.0, 0.5)
    assert cause.rank_before == 1
    assert cause.rank_after is None
    assert cause.also == ("dropped",)


def test_split_the_fragment_ranks_below_k() -> None:
    cause = regression_causes(BASELINE, query(("a", 0, 20), ("b", 0, 9), ("a", 20, 40)), 2)[0]
    assert isinstance(cause, SplitCause)
    assert cause.rank_after == 3
    assert cause.also == ("rank",)


def test_rank_the_whole_chunk_is_still_retrieved_below_k() -> None:
    (cause,) = regression_causes(BASELINE, query(("b", 0, 9), ("a", 0, 40)), 1)
    assert isinstance(cause, RankCause)
    assert (cause.rank_before, cause.rank_after) == (1, 2)
    assert cause.also == ()


def test_dropped_nothing_at_any_rank_overlaps() -> None:
    (cause,) = regression_causes(BASELINE, query(("b", 0, 9), ("a", 30, 40)), 2)
    assert isinstance(cause, DroppedCause)
    assert cause.results == 2
    assert cause.indexed is None
    assert cause.also == ()


def test_unmapped_results_took_the_top_k() -> None:
    (cause,) = regression_causes(BASELINE, query(None, ("a", 0, 40)), 1)
    assert isinstance(cause, UnmappedCause)
    assert (cause.unmapped_before, cause.unmapped_after, cause.ranks) == (0, 1, (1,))
    assert cause.also == ("rank",)


def test_unmapped_only_when_the_candidate_has_more_of_them_than_the_baseline() -> None:
    before = query(None, ("a", 0, 40))
    (cause,) = regression_causes(before, query(None, ("b", 0, 9), ("a", 0, 40)), 2)
    assert isinstance(cause, RankCause)


@pytest.mark.parametrize(
    ("candidate", "reason"),
    [
        (None, "missing_in_run"),
        (query(status=QueryStatus.MISSING_IN_RUN), "missing_in_run"),
        (query(status=QueryStatus.ERROR), "error"),
    ],
)
def test_missing_no_usable_record(candidate: QueryEvaluation | None, reason: str) -> None:
    (cause,) = regression_causes(BASELINE, candidate, 1)
    assert isinstance(cause, MissingCause)
    assert cause.reason == reason
    assert cause.piece == DocSpan("a", 10, 30)


def test_missing_keeps_the_error_message() -> None:
    failed = QueryEvaluation("q", {}, QueryStatus.ERROR, GOLD, (), error="timeout")
    (cause,) = regression_causes(BASELINE, failed, 1)
    assert isinstance(cause, MissingCause)
    assert cause.error == "timeout"
    assert "timeout" in cause.describe()


def test_unmapped_outranks_split_and_dropped() -> None:
    (cause,) = regression_causes(BASELINE, query(None, ("a", 0, 20)), 2)
    assert isinstance(cause, UnmappedCause)
    assert cause.also == ("split", "dropped")


def test_one_cause_per_lost_piece() -> None:
    gold = (DocSpan("a", 10, 30), DocSpan("b", 0, 10))
    before = query(("a", 0, 40), ("b", 0, 10), gold=gold)
    after = query(("a", 0, 20), ("c", 0, 5), ("b", 0, 10), gold=gold)
    causes = regression_causes(before, after, 2)
    assert [cause.kind for cause in causes] == ["split", "rank"]
    assert [cause.piece for cause in causes] == [DocSpan("a", 20, 30), DocSpan("b", 0, 10)]


def test_two_pieces_of_one_anchor_lost_around_a_kept_middle() -> None:
    after = query(("a", 15, 25), ("b", 0, 9))
    causes = regression_causes(BASELINE, after, 1)
    assert [cause.piece for cause in causes] == [DocSpan("a", 10, 15), DocSpan("a", 25, 30)]
    assert all(isinstance(cause, SplitCause) for cause in causes)
    assert causes[0].to_json()["boundaries"] == [15, 25]


def test_a_cut_the_baseline_had_too_is_not_a_split() -> None:
    # Both sides hold the evidence in two halves; the candidate ranks one half lower.
    before = query(("a", 0, 20), ("a", 20, 40))
    (cause,) = regression_causes(before, query(("a", 0, 20), ("b", 0, 9), ("a", 20, 40)), 2)
    assert isinstance(cause, RankCause)
    assert cause.rank_after == 3


def test_a_whole_chunk_below_k_makes_it_rank_even_with_a_fragment_on_top() -> None:
    (cause,) = regression_causes(BASELINE, query(("a", 0, 20), ("b", 0, 9), ("a", 5, 35)), 2)
    assert isinstance(cause, RankCause)


def test_nothing_lost_gives_no_cause() -> None:
    assert regression_causes(BASELINE, query(("a", 10, 30)), 1) == ()
    # The baseline did not find it either: nothing was lost.
    assert regression_causes(query(("b", 0, 9)), query(("c", 0, 9)), 1) == ()
    assert lost_evidence(BASELINE, query(("a", 0, 40)), 1) == []


def test_dropped_says_whether_the_candidates_index_holds_the_piece() -> None:
    corpus = Corpus.from_texts({"a": "x" * 5 + "".join(chr(65 + i) for i in range(40)), "b": "y"})
    text = corpus.text("a")
    inventory = map_inventory(corpus, [Chunk(text[5:45], "a", 5, 45)])
    (cause,) = regression_causes(
        query(("a", 5, 45), gold=(DocSpan("a", 10, 30),)),
        query(("b", 0, 1), gold=(DocSpan("a", 10, 30),)),
        1,
        candidate_chunks=inventory,
    )
    assert isinstance(cause, DroppedCause)
    assert cause.indexed == 1.0
    assert "the index holds 100% of it in one chunk" in cause.describe()


def test_bad_k_is_an_input_error() -> None:
    for k in (0, -1, True):
        with pytest.raises(InputError):
            regression_causes(BASELINE, None, k)


def test_every_cause_serialises_to_json_with_its_kind_first() -> None:
    candidates = [
        None,
        query(None, ("a", 0, 40)),
        query(("a", 0, 20), ("b", 0, 9)),
        query(("b", 0, 9), ("a", 0, 40)),
        query(("b", 0, 9)),
    ]
    seen = []
    for candidate in candidates:
        (cause,) = regression_causes(BASELINE, candidate, 1)
        data = cause.to_json()
        assert json.loads(json.dumps(data)) == data
        assert next(iter(data)) == "cause"
        assert data["cause"] == cause.kind
        assert (data["document_id"], data["end"]) == ("a", 30)
        assert cause.describe().startswith(cause.kind)
        seen.append(cause.kind)
    assert sorted(seen) == sorted(CAUSE_KINDS)


def test_summary_counts_queries_by_their_primary_cause() -> None:
    split = regression_causes(BASELINE, query(("a", 0, 20)), 1)
    rank = regression_causes(BASELINE, query(("b", 0, 9), ("a", 0, 40)), 1)
    gold = (DocSpan("a", 10, 30), DocSpan("b", 0, 100))
    mixed = regression_causes(
        query(("a", 0, 40), ("b", 0, 100), gold=gold),
        query(("a", 0, 20), ("c", 0, 1), gold=gold),
        2,
    )
    assert [c.kind for c in mixed] == ["split", "dropped"]
    assert primary_cause(mixed) is mixed[1]  # 100 characters lost outweigh 10
    assert primary_cause(()) is None
    summary = summarise({"q1": split, "q2": split, "q3": rank, "q4": mixed, "q5": ()})
    assert summary == CauseSummary(
        regressed=5,
        queries={"split": 2, "rank": 1, "dropped": 1},
        pieces={"split": 3, "rank": 1, "dropped": 1},
        unexplained=1,
    )
    assert summary.line() == "5 regressed: 2 split, 1 rank, 1 dropped, 1 without lost evidence"
    assert summary.to_json()["queries"] == {
        "missing": 0,
        "unmapped": 0,
        "split": 2,
        "rank": 1,
        "dropped": 1,
    }
    assert summarise({}).line() == "0 regressed"
