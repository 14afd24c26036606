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
from spanchor_core.locate.index import IndexBuilder, MinimizerIndex
from spanchor_core.locate.text import advance_nonspace, code_points, fold, non_space_mask

__all__ = ["CHECKPOINT", "NormalisedView", "build_normalised_view"]

CHECKPOINT: Final = 32  # normalised -> canonical map keeps every 32nd position


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

    def to_normalised(self, doc: int, canonical: int) -> int:
        """The normalised offset in document ``doc`` of canonical offset ``canonical``, rounded
        down to a checkpoint: exact within ``CHECKPOINT`` characters, enough to compare places."""
        lo = int(self.checkpoint_base[doc])
        hi = lo + -(-int(self.lengths[doc]) // CHECKPOINT)
        j = int(np.searchsorted(self.checkpoints[lo:hi], canonical, side="right")) - 1
        return max(0, j) * CHECKPOINT


def build_normalised_view(
    documents: CorpusTexts, hasher: KgramHasher, window: int
) -> NormalisedView:
    """Index the folded, whitespace-free stream of every document and record the checkpoints."""
    builder = IndexBuilder(hasher, window, documents.total)
    starts, lengths = documents.starts, documents.lengths
    ndocs = len(documents.texts)
    norm_lengths = np.zeros(ndocs, dtype=np.int64)
    checkpoints: list[npt.NDArray[np.integer[Any]]] = []
    # document-local offsets: 32 bits suffice unless one document passes 2 G characters
    narrow = np.int32 if int(lengths.max(initial=0)) < 2**31 else np.int64
    for offset, block in documents.blocks():
        codes = code_points(fold(block))
        keep = non_space_mask(codes)
        kept = np.flatnonzero(keep).astype(np.int64) + offset  # virtual canonical offsets
        builder.feed(codes[keep])
        if not len(kept):
            continue
        # the document of each kept character, and its normalised index in that document
        docs = np.searchsorted(documents.ends, kept, side="right")
        run_start = np.searchsorted(docs, docs, side="left")
        local = np.arange(len(kept), dtype=np.int64) - run_start
        first = int(docs[0])
        local[docs == first] += norm_lengths[first]  # the part of it in earlier blocks
        pick = np.flatnonzero(local % CHECKPOINT == 0)
        if len(pick):
            checkpoints.append((kept[pick] - starts[docs[pick]]).astype(narrow))
        counts = np.bincount(docs - first)
        norm_lengths[first : first + len(counts)] += counts
    ckpts: npt.NDArray[np.integer[Any]] = (
        np.concatenate(checkpoints) if checkpoints else np.zeros(0, dtype=narrow)
    )
    per_doc = -(-norm_lengths // CHECKPOINT)
    ckpt_base = np.cumsum(per_doc) - per_doc
    # an empty document at a block boundary or at the end holds no checkpoint and never
    # needs a base; 0, as the document-by-document build left it
    ckpt_base[(lengths == 0) & ((starts % BLOCK_CHARS == 0) | (starts >= documents.total))] = 0
    # documents are contiguous in the normalised stream; this also places empty documents
    # so that the starts stay sorted for searchsorted
    norm_starts = np.cumsum(norm_lengths) - norm_lengths
    return NormalisedView(builder.finish(), norm_starts, norm_lengths, ckpt_base, ckpts)
