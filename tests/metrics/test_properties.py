"""Span metrics against a character-set oracle, and their laws, checked by hypothesis."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.metrics import (
    DEFAULT_METRICS,
    compute_metrics,
    measure_coverage,
    split_metric_name,
)
from spanchor_core.spans import DocSpan

# -- properties ----------------------------------------------------------------------------------

DOCS = ("a", "b", "c")


@st.composite
def doc_spans(draw: st.DrawFn, min_len: int = 1, max_len: int = 25) -> DocSpan:
    start = draw(st.integers(0, 60))
    return DocSpan(draw(st.sampled_from(DOCS)), start, start + draw(st.integers(min_len, max_len)))


GOLDS = st.lists(doc_spans(), min_size=1, max_size=5)
RANKEDS = st.lists(st.none() | doc_spans(min_len=0, max_len=40), max_size=12)
KS = (1, 2, 3, 5, 8, 20)


def _chars(spans: Sequence[DocSpan | None]) -> set[tuple[str, int]]:
    return {(s.document_id, i) for s in spans if s is not None for i in range(s.start, s.end)}


def _oracle(gold: list[DocSpan], ranked: list[DocSpan | None], k: int) -> dict[str, float]:
    """The definitions computed the slow way, on explicit sets of (document, offset)."""
    g = _chars(gold)
    r = _chars(ranked[:k])
    covered = len(g & r)
    dcg = ap = 0.0

    def precision(i: int) -> float:
        # unmapped results count at the average size of the results that added characters
        retrieved = len(_chars(ranked[:i]))
        unmapped = sum(1 for s in ranked[:i] if s is None)
        adding = sum(1 for j in range(i) if len(_chars(ranked[: j + 1])) > len(_chars(ranked[:j])))
        return (
            len(g & _chars(ranked[:i])) / retrieved * adding / (adding + unmapped)
            if retrieved
            else 0.0
        )

    for i in range(1, min(k, len(ranked)) + 1):
        gain = (len(g & _chars(ranked[:i])) - len(g & _chars(ranked[: i - 1]))) / len(g)
        dcg += gain / math.log2(i + 1)
        ap += precision(i) * gain
    pieces = sorted(
        (sum(1 for _ in run) for doc in DOCS for run in _runs(sorted(i for d, i in g if d == doc))),
        reverse=True,
    )
    idcg = sum(p / len(g) / math.log2(i + 1) for i, p in enumerate(pieces[:k], start=1))
    first = next((i for i, s in enumerate(ranked, 1) if s is not None and _chars([s]) & g), None)
    return {
        "recall": covered / len(g),
        "precision": precision(k),
        "iou": covered / len(g | r),
        "ndcg": min(1.0, dcg / idcg),
        "ap": ap,
        "mrr": 1 / first if first is not None and first <= k else 0.0,
    }


def _runs(offsets: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for offset in offsets:
        if runs and runs[-1][-1] + 1 == offset:
            runs[-1].append(offset)
        else:
            runs.append([offset])
    return runs


@settings(max_examples=300)
@given(GOLDS, RANKEDS)
def test_metrics_match_a_character_set_oracle(
    gold: list[DocSpan], ranked: list[DocSpan | None]
) -> None:
    values = compute_metrics(measure_coverage(gold, ranked), k=KS)
    for k in KS:
        for name, expected in _oracle(gold, ranked, k).items():
            assert values[f"{name}@{k}"] == pytest.approx(expected, abs=1e-9), (name, k)


@given(GOLDS, RANKEDS, st.floats(0.0, 1.0))
def test_scores_lie_in_unit_interval(
    gold: list[DocSpan], ranked: list[DocSpan | None], min_overlap: float
) -> None:
    values = compute_metrics(measure_coverage(gold, ranked), k=KS, min_overlap=min_overlap)
    for name, value in values.items():
        if DEFAULT_METRICS[split_metric_name(name)[0]].score:
            assert 0.0 <= value <= 1.0, name


@given(GOLDS, RANKEDS, st.floats(0.0, 1.0))
def test_cumulative_metrics_never_decrease_with_k(
    gold: list[DocSpan], ranked: list[DocSpan | None], min_overlap: float
) -> None:
    values = compute_metrics(measure_coverage(gold, ranked), k=KS, min_overlap=min_overlap)
    for base in ("recall", "hit", "full_evidence", "mrr", "ap", "retrieved_chars", "unmapped"):
        series = [values[f"{base}@{k}"] for k in KS]
        assert series == sorted(series), base


@given(GOLDS, RANKEDS, st.floats(0.0, 1.0))
def test_full_evidence_implies_hit_implies_overlap(
    gold: list[DocSpan], ranked: list[DocSpan | None], min_overlap: float
) -> None:
    values = compute_metrics(measure_coverage(gold, ranked), k=KS, min_overlap=min_overlap)
    for k in KS:
        assert values[f"full_evidence@{k}"] <= values[f"hit@{k}"]
        assert values[f"hit@{k}"] <= (values[f"mrr@{k}"] > 0)
        assert (values[f"mrr@{k}"] > 0) == (values[f"recall@{k}"] > 0)
        assert values[f"ap@{k}"] <= values[f"recall@{k}"] + 1e-12


@given(GOLDS, RANKEDS, st.data())
def test_appending_a_duplicate_result_changes_nothing(
    gold: list[DocSpan], ranked: list[DocSpan | None], data: st.DataObject
) -> None:
    mapped = [item for item in ranked if item is not None]
    if not mapped:
        return
    duplicate = data.draw(st.sampled_from(mapped))
    before = compute_metrics(measure_coverage(gold, ranked), k=KS)
    after = compute_metrics(measure_coverage(gold, [*ranked, duplicate]), k=KS)
    assert before == after


@given(GOLDS, RANKEDS, st.permutations(DOCS))
def test_renaming_documents_consistently_changes_nothing(
    gold: list[DocSpan], ranked: list[DocSpan | None], order: list[str]
) -> None:
    rename = dict(zip(DOCS, order, strict=True))

    def moved(span: DocSpan) -> DocSpan:
        return span._replace(document_id=rename[span.document_id])

    before = compute_metrics(measure_coverage(gold, ranked), k=KS)
    after = compute_metrics(
        measure_coverage(
            [moved(s) for s in gold], [None if s is None else moved(s) for s in ranked]
        ),
        k=KS,
    )
    assert before == after


@given(
    st.lists(doc_spans(), min_size=1, max_size=5).map(
        lambda spans: [s._replace(document_id="a") for s in spans]
    ),
    RANKEDS,
)
def test_recall_is_one_when_the_gold_is_retrieved_at_rank_one(
    gold: list[DocSpan], rest: list[DocSpan | None]
) -> None:
    # one document: a single span from the first gold start to the last gold end covers G
    whole = DocSpan("a", min(s.start for s in gold), max(s.end for s in gold))
    values = compute_metrics(measure_coverage(gold, [whole, *rest]), k=KS)
    assert all(values[f"recall@{k}"] == 1.0 for k in KS)
    assert values["mrr"] == 1.0


@given(GOLDS, RANKEDS)
def test_recall_is_one_once_every_anchor_is_retrieved(
    gold: list[DocSpan], rest: list[DocSpan | None]
) -> None:
    values = compute_metrics(measure_coverage(gold, [*gold, *rest]), k=(len(gold),), min_overlap=1)
    assert values[f"recall@{len(gold)}"] == 1.0
    assert values[f"full_evidence@{len(gold)}"] == 1.0
