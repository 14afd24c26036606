"""Short texts without a scan per batch: the hash of every ``STEP``-th k-gram of the corpus.

A text too short for a full minimizer window (under ``kgram + window - 1`` characters) used to
cost one rolling-hash pass over the whole corpus per batch of results, so a run of short
chunks cost corpus x run. :class:`SampledIndex` keeps the hash of the ``SAMPLE_K``-gram at
every virtual position that is a multiple of ``STEP``, built once, on the second batch that
needs it. Any occurrence of a text of at least ``SAMPLE_K + STEP - 1`` characters has exactly
one of its first ``STEP`` k-grams at such a position; so looking up, for each residue modulo
``STEP``, one k-gram of the text at an offset of that residue (the rarest of the first few)
yields every place the text can start, exactly once. The caller confirms each (after a probe,
:mod:`~spanchor_core.locate.probe`, has dropped most wrong ones). A table costs 8 bytes per
``STEP`` characters.

The same structure is built over the normalised stream (folded, whitespace dropped), in the
coordinates of :class:`~spanchor_core.locate.normalised_view.NormalisedView`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final

import numpy as np
import numpy.typing as npt

from spanchor_core.locate.buckets import Buckets
from spanchor_core.locate.documents import CorpusTexts
from spanchor_core.locate.hashing import I64, KgramHasher
from spanchor_core.locate.index import MinimizerIndex
from spanchor_core.locate.probe import Probe
from spanchor_core.locate.text import code_points, fold, non_space_mask

__all__ = ["SAMPLE_K", "STEP", "ProbeSource", "SampledIndex", "Sink", "code_blocks", "place"]

SAMPLE_K: Final = 12  # k-gram of the sampled index
STEP: Final = 6  # one k-gram in STEP is kept: texts of SAMPLE_K + STEP - 1 characters and more
_OPTIONS: Final = 4  # offsets tried per residue: the rarest of the first four is used
_BATCH_ROWS: Final = 2_048  # texts hashed per numpy pass
_CHUNK_ENTRIES: Final = 1 << 16  # index entries enumerated per numpy pass (bounded memory)

ProbeSource = Callable[[list[str], int], Probe | None]
"""Given the texts of a search and how many candidates it enumerates: a probe of those texts
that rejects most wrong candidates in numpy, or ``None`` (too few to be worth one)."""

Sink = Callable[[list[int], list[int], list[int]], None]
"""Takes the numbers of texts and the documents and local starts where each may occur, sorted
by text, then position (every text's candidates in one run): confirms them while the next
pass's are enumerated, so that the candidates of a batch never all exist at once."""


def code_blocks(documents: CorpusTexts, *, normalised: bool) -> Iterator[npt.NDArray[np.uint32]]:
    """The code points of the virtual text (or of its normalised stream), block by block."""
    for _, block in documents.blocks():
        if normalised:
            codes = code_points(fold(block))
            yield codes[non_space_mask(codes)]
        else:
            yield code_points(block)


class SampledIndex:
    """Hashes of the k-grams at every ``STEP``-th position of one long virtual text."""

    shortest: Final = SAMPLE_K + STEP - 1  # shortest text this index can find

    def __init__(
        self, hasher: KgramHasher, blocks: Iterator[npt.NDArray[np.uint32]], total: int
    ) -> None:
        """Index the code-point ``blocks`` of a virtual text of at most ``total`` characters."""
        if hasher.k != SAMPLE_K:  # pragma: no cover - internal invariant
            raise ValueError("the sampled index needs a SAMPLE_K hasher")
        self.hasher = hasher
        self.pos_bits = max(32, int(total).bit_length())
        shift = np.uint64(self.pos_bits)
        # filled in place: one array of at most total / STEP entries, no list of parts
        table = np.empty(total // STEP + 1, dtype=np.uint64)
        filled = 0
        carry = np.zeros(0, dtype=np.uint32)
        start = 0  # virtual position of carry[0]
        for codes in blocks:
            data = np.concatenate([carry, codes]) if len(carry) else codes
            if len(data) >= SAMPLE_K:
                first = -start % STEP
                picked = hasher.kgrams_every(data, first, STEP)
                size = len(picked)
                out = table[filled : filled + size]
                np.right_shift(picked, shift, out=out)
                np.left_shift(out, shift, out=out)
                at = start + first
                out |= np.arange(at, at + STEP * size, STEP, dtype=np.uint64)
                del out  # no view of the table outlives the loop: it is resized in place
                filled += size
            keep = min(len(data), SAMPLE_K - 1)
            # the k-grams starting in the carried tail are hashed with the next block
            start += len(data) - keep
            carry = data[len(data) - keep :].copy()
        if filled < len(table):  # the normalised stream is shorter: give the rest back
            table.resize((filled,), refcheck=False)
        table.sort()
        self.index = MinimizerIndex(table, self.pos_bits)
        self.buckets = Buckets(table)  # the lookups of many texts' k-grams at once

    @classmethod
    def from_table(
        cls, hasher: KgramHasher, table: npt.NDArray[np.uint64], pos_bits: int
    ) -> SampledIndex:
        """The index whose sorted ``table`` (``index.packed``) and ``pos_bits`` were kept from
        an earlier build of the same text (the persistent index cache); ``table`` is used as it
        is, not copied (a memory-mapped file's pages are then shared between processes)."""
        if hasher.k != SAMPLE_K:  # pragma: no cover - internal invariant
            raise ValueError("the sampled index needs a SAMPLE_K hasher")
        index = cls.__new__(cls)
        index.hasher = hasher
        index.pos_bits = pos_bits
        index.index = MinimizerIndex(table, pos_bits)
        index.buckets = Buckets(table)
        return index

    @property
    def nbytes(self) -> int:
        return self.index.nbytes + self.buckets.nbytes

    def candidates(
        self,
        texts: list[str],
        starts: I64,
        lengths: I64,
        budget: int,
        sink: Sink,
        probes: ProbeSource | None = None,
    ) -> list[int]:
        """Hand ``sink`` the documents and local starts where each text (``shortest``
        characters or more) may start, in position order (texts without any are left out);
        return the numbers of the texts answered: those whose candidates would pass what is
        left of ``budget`` (most frequent last) are not, and are to be scanned for instead.
        ``probes`` (given the number of candidates) may reject wrong ones first."""
        n = len(texts)
        if not n:
            return []
        width = SAMPLE_K + STEP * _OPTIONS - 1
        firsts: list[I64] = []
        counts: list[I64] = []
        offsets: list[I64] = []
        for lo in range(0, n, _BATCH_ROWS):
            batch = texts[lo : lo + _BATCH_ROWS]
            codes = code_points("".join(t[:width].ljust(width, "\0") for t in batch))
            h = self.hasher.kgrams(codes.reshape(len(batch), width))  # rows x (STEP * _OPTIONS)
            usable = np.array([len(t) for t in batch], dtype=np.int64) - SAMPLE_K + 1
            first, count = self.buckets.lookup(h.reshape(-1), self.pos_bits)
            first, count = first.reshape(h.shape), count.reshape(h.shape)
            offs = np.broadcast_to(np.arange(h.shape[1], dtype=np.int64), h.shape)
            # an offset past the text's last k-gram is never used
            big = np.iinfo(np.int64).max
            rank = np.where(offs < usable[:, None], count, big).reshape(len(batch), _OPTIONS, STEP)
            pick = np.argmin(rank, axis=1)  # rows x STEP: which option per residue
            rows = np.arange(len(batch))[:, None]
            col = pick * STEP + np.arange(STEP)[None, :]
            firsts.append(first[rows, col])
            counts.append(count[rows, col])
            offsets.append(col)
        first = np.concatenate(firsts)
        count = np.concatenate(counts)
        offs = np.concatenate(offsets).astype(np.int64)
        # the cheapest texts first, as long as the budget lasts
        per_text = count.sum(axis=1)
        order = np.argsort(per_text, kind="stable")
        affordable = order[np.cumsum(np.minimum(per_text[order], budget + 1)) <= budget]
        if not len(affordable):
            return []
        affordable.sort()
        need = np.array([len(t) for t in texts], dtype=np.int64)
        slots = np.repeat(affordable, STEP)
        probe = probes(texts, int(count[affordable].sum())) if probes is not None else None
        place(
            self.index,
            slots,
            first[affordable].reshape(-1),
            count[affordable].reshape(-1),
            offs[affordable].reshape(-1),
            need,
            starts,
            lengths,
            sink,
            probe,
        )
        answered: list[int] = affordable.tolist()
        return answered


def place(
    index: MinimizerIndex,
    slots: I64,
    first: I64,
    count: I64,
    offs: I64,
    need: I64,
    starts: I64,
    lengths: I64,
    sink: Sink,
    probe: Probe | None = None,
) -> None:
    """Hand ``sink`` each text's ``slot`` and the documents and local starts that index entries
    ``first .. first + count`` point at for a k-gram at offset ``offs`` of text ``slot`` (of
    ``need[slot]`` characters), in position order per text; places that would run past their
    document's end are dropped, and so are those ``probe`` rejects. ``slots`` is sorted; entries
    are enumerated a bounded number at a time, never all at once."""
    n = len(slots)
    lo = 0
    while lo < n:
        # whole texts per pass: at least one entry, about _CHUNK_ENTRIES at most
        total = np.cumsum(count[lo:])
        hi = lo + max(1, int(np.searchsorted(total, _CHUNK_ENTRIES, side="right")))
        while hi < n and slots[hi] == slots[hi - 1]:
            hi += 1
        pos, owner = index.positions(first[lo:hi], count[lo:hi])
        owner += lo
        where = slots[owner]
        pos -= offs[owner]
        if probe is not None and len(where):
            # the probe first (it drops most candidates), so that only the places it keeps
            # are searched for among the documents' starts (100,000 of them for tiny
            # documents): the same places are kept, in the same order
            fits = (pos >= 0) & (pos + need[where] <= probe.length)
            fits[fits] = probe.agrees(where[fits], pos[fits])
            where, pos = where[fits], pos[fits]
        docs = np.maximum(np.searchsorted(starts, pos, side="right") - 1, 0)
        local = pos - starts[docs]
        ok = (pos >= 0) & (local >= 0) & (local + need[where] <= lengths[docs])
        where, docs, local = where[ok], docs[ok], local[ok]
        lo = hi
        if not len(where):
            continue
        sort = np.lexsort((local, docs, where))
        # each text's candidates are one run of ``where`` (texts are never split across passes)
        sink(where[sort].tolist(), docs[sort].tolist(), local[sort].tolist())
