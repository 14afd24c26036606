"""The minimizer index of the documents laid end to end: :class:`MinimizerIndex`, its builder.

Every entry packs a minimizer's hash and its position into one sorted ``uint64``, so a
lookup is two binary searches; :class:`IndexBuilder` streams the text in blocks so that no
array outgrows a block, however large the corpus.

Positions address the virtual text (the documents end to end), but no k-gram and no window
crosses a document boundary: a document's entries are a function of its own text alone.
So the index of any subset of the documents (a shard) is exactly this index restricted to
those documents, positions shifted — what makes a sharded search equal one process's
(:mod:`.reduce`). A text inside one document loses nothing by it: each of its full windows
is a window of that document.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

from spanchor_core.locate.documents import CorpusTexts
from spanchor_core.locate.hashing import I64, SENTINEL, U64, KgramHasher, minimizer_mask
from spanchor_core.locate.text import code_points

__all__ = ["INDEX_BLOCK_CHARS", "IndexBuilder", "MinimizerIndex", "index_documents", "keep_on_heap"]

INDEX_BLOCK_CHARS: Final = 32_000
"""Characters per block of an index build: some forty numpy calls per block, so a block twice
:data:`~spanchor_core.locate.documents.BLOCK_CHARS` halves their overhead (a fifth of the build
in session 9) while the block's arrays (256 kB of hashes) still fit in a core's cache."""


class MinimizerIndex:
    """Minimizers of a virtual concatenated text, packed one ``uint64`` per entry.

    Each entry is ``(hash >> pos_bits) << pos_bits | position``; sorting the packed
    values sorts by hash, then position. ``pos_bits`` is just wide enough for the text
    (32 bits up to 4 G characters), so the stored hash keeps the rest — a shorter hash
    only adds false candidates, which verification discards.
    """

    def __init__(self, packed: U64, pos_bits: int) -> None:
        self.packed = packed
        self.pos_bits = pos_bits
        self._shift = np.uint64(pos_bits)
        self._low = np.uint64((1 << pos_bits) - 1)

    @property
    def nbytes(self) -> int:
        return int(self.packed.nbytes)

    def lookup(self, queries: U64) -> tuple[I64, I64]:
        """First entry and number of entries for each (full 64-bit) query hash."""
        base = (queries >> self._shift) << self._shift
        order = np.argsort(base)
        ordered = base[order]
        packed = self.packed
        size = len(packed)
        first = np.searchsorted(packed, ordered, side="left").astype(np.int64)
        # most hashes are absent or occur once: read the entries at and after ``first``, and
        # binary-search the end of the run only for hashes that occur more than once
        high = ~self._low
        count = np.zeros(len(queries), dtype=np.int64)
        at = np.flatnonzero(first < size)
        at = at[(packed[first[at]] & high) == ordered[at]]
        count[at] = 1
        at = at[first[at] + 1 < size]
        at = at[(packed[first[at] + 1] & high) == ordered[at]]
        if len(at):
            ends = np.searchsorted(packed, ordered[at] | self._low, side="right")
            count[at] = ends - first[at]
        lo = np.empty(len(queries), dtype=np.int64)
        number = np.empty(len(queries), dtype=np.int64)
        lo[order] = first
        number[order] = count
        return lo, number

    def positions(self, first: I64, count: I64) -> tuple[I64, I64]:
        """Positions of entries ``first[i] .. first[i] + count[i]``, and which ``i`` each is."""
        owner = np.repeat(np.arange(len(first), dtype=np.int64), count)
        offsets = np.arange(len(owner), dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
        values = self.packed[first[owner] + offsets] & self._low
        return values.astype(np.int64), owner


class IndexBuilder:
    """Streams code-point blocks of one long virtual text and collects its minimizers.

    Consecutive blocks overlap by ``window + k - 2`` code points, so every window is evaluated
    in some block however the text is cut into blocks (a position two blocks pick is kept once:
    the next block drops the positions it finds in the overlap again, so no second copy of all
    the entries is needed to make them unique). Each block comes with the positions where a
    document starts in it. The windows are those of each document on its own, as if every
    document stood between runs of ``window - 1`` k-grams that are never a minimum
    (``SENTINEL``): a k-gram that runs across a boundary is one of them, and more are laid
    between the documents (never into the positions). So a window never holds k-grams of two
    documents, and the windows at a document's edges, which reach into that padding, pick its
    first and last k-grams as densely as its middle ones — whatever its neighbours are.
    """

    def __init__(self, hasher: KgramHasher, window: int, total: int) -> None:
        self.hasher = hasher
        self.window = window
        self.overlap = window + hasher.k - 2
        self.pos_bits = max(32, int(total).bit_length())
        self._shift = np.uint64(self.pos_bits)
        self._carry = np.zeros(0, dtype=np.uint32)
        self._carry_start = 0
        self._bounds = np.zeros(0, dtype=np.int64)  # document starts not yet behind the carry
        # the entries, written in place into one array grown as needed (about 2 / (window + 1)
        # of the positions are minimizers): no list of parts joined into a second copy at the
        # end, and no freed parts left behind in the heap between the blocks of later phases
        self._table = np.empty(_capacity(total, window), dtype=np.uint64)
        self._filled = 0
        # positions picked in the overlap the next block hashes again: dropped from it there,
        # so the entries are unique without a second copy of them all at the end
        self._tail = np.zeros(0, dtype=np.int64)

    def feed(self, codes: npt.NDArray[np.uint32], *, starts: npt.ArrayLike) -> None:
        """Add the next block; ``starts``: the positions (in the virtual text) where the
        documents beginning in this block begin (earlier or repeated ones are harmless)."""
        data = np.concatenate([self._carry, codes]) if len(self._carry) else codes
        start = self._carry_start
        bounds = np.concatenate([self._bounds, np.asarray(starts, dtype=np.int64)])
        if len(data) >= self.overlap + 1:
            self._collect(data, start, bounds, last=False)
        keep = min(len(data), self.overlap)
        self._carry = data[len(data) - keep :].copy()
        self._carry_start = start + len(data) - keep
        # a boundary at or before the carry's start crosses no k-gram still to be hashed
        self._bounds = bounds[bounds > self._carry_start]

    def _collect(
        self, data: npt.NDArray[np.uint32], start: int, bounds: I64, *, last: bool
    ) -> None:
        """The minimizers of the full windows of ``data`` (at virtual ``start``), padded."""
        k, w = self.hasher.k, self.window
        if len(data) < k:
            return
        h = self.hasher.kgrams(data)
        rel = bounds - start
        rel = rel[(rel > 0) & (rel < len(h) + k - 1)]
        _cut_at_boundaries(h, rel, k)
        # the k - 1 k-grams across a boundary are padding already; the rest goes before the
        # next document's first k-gram (a boundary at this block's own start was padded by
        # the block before, which also holds the windows that reach into that padding)
        pads = []
        if start == 0:  # before the first document (first: the positions stay in order)
            pads.append(np.zeros(w - 1, dtype=np.int64))
        pads.append(np.repeat(rel[rel <= len(h)], max(0, w - k)))
        if last:  # after the last one
            pads.append(np.full(w - 1, len(h), dtype=np.int64))
        at = np.concatenate(pads)
        if len(at):
            picked = _padded_minimizers(h, at, w)
        elif len(h) >= w:
            picked = np.flatnonzero(minimizer_mask(h, w))
        else:
            return
        pos = picked.astype(np.int64) + start
        tail = self._tail
        if len(tail):  # both sorted: a search per position up to the tail's last one
            m = int(np.searchsorted(pos, tail[-1], side="right"))
            if m:
                at = np.minimum(np.searchsorted(tail, pos[:m]), len(tail) - 1)
                fresh = np.ones(len(pos), dtype=np.bool_)
                fresh[:m] = tail[at] != pos[:m]
                picked, pos = picked[fresh], pos[fresh]
        again = start + len(data) - self.overlap  # where the next block's hashing starts
        kept = tail[tail >= again]
        ahead = pos[int(np.searchsorted(pos, again)) :]
        # np.union1d's result, without the numpy.ma import it brings along (25 ms)
        self._tail = np.unique(np.concatenate((kept, ahead))) if len(kept) else ahead
        if len(picked):
            self._append(h, picked, pos)

    def _append(self, h: U64, picked: npt.NDArray[np.intp], pos: I64) -> None:
        """Write the entries of the hashes ``h[picked]`` at positions ``pos`` after the others."""
        stop = self._filled + len(picked)
        if stop > len(self._table):  # never a view of the table alive here: resized in place
            self._table.resize((max(stop, len(self._table) * 3 // 2 + 1024),), refcheck=False)
        out = self._table[self._filled : stop]
        np.take(h, picked, out=out)
        np.right_shift(out, self._shift, out=out)
        np.left_shift(out, self._shift, out=out)
        np.bitwise_or(out, pos.view(np.uint64), out=out)  # positions are never negative
        self._filled = stop

    def finish(self) -> MinimizerIndex:
        if len(self._carry):  # the windows that reach past the last document's end
            self._collect(self._carry, self._carry_start, self._bounds, last=True)
            self._carry = self._carry[:0]
        packed = self._table
        self._table = np.zeros(0, dtype=np.uint64)
        packed.resize((self._filled,), refcheck=False)  # the unused end given back, not copied
        packed.sort()
        return MinimizerIndex(packed, self.pos_bits)


def _capacity(total: int, window: int) -> int:
    """Entries to reserve for a text of ``total`` characters: a little more than the
    ``2 / (window + 1)`` of the positions that random text picks (pages never written to are
    never resident; repetitive text, which picks more, grows the array)."""
    return int(total) * 9 // (4 * (window + 1)) + 1024


def _cut_at_boundaries(h: U64, bounds: I64, k: int) -> None:
    """Set to ``SENTINEL`` the hash of every k-gram of ``h`` that runs across a boundary: the
    k-gram at ``i`` crosses ``b`` when ``i < b < i + k`` (``bounds`` relative to ``h``, each
    with ``0 < b < len(h) + k - 1``).

    The ``k - 1`` positions of each boundary are written directly: a block of small documents
    has a boundary every few hundred positions, and a pass over the whole block (marks, a
    cumulative sum, a mask) cost it more than the few thousand positions themselves."""
    if not len(bounds) or k < 2:
        return
    cut = (bounds - (k - 1))[:, None] + np.arange(k - 1, dtype=np.int64)
    cut = cut[(cut >= 0) & (cut < len(h))]
    h[cut] = SENTINEL


def _padded_minimizers(h: U64, at: I64, w: int) -> npt.NDArray[np.intp]:
    """The positions of ``h`` picked by :func:`minimizer_mask` of ``h`` with a ``SENTINEL``
    inserted before position ``at[j]`` for each ``j`` (``np.insert``'s convention).

    What two ``np.insert`` calls (the hashes, and a mask of the real positions) did, with the
    padded array written once: the slots of the inserted values are ``sorted(at) + j``, and
    the padded mask read at the real positions is the mask of ``h``'s own. ``at`` comes sorted
    from the builder (sorted here otherwise): a block of tiny documents pads some 300 of
    them, and sorting the pads and mapping the picks back by a binary search each cost that
    block more than its hashing did."""
    if len(at) > 1 and bool((at[1:] < at[:-1]).any()):
        at = np.sort(at)
    slots = at + np.arange(len(at), dtype=np.int64)
    padded = np.empty(len(h) + len(at), dtype=np.uint64)
    padded[slots] = SENTINEL
    real = np.ones(len(padded), dtype=np.bool_)
    real[slots] = False
    padded[real] = h
    return np.flatnonzero(minimizer_mask(padded, w)[real])


def keep_on_heap(chars: int) -> None:
    """Have the allocator keep the arrays of a block of ``chars`` code points on its heap.

    glibc maps an allocation above its mmap threshold (128 KiB until it adapts) afresh and
    unmaps it when freed, and gives the top of its heap back once more than twice that is
    free: either way every block of a build faults its pages in again (78,000 faults for a
    7 MB corpus built in a fresh process, a quarter of the build in the kernel). Both
    thresholds rise to the size of the largest mapped allocation freed, so one of about a
    block's working set (some ten arrays of 8 bytes per code point), freed at once, keeps the
    blocks' arrays on the heap, reused from block to block (2,900 faults). Elsewhere harmless.
    """
    scratch = np.empty(32 * chars + (1 << 16), dtype=np.uint8)
    del scratch


def index_documents(documents: CorpusTexts, hasher: KgramHasher, window: int) -> MinimizerIndex:
    """The minimizer index of the documents' canonical texts (windows inside documents)."""
    builder = IndexBuilder(hasher, window, documents.total)
    starts = documents.starts
    keep_on_heap(INDEX_BLOCK_CHARS)
    for offset, block in documents.blocks(INDEX_BLOCK_CHARS):
        lo, hi = np.searchsorted(starts, [offset, offset + len(block)], side="left")
        builder.feed(code_points(block), starts=starts[lo:hi])
    return builder.finish()
