"""Cutoffs, min_overlap and metric names: checked at the edge, in a stable order."""

from __future__ import annotations

import math

import pytest

from spanchor_core.errors import InputError
from spanchor_core.metrics import (
    check_k,
    check_min_overlap,
    compute_metrics,
    measure_coverage,
    metric_names,
    split_metric_name,
)
from spanchor_core.spans import DocSpan


@pytest.mark.parametrize("bad", [[0], [-1], [True], [2.5], []])
def test_bad_k_is_rejected(bad: list[object]) -> None:
    with pytest.raises(InputError):
        check_k(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-0.1, 1.5, math.nan])
def test_bad_min_overlap_is_rejected(bad: float) -> None:
    cov = measure_coverage([DocSpan("a", 0, 5)], [])
    with pytest.raises(InputError, match="min_overlap"):
        compute_metrics(cov, min_overlap=bad)


def test_k_is_sorted_and_deduplicated() -> None:
    assert check_k([10, 1, 5, 5]) == (1, 5, 10)


def test_metric_names_are_spanchor_0x_compatible_and_ordered() -> None:
    names = metric_names(k=(5,))
    for name in ("recall@5", "precision@5", "hit@5", "full_evidence@5", "iou", "mrr", "ndcg@5"):
        assert name in names
    cov = measure_coverage([DocSpan("a", 0, 5)], [DocSpan("a", 0, 5)])
    assert list(compute_metrics(cov, k=(5,))) == names


def test_split_metric_name() -> None:
    assert split_metric_name("recall@5") == ("recall", 5)
    assert split_metric_name("iou") == ("iou", None)
    with pytest.raises(InputError):
        split_metric_name("recall@x")


@pytest.mark.parametrize(
    "name", ["recall@\u00b2", "recall@\u0665", "recall@" + "9" * 4400, "recall@0", "recall@05"]
)
def test_split_metric_name_refuses_cutoffs_int_would_mishandle(name: str) -> None:
    # issue 12: int() read "²" as a bare ValueError and refused 4,400 digits with one
    with pytest.raises(InputError, match=r"needs a whole number of at least 1") as caught:
        split_metric_name(name)
    assert len(str(caught.value)) < 200  # the name is cut short, not quoted whole


def test_check_k_and_min_overlap_refuse_absurd_numbers_as_input_errors() -> None:
    with pytest.raises(InputError, match="K must be"):
        check_k([-(10**4400)])  # an int without a repr
    with pytest.raises(InputError, match="min_overlap"):
        check_min_overlap(10**400)  # beyond any float: OverflowError before
