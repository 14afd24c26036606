"""Lookups in a large sorted ``uint64`` table without a binary search over all of it.

:class:`Buckets` records where each run of entries sharing their top bits starts (about eight
entries a run), so a key's place is its run's start plus a search of a few entries, done for
every key at once in numpy. ``np.searchsorted`` over the 8 M entries of a 50 MB corpus's
sampled index costs about 0.5 us a key, most of it cache misses of the 23 halvings (three
million keys per 100,000 short results); here a key reads its run's bounds and one or two
cache lines of the table. The answers are those of ``np.searchsorted``, exactly.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from spanchor_core.locate.hashing import I64, U64

__all__ = ["Buckets"]

_PER_BUCKET: Final = 8  # entries per run on average (4 bytes of starts per run)
_MAX_BITS: Final = 28


class Buckets:
    """The start of every run of ``table`` entries sharing their top ``bits`` bits."""

    def __init__(self, table: U64) -> None:
        """``table`` sorted ascending (kept, not copied)."""
        self.table = table
        bits = min(max(1, (len(table) // _PER_BUCKET).bit_length()), _MAX_BITS)
        self._shift = np.uint64(64 - bits)
        # one sorted search per run (no temporary the size of the table), half the memory
        # where the table allows it
        heads = np.arange(1 << bits, dtype=np.uint64) << self._shift
        starts = np.empty((1 << bits) + 1, dtype=np.int32 if len(table) < 2**31 else np.int64)
        starts[:-1] = np.searchsorted(table, heads)
        starts[-1] = len(table)
        self._starts = starts

    @property
    def nbytes(self) -> int:
        return int(self._starts.nbytes)

    def search(self, keys: U64, *, right: bool = False) -> I64:
        """``np.searchsorted(table, keys, side="right" if right else "left")``, keys in any
        order."""
        bucket = (keys >> self._shift).astype(np.intp)
        lo = self._starts[bucket].astype(np.int64)
        hi = self._starts[bucket + 1].astype(np.int64)
        active = np.flatnonzero(lo < hi)
        table = self.table
        while len(active):  # halve every open range at once; a range that closes drops out
            a, b = lo[active], hi[active]
            mid = (a + b) >> 1
            values, wanted = table[mid], keys[active]
            below = values <= wanted if right else values < wanted
            a = np.where(below, mid + 1, a)
            b = np.where(below, b, mid)
            lo[active], hi[active] = a, b
            active = active[a < b]
        return lo

    def lookup(self, queries: U64, pos_bits: int) -> tuple[I64, I64]:
        """:meth:`~spanchor_core.locate.index.MinimizerIndex.lookup` of a table whose entries
        are ``hash`` with its low ``pos_bits`` bits replaced by a position: the first entry and
        the number of entries of each query hash."""
        shift = np.uint64(pos_bits)
        low = np.uint64((1 << pos_bits) - 1)
        base = (queries >> shift) << shift
        table = self.table
        size = len(table)
        first = self.search(base)
        # most hashes are absent or occur once: search for the end of the run only where the
        # entry after the first has the hash too
        count = np.zeros(len(queries), dtype=np.int64)
        at = np.flatnonzero(first < size)
        at = at[(table[first[at]] & ~low) == base[at]]
        count[at] = 1
        at = at[first[at] + 1 < size]
        at = at[(table[first[at] + 1] & ~low) == base[at]]
        if len(at):
            count[at] = self.search(base[at] | low, right=True) - first[at]
        return first, count
