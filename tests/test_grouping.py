"""Grouping a query's retrievals: traces, stages, the interleave, and order independence."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spanchor_core.errors import InputError
from spanchor_core.grouping import GroupRule, Retrieval, group_query, parse_group_rule


@dataclass(frozen=True)
class Rec:
    query: str = "q"
    error: str | None = None
    source: str | None = None
    stage: str | None = None
    trace_id: str | None = None
    sequence: int | None = None
    line: int | None = None


def ret(items: str, **fields: object) -> Retrieval[str]:
    chars = tuple(items)
    return Retrieval(Rec(**fields), chars, chars)  # type: ignore[arg-type]


def test_one_record_is_one_trace_scored_as_it_is() -> None:
    grouped = group_query([ret("abc", line=2)])
    assert [t.items for t in grouped.traces] == [("a", "b", "c")]
    assert not grouped.repeated
    assert not grouped.merged


def test_hybrid_retrievers_in_one_trace_are_interleaved_by_rank_without_duplicates() -> None:
    bm25 = ret("abc", source="bm25", trace_id="t", sequence=1)
    dense = ret("bxd", source="dense", trace_id="t", sequence=0)
    (trace,) = group_query([dense, bm25]).traces
    # bm25 sorts before dense: a, b (rank 1), then b is a duplicate, x (rank 2), c, d (rank 3)
    assert trace.items == ("a", "b", "x", "c", "d")
    assert trace.sources == ("bm25", "dense")
    assert trace.stage == "retrieval"


def test_context_stage_wins_over_the_retrievals_of_its_trace() -> None:
    raw = ret("abc", source="retriever", stage="retrieval", trace_id="t")
    reranked = ret("cb", source="reranker", stage="postprocessed", trace_id="t")
    context = ret("c", source="synth", stage="context", trace_id="t")
    assert group_query([raw, reranked, context]).traces[0].items == ("c",)
    assert group_query([raw, reranked]).traces[0].items == ("c", "b")


def test_records_without_trace_or_in_two_traces_are_repeats_not_collapsed() -> None:
    grouped = group_query([ret("ab", line=1), ret("cd", line=2)])
    assert grouped.repeated
    assert sorted(t.items for t in grouped.traces) == [("a", "b"), ("c", "d")]
    traced = group_query([ret("ab", trace_id="t1"), ret("cd", trace_id="t2")])
    assert [t.trace_id for t in traced.traces] == ["t1", "t2"]


def test_a_failed_attempt_is_replaced_by_a_retry_that_worked() -> None:
    grouped = group_query([ret("", error="timeout", line=1), ret("ab", line=2)])
    assert [t.items for t in grouped.traces] == [("a", "b")]
    only_failed = group_query([ret("", error="timeout", line=1)])
    assert only_failed.traces[0].error == "timeout"


def test_first_source_stage_and_union_rules() -> None:
    a = ret("ab", source="bm25", trace_id="t", sequence=1)
    b = ret("cd", source="dense", trace_id="t", sequence=0)
    ctx = ret("d", source="node", stage="context", trace_id="t", sequence=2)
    assert group_query([a, b], parse_group_rule("first")).traces[0].items == ("c", "d")
    assert group_query([a, b, ctx], parse_group_rule("source:bm25")).traces[0].items == ("a", "b")
    assert group_query([a, b, ctx], parse_group_rule("union")).traces[0].items == (
        "a",
        "c",
        "b",
        "d",
    )
    assert group_query([a, b, ctx], parse_group_rule("stage:context")).traces[0].items == ("d",)
    assert group_query([a, b], parse_group_rule("source:nothing")).traces == ()


@pytest.mark.parametrize("text", ["", "last", "stage:final", "source:", "stage"])
def test_unknown_rules_are_input_errors(text: str) -> None:
    with pytest.raises(InputError, match=r"group rule|stage"):
        parse_group_rule(text)


def test_rule_names_round_trip() -> None:
    for text in ("auto", "first", "union", "stage:context", "source:bm25"):
        assert str(parse_group_rule(text)) == text


_records = st.lists(
    st.builds(
        ret,
        st.text(alphabet="abcdef", max_size=5),
        source=st.sampled_from([None, "bm25", "dense"]),
        stage=st.sampled_from([None, "retrieval", "postprocessed", "context"]),
        trace_id=st.sampled_from([None, "t1", "t2"]),
        sequence=st.one_of(st.none(), st.integers(0, 3)),
        error=st.sampled_from([None, None, None, "boom"]),
    ),
    max_size=8,
)


@given(_records, st.randoms(use_true_random=False), st.sampled_from(["auto", "union", "first"]))
def test_the_outcome_never_depends_on_record_order(
    records: list[Retrieval[str]], random: object, rule: str
) -> None:
    shuffled = list(records)
    random.shuffle(shuffled)  # type: ignore[attr-defined]
    parsed = parse_group_rule(rule)
    one, two = group_query(records, parsed), group_query(shuffled, parsed)
    assert [(t.trace_id, t.items, t.sources, t.stage) for t in one.traces] == [
        (t.trace_id, t.items, t.sources, t.stage) for t in two.traces
    ]


def test_default_rule_is_auto() -> None:
    assert GroupRule("auto") == parse_group_rule(" auto ")
