"""The fuzzy stage's alignment pieces against plain one-at-a-time references: the densest run
of matching blocks, and the windows of many regions found together."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz
from rapidfuzz.distance import Editops, Indel, LCSseq, Opcodes

from spanchor_core.corpus import Corpus
from spanchor_core.locate.align import (
    _bounds,
    _may_match,
    align_normalised,
    align_span,
    align_window,
    aligned_bounds,
    extend_edges,
)
from spanchor_core.locate.context import SearchContext
from spanchor_core.locate.normalised_view import CHECKPOINT
from spanchor_core.locate.settings import LocatorSettings
from spanchor_core.locate.text import normalise_with_positions
from spanchor_core.locate.windows import normalised_points, region_windows


def _reference_bounds(chunk: str, window: str) -> tuple[int, int, int, int] | None:
    """Kadane over the matching blocks, written the obvious way (block by block, by index)."""
    blocks = [b for b in Indel.opcodes(chunk, window).as_matching_blocks() if b.size > 0]
    if not blocks:
        return None
    best, best_lo, best_hi = -1, 0, 0
    cur, cur_lo = 0, 0
    for i, blk in enumerate(blocks):
        gap = 0
        if i:
            prev = blocks[i - 1]
            gap = (blk.b - prev.b - prev.size) + (blk.a - prev.a - prev.size)
        if i == 0 or cur - gap <= 0:
            cur, cur_lo = blk.size, i
        else:
            cur += blk.size - gap
        if cur > best:
            best, best_lo, best_hi = cur, cur_lo, i
    a_lo, lo = blocks[best_lo].a, blocks[best_lo].b
    while a_lo > 0 and lo > 0 and chunk[a_lo - 1] == window[lo - 1]:
        a_lo, lo = a_lo - 1, lo - 1
    a_hi = blocks[best_hi].a + blocks[best_hi].size
    hi = blocks[best_hi].b + blocks[best_hi].size
    while a_hi < len(chunk) and hi < len(window) and chunk[a_hi] == window[hi]:
        a_hi, hi = a_hi + 1, hi + 1
    return a_lo, a_hi, lo, hi


_letters = st.text(alphabet=st.sampled_from("abcd"), max_size=80)


@settings(max_examples=300, deadline=None)
@given(
    chunk=st.text(alphabet=st.sampled_from("abcd "), max_size=300),
    window=st.text(alphabet=st.sampled_from("abcd "), max_size=300),
)
def test_the_edit_operations_give_the_opcodes_matching_blocks(chunk: str, window: str) -> None:
    # _bounds reads the blocks of Indel.editops (cheaper to make): the same as the opcodes'
    # the reference reads, also past 64 characters (several words of the bit matrix)
    def blocks(found: Editops | Opcodes) -> list[tuple[int, int, int]]:
        return [(b.a, b.b, b.size) for b in found.as_matching_blocks()]

    assert blocks(Indel.editops(chunk, window)) == blocks(Indel.opcodes(chunk, window))


@settings(max_examples=400, deadline=None)
@given(chunk=_letters, window=_letters)
def test_aligned_bounds_is_kadane_over_the_matching_blocks(chunk: str, window: str) -> None:
    assert aligned_bounds(chunk, window) == _reference_bounds(chunk, window)


@settings(max_examples=400, deadline=None)
@given(chunk=_letters, window=_letters, cut=st.integers(0, 40))
def test_the_common_subsequence_the_alignment_tells_is_the_ratios(
    chunk: str, window: str, cut: int
) -> None:
    # a window holding the chunk with some letters dropped, so that the bounds often meet
    for win in (window, window[:cut] + chunk[::2] + window[cut:]):
        found = _bounds(chunk, win)
        if found is None or found[4] < 0:
            continue
        lo, hi, common = found[2], found[3], found[4]
        assert common == LCSseq.similarity(chunk, win[lo:hi])
        size = len(chunk) + hi - lo
        assert (1.0 - (size - 2 * common) / size) * 100 == fuzz.ratio(chunk, win[lo:hi])


def test_aligned_bounds_drops_stray_matches_before_the_text() -> None:
    window = "x-y-z-" + "thequickbrownfox"
    found = aligned_bounds("xyz" + "thequickbrownfox", window)
    assert found == (3, 19, 6, 22)  # the scattered x, y, z stay outside the span


_doc = st.text(alphabet=st.sampled_from("abAB \n\tİςé."), min_size=1, max_size=200)
# repeated, so that documents hold several checkpoints
_long_doc = st.builds(lambda t, n: t * n, _doc, st.integers(1, 6))


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(_long_doc, min_size=1, max_size=4),
    picks=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 900), st.integers(1, 400), st.integers(0, 70)),
        min_size=1,
        max_size=8,
    ),
)
def test_region_windows_equal_one_region_at_a_time(
    texts: list[str], picks: list[tuple[int, int, int, int]]
) -> None:
    corpus = Corpus.from_texts({f"d{i}": t for i, t in enumerate(texts)})
    ctx = SearchContext(corpus, LocatorSettings(kgram=4, window=3))
    view = ctx.normalised_view()
    documents = ctx.documents
    regions = []
    for doc, lo, width, margin in picks:
        doc %= len(documents.texts)
        n = int(view.lengths[doc])
        if n == 0:
            continue
        lo %= n
        regions.append((doc, lo, min(n, lo + width), margin))
    if not regions:
        return
    docs, los, his, margins = (np.array([r[k] for r in regions], dtype=np.int64) for k in range(4))
    windows = region_windows(view, documents, docs, los, his, margins)
    for i, (doc, lo, hi, margin) in enumerate(regions):
        source = documents.texts[doc]
        c_lo = max(0, view.to_canonical(source, doc, lo) - margin)
        c_hi = min(len(source), view.to_canonical(source, doc, hi - 1) + 1 + margin)
        norm, kept = normalise_with_positions(source[c_lo:c_hi])
        a, b = windows.lo[i], windows.hi[i]
        assert windows.text[a:b] == norm
        assert (windows.kept[a:b] + windows.origin[i]).tolist() == (kept + c_lo).tolist()


def test_align_window_on_a_group_window_equals_align_span() -> None:
    source = "# Title\n\nSome **bold** words and a long sentence that goes on. " * 3
    corpus = Corpus.from_texts({"d": source, "e": "other text entirely " * 5})
    ctx = SearchContext(corpus, LocatorSettings())
    view = ctx.normalised_view()
    chunk = "title some bold words and a long sentence that goes on.".replace(" ", "")
    n = int(view.lengths[0])
    one = np.array([0], dtype=np.int64)
    windows = region_windows(view, ctx.documents, one, one * 0 + 5, one * 0 + n - 5, one * 0 + 20)
    a, b = windows.lo[0], windows.hi[0]
    mine = align_window(chunk, windows.text[a:b], windows.kept[a:b], windows.origin[0], 0.8)
    c_lo = max(0, view.to_canonical(source, 0, 5) - 20)
    c_hi = min(len(source), view.to_canonical(source, 0, n - 6) + 1 + 20)
    assert mine is not None
    assert mine == align_span(ctx, chunk, 0, c_lo, c_hi)


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(_long_doc | st.just(""), min_size=1, max_size=4),
    asked=st.lists(
        st.tuples(
            st.integers(0, 3),
            st.integers(-5, 260) | st.sampled_from([-(10**30), 2**40, 10**30]),
        ),
        max_size=12,
    ),
)
def test_normalised_points_equal_to_normalised_one_at_a_time(
    texts: list[str], asked: list[tuple[int, int]]
) -> None:
    corpus = Corpus.from_texts({f"d{i}": t for i, t in enumerate(texts)})
    view = SearchContext(corpus, LocatorSettings(kgram=4, window=3)).normalised_view()
    docs = [d % len(texts) for d, _ in asked]
    canonical = [c for _, c in asked]
    # and every checkpoint of every document, with its neighbours: the edges of the search
    for d in range(len(texts)):
        base = int(view.checkpoint_base[d])
        for j in range(-(-int(view.lengths[d]) // CHECKPOINT)):
            at = int(view.checkpoints[base + j])
            docs += [d, d, d]
            canonical += [at - 1, at, at + 1]
    expected = [view.to_normalised(d, c) for d, c in zip(docs, canonical, strict=True)]
    assert normalised_points(view, docs, canonical) == expected


_EDGE_TEXT = st.text(alphabet=st.sampled_from("abcd"), min_size=1, max_size=90)


@settings(max_examples=500, deadline=None)
@given(edge=_EDGE_TEXT, source=_EDGE_TEXT, cut=st.integers(0, 30))
def test_an_edge_ruled_out_has_no_partial_match(edge: str, source: str, cut: int) -> None:
    # a source holding most of the edge too, so that both answers occur
    for src in (source, source[:cut] + edge[cut:] + source[cut:]):
        if not _may_match(edge, src):
            assert fuzz.partial_ratio_alignment(edge, src, score_cutoff=80) is None


def test_a_header_edge_is_ruled_out_and_a_dropped_word_is_not() -> None:
    assert not _may_match("source:corpus/file.mdtitle:asyntheticdocument", "onbabuwi.bacatuwu" * 4)
    assert _may_match("thequickbrown", "xxthequickbrovnyy")
    # the edges extend as before: the tail matches the source after the span, the head not
    chunk = "source:corpus/file.md" + "foxjumpsoverthelazydog" + "andruns"
    window = "zzzzqqqq" + "foxjumpsoverthelazydog" + "andrunsfast"
    lo, hi = 8, 8 + 22
    assert extend_edges(chunk, window, 21, 43, lo, hi) == (lo, hi + 7)


@settings(max_examples=300, deadline=None)
@given(
    chunk=st.text(alphabet=st.sampled_from("abcd "), max_size=300),
    window=st.text(alphabet=st.sampled_from("abcd "), max_size=300),
)
def test_only_the_last_matching_block_is_empty(chunk: str, window: str) -> None:
    # _bounds drops the last block unread and reads every other as a match of some size
    blocks = [(b.a, b.b, b.size) for b in Indel.editops(chunk, window).as_matching_blocks()]
    assert blocks[-1] == (len(chunk), len(window), 0)
    assert all(size > 0 for _, _, size in blocks[:-1])


def _reference_align_window(
    chunk: str, window: str, kept: np.ndarray, origin: int, threshold: float
) -> tuple[float, int, int] | None:
    """align_window as it was before its normalised core was split out (session 12): the
    bounds, the score, the edges extended by a call whatever their lengths."""
    bounds = _bounds(chunk, window)
    if bounds is None or bounds[3] <= bounds[2]:
        return None
    a_lo, a_hi, n_lo, n_hi, common = bounds
    if common >= 0:
        size = len(chunk) + n_hi - n_lo
        score = (1.0 - (size - 2 * common) / size) * 100 / 100.0
    else:
        score = fuzz.ratio(chunk, window[n_lo:n_hi]) / 100.0
    if score < threshold - 0.1:
        return score, origin + int(kept[n_lo]), origin + int(kept[n_hi - 1]) + 1
    lo, hi = extend_edges(chunk, window, a_lo, a_hi, n_lo, n_hi)
    if (lo, hi) != (n_lo, n_hi):
        wider = fuzz.ratio(chunk, window[lo:hi]) / 100.0
        if wider >= min(score, threshold):
            score, n_lo, n_hi = wider, lo, hi
    return score, origin + int(kept[n_lo]), origin + int(kept[n_hi - 1]) + 1


_words = st.lists(st.sampled_from(["ba", "bo", "cat", "dog", "ship", "x", "#", "**"]), max_size=60)


@settings(max_examples=400, deadline=None)
@given(
    before=_words,
    text=_words,
    after=_words,
    head=_words,
    drop=st.integers(0, 6),
    threshold=st.sampled_from([0.5, 0.8, 0.95]),
)
def test_align_window_is_the_reference_through_its_normalised_core(
    before: list[str],
    text: list[str],
    after: list[str],
    head: list[str],
    drop: int,
    threshold: float,
) -> None:
    # a chunk with a head prepended and some words dropped, in a window around its source:
    # edges of every length, so that the edge test before extend_edges is taken both ways
    window = "".join(before + text + after)
    chunk = "".join(head + text[drop:])
    if not chunk or not window:
        return
    kept = np.arange(len(window), dtype=np.intp) * 2 + 1
    expected = _reference_align_window(chunk, window, kept, 7, threshold)
    assert align_window(chunk, window, kept, 7, threshold) == expected
    found = align_normalised(chunk, window, threshold)
    if expected is None:
        assert found is None
    else:
        assert found is not None
        assert (found[0], 7 + int(kept[found[1]]), 7 + int(kept[found[2] - 1]) + 1) == expected
