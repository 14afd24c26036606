"""Query side of the minimizer index: the minimizers of retrieved texts, and where they point.

Texts are hashed in batches of padded rows (one numpy pass per batch); each text's rarest
full-window minimizer then yields every place it can occur, to be confirmed by the caller.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

import numpy as np

from spanchor_core.locate.hashing import I64, SENTINEL, U64, KgramHasher, minimizer_mask
from spanchor_core.locate.index import MinimizerIndex
from spanchor_core.locate.settings import LocatorSettings
from spanchor_core.locate.text import code_points

__all__ = ["Candidates", "MinimizerSearch"]

_BATCH_CHARS: Final = 16_000  # code points per query batch: arrays stay under the mmap threshold

Candidates = list[tuple[int, int]]
"""``(document number, local start)`` pairs still to be confirmed."""


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
            h = self.hasher.kgrams(codes.reshape(len(batch), width))
            nk = np.array([len(t) - k + 1 for t in batch], dtype=np.int64)
            cols = np.arange(h.shape[1])
            h = np.where(cols[None, :] < nk[:, None], h, SENTINEL)
            mask = minimizer_mask(h, w, nk - w + 1)
            rows, offs = np.nonzero(mask)
            yield start, rows.astype(np.int64), offs.astype(np.int64), h[rows, offs]
            start = stop

    def anchor_candidates(
        self,
        index: MinimizerIndex,
        texts: list[str],
        starts: I64,
        lengths: I64,
    ) -> list[Candidates | None]:
        """Candidate ``(doc, local start)`` for each text, via its rarest full-window minimizer.

        ``None`` when every minimizer is too frequent to enumerate (caller scans instead).
        Candidates still need confirming; ones that would cross a document end are dropped.
        ``starts`` and ``lengths`` place the documents in the text ``index`` was built over.
        """
        out: list[Candidates | None] = [None] * len(texts)
        full = np.array([len(t) for t in texts], dtype=np.int64)
        max_occurrences = self.settings.max_occurrences
        for lo_row, rows, offs, keys in self.batched_minimizers(texts, self.settings.anchor_prefix):
            first, count = index.lookup(keys)
            usable = count <= max_occurrences
            # the rarest usable minimizer of each text (ties: leftmost) finds every occurrence
            rank = np.where(usable, count, np.iinfo(np.int64).max)
            order = np.lexsort((offs, rank, rows))
            _, head = np.unique(rows[order], return_index=True)
            best = order[head]
            best = best[usable[best]]
            for row in rows[best].tolist():
                out[lo_row + row] = []
            pos, owner = index.positions(first[best], count[best])
            slots = lo_row + rows[best][owner]
            pos -= offs[best][owner]
            need = full[slots]
            docs = np.maximum(np.searchsorted(starts, pos, side="right") - 1, 0)
            local = pos - starts[docs]
            ok = (local >= 0) & (local + need <= lengths[docs])
            for slot, d, s in zip(
                slots[ok].tolist(), docs[ok].tolist(), local[ok].tolist(), strict=True
            ):
                hits = out[slot]
                if hits is not None:
                    hits.append((d, s))
        return out
