"""Approximate placement of a normalised text inside a region of one document, and its score.

The region comes from the fuzzy stage; alignment uses rapidfuzz's ``Indel`` matching blocks,
keeping the densest run of blocks so that stray matches do not stretch the span, then extends
the span over the text's unaligned edges when they match the neighbouring source text (words
dropped or markup stripped near an edge must not cut the span short).
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt
from rapidfuzz import fuzz
from rapidfuzz.distance import Indel, LCSseq

from spanchor_core.locate.context import SearchContext
from spanchor_core.locate.text import normalise_with_positions

__all__ = [
    "Aligned",
    "align_normalised",
    "align_span",
    "align_window",
    "aligned_bounds",
    "extend_edges",
]

_ALIGN_CELLS: Final = 16_000_000  # largest chunk x window alignment done in one piece
_ALIGN_EDGE: Final = 2_000  # characters aligned at each end of longer texts
_EDGE_MIN: Final = 4  # shorter unaligned edges are only extended by exact characters
_EDGE_GAP: Final = 48  # source characters an edge may skip (dropped words, markup) to match
_EDGE_MAX: Final = 160  # longer unaligned edges are not text the pipeline kept: not extended
_EDGE_SLACK: Final = 0.1  # alignments this far below the threshold are not worth extending
_EDGE_SCORE: Final = 80  # how well (partial ratio, 0-100) an edge must match beside the span

Aligned = tuple[float, int, int]
"""``(score, canonical start, canonical end)`` of one alignment inside one document."""


def align_span(ctx: SearchContext, norm: str, doc: int, c_lo: int, c_hi: int) -> Aligned | None:
    """Align the normalised text ``norm`` inside canonical ``[c_lo, c_hi)`` of ``doc``.

    The score is the rapidfuzz ratio between ``norm`` and the normalised span; ``None`` when
    nothing aligns.
    """
    window, kept = normalise_with_positions(ctx.documents.texts[doc][c_lo:c_hi])
    return align_window(norm, window, kept, c_lo, ctx.settings.fuzzy_threshold)


def align_window(
    chunk: str,
    window: str,
    kept: npt.NDArray[np.intp],
    origin: int,
    threshold: float,
) -> Aligned | None:
    """:func:`align_span` once the window is normalised: ``window`` is the normalised source
    window, whose ``n``-th character lies at canonical offset ``origin + kept[n]``."""
    found = align_normalised(chunk, window, threshold)
    if found is None:
        return None
    score, n_lo, n_hi = found
    return score, origin + int(kept[n_lo]), origin + int(kept[n_hi - 1]) + 1


def align_normalised(chunk: str, window: str, threshold: float) -> Aligned | None:
    """:func:`align_window` in normalised offsets: ``(score, lo, hi)`` of the span
    ``window[lo:hi]`` (``lo < hi``), for a caller that maps many spans back to canonical
    offsets together (the fuzzy stage, one numpy gather per group)."""
    common = -1  # the ratio's common subsequence, when the alignment tells it
    if len(chunk) * len(window) <= _ALIGN_CELLS:
        found = _bounds(chunk, window)
        if found is not None:
            common = found[4]
    else:
        # Long texts: the full alignment matrix would be too big, so place the start
        # by aligning the heads and the end by aligning the tails.
        head = aligned_bounds(chunk[:_ALIGN_EDGE], window[: 2 * _ALIGN_EDGE])
        cut = max(0, len(window) - 2 * _ALIGN_EDGE)
        tail = aligned_bounds(chunk[-_ALIGN_EDGE:], window[cut:])
        if head is None or tail is None:
            found = None
        else:
            shift = len(chunk) - min(len(chunk), _ALIGN_EDGE)
            found = (head[0], shift + tail[1], head[2], cut + tail[3], -1)
    if found is None or found[3] <= found[2]:
        return None
    a_lo, a_hi, n_lo, n_hi, _ = found
    if common >= 0:
        size = len(chunk) + n_hi - n_lo  # fuzz.ratio's arithmetic (normalised Indel distance)
        score = (1.0 - (size - 2 * common) / size) * 100 / 100.0
    else:
        score = fuzz.ratio(chunk, window[n_lo:n_hi]) / 100.0
    if score < threshold - _EDGE_SLACK:  # no match to extend (the cost is not worth it)
        return score, n_lo, n_hi
    # extend_edges changes nothing unless an edge of _EDGE_MIN.._EDGE_MAX characters has
    # source text beside the span: tested here, without the call, for the many that have not
    unaligned = len(chunk) - a_hi
    if (_EDGE_MIN <= a_lo <= _EDGE_MAX and n_lo > 0) or (
        _EDGE_MIN <= unaligned <= _EDGE_MAX and n_hi < len(window)
    ):
        lo, hi = extend_edges(chunk, window, a_lo, a_hi, n_lo, n_hi)
        if lo != n_lo or hi != n_hi:
            # the edges matched the source next to the span: it covers them, even though the
            # words dropped between them lower the ratio a little (unless below the threshold)
            wider = fuzz.ratio(chunk, window[lo:hi]) / 100.0
            if wider >= min(score, threshold):
                return wider, lo, hi
    return score, n_lo, n_hi


def aligned_bounds(chunk: str, window: str) -> tuple[int, int, int, int] | None:
    """Where ``chunk`` lies in ``window`` (both normalised): ``(a_lo, a_hi, lo, hi)``, the
    aligned part ``chunk[a_lo:a_hi]`` and the span ``window[lo:hi]`` it aligns with.

    Kadane over rapidfuzz's matching blocks: matched characters minus the characters
    skipped between blocks on either side, so stray matches (a prepended header's
    letters scattered over the text before the chunk) do not stretch the span; then the
    ends grow character by character, undoing the aligner's arbitrary choice between
    equally good alignments.
    """
    found = _bounds(chunk, window)
    return None if found is None else found[:4]


def _bounds(chunk: str, window: str) -> tuple[int, int, int, int, int] | None:
    """:func:`aligned_bounds`, and the length of the longest common subsequence of ``chunk``
    and ``window[lo:hi]`` when the alignment tells it (else -1), so that their ratio needs no
    second alignment (the cost of a third of one).

    The run's blocks and the characters its ends grew by are a common subsequence of the two:
    a lower bound. The longest is at most the shorter string, and at most the characters all
    the blocks match (rapidfuzz's alignment is an optimal one of ``chunk`` and all of
    ``window``). When the bounds meet, that is its length; they do for most alignments (the
    chunk matched whole, or the window's span matched whole).
    """
    # the blocks from the edit operations (the opcodes' blocks are the same, and cost a
    # fifth more to make); each block's fields read once and by index, which costs less than
    # its properties. The gap before a block is the characters skipped on both sides since
    # the previous block ended: (a + b) - (previous a + b + 2 size).
    # the first block starts a run: with no run yet (score 0, reach 0) its gap is a + b >= 0
    best_score = -1
    a_lo = lo = a_hi = hi = 0
    cur_score = cur_a = cur_b = reach = 0
    cur_matched = best_matched = total = 0
    blocks = Indel.editops(chunk, window).as_matching_blocks()
    # the list ends with the empty block (len(chunk), len(window), 0); every other block
    # has a size (a test holds rapidfuzz to it), so the loop needs no test for empty ones
    blocks.pop()
    for blk in blocks:
        a = blk[0]
        b = blk[1]
        size = blk[2]
        total += size
        ab = a + b
        gap = ab - reach
        if cur_score <= gap:
            cur_score = cur_matched = size
            cur_a = a
            cur_b = b
        else:
            cur_score += size - gap
            cur_matched += size
        if cur_score > best_score:
            best_score, a_lo, lo, a_hi, hi = cur_score, cur_a, cur_b, a + size, b + size
            best_matched = cur_matched
        reach = ab + size + size
    if best_score < 0:  # no block: nothing aligns
        return None
    grown = a_hi - a_lo
    while a_lo > 0 and lo > 0 and chunk[a_lo - 1] == window[lo - 1]:
        a_lo -= 1
        lo -= 1
    while a_hi < len(chunk) and hi < len(window) and chunk[a_hi] == window[hi]:
        a_hi += 1
        hi += 1
    common = best_matched + (a_hi - a_lo) - grown
    if common != min(len(chunk), hi - lo, total):
        common = -1
    return a_lo, a_hi, lo, hi, common


def extend_edges(
    chunk: str, window: str, a_lo: int, a_hi: int, lo: int, hi: int
) -> tuple[int, int]:
    """Grow ``window[lo:hi]`` over the unaligned edges ``chunk[:a_lo]`` and ``chunk[a_hi:]``.

    An edge of ``_EDGE_MIN`` to ``_EDGE_MAX`` characters is aligned against the source text next to
    the span (at most ``_EDGE_GAP`` characters away); it joins the span when it matches there
    about as well as a fuzzy match must (ratio >= 0.8). A prepended header, which matches
    nothing next to the span, stays outside.
    """
    head = chunk[:a_lo]
    if _EDGE_MIN <= len(head) <= _EDGE_MAX and lo > 0:
        before = window[max(0, lo - len(head) - _EDGE_GAP) : lo]
        if _may_match(head, before):
            found = fuzz.partial_ratio_alignment(head, before, score_cutoff=_EDGE_SCORE)
            if found is not None:
                lo = lo - len(before) + found.dest_start
    tail = chunk[a_hi:]
    if _EDGE_MIN <= len(tail) <= _EDGE_MAX and hi < len(window):
        after = window[hi : hi + len(tail) + _EDGE_GAP]
        if _may_match(tail, after):
            found = fuzz.partial_ratio_alignment(tail, after, score_cutoff=_EDGE_SCORE)
            if found is not None:
                hi = hi + found.dest_end
    return lo, hi


def _may_match(edge: str, source: str) -> bool:
    """False when ``fuzz.partial_ratio_alignment(edge, source)`` is sure to score under
    ``_EDGE_SCORE``, from the longest common subsequence ``m`` of the two alone (a fifth of
    the cost of the partial alignment; a prepended header is the common case).

    The partial ratio is the ratio of the shorter string ``x`` (either, when of one length)
    with a substring ``y`` of the other: ``200 c / (|x| + |y|)`` for their common subsequence
    ``c``, and ``c <= min(m, |y|)``. Over ``|y|`` that is largest at ``|y| = m``, so the score
    is at most ``200 m / (|x| + m)``; below ``_EDGE_SCORE - 1`` (one point of margin, far more
    than rounding), there is no match.
    """
    m = LCSseq.similarity(edge, source)
    shorter = min(len(edge), len(source))
    return 200 * m >= (_EDGE_SCORE - 1) * (shorter + m)
