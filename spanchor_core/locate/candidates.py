"""Query side of the minimizer index: the minimizers of retrieved texts, and where they point.

Texts are hashed in batches of padded rows (one numpy pass per batch); any full-window
minimizer of a text yields every place it can occur, to be confirmed by the caller, so the
first window's is used unless it is frequent (then the rarest of the text's start).

A batch's rows are hashed and their minimizers chosen as one flat array (:func:`_minimizers`):
numpy runs a 1-D operation in one inner loop, where the same operation on a 2-D slice runs one
loop per row — two to three times the cost for rows of a few hundred hashes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

import numpy as np

from spanchor_core.locate.hashing import I64, SENTINEL, U64, KgramHasher
from spanchor_core.locate.index import MinimizerIndex
from spanchor_core.locate.settings import LocatorSettings
from spanchor_core.locate.text import code_points

__all__ = ["Candidates", "MinimizerSearch"]

_BATCH_CHARS: Final = 16_000  # code points per query batch: arrays stay under the mmap threshold
_QUICK_COUNT: Final = 8  # a first-window minimizer this rare is used as is; else the rarest

Candidates = tuple[I64, I64, I64]
"""Places still to be confirmed, as three flat arrays: text number, document number, local
start."""


class MinimizerSearch:
    """Minimizers of query texts under the same hash and window as the corpus index."""

    def __init__(self, hasher: KgramHasher, settings: LocatorSettings) -> None:
        self.hasher = hasher
        self.settings = settings

    def batched_minimizers(
        self, texts: list[str], limit: int | None = None
    ) -> Iterator[tuple[int, I64, I64, U64]]:
        """For batches of texts (each cut to ``limit`` characters): the minimizers of every
        full window, as (first text number, row, offset, hash)."""
        w, k = self.settings.window, self.settings.kgram
        cap = limit if limit is not None else max((len(t) for t in texts), default=0)
        start = 0
        while start < len(texts):
            stop = start
            width = 0
            while stop < len(texts):
                size = min(len(texts[stop]), cap)
                if stop > start and (stop - start + 1) * max(width, size) > _BATCH_CHARS:
                    break
                width = max(width, size)
                stop += 1
            batch = [t[:cap] for t in texts[start:stop]]
            codes = code_points("".join(t.ljust(width, "\0") for t in batch))
            # the rows laid end to end, hashed as one text: the hash at ``row * width + off``
            # is that of the row's k-gram at ``off`` (a k-gram's hash depends on its code
            # points alone); those that run into the padding or the next row lie in no full
            # window of their row's text, and only full windows choose minimizers
            h = self.hasher.kgrams(codes)
            at = _minimizers(h, width, w, [len(t) - k - w + 2 for t in batch])
            rows, offs = np.divmod(at, width)
            yield start, rows, offs, h[at]
            start = stop

    def anchor_candidates(
        self,
        index: MinimizerIndex,
        texts: list[str],
        starts: I64,
        lengths: I64,
    ) -> tuple[list[bool], Candidates]:
        """Candidate ``(doc, local start)`` for each text, via its first window's minimizer, or
        its rarest full-window one when that is frequent: whether each text could be looked
        up (false when every minimizer is too frequent to enumerate: the caller scans
        instead), and the candidates of all the texts as flat arrays (text number, document,
        local start), each text's in the order its minimizer's entries give them.

        Candidates still need confirming; ones that would cross a document end are dropped.
        ``starts`` and ``lengths`` place the documents in the text ``index`` was built over.
        Flat arrays, not a list per text: the callers confirm every candidate in one loop.
        """
        usable = [False] * len(texts)
        full = np.array([len(t) for t in texts], dtype=np.int64)
        parts: list[tuple[I64, I64, I64]] = []
        # any full-window minimizer finds every occurrence, and verification makes the result
        # the same whichever one is used: most texts are settled by their first window's
        rest = self._by_first_window(index, texts, full, starts, lengths, usable, parts)
        if len(rest) == len(texts):
            self._by_rarest(index, texts, full, starts, lengths, usable, parts)
        elif len(rest):
            picked = [texts[i] for i in rest]
            found = [False] * len(picked)
            more: list[tuple[I64, I64, I64]] = []
            self._by_rarest(index, picked, full[rest], starts, lengths, found, more)
            numbers = np.array(rest, dtype=np.int64)
            parts += [(numbers[where], docs, local) for where, docs, local in more]
            for i, ok in zip(rest, found, strict=True):
                usable[i] = ok
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return usable, (empty, empty, empty)
        if len(parts) == 1:
            return usable, parts[0]
        where, docs, local = (np.concatenate(column) for column in zip(*parts, strict=True))
        return usable, (where, docs, local)

    def _by_first_window(
        self,
        index: MinimizerIndex,
        texts: list[str],
        full: I64,
        starts: I64,
        lengths: I64,
        usable: list[bool],
        parts: list[tuple[I64, I64, I64]],
    ) -> list[int]:
        """Mark usable the texts whose first window's minimizer is rare (at most
        ``_QUICK_COUNT`` entries) and add their candidates to ``parts``; return the numbers of
        the others."""
        k, w = self.settings.kgram, self.settings.window
        width = k + w - 1  # every text here is at least this long
        rows_per_batch = max(1, _BATCH_CHARS // width)
        keys = np.empty(len(texts), dtype=np.uint64)
        offs = np.empty(len(texts), dtype=np.int64)
        for lo in range(0, len(texts), rows_per_batch):
            batch = texts[lo : lo + rows_per_batch]
            codes = code_points("".join([t[:width] for t in batch])).reshape(len(batch), width)
            h = self.hasher.kgrams(codes)
            best = np.argmin(h, axis=1)
            offs[lo : lo + len(batch)] = best
            keys[lo : lo + len(batch)] = h[np.arange(len(batch)), best]
        first, count = index.lookup(keys)
        quick = count <= min(_QUICK_COUNT, self.settings.max_occurrences)
        settled = np.flatnonzero(quick)
        for slot in settled.tolist():
            usable[slot] = True
        parts.append(
            self._place(
                index, first[settled], count[settled], settled, offs[settled], full, starts, lengths
            )
        )
        return np.flatnonzero(~quick).tolist()

    @staticmethod
    def _place(
        index: MinimizerIndex,
        first: I64,
        count: I64,
        slots: I64,
        offs: I64,
        full: I64,
        starts: I64,
        lengths: I64,
    ) -> tuple[I64, I64, I64]:
        """The ``(text, doc, local start)`` that entries ``first .. first + count`` of the
        minimizer at offset ``offs`` of text ``slot`` point at, in order; ones that would cross
        a document end are dropped."""
        pos, owner = index.positions(first, count)
        where = slots[owner]
        pos -= offs[owner]
        need = full[where]
        docs = np.maximum(np.searchsorted(starts, pos, side="right") - 1, 0)
        local = pos - starts[docs]
        ok = (local >= 0) & (local + need <= lengths[docs])
        return where[ok], docs[ok], local[ok]

    def _by_rarest(
        self,
        index: MinimizerIndex,
        texts: list[str],
        full: I64,
        starts: I64,
        lengths: I64,
        usable: list[bool],
        parts: list[tuple[I64, I64, I64]],
    ) -> None:
        """Add to ``parts`` the candidates through each text's rarest usable minimizer of its
        first ``anchor_prefix`` characters, and mark those texts usable (the others have
        none that is)."""
        max_occurrences = self.settings.max_occurrences
        for lo_row, rows, offs, keys in self.batched_minimizers(texts, self.settings.anchor_prefix):
            first, count = index.lookup(keys)
            good = count <= max_occurrences
            # the rarest usable minimizer of each text (ties: leftmost) finds every occurrence
            rank = np.where(good, count, np.iinfo(np.int64).max)
            order = np.lexsort((offs, rank, rows))
            _, head = np.unique(rows[order], return_index=True)
            best = order[head]
            best = best[good[best]]
            slots = lo_row + rows[best]
            for slot in slots.tolist():
                usable[slot] = True
            parts.append(
                self._place(
                    index, first[best], count[best], slots, offs[best], full, starts, lengths
                )
            )


def _minimizers(h: U64, width: int, w: int, windows: list[int]) -> I64:
    """Flat positions of the minimizers of the rows of ``h``, rows of ``width`` hashes laid end
    to end, row ``r`` with ``windows[r]`` full windows of ``w`` (those starting at its first
    ``windows[r]`` positions); sorted.

    The same positions as :func:`~spanchor_core.locate.hashing.minimizer_mask` of the rows
    (each row's k-grams, its count of full windows): a position is chosen when its hash is the
    minimum of a full window holding it (and is neither 0 nor ``SENTINEL``). The minimum of
    every run of ``w`` hashes is taken along the flat array; a full window lies inside its row,
    so its minimum is the row's. The minima of the windows that are not full (they run past
    their row's text) are set to 0, which no window maximum needs; so the maximum of the minima
    of the ``w`` windows holding a position, with ``w - 1`` zeros before the first row, never
    reaches into another row's full windows: the previous row's last ``w - 1`` windows are
    never full, as a row has at most ``width - w + 1`` full windows.
    """
    n = len(h)
    if n < w:  # no row holds a full window
        return np.zeros(0, dtype=np.int64)
    wmin = _sliding(h, w, np.minimum)
    lead = w - 1
    minima = np.zeros(lead + len(windows) * width, dtype=np.uint64)
    minima[lead : lead + len(wmin)] = wmin
    for row, full in enumerate(windows):
        minima[lead + row * width + max(0, full) : lead + (row + 1) * width] = 0
    smax = _sliding(minima[: n + lead], w, np.maximum)
    at = np.flatnonzero(h == smax)
    chosen: I64 = at[(smax[at] != 0) & (h[at] != SENTINEL)]
    return chosen


def _sliding(a: U64, w: int, op: np.ufunc) -> U64:
    """``op`` (minimum or maximum) over every run of ``w`` of the 1-D ``a`` (``len(a) >= w``),
    by doubling the runs."""
    span = 1
    cur = a
    while span * 2 <= w:
        cur = op(cur[:-span], cur[span:])
        span *= 2
    n = len(a) - w + 1
    if span == w:
        return cur[:n]
    out: U64 = op(cur[:n], cur[w - span : w - span + n])
    return out
