"""Frequent texts confirmed copy by copy without comparing each copy: :class:`CopyMap`.

A text inside boilerplate (a header every document repeats) occurs about once per document;
confirming each of its candidates with ``str.startswith`` compared the whole text a thousand
times, 4.5 GB of characters per 100,000 results on issue 16's boilerplate row. But the
candidates of such a text are the entries of one frequent minimizer, and the run asks about
that minimizer again and again (every chunk of the header that picks it). So, once per
minimizer, :class:`CopyMap` measures how far the text around each entry agrees with the text
around one *reference* entry (characters compared up to a cap, on each side, inside each
document). A text whose minimizer sits ``off`` characters into it then needs one comparison,
at the reference:

* if it occurs there, it occurs exactly at the entries whose agreement covers it (``off``
  characters back, ``len - off`` forward): the same characters as at the reference; at no
  other entry, whose text differs from the reference's somewhere over that range;
* if not, it occurs at none of the entries that agree over that range, and the others are
  confirmed one by one as before.

Both are exact — characters compared, no hash trusted — so the occurrences are the ones the
one-by-one confirmation finds.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Final

import numpy as np

from spanchor_core.locate.documents import CorpusTexts, Occurrence
from spanchor_core.locate.hashing import I64
from spanchor_core.locate.index import MinimizerIndex

__all__ = ["CopyMap"]

_LEFT_ROOM: Final = 256  # context weighed when the reference entry is chosen
_RIGHT_ROOM: Final = 4096
_REFERENCES: Final = 5  # entries tried as the reference


@dataclass(slots=True)
class _Copies:
    """The entries of one minimizer and what is known of their agreement with the reference:
    each agrees over at least ``*_lo`` and at most ``*_hi`` characters (backward, forward)."""

    docs: I64  # document of each entry
    local: I64  # offset of each entry in its document
    ends: I64  # length of each entry's document
    left_lo: I64
    left_hi: I64
    right_lo: I64
    right_hi: I64
    ref: int  # the reference entry


class CopyMap:
    """Agreement of the entries of frequent minimizers of one exact index, learnt as the texts
    ask and kept (a few integers per entry)."""

    def __init__(self, documents: CorpusTexts, index: MinimizerIndex) -> None:
        self.documents = documents
        self.index = index
        self._copies: dict[int, _Copies] = {}  # by the minimizer's first entry

    def occurrences(
        self, first: int, count: int, texts: Sequence[str], offsets: Sequence[int]
    ) -> list[list[Occurrence]]:
        """Every occurrence of each text that the minimizer of entries ``first .. first +
        count`` finds, ``offsets[i]`` characters into ``texts[i]``, in position order."""
        if not count:  # a minimizer of the text that the corpus never has: no occurrence
            return [[] for _ in texts]
        copies = self._copies.get(first)
        if copies is None:
            copies = self._copies[first] = self._entries(first, count)
        # the widths the texts need, middle first: an entry agreeing over a width agrees over
        # every narrower one, one disagreeing over it over no wider one, so each entry is
        # compared a few times (log of the number of widths), not once per text
        for width in _middle_first(sorted(set(offsets))):
            self._learn(copies, width, backward=True)
        ahead = {len(t) - o for t, o in zip(texts, offsets, strict=True)}
        for width in _middle_first(sorted(ahead)):
            self._learn(copies, width)
        return [self._one(copies, text, off) for text, off in zip(texts, offsets, strict=True)]

    def _one(self, copies: _Copies, text: str, off: int) -> list[Occurrence]:
        size = len(text)
        starts = copies.local - off
        inside = (starts >= 0) & (starts + size <= copies.ends)
        texts = self.documents.texts
        r = copies.ref
        agree = (copies.left_lo >= off) & (copies.right_lo >= size - off)
        if inside[r] and texts[int(copies.docs[r])].startswith(text, int(starts[r])):
            match = agree
        else:  # confirmed one by one, but none of the entries that agree with the reference
            check = np.flatnonzero(inside & ~agree)
            docs, local = copies.docs[check].tolist(), starts[check].tolist()
            same = map(str.startswith, map(texts.__getitem__, docs), repeat(text), local)
            match = np.zeros(len(starts), dtype=np.bool_)
            match[check[np.fromiter(same, dtype=np.bool_, count=len(check))]] = True
        hit = starts[match]
        return list(
            zip(copies.docs[match].tolist(), hit.tolist(), (hit + size).tolist(), strict=True)
        )

    def _entries(self, first: int, count: int) -> _Copies:
        """The entries of one minimizer and their reference, nothing known of their agreement
        but what the documents' bounds allow."""
        pos, _ = self.index.positions(
            np.array([first], dtype=np.int64), np.array([count], dtype=np.int64)
        )
        documents = self.documents
        docs = np.searchsorted(documents.ends, pos, side="right").astype(np.int64)
        docs = np.minimum(docs, len(documents.ends) - 1)
        local = pos - documents.starts[docs]
        ends = documents.lengths[docs]
        ref = self._reference(docs, local, ends)
        at, after = int(local[ref]), int(ends[ref] - local[ref])
        zero = np.zeros(len(pos), dtype=np.int64)
        left_hi = np.minimum(local, at)
        right_hi = np.minimum(ends - local, after)
        return _Copies(docs, local, ends, zero, left_hi, zero.copy(), right_hi, ref)

    def _reference(self, docs: I64, local: I64, ends: I64) -> int:
        """The entry to compare the others with: of a few spread over the entries, the one
        whose surroundings agree longest with those of the others (a copy as most documents
        have it, not a near-copy with a word changed), more context first on a tie."""
        room = np.minimum(local, _LEFT_ROOM) + np.minimum(ends - local, _RIGHT_ROOM)
        picks = np.unique(np.linspace(0, len(docs) - 1, _REFERENCES).astype(np.int64)).tolist()
        if len(picks) < 3:
            return int(np.argmax(room))
        texts = self.documents.texts
        score = dict.fromkeys(picks, 0)
        for a, b in itertools.combinations(picks, 2):
            sa, sb = texts[int(docs[a])], texts[int(docs[b])]
            ia, ib = int(local[a]), int(local[b])
            back = min(ia, ib, _LEFT_ROOM)
            ahead = min(len(sa) - ia, len(sb) - ib, _RIGHT_ROOM)
            same = _common_suffix(sa, ia, sb, ib, back) + _common_prefix(sa, ia, sb, ib, ahead)
            score[a] += same
            score[b] += same
        best: int = max(picks, key=lambda i: (score[i], int(room[i]), -i))
        return best

    def _learn(self, copies: _Copies, width: int, *, backward: bool = False) -> None:
        """Settle, for every entry, whether it agrees with the reference over ``width``
        characters backward (forward): one C-level pass of ``str.endswith`` / ``str.startswith``
        over the entries not known either way."""
        if backward:
            lo, hi = copies.left_lo, copies.left_hi
        else:
            lo, hi = copies.right_lo, copies.right_hi
        rows = np.flatnonzero((lo < width) & (width <= hi))
        if not len(rows):
            return
        texts = self.documents.texts
        sources = list(map(texts.__getitem__, copies.docs[rows].tolist()))
        ref = texts[int(copies.docs[copies.ref])]
        at = int(copies.local[copies.ref])
        local = copies.local[rows].tolist()
        if backward:
            piece = ref[at - width : at]
            same = map(str.endswith, sources, repeat(piece), repeat(0), local)
        else:
            piece = ref[at : at + width]
            same = map(str.startswith, sources, repeat(piece), local)
        ok = np.fromiter(same, dtype=np.bool_, count=len(rows))
        lo[rows[ok]] = width
        hi[rows[~ok]] = width - 1


def _middle_first(widths: list[int]) -> list[int]:
    """``widths`` (sorted) in the order of a binary search over them: the middle one, then the
    middles of each half, and so on."""
    out: list[int] = []
    spans = [(0, len(widths))]
    while spans:
        following: list[tuple[int, int]] = []
        for lo, hi in spans:
            if lo < hi:
                mid = (lo + hi) // 2
                out.append(widths[mid])
                following += [(lo, mid), (mid + 1, hi)]
        spans = following
    return out


def _common_prefix(a: str, i: int, b: str, j: int, most: int) -> int:
    """The length of the common prefix of ``a[i:]`` and ``b[j:]``, at most ``most``."""
    lo, hi = 0, most  # equal over lo characters, not over more than hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[i : i + mid] == b[j : j + mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, i: int, b: str, j: int, most: int) -> int:
    """The length of the common suffix of ``a[:i]`` and ``b[:j]``, at most ``most``."""
    lo, hi = 0, most
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[i - mid : i] == b[j - mid : j]:
            lo = mid
        else:
            hi = mid - 1
    return lo
