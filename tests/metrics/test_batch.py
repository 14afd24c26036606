"""The vectorised scorer (:func:`score_many` / :func:`score_columns`) against the one-walk
scorer and the registry's functions, bit for bit, over many lists of mixed shapes at once."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.errors import InputError
from spanchor_core.metrics import (
    DEFAULT_METRICS,
    Metric,
    MetricPlan,
    RankedCoverage,
    apply_plan,
    check_k,
    measure_coverage,
    metric_plan,
    score_ranked,
)
from spanchor_core.metrics.batch import score_many
from spanchor_core.spans import DocSpan

DOCS = ("a", "b", "c")


@st.composite
def doc_spans(draw: st.DrawFn, min_len: int = 1, max_len: int = 25) -> DocSpan:
    start = draw(st.integers(0, 60))
    return DocSpan(draw(st.sampled_from(DOCS)), start, start + draw(st.integers(min_len, max_len)))


GOLDS = st.lists(doc_spans(), min_size=1, max_size=6)
RANKEDS = st.lists(st.none() | doc_spans(min_len=0, max_len=40), max_size=20)
CASES = st.lists(st.tuples(GOLDS, RANKEDS), min_size=1, max_size=12)
KSETS = st.lists(st.integers(1, 24), min_size=1, max_size=5)
OVERLAPS = st.sampled_from([0.0, 0.3, 0.5, 1.0]) | st.floats(0.0, 1.0)


def _same(a: dict[str, float], b: dict[str, float]) -> None:
    assert list(a) == list(b)  # same names, same order
    for name in a:  # the same floats bit for bit (repr round-trips), not merely close
        assert repr(a[name]) == repr(b[name]), name


def _check(
    cases: list[tuple[list[DocSpan], list[DocSpan | None]]], plan: MetricPlan, overlap: float
) -> None:
    many = score_many([g for g, _ in cases], [r for _, r in cases], plan, overlap)
    assert len(many) == len(cases)
    for (gold, ranked), values in zip(cases, many, strict=True):
        _same(values, score_ranked(gold, ranked, plan, overlap))
        _same(values, apply_plan(measure_coverage(gold, ranked), plan, overlap))


@settings(max_examples=150, deadline=None)
@given(CASES, KSETS, OVERLAPS)
def test_score_many_equals_the_walk_and_the_registry(
    cases: list[tuple[list[DocSpan], list[DocSpan | None]]], ks: list[int], overlap: float
) -> None:
    _check(cases, metric_plan(check_k(ks)), overlap)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(GOLDS, RANKEDS), min_size=20, max_size=40), KSETS)
def test_many_lists_of_one_shape_share_a_group(
    cases: list[tuple[list[DocSpan], list[DocSpan | None]]], ks: list[int]
) -> None:
    _check(cases, metric_plan(check_k(ks)), 0.5)


def test_long_lists_and_many_anchors_take_the_walk() -> None:
    gold = [DocSpan("a", 3 * i, 3 * i + 2) for i in range(20)]
    ranked: list[DocSpan | None] = [None, *(DocSpan("a", i, i + 5) for i in range(0, 200, 2))]
    cases: list[tuple[list[DocSpan], list[DocSpan | None]]] = [
        (gold, ranked),  # both past the padded limits
        ([DocSpan("a", 0, 10)], ranked),  # long list
        (gold, ranked[:5]),  # many anchors
        ([DocSpan("b", 0, 4)], [DocSpan("b", 1, 3)] * 40),  # padded to a power of two
    ]
    _check(cases, metric_plan((1, 5, 10, 50, 100, 200)), 0.5)


def test_empty_lists_score_as_empty_retrievals() -> None:
    cases: list[tuple[list[DocSpan], list[DocSpan | None]]] = [
        ([DocSpan("a", 0, 10)], []),
        ([DocSpan("z", 5, 9), DocSpan("a", 0, 3)], []),
        ([DocSpan("a", 0, 10)], [None, None]),
    ]
    _check(cases, metric_plan((1, 3)), 0.5)
    values = score_many([cases[0][0]], [[]], metric_plan((1,)), 0.5)[0]
    assert set(values.values()) == {0.0}


def test_hand_computed_values() -> None:
    """[unmapped, half of the gold], the registry's doctest case, next to a perfect list."""
    plan = metric_plan((1, 2))
    gold = [DocSpan("a", 0, 10)]
    first, second = score_many(
        [gold, gold], [[None, DocSpan("a", 5, 15)], [DocSpan("a", 0, 10)]], plan, 0.5
    )
    assert (first["recall@1"], first["recall@2"], first["precision@2"]) == (0.0, 0.5, 0.25)
    assert (first["mrr"], first["hit@2"], first["unmapped@2"]) == (0.5, 1.0, 1.0)
    assert (second["recall@1"], second["ndcg@2"], second["ap@2"], second["iou"]) == (
        1.0,
        1.0,
        1.0,
        1.0,
    )


def _mine(cov: RankedCoverage, k: int, min_overlap: float) -> float:
    i = cov.index(k)
    return cov.unmapped[i] / max(i, 1) + min_overlap


@settings(max_examples=60, deadline=None)
@given(CASES, KSETS)
def test_user_metrics_and_whole_list_builtins(
    cases: list[tuple[list[DocSpan], list[DocSpan | None]]], ks: list[int]
) -> None:
    whole = {
        **DEFAULT_METRICS,
        "ndcg_all": Metric("ndcg_all", DEFAULT_METRICS["ndcg"].function, "", whole_list=True),
        "ap_all": Metric("ap_all", DEFAULT_METRICS["ap"].function, "", whole_list=True),
        "hit_all": Metric("hit_all", DEFAULT_METRICS["hit"].function, "", whole_list=True),
    }
    _check(cases, metric_plan(check_k(ks), whole), 0.5)
    mine = {**DEFAULT_METRICS, "mine": Metric("mine", _mine, "unmapped share", whole_list=True)}
    _check(cases, metric_plan(check_k(ks), mine), 0.5)


def test_bad_gold_is_refused_as_by_the_walk() -> None:
    plan = metric_plan((1,))
    good = [DocSpan("a", 0, 4)]
    with pytest.raises(InputError, match="gold evidence is empty"):
        score_many([good, []], [[], []], plan, 0.5)
    with pytest.raises(InputError, match="has no characters"):
        score_many([good, [DocSpan("a", 4, 4)]], [[], []], plan, 0.5)


def test_no_lists() -> None:
    assert score_many([], [], metric_plan((1,)), 0.5) == []
