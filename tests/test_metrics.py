"""Span metrics: hand-computed fixtures, edge cases, and properties checked by hypothesis.

Expected values are written as the arithmetic that produces them, so a reader can redo it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.errors import InputError
from spanchor_core.metrics import (
    DEFAULT_METRICS,
    Metric,
    RankedCoverage,
    check_k,
    check_min_overlap,
    compute_metrics,
    measure_coverage,
    metric_names,
    split_metric_name,
)
from spanchor_core.spans import DocSpan

# ---------------------------------------------------------------------------------------------
# The worked example: overlapping gold anchors, an unmapped result, a duplicate, another document
#
#   gold   a[10,20)  a[15,25)  b[0,5)       G = a[10,25) ∪ b[0,5): |G| = 15 + 5 = 20
#                                           pieces of G, largest first: 15, 5
#   rank 1 None            unmapped: keeps the slot, covers nothing
#   rank 2 a[0,12)         +12 retrieved, +2 gold (a[10,12)); anchor1 2/10
#   rank 3 a[0,12)         duplicate: nothing new
#   rank 4 c[0,100)        +100 retrieved, no gold (document c has none)
#   rank 5 a[12,25)        +13 retrieved, +13 gold; anchor1 10/10, anchor2 10/10
#   rank 6 b[3,8)          +5 retrieved, +2 gold (b[3,5)); anchor3 2/5
#
#   after rank i:   covered |G∩R_i|   retrieved |R_i|   unmapped
#        1               0                 0               1
#        2               2                12               1
#        3               2                12               1
#        4               2               112               1
#        5              15               125               1
#        6              17               130               1
# ---------------------------------------------------------------------------------------------

GOLD = [DocSpan("a", 10, 20), DocSpan("a", 15, 25), DocSpan("b", 0, 5)]
RANKED: list[DocSpan | None] = [
    None,
    DocSpan("a", 0, 12),
    DocSpan("a", 0, 12),
    DocSpan("c", 0, 100),
    DocSpan("a", 12, 25),
    DocSpan("b", 3, 8),
]
L3, L6, L7 = math.log2(3), math.log2(6), math.log2(7)
IDCG = 15 / 20 + (5 / 20) / L3  # pieces 15 and 5 at ranks 1 and 2


@pytest.fixture
def worked() -> dict[str, float]:
    return compute_metrics(measure_coverage(GOLD, RANKED), k=(1, 3, 5, 10))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("recall@1", 0 / 20),
        ("recall@3", 2 / 20),
        ("recall@5", 15 / 20),
        ("recall@10", 17 / 20),  # K past the list: the whole list
        ("precision@1", 0.0),  # nothing mapped yet: defined as 0
        ("precision@3", 2 / 12),  # the duplicate adds no characters
        ("precision@5", 15 / 125),
        ("precision@10", 17 / 130),
        ("iou@3", 2 / (20 + 12 - 2)),
        ("iou@5", 15 / (20 + 125 - 15)),
        ("iou", 17 / (20 + 130 - 17)),  # whole list
        ("hit@3", 0.0),  # best anchor 2/10 < 0.5
        ("hit@5", 1.0),  # anchor1 10/10
        ("full_evidence@5", 0.0),  # anchor3 0/5
        ("full_evidence@10", 0.0),  # anchor3 2/5 = 0.4 < 0.5
        ("mrr@1", 0.0),
        ("mrr@3", 1 / 2),  # rank 2 is the first to touch gold
        ("mrr", 1 / 2),
        ("ndcg@1", 0.0),
        ("ndcg@3", (2 / 20 / L3) / IDCG),
        ("ndcg@5", (2 / 20 / L3 + 13 / 20 / L6) / IDCG),
        ("ndcg@10", (2 / 20 / L3 + 13 / 20 / L6 + 2 / 20 / L7) / IDCG),
        ("ap@1", 0.0),
        ("ap@3", (2 / 12) * (2 / 20)),  # precision@2 × gain at rank 2
        ("ap@5", (2 / 12) * (2 / 20) + (15 / 125) * (13 / 20)),
        ("ap@10", (2 / 12) * (2 / 20) + (15 / 125) * (13 / 20) + (17 / 130) * (2 / 20)),
        ("retrieved_chars@5", 125.0),
        ("unmapped@1", 1.0),
        ("unmapped@10", 1.0),
    ],
)
def test_worked_example(worked: dict[str, float], name: str, expected: float) -> None:
    assert worked[name] == pytest.approx(expected, abs=1e-12)


def test_worked_example_min_overlap_changes_only_hit_and_full_evidence() -> None:
    cov = measure_coverage(GOLD, RANKED)
    loose = compute_metrics(cov, k=(3, 10), min_overlap=0.4)
    zero = compute_metrics(cov, k=(3, 10), min_overlap=0.0)
    assert loose["full_evidence@10"] == 1.0  # anchor3 2/5 = 0.4 meets 0.4
    assert zero["hit@3"] == 1.0  # anchor1 has 2 characters
    assert zero["full_evidence@3"] == 0.0  # anchor2 has none: 0 still needs overlap
    assert loose["recall@10"] == zero["recall@10"] == 17 / 20


def test_coverage_record_of_worked_example() -> None:
    cov = measure_coverage(GOLD, RANKED)
    assert cov.n_results == 6
    assert cov.gold_chars == 20
    assert cov.gold_pieces == (15, 5)
    assert cov.covered == (0, 0, 2, 2, 2, 15, 17)
    assert cov.retrieved == (0, 0, 12, 12, 112, 125, 130)
    assert cov.unmapped == (0, 1, 1, 1, 1, 1, 1)
    assert cov.anchor_covered[3] == (2, 0, 0)
    assert cov.anchor_covered[6] == (10, 10, 2)
    assert cov.first_overlap_rank == 2


# -- edge cases --------------------------------------------------------------------------------


def test_no_results_scores_zero_everywhere() -> None:
    values = compute_metrics(measure_coverage([DocSpan("a", 0, 10)], []), k=(1, 5))
    assert set(values.values()) == {0.0}
    assert values["precision@5"] == 0.0


def test_only_unmapped_results_take_rank_slots() -> None:
    # five unmapped results, then the gold text itself at rank 6
    ranked: list[DocSpan | None] = [None] * 5 + [DocSpan("a", 0, 10)]
    values = compute_metrics(measure_coverage([DocSpan("a", 0, 10)], ranked), k=(5, 6))
    assert values["recall@5"] == 0.0
    assert values["unmapped@5"] == 5.0
    assert values["recall@6"] == 1.0
    assert values["precision@6"] == 1.0  # precision is over mapped characters
    assert values["mrr"] == 1 / 6


def test_results_in_another_document_do_not_overlap() -> None:
    # same offsets, different document: spanchor 0.x would have called this a perfect match
    values = compute_metrics(measure_coverage([DocSpan("a", 0, 10)], [DocSpan("b", 0, 10)]), k=[1])
    assert values["recall@1"] == 0.0
    assert values["precision@1"] == 0.0  # 10 retrieved characters, none of them gold
    assert values["iou@1"] == 0 / (10 + 10)
    assert values["hit@1"] == values["mrr"] == 0.0


def test_adjacent_anchors_are_two_pieces_of_evidence() -> None:
    # G = a[0,10) (the anchors touch); a[0,6) covers 6/10 of G,
    # but anchor1 5/5 and anchor2 1/5 — judged one by one
    gold = [DocSpan("a", 0, 5), DocSpan("a", 5, 10)]
    values = compute_metrics(measure_coverage(gold, [DocSpan("a", 0, 6)]), k=[1])
    assert values["recall@1"] == 6 / 10
    assert values["hit@1"] == 1.0
    assert values["full_evidence@1"] == 0.0


def test_min_overlap_zero_still_needs_a_shared_character() -> None:
    touching = measure_coverage([DocSpan("a", 0, 10)], [DocSpan("a", 10, 20)])
    assert compute_metrics(touching, k=[1], min_overlap=0.0)["hit@1"] == 0.0


def test_min_overlap_ratio_compares_exactly() -> None:
    # 3 of 10 characters meets 0.3 (0.3 * 10 is 3.0000000000000004 in floating point)
    cov = measure_coverage([DocSpan("a", 0, 10)], [DocSpan("a", 0, 3)])
    assert compute_metrics(cov, k=[1], min_overlap=0.3)["full_evidence@1"] == 1.0


def test_duplicate_results_are_counted_once() -> None:
    gold = [DocSpan("a", 0, 10)]
    once = compute_metrics(measure_coverage(gold, [DocSpan("a", 0, 20)]), k=[2])
    twice = compute_metrics(measure_coverage(gold, [DocSpan("a", 0, 20)] * 2), k=[2])
    assert once == twice
    assert twice["precision@2"] == 10 / 20


def test_overlapping_gold_anchors_are_unioned_for_recall() -> None:
    # G = a[0,15): 15 characters, not 10 + 10
    gold = [DocSpan("a", 0, 10), DocSpan("a", 5, 15)]
    values = compute_metrics(measure_coverage(gold, [DocSpan("a", 0, 5)]), k=[1])
    assert values["recall@1"] == 5 / 15
    assert values["hit@1"] == 1.0  # anchor1 5/10 = 0.5
    assert values["full_evidence@1"] == 0.0  # anchor2 0/10


def test_perfect_ranking_scores_one() -> None:
    gold = [DocSpan("a", 0, 10), DocSpan("b", 0, 5)]
    values = compute_metrics(measure_coverage(gold, list(gold)), k=[2])
    for name in ("recall@2", "precision@2", "iou@2", "full_evidence@2", "ndcg@2", "ap@2", "mrr"):
        assert values[name] == pytest.approx(1.0), name


def test_ndcg_rewards_the_larger_piece_first() -> None:
    # ideal: 10/15 at rank 1, 5/15 at rank 2; reversed: 5/15 at rank 1, 10/15 at rank 2
    gold = [DocSpan("a", 0, 10), DocSpan("b", 0, 5)]
    values = compute_metrics(measure_coverage(gold, [gold[1], gold[0]]), k=[1, 2])
    ideal = 10 / 15 + (5 / 15) / math.log2(3)
    assert values["ndcg@1"] == pytest.approx((5 / 15) / (10 / 15))
    assert values["ndcg@2"] == pytest.approx((5 / 15 + (10 / 15) / math.log2(3)) / ideal)


def test_ndcg_is_capped_when_one_span_bridges_two_gold_pieces() -> None:
    # a[0,15) covers both pieces at rank 1: DCG@1 = 1, IDCG@1 = 5/10 -> capped at 1
    gold = [DocSpan("a", 0, 5), DocSpan("a", 10, 15)]
    values = compute_metrics(measure_coverage(gold, [DocSpan("a", 0, 15)]), k=[1])
    assert values["ndcg@1"] == 1.0
    assert values["precision@1"] == 10 / 15
    assert values["ap@1"] == 10 / 15  # precision@1 × gain 1


def test_empty_retrieved_span_is_mapped_but_covers_nothing() -> None:
    values = compute_metrics(measure_coverage([DocSpan("a", 0, 5)], [DocSpan("a", 2, 2)]), k=[1])
    assert values["recall@1"] == values["precision@1"] == values["unmapped@1"] == 0.0


def test_empty_gold_is_rejected() -> None:
    with pytest.raises(InputError, match="gold evidence is empty"):
        measure_coverage([], [DocSpan("a", 0, 5)])


def test_zero_length_anchor_is_rejected() -> None:
    with pytest.raises(InputError, match="no characters"):
        measure_coverage([DocSpan("a", 0, 5), DocSpan("a", 7, 7)], [])


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


def test_custom_metric_plugs_into_the_registry() -> None:
    def gold_chars(cov: RankedCoverage, k: int, min_overlap: float) -> float:
        return float(cov.gold_chars)

    registry = {
        **DEFAULT_METRICS,
        "gold_chars": Metric(
            "gold_chars", gold_chars, "|G|", per_k=False, whole_list=True, score=False
        ),
    }
    values = compute_metrics(measure_coverage(GOLD, RANKED), k=(5,), metrics=registry)
    assert values["gold_chars"] == 20.0
    assert values["recall@5"] == 15 / 20


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
    for i in range(1, min(k, len(ranked)) + 1):
        gain = (len(g & _chars(ranked[:i])) - len(g & _chars(ranked[: i - 1]))) / len(g)
        retrieved = len(_chars(ranked[:i]))
        dcg += gain / math.log2(i + 1)
        ap += (len(g & _chars(ranked[:i])) / retrieved if retrieved else 0.0) * gain
    pieces = sorted(
        (sum(1 for _ in run) for doc in DOCS for run in _runs(sorted(i for d, i in g if d == doc))),
        reverse=True,
    )
    idcg = sum(p / len(g) / math.log2(i + 1) for i, p in enumerate(pieces[:k], start=1))
    first = next((i for i, s in enumerate(ranked, 1) if s is not None and _chars([s]) & g), None)
    return {
        "recall": covered / len(g),
        "precision": covered / len(r) if r else 0.0,
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
