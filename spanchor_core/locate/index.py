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

import numpy as np
import numpy.typing as npt

from spanchor_core.locate.documents import CorpusTexts
from spanchor_core.locate.hashing import I64, U64, KgramHasher, minimizer_mask
from spanchor_core.locate.text import code_points

__all__ = ["IndexBuilder", "MinimizerIndex", "index_documents"]


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

    Consecutive blocks overlap by ``window + k - 2`` code points, so every window is
    evaluated exactly once however the text is cut into blocks. Each block comes with the
    positions where a document starts in it: a k-gram that runs across such a boundary gets
    the hash 0, which :func:`~spanchor_core.locate.hashing.minimizer_mask` treats as "no
    window here" — every window holding it selects nothing, and it is never selected — so
    only windows inside one document pick minimizers.
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
        self._last = -1
        self._packed: list[U64] = []

    def feed(self, codes: npt.NDArray[np.uint32], *, starts: npt.ArrayLike) -> None:
        """Add the next block; ``starts``: the positions (in the virtual text) where the
        documents beginning in this block begin (earlier or repeated ones are harmless)."""
        data = np.concatenate([self._carry, codes]) if len(self._carry) else codes
        start = self._carry_start
        bounds = np.concatenate([self._bounds, np.asarray(starts, dtype=np.int64)])
        if len(data) >= self.overlap + 1:
            h = self.hasher.kgrams(data)
            _cut_at_boundaries(h, bounds - start, self.hasher.k)
            picked = np.flatnonzero(minimizer_mask(h, self.window))
            pos = picked.astype(np.int64) + start
            fresh = pos > self._last
            if fresh.any():
                keys = (h[picked[fresh]] >> self._shift) << self._shift
                self._packed.append(keys | pos[fresh].astype(np.uint64))
                self._last = int(pos[fresh][-1])
        keep = min(len(data), self.overlap)
        self._carry = data[len(data) - keep :].copy()
        self._carry_start = start + len(data) - keep
        # a boundary at or before the carry's start crosses no k-gram still to be hashed
        self._bounds = bounds[bounds > self._carry_start]

    def finish(self) -> MinimizerIndex:
        packed = np.concatenate(self._packed) if self._packed else np.zeros(0, np.uint64)
        self._packed.clear()
        packed.sort()
        return MinimizerIndex(packed, self.pos_bits)


def _cut_at_boundaries(h: U64, bounds: I64, k: int) -> None:
    """Set to 0 the hash of every k-gram of ``h`` that runs across a boundary: the k-gram at
    ``i`` crosses ``b`` when ``i < b < i + k`` (``bounds`` relative to ``h``'s first k-gram)."""
    bounds = bounds[(bounds > 0) & (bounds < len(h) + k - 1)]
    if not len(bounds):
        return
    marks = np.zeros(len(h) + 1, dtype=np.int64)
    np.add.at(marks, np.maximum(bounds - k + 1, 0), 1)
    np.add.at(marks, np.minimum(bounds, len(h)), -1)
    h[np.cumsum(marks[:-1]) > 0] = 0


def index_documents(documents: CorpusTexts, hasher: KgramHasher, window: int) -> MinimizerIndex:
    """The minimizer index of the documents' canonical texts (windows inside documents)."""
    builder = IndexBuilder(hasher, window, documents.total)
    starts = documents.starts
    for offset, block in documents.blocks():
        lo, hi = np.searchsorted(starts, [offset, offset + len(block)], side="left")
        builder.feed(code_points(block), starts=starts[lo:hi])
    return builder.finish()
