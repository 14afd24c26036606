"""Span metrics by hand: the worked example and edge cases, values written as their arithmetic."""

from __future__ import annotations

import math

import pytest

from spanchor_core.errors import InputError
from spanchor_core.metrics import (
    DEFAULT_METRICS,
    Metric,
    RankedCoverage,
    compute_metrics,
    measure_coverage,
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
        # precision × D / (D + U): the unmapped rank-1 result keeps its slot, counted at the
        # average size of the D results that added characters (the duplicate adds none)
        ("precision@3", 2 / 12 * 1 / 2),
        ("precision@5", 15 / 125 * 3 / 4),
        ("precision@10", 17 / 130 * 4 / 5),  # K past the list: the whole list
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
        # precision@i × gain at rank i; precision@2 = 2/12 × 1/2 (rank 1 unmapped),
        # precision@5 = 15/125 × 3/4, precision@6 = 17/130 × 4/5
        ("ap@3", (2 / 12 / 2) * (2 / 20)),
        ("ap@5", (2 / 12 / 2) * (2 / 20) + (15 / 125 * 3 / 4) * (13 / 20)),
        (
            "ap@10",
            (2 / 12 / 2) * (2 / 20)
            + (15 / 125 * 3 / 4) * (13 / 20)
            + (17 / 130 * 4 / 5) * (2 / 20),
        ),
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
    assert cov.adding == (0, 0, 1, 1, 2, 3, 4)  # rank 3 duplicates rank 2
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
    # all 10 mapped characters are gold, but 5 of the 6 results were unmapped: 1 × 1/6
    assert values["precision@6"] == pytest.approx(1 / 6)
    assert values["ap@6"] == pytest.approx(1 / 6)  # precision@6 × gain 1
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


def test_unmapped_result_keeps_its_rank_slot_in_ap_and_precision() -> None:
    # [unmapped, gold]: like an irrelevant result above a relevant one, ap@2 = 1/2 × 1 = 0.5
    values = compute_metrics(
        measure_coverage([DocSpan("a", 0, 10)], [None, DocSpan("a", 0, 10)]), k=(2,)
    )
    assert values["precision@2"] == 0.5  # 10/10 mapped characters are gold × 1 of 2 mapped
    assert values["ap@2"] == 0.5
    assert values["recall@2"] == values["hit@2"] == 1.0
    # the gold first and an unmapped result after it: ap@2 keeps 1.0 (gain came at rank 1)
    after = compute_metrics(
        measure_coverage([DocSpan("a", 0, 10)], [DocSpan("a", 0, 10), None]), k=(2,)
    )
    assert after["ap@2"] == 1.0
    assert after["precision@2"] == 0.5
