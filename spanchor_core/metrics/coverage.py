"""One pass over a ranked list: :class:`RankedCoverage`, what the top ``i`` results cover.

Per-document unions of gold and retrieved characters, grown rank by rank, so that every metric
at every K is a lookup afterwards (see :mod:`spanchor_core.metrics` for the conventions).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from spanchor_core.errors import InputError
from spanchor_core.spans import (
    DocSpan,
    Span,
    intersection_length,
    subtract_spans,
    union_spans,
)

__all__ = ["RankedCoverage", "measure_coverage"]


@dataclass(frozen=True, slots=True)
class RankedCoverage:
    """What the top ``i`` results cover, for every ``i`` from 0 to the length of the list.

    Index ``i`` of each tuple is the state after rank ``i`` (index 0: nothing retrieved yet).
    Built by :func:`measure_coverage`; metrics read it with :meth:`at`-style lookups.
    """

    gold_chars: int
    """``|G|``: characters in the per-document union of the gold anchors."""
    anchor_lengths: tuple[int, ...]
    """Length of each gold anchor, in the order given."""
    gold_pieces: tuple[int, ...]
    """Lengths of the maximal contiguous pieces of ``G``, largest first (the ideal ranking)."""
    covered: tuple[int, ...]
    """``|G ∩ R_i|``."""
    retrieved: tuple[int, ...]
    """``|R_i|``."""
    anchor_covered: tuple[tuple[int, ...], ...]
    """``|a_j ∩ R_i|`` for each anchor ``j``."""
    unmapped: tuple[int, ...]
    """Results without a span among the top ``i``."""
    adding: tuple[int, ...]
    """Mapped results among the top ``i`` that added characters to ``R`` (not duplicates)."""
    first_overlap_rank: int | None
    """First rank whose span shares a character with ``G`` (``None``: no such rank)."""
    dcg: tuple[float, ...]
    """``DCG@i`` (gain normalised by ``|G|``)."""
    ap: tuple[float, ...]
    """``AP@i``."""

    @property
    def n_results(self) -> int:
        """Length of the ranked list, unmapped results included."""
        return len(self.covered) - 1

    def index(self, k: int) -> int:
        """Position in the tuples for cutoff ``k`` (``k`` past the list means the whole list)."""
        return min(k, len(self.covered) - 1)  # n_results, inlined: called per metric per K

    def ideal_dcg(self, k: int) -> float:
        """``IDCG@k``: the gold pieces at ranks ``1..k``, largest first."""
        return sum(
            length / self.gold_chars / math.log2(rank + 1)
            for rank, length in enumerate(self.gold_pieces[:k], start=1)
        )


def _validate_gold(gold: Sequence[DocSpan]) -> None:
    if not gold:
        raise InputError(
            "gold evidence is empty", hint="every gold query needs at least one anchor"
        )
    for anchor in gold:
        if anchor.end <= anchor.start:
            raise InputError(
                f"gold anchor {anchor.document_id}[{anchor.start}:{anchor.end}] has no characters",
                hint="anchors must satisfy start < end",
            )


def measure_coverage(gold: Sequence[DocSpan], ranked: Sequence[DocSpan | None]) -> RankedCoverage:
    """Walk ``ranked`` once and record what the top ``i`` results cover, for every ``i``.

    ``ranked[0]`` is rank 1; ``None`` is a result that could not be mapped (it keeps its slot).
    Per-document unions grow incrementally: each new span only adds the characters it does not
    share with what was retrieved before, so the walk costs about ``O(n × (n + m))`` for ``n``
    results and ``m`` anchors, not a fresh union per K.
    """
    _validate_gold(gold)
    gold_by_doc: dict[str, list[Span]] = {}
    anchors_by_doc: dict[str, list[tuple[int, Span]]] = {}
    for position, anchor in enumerate(gold):
        gold_by_doc.setdefault(anchor.document_id, []).append((anchor.start, anchor.end))
        anchors_by_doc.setdefault(anchor.document_id, []).append(
            (position, (anchor.start, anchor.end))
        )
    gold_union = {doc: union_spans(spans) for doc, spans in gold_by_doc.items()}
    pieces = sorted(
        (end - start for spans in gold_union.values() for start, end in spans), reverse=True
    )
    gold_chars = sum(pieces)

    retrieved_union: dict[str, list[Span]] = {}
    anchor_state = [0] * len(gold)
    covered, retrieved, unmapped, adding = [0], [0], [0], [0]
    anchor_covered = [tuple(anchor_state)]
    dcg, ap = [0.0], [0.0]
    first_overlap: int | None = None

    for rank, item in enumerate(ranked, start=1):
        new_gold = new_retrieved = 0
        missing = 0
        if item is None:
            missing = 1
        elif item.end > item.start:
            span = (item.start, item.end)
            current = retrieved_union.get(item.document_id)
            if current is None:  # first span in its document: all of it is new
                gaps = [span]
                new_retrieved = item.end - item.start
            else:
                gaps = subtract_spans([span], current)
                new_retrieved = sum(end - start for start, end in gaps)
            doc_gold = gold_union.get(item.document_id)
            if doc_gold is not None:
                if first_overlap is None and intersection_length([span], doc_gold) > 0:
                    first_overlap = rank
                new_gold = intersection_length(gaps, doc_gold)
                for position, anchor_span in anchors_by_doc[item.document_id]:
                    anchor_state[position] += intersection_length(gaps, [anchor_span])
            if current is None:
                retrieved_union[item.document_id] = gaps
            elif new_retrieved:
                retrieved_union[item.document_id] = union_spans([*current, span])
        covered.append(covered[-1] + new_gold)
        retrieved.append(retrieved[-1] + new_retrieved)
        unmapped.append(unmapped[-1] + missing)
        adding.append(adding[-1] + (new_retrieved > 0))
        anchor_covered.append(tuple(anchor_state))
        gain = new_gold / gold_chars
        dcg.append(dcg[-1] + gain / math.log2(rank + 1))
        # precision@rank (see the registry): each unmapped result keeps its slot, counted as
        # a result of the average size that covers no gold
        precision_here = (
            covered[-1] / retrieved[-1] * adding[-1] / (adding[-1] + unmapped[-1])
            if retrieved[-1]
            else 0.0
        )
        ap.append(ap[-1] + precision_here * gain)

    return RankedCoverage(
        gold_chars=gold_chars,
        anchor_lengths=tuple(anchor.end - anchor.start for anchor in gold),
        gold_pieces=tuple(pieces),
        covered=tuple(covered),
        retrieved=tuple(retrieved),
        anchor_covered=tuple(anchor_covered),
        unmapped=tuple(unmapped),
        adding=tuple(adding),
        first_overlap_rank=first_overlap,
        dcg=tuple(dcg),
        ap=tuple(ap),
    )
