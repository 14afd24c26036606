"""The fuzzy stage's offset arithmetic for many texts at once: the source windows it aligns
in (:func:`region_windows`) and the normalised offsets of the places requests claim
(:func:`normalised_points`).

A region is a range ``[lo, hi)`` of one document's normalised text; its window is the
canonical text from its first character to its last, widened by a margin on each side, and
normalised (:func:`~spanchor_core.locate.text.normalise_with_positions`). One at a time, that
is two walks from a checkpoint (:meth:`NormalisedView.to_canonical`) and one normalisation per
region. Here the windows of a whole group are found together: the checkpoints at or before
``lo`` and after ``hi - 1`` bound each window from outside, those padded windows are
normalised in one pass — normalising is one code point to one code point and drops
whitespace, independent of context, so the view of windows laid end to end is their views
laid end to end — and the exact windows are cut from it by binary search. The windows are
the same, character for character, as one region at a time would give.

:func:`normalised_points` is :meth:`NormalisedView.to_normalised` for many points: one
binary search over each point's document's checkpoints, run for all points together.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from spanchor_core.locate.documents import CorpusTexts
from spanchor_core.locate.hashing import I64
from spanchor_core.locate.normalised_view import CHECKPOINT, NormalisedView
from spanchor_core.locate.text import normalise_with_positions

__all__ = ["RegionWindows", "normalised_points", "region_windows"]


@dataclass(frozen=True, slots=True)
class RegionWindows:
    """The normalised windows of some regions, cut from one normalised text.

    Window ``i`` is ``text[lo[i]:hi[i]]``; its character ``n`` (at ``kept[lo[i] + n]``) lies
    at canonical offset ``origin[i] + kept[lo[i] + n]`` of the region's document.
    """

    text: str
    kept: npt.NDArray[np.intp]
    lo: list[int]
    hi: list[int]
    origin: list[int]


def region_windows(
    view: NormalisedView,
    documents: CorpusTexts,
    docs: I64,
    lo: I64,
    hi: I64,
    margin: I64,
) -> RegionWindows:
    """The windows of the regions ``(docs[i], lo[i], hi[i])`` (``lo < hi`` within the
    document's normalised length), each widened by ``margin[i]`` canonical characters."""
    points = view.checkpoints
    base = view.checkpoint_base[docs].astype(np.int64)
    length = documents.lengths[docs].astype(np.int64)
    # the canonical offsets of the checkpoints at or before lo and hi - 1, and of the one
    # after hi - 1 (the end of the document when there is none): hi - 1 lies before it
    j_lo, r_lo = np.divmod(lo, CHECKPOINT)
    j_hi, r_hi = np.divmod(hi - 1, CHECKPOINT)
    at_lo = points[base + j_lo].astype(np.int64)
    at_hi = points[base + j_hi].astype(np.int64)
    more = (j_hi + 1) * CHECKPOINT < view.lengths[docs]
    after = np.where(more, points[base + j_hi + more].astype(np.int64), length)
    pad_lo = np.maximum(0, at_lo - margin)
    pad_hi = np.minimum(length, after + margin)
    texts = documents.texts
    pieces = [
        texts[d][a:b]
        for d, a, b in zip(docs.tolist(), pad_lo.tolist(), pad_hi.tolist(), strict=True)
    ]
    text, kept = normalise_with_positions("".join(pieces))
    # where each padded window starts in the joined text, minus its canonical start
    shift = np.zeros(len(pieces), dtype=np.int64)
    np.cumsum(pad_hi[:-1] - pad_lo[:-1], out=shift[1:])
    shift -= pad_lo
    # the canonical offsets of the characters lo and hi - 1: the r-th kept characters after
    # their checkpoints (which are kept characters themselves)
    first = kept[np.searchsorted(kept, at_lo + shift) + r_lo] - shift
    last = kept[np.searchsorted(kept, at_hi + shift) + r_hi] - shift
    start = np.maximum(0, first - margin)
    end = np.minimum(length, last + 1 + margin)
    return RegionWindows(
        text,
        kept,
        np.searchsorted(kept, start + shift).tolist(),
        np.searchsorted(kept, end + shift).tolist(),
        (-shift).tolist(),
    )


def normalised_points(view: NormalisedView, docs: list[int], canonical: list[int]) -> list[int]:
    """``view.to_normalised(docs[i], canonical[i])`` for every ``i``: the normalised offset of
    each canonical offset, rounded down to a checkpoint (offsets outside the document
    clipped to it, as there)."""
    points = view.checkpoints
    kind = np.iinfo(points.dtype)
    keys = np.array([min(max(c, kind.min), kind.max) for c in canonical], dtype=np.int64)
    where = np.array(docs, dtype=np.int64)
    first = view.checkpoint_base[where].astype(np.int64)
    lo = first.copy()
    hi = first + -(-view.lengths[where] // CHECKPOINT)
    # per point, the number of its document's checkpoints at or before its key
    # (``searchsorted(..., side="right")``), all points halving their ranges together
    while True:
        open_ = lo < hi
        if not open_.any():
            break
        mid = (lo + hi) // 2
        below = open_ & (points[np.where(open_, mid, 0)] <= keys)
        lo = np.where(below, mid + 1, lo)
        hi = np.where(open_ & ~below, mid, hi)
    out: list[int] = (np.maximum(0, lo - first - 1) * CHECKPOINT).tolist()
    return out
