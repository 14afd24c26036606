"""The corpus as the locator sees it: documents by number, laid end to end as one virtual text.

Indexes address that virtual text; :class:`CorpusTexts` says where each document starts in
it and streams it in blocks small enough that no numpy array outgrows glibc's mmap
threshold. An occurrence is ``(document number, start, end)`` in document-local offsets.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

import numpy as np

from spanchor_core.corpus import Corpus
from spanchor_core.locate.hashing import I64

__all__ = ["BLOCK_CHARS", "CorpusTexts", "Occurrence"]

BLOCK_CHARS: Final = 16_000  # arrays stay under glibc's 128 KiB mmap threshold

Occurrence = tuple[int, int, int]
"""``(document number, start, end)``: one place a text was found, document-local offsets."""


class CorpusTexts:
    """The canonical texts of a corpus in sorted id order, with their place in the virtual text."""

    def __init__(self, corpus: Corpus) -> None:
        self.ids: list[str] = list(corpus)
        self.texts: list[str] = [corpus.text(i) for i in self.ids]
        self.number = {doc_id: n for n, doc_id in enumerate(self.ids)}
        lengths = np.array([len(t) for t in self.texts], dtype=np.int64)
        self.lengths: I64 = lengths
        self.starts: I64 = np.cumsum(lengths) - lengths
        self.total = int(lengths.sum())

    def blocks(self) -> Iterator[tuple[int, str]]:
        """The documents' texts as one virtual string, in blocks of ``BLOCK_CHARS``."""
        parts: list[str] = []
        size = 0
        offset = 0
        for text in self.texts:
            pos = 0
            while pos < len(text):
                piece = text[pos : pos + BLOCK_CHARS - size]
                parts.append(piece)
                size += len(piece)
                pos += len(piece)
                if size >= BLOCK_CHARS:
                    yield offset, "".join(parts)
                    offset += size
                    parts, size = [], 0
        if parts:
            yield offset, "".join(parts)
