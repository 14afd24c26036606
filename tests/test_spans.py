"""Span algebra: hand-computed cases and hypothesis laws."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from spanchor_core.spans import (
    DocSpan,
    Span,
    group_by_document,
    intersect_spans,
    intersection_length,
    overlap_length,
    subtract_spans,
    total_length,
    union_spans,
)

spans_st = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 60)).map(lambda t: (min(t), max(t))), max_size=12
)


def _chars(spans: list[Span]) -> set[int]:
    return {i for s, e in spans for i in range(s, e)}


def test_union_merges_overlapping_and_touching_and_drops_empty() -> None:
    assert union_spans([(5, 9), (0, 2), (2, 4), (8, 12), (20, 20), (30, 25)]) == [(0, 4), (5, 12)]


def test_overlap_length_counts_shared_characters_only() -> None:
    assert overlap_length((0, 10), (5, 15)) == 5
    assert overlap_length((0, 5), (5, 10)) == 0
    assert overlap_length((3, 4), (0, 10)) == 1


def test_intersection_of_unions() -> None:
    # [0,4)∪[6,10) vs [2,7): shared 2..4 (2) and 6..7 (1) = 3
    assert intersection_length([(0, 4), (6, 10)], [(2, 7)]) == 3


def test_group_by_document_keeps_documents_apart() -> None:
    grouped = group_by_document([DocSpan("a", 0, 5), DocSpan("b", 3, 8), DocSpan("a", 4, 9)])
    assert grouped == {"a": [(0, 9)], "b": [(3, 8)]}
    assert DocSpan("a", 4, 9).length == 5


@given(spans_st)
def test_union_covers_exactly_the_same_characters(spans: list[Span]) -> None:
    union = union_spans(spans)
    assert _chars(union) == _chars(spans)
    assert total_length(union) == len(_chars(spans))
    assert all(a[1] < b[0] for a, b in itertools.pairwise(union))


@given(spans_st, spans_st)
def test_intersection_matches_set_semantics(a: list[Span], b: list[Span]) -> None:
    ua, ub = union_spans(a), union_spans(b)
    shared = intersection_length(ua, ub)
    assert shared == len(_chars(a) & _chars(b))
    assert shared == intersection_length(ub, ua)
    # inclusion–exclusion on unioned characters
    assert total_length(union_spans(a + b)) == total_length(ua) + total_length(ub) - shared


@given(spans_st)
def test_union_is_idempotent(spans: list[Span]) -> None:
    assert union_spans(union_spans(spans)) == union_spans(spans)


@given(spans_st, spans_st)
def test_intersect_and_subtract_match_set_semantics(a: list[Span], b: list[Span]) -> None:
    ua, ub = union_spans(a), union_spans(b)
    both = intersect_spans(ua, ub)
    only_a = subtract_spans(ua, ub)
    assert _chars(both) == _chars(a) & _chars(b)
    assert _chars(only_a) == _chars(a) - _chars(b)
    assert union_spans(both) == both  # already sorted and disjoint
    assert all(start < end for start, end in only_a)


def test_subtract_hand_computed() -> None:
    # [0,10) minus [2,4) and [6,8) leaves [0,2), [4,6), [8,10)
    assert subtract_spans([(0, 10)], [(2, 4), (6, 8)]) == [(0, 2), (4, 6), (8, 10)]
    assert intersect_spans([(0, 5), (7, 9)], [(3, 8)]) == [(3, 5), (7, 8)]
