"""The whitespace-and-case view of the corpus: its minimizer index and the map back to canonical.

Built only when some result needs it. The map keeps the canonical offset of every
``CHECKPOINT``-th normalised character of each document and walks the rest, which costs a
few bytes per 32 characters instead of one offset per character.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from spanchor_core.locate.documents import BLOCK_CHARS, CorpusTexts
from spanchor_core.locate.hashing import I64, KgramHasher
from spanchor_core.locate.index import (
    INDEX_BLOCK_CHARS,
    IndexBuilder,
    MinimizerIndex,
    keep_on_heap,
)
from spanchor_core.locate.text import advance_nonspace, code_points, fold, non_space_mask

__all__ = ["CHECKPOINT", "NormalisedView", "build_normalised_view"]

CHECKPOINT: Final = 32  # normalised -> canonical map keeps every 32nd position
_ASCII_KEEP: Final = np.array([not chr(c).isspace() for c in range(128)], dtype=np.bool_)


@dataclass(slots=True)
class NormalisedView:
    """Minimizer index of the normalised text plus its map back to canonical offsets."""

    index: MinimizerIndex
    starts: I64  # normalised offset where each document starts
    lengths: I64  # normalised length of each document
    checkpoint_base: I64  # first checkpoint of each document
    checkpoints: npt.NDArray[
        np.integer[Any]
    ]  # canonical local offset of every CHECKPOINT-th normalised char

    @property
    def nbytes(self) -> int:
        return int(
            self.index.nbytes
            + self.starts.nbytes
            + self.lengths.nbytes
            + self.checkpoint_base.nbytes
            + self.checkpoints.nbytes
        )

    def to_canonical(self, source: str, doc: int, local: int) -> int:
        """Canonical offset in document ``doc`` (text ``source``) of its ``local``-th
        normalised character."""
        j = local // CHECKPOINT
        pos = int(self.checkpoints[int(self.checkpoint_base[doc]) + j])
        return advance_nonspace(source, pos, local - j * CHECKPOINT)

    def checkpoints_before(self, docs: I64, local: I64) -> tuple[list[int], list[int]]:
        """For many ``(doc, local)`` at once: the canonical offset of the checkpoint at or
        before each normalised ``local``, and the non-space characters from there, so that
        ``advance_nonspace(source, *those)`` is :meth:`to_canonical` of each."""
        j = local // CHECKPOINT
        pos = self.checkpoints[self.checkpoint_base[docs] + j]
        rest: list[int] = (local - j * CHECKPOINT).tolist()
        return pos.tolist(), rest

    def to_normalised(self, doc: int, canonical: int) -> int:
        """The normalised offset in document ``doc`` of canonical offset ``canonical``, rounded
        down to a checkpoint: exact within ``CHECKPOINT`` characters, enough to compare places."""
        lo = int(self.checkpoint_base[doc])
        hi = lo + -(-int(self.lengths[doc]) // CHECKPOINT)
        checkpoints = self.checkpoints
        # the key in the array's own type (clipped to its range: a hint may be any integer),
        # or numpy casts the whole slice to a common type first
        kind = np.iinfo(checkpoints.dtype)
        key = checkpoints.dtype.type(min(max(canonical, kind.min), kind.max))
        j = int(checkpoints[lo:hi].searchsorted(key, side="right")) - 1
        return max(0, j) * CHECKPOINT


def build_normalised_view(
    documents: CorpusTexts, hasher: KgramHasher, window: int
) -> NormalisedView:
    """Index the folded, whitespace-free stream of every document and record the checkpoints."""
    builder = IndexBuilder(hasher, window, documents.total)
    starts, lengths = documents.starts, documents.lengths
    ndocs = len(documents.texts)
    norm_lengths = np.zeros(ndocs, dtype=np.int64)
    # document-local offsets: 32 bits suffice unless one document passes 2 G characters
    narrow = np.int32 if int(lengths.max(initial=0)) < 2**31 else np.int64
    # written in place: a document has no more checkpoints than its canonical length allows
    # (the normalised text is never longer), so one array holds them all, cut to size after
    ckpts: npt.NDArray[np.integer[Any]] = np.empty(
        int((-(-lengths // CHECKPOINT)).sum()), dtype=narrow
    )
    filled = 0
    ends = documents.ends
    fed = 0  # normalised characters before this block
    keep_on_heap(INDEX_BLOCK_CHARS)
    for offset, block in documents.blocks(INDEX_BLOCK_CHARS):
        kept, folded = _kept(block)
        # the normalised starts of the documents starting here: no window crosses them
        lo, hi = np.searchsorted(starts, [offset, offset + len(block)], side="left")
        builder.feed(folded, starts=fed + np.searchsorted(kept, starts[lo:hi] - offset))
        fed += len(kept)
        if not len(kept):
            continue
        filled = _checkpoints(kept, offset, ends, starts, norm_lengths, ckpts, filled)
    ckpts.resize((filled,), refcheck=False)  # the unused end given back, not copied
    per_doc = -(-norm_lengths // CHECKPOINT)
    ckpt_base = np.cumsum(per_doc) - per_doc
    # an empty document at a block boundary or at the end holds no checkpoint and never
    # needs a base; 0, as the document-by-document build left it (its BLOCK_CHARS, not the
    # block size of this build: the stored arrays stay what they were)
    ckpt_base[(lengths == 0) & ((starts % BLOCK_CHARS == 0) | (starts >= documents.total))] = 0
    # documents are contiguous in the normalised stream; this also places empty documents
    # so that the starts stay sorted for searchsorted
    norm_starts = np.cumsum(norm_lengths) - norm_lengths
    return NormalisedView(builder.finish(), norm_starts, norm_lengths, ckpt_base, ckpts)


def _kept(block: str) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.uint32]]:
    """The block offsets of the characters the normalised stream keeps, and their folded
    code points. An ASCII block (most) is folded and tested as bytes: the same characters as
    :func:`~spanchor_core.locate.text.non_space_mask` keeps, a quarter of the memory traffic."""
    if block.isascii():
        octets = np.frombuffer(block.lower().encode("ascii"), dtype=np.uint8)
        # every byte above U+0020 is kept; only control characters are looked up
        mask = octets > 32
        check = np.flatnonzero(octets < 32)
        if len(check):
            mask[check] = _ASCII_KEEP[octets[check]]
        kept = np.flatnonzero(mask)
        return kept, octets[kept].astype(np.uint32)
    codes = code_points(fold(block))
    kept = np.flatnonzero(non_space_mask(codes))
    return kept, codes[kept]


def _checkpoints(
    kept: npt.NDArray[np.intp],
    offset: int,
    ends: I64,
    starts: I64,
    norm_lengths: I64,
    out: npt.NDArray[np.integer[Any]],
    filled: int,
) -> int:
    """Write the checkpoints of one block (kept characters at block offsets ``kept``, the
    block at virtual ``offset``) into ``out`` after its first ``filled``, add its kept
    characters to ``norm_lengths``, and return how many ``out`` holds now.

    Works per run of one document's characters (a block holds a few documents), never per
    character: the ``k``-th normalised character of a document is a checkpoint when ``k`` is a
    multiple of ``CHECKPOINT``, counting the document's characters of earlier blocks.
    """
    first = int(np.searchsorted(ends, offset + int(kept[0]), side="right"))
    last = int(np.searchsorted(ends, offset + int(kept[-1]), side="right"))
    if first == last:  # the block's kept characters are all one document's (most blocks)
        before = int(norm_lengths[first])
        norm_lengths[first] += len(kept)
        picked = kept[-before % CHECKPOINT :: CHECKPOINT]
        stop = filled + len(picked)
        np.add(picked, offset - int(starts[first]), out=out[filled:stop], casting="unsafe")
        return stop
    # the kept characters of document first + r are kept[bounds[r]:bounds[r + 1]]
    cuts = np.searchsorted(kept, ends[first:last] - offset, side="left")
    bounds = np.concatenate(([0], cuts, [len(kept)])).astype(np.int64)
    counts = np.diff(bounds)
    before = norm_lengths[first]  # the first document's characters in earlier blocks
    norm_lengths[first : last + 1] += counts
    lead = np.zeros(len(counts), dtype=np.int64)
    lead[0] = -before % CHECKPOINT  # characters of the run before its first checkpoint
    picks = np.maximum(0, counts - lead + CHECKPOINT - 1) // CHECKPOINT
    total = int(picks.sum())
    if not total:
        return filled
    run = np.repeat(np.arange(len(counts), dtype=np.int64), picks)
    step = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(picks) - picks, picks)
    at = bounds[run] + lead[run] + CHECKPOINT * step
    np.add(
        kept[at], offset - starts[first + run], out=out[filled : filled + total], casting="unsafe"
    )
    return filled + total
