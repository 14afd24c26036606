"""Approximate placement of a normalised text inside a region of one document, and its score.

The region comes from the fuzzy stage; alignment uses rapidfuzz's ``Indel`` matching blocks,
keeping the densest run of blocks so that stray matches do not stretch the span.
"""

from __future__ import annotations

from typing import Final

import numpy as np
from rapidfuzz import fuzz
from rapidfuzz.distance import Indel

from spanchor_core.locate.context import SearchContext
from spanchor_core.locate.model import Location, MatchStatus
from spanchor_core.locate.resolve import Pending, choose, unmapped
from spanchor_core.locate.text import code_points, fold, non_space_mask

__all__ = ["align_in_region", "aligned_bounds"]

_ALIGN_CELLS: Final = 16_000_000  # largest chunk x window alignment done in one piece
_ALIGN_EDGE: Final = 2_000  # characters aligned at each end of longer texts


def align_in_region(ctx: SearchContext, job: Pending, doc: int, c_lo: int, c_hi: int) -> Location:
    """Align the normalised text inside canonical ``[c_lo, c_hi)`` of ``doc``; score it."""
    window = ctx.documents.texts[doc][c_lo:c_hi]
    codes = code_points(fold(window))
    kept = np.flatnonzero(non_space_mask(codes))
    norm_window = codes[kept].tobytes().decode("utf-32-le", "surrogatepass")
    chunk = job.norm
    if len(chunk) * len(norm_window) <= _ALIGN_CELLS:
        bounds = aligned_bounds(chunk, norm_window)
    else:
        # Long texts: the full alignment matrix would be too big, so place the start
        # by aligning the heads and the end by aligning the tails.
        head = aligned_bounds(chunk[:_ALIGN_EDGE], norm_window[: 2 * _ALIGN_EDGE])
        cut = max(0, len(norm_window) - 2 * _ALIGN_EDGE)
        tail = aligned_bounds(chunk[-_ALIGN_EDGE:], norm_window[cut:])
        bounds = None if head is None or tail is None else (head[0], cut + tail[1])
    if bounds is None or bounds[1] <= bounds[0]:
        return unmapped(job, "no alignment with the candidate region")
    n_lo, n_hi = bounds
    score = fuzz.ratio(job.norm, norm_window[n_lo:n_hi]) / 100.0
    start = c_lo + int(kept[n_lo])
    end = c_lo + int(kept[n_hi - 1]) + 1
    threshold = ctx.settings.fuzzy_threshold
    if score < threshold:
        return unmapped(
            job,
            f"best approximate match {ctx.documents.ids[doc]}[{start}:{end}] scored "
            f"{score:.3f}, below the threshold {threshold}",
        )
    return choose(ctx, job, [(doc, start, end)], MatchStatus.FUZZY, score, "approximate text")


def aligned_bounds(chunk: str, window: str) -> tuple[int, int] | None:
    """Where ``chunk`` lies in ``window`` (both normalised), as ``[lo, hi)`` of ``window``.

    Kadane over rapidfuzz's matching blocks: matched characters minus the characters
    skipped between blocks on either side, so stray matches (a prepended header's
    letters scattered over the text before the chunk) do not stretch the span; then the
    ends grow character by character, undoing the aligner's arbitrary choice between
    equally good alignments.
    """
    blocks = [b for b in Indel.opcodes(chunk, window).as_matching_blocks() if b.size > 0]
    if not blocks:
        return None
    best_score, best_lo, best_hi = -1, 0, 0
    cur_score, cur_lo = 0, 0
    for i, blk in enumerate(blocks):
        gap = 0
        if i:
            prev = blocks[i - 1]
            gap = (blk.b - prev.b - prev.size) + (blk.a - prev.a - prev.size)
        if i == 0 or cur_score - gap <= 0:
            cur_score, cur_lo = blk.size, i
        else:
            cur_score += blk.size - gap
        if cur_score > best_score:
            best_score, best_lo, best_hi = cur_score, cur_lo, i
    a_lo, lo = blocks[best_lo].a, blocks[best_lo].b
    while a_lo > 0 and lo > 0 and chunk[a_lo - 1] == window[lo - 1]:
        a_lo -= 1
        lo -= 1
    a_hi = blocks[best_hi].a + blocks[best_hi].size
    hi = blocks[best_hi].b + blocks[best_hi].size
    while a_hi < len(chunk) and hi < len(window) and chunk[a_hi] == window[hi]:
        a_hi += 1
        hi += 1
    return lo, hi
