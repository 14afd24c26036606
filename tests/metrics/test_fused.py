"""The one-walk scorer (:func:`score_ranked`) against the registry's functions, bit for bit."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.errors import InputError
from spanchor_core.metrics import (
    DEFAULT_METRICS,
    Metric,
    RankedCoverage,
    apply_plan,
    check_k,
    measure_coverage,
    metric_plan,
    score_ranked,
)
from spanchor_core.spans import DocSpan

DOCS = ("a", "b", "c")


@st.composite
def doc_spans(draw: st.DrawFn, min_len: int = 1, max_len: int = 25) -> DocSpan:
    start = draw(st.integers(0, 60))
    return DocSpan(draw(st.sampled_from(DOCS)), start, start + draw(st.integers(min_len, max_len)))


GOLDS = st.lists(doc_spans(), min_size=1, max_size=5)
RANKEDS = st.lists(st.none() | doc_spans(min_len=0, max_len=40), max_size=14)
KSETS = st.lists(st.integers(1, 20), min_size=1, max_size=5)
OVERLAPS = st.sampled_from([0.0, 0.3, 0.5, 1.0]) | st.floats(0.0, 1.0)


def _same(a: dict[str, float], b: dict[str, float]) -> None:
    assert list(a) == list(b)  # same names, same order
    for name in a:  # same floats bit for bit (repr round-trips), not merely close
        assert repr(a[name]) == repr(b[name]), name


@settings(max_examples=400, deadline=None)
@given(GOLDS, RANKEDS, KSETS, OVERLAPS)
def test_score_ranked_equals_the_registry_functions(
    gold: list[DocSpan], ranked: list[DocSpan | None], ks: list[int], overlap: float
) -> None:
    plan = metric_plan(check_k(ks))
    _same(
        score_ranked(gold, ranked, plan, overlap),
        apply_plan(measure_coverage(gold, ranked), plan, overlap),
    )


def _mine(cov: RankedCoverage, k: int, min_overlap: float) -> float:
    """A user's metric: unmapped share of the top k, reading the coverage record."""
    i = cov.index(k)
    return cov.unmapped[i] / max(i, 1) + min_overlap


@settings(max_examples=150, deadline=None)
@given(GOLDS, RANKEDS, KSETS)
def test_user_metrics_are_called_as_before(
    gold: list[DocSpan], ranked: list[DocSpan | None], ks: list[int]
) -> None:
    metrics = {
        **DEFAULT_METRICS,
        "mine": Metric("mine", _mine, "unmapped share", whole_list=True),
        # a built-in function registered in a new way (whole list): still the same value
        "ndcg_all": Metric("ndcg_all", DEFAULT_METRICS["ndcg"].function, "", whole_list=True),
    }
    plan = metric_plan(check_k(ks), metrics)
    _same(
        score_ranked(gold, ranked, plan, 0.5), apply_plan(measure_coverage(gold, ranked), plan, 0.5)
    )


def test_worked_example() -> None:
    """[unmapped, half of the gold] at k=1,2 (the registry's own doctest case)."""
    gold = [DocSpan("a", 0, 10)]
    values = score_ranked(gold, [None, DocSpan("a", 5, 15)], metric_plan((1, 2)), 0.5)
    assert values["recall@1"] == 0.0
    assert values["recall@2"] == 0.5
    assert values["precision@2"] == 0.25
    assert values["mrr"] == 0.5
    assert values["hit@2"] == 1.0
    assert values["unmapped@2"] == 1.0
    assert values["ndcg@2"] == pytest.approx(0.5 / math.log2(3))


def test_long_lists_past_the_discount_table() -> None:
    gold = [DocSpan("a", 0, 10)]
    ranked: list[DocSpan | None] = [None] * 99 + [DocSpan("a", 0, 10)]
    plan = metric_plan((1, 50, 100, 200))
    _same(
        score_ranked(gold, ranked, plan, 0.5), apply_plan(measure_coverage(gold, ranked), plan, 0.5)
    )


def test_empty_gold_is_refused_alike() -> None:
    with pytest.raises(InputError):
        score_ranked([], [DocSpan("a", 0, 1)], metric_plan((1,)), 0.5)
