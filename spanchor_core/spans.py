"""Half-open character intervals ``[start, end)`` and their algebra.

Spans are plain ``(start, end)`` tuples on the hot path; a :class:`DocSpan` adds the
document id, because overlap only ever counts within one document.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

__all__ = [
    "DocSpan",
    "Span",
    "group_by_document",
    "intersect_spans",
    "intersection_length",
    "overlap_length",
    "subtract_spans",
    "total_length",
    "union_spans",
]

Span = tuple[int, int]


class DocSpan(NamedTuple):
    """A span of one document's canonical text."""

    document_id: str
    start: int
    end: int

    @property
    def length(self) -> int:
        return max(0, self.end - self.start)


def overlap_length(a: Span, b: Span) -> int:
    """Characters shared by two spans (0 when they only touch)."""
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def union_spans(spans: Iterable[Span]) -> list[Span]:
    """Sorted, disjoint, non-touching spans covering exactly the characters of ``spans``.

    Empty and inverted spans cover nothing and are dropped; touching spans merge,
    so ``[(0, 2), (2, 4)]`` becomes ``[(0, 4)]``.
    """
    ordered = sorted((s, e) for s, e in spans if e > s)
    merged: list[Span] = []
    for start, end in ordered:
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def total_length(union: Sequence[Span]) -> int:
    """Characters covered by an already unioned list of spans."""
    return sum(end - start for start, end in union)


def intersection_length(a: Sequence[Span], b: Sequence[Span]) -> int:
    """Characters covered by both of two *unioned* span lists (linear merge)."""
    i = j = shared = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if hi > lo:
            shared += hi - lo
        if a[i][1] <= b[j][1]:
            i += 1
        else:
            j += 1
    return shared


def intersect_spans(a: Sequence[Span], b: Sequence[Span]) -> list[Span]:
    """The characters covered by both of two *unioned* span lists, as spans (linear merge)."""
    out: list[Span] = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            out.append((lo, hi))
        if a[i][1] <= b[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract_spans(a: Sequence[Span], b: Sequence[Span]) -> list[Span]:
    """The parts of unioned ``a`` that unioned ``b`` does not cover (linear merge)."""
    out: list[Span] = []
    j = 0
    for start, end in a:
        cursor = start
        while j < len(b) and b[j][1] <= cursor:
            j += 1
        k = j
        while k < len(b) and b[k][0] < end:
            if b[k][0] > cursor:
                out.append((cursor, b[k][0]))
            cursor = max(cursor, b[k][1])
            k += 1
        if cursor < end:
            out.append((cursor, end))
    return out


def group_by_document(spans: Iterable[DocSpan]) -> Mapping[str, list[Span]]:
    """Unioned spans per document id."""
    raw: dict[str, list[Span]] = {}
    for span in spans:
        raw.setdefault(span.document_id, []).append((span.start, span.end))
    return {doc: union_spans(items) for doc, items in raw.items()}
