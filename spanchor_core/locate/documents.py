"""The corpus as the locator sees it: documents by number, laid end to end as one virtual text.

Indexes address that virtual text; :class:`CorpusTexts` says where each document starts in
it and streams it in blocks small enough that no numpy array outgrows glibc's mmap
threshold; slices of it and runs of whole documents are what the slow-path scans search.
An occurrence is ``(document number, start, end)`` in document-local offsets.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from typing import Final

import numpy as np
import numpy.typing as npt

from spanchor_core.corpus import Corpus
from spanchor_core.locate.hashing import I64

__all__ = ["BLOCK_CHARS", "GROUP_CHARS", "CorpusTexts", "Occurrence"]

BLOCK_CHARS: Final = 16_000  # arrays stay under glibc's 128 KiB mmap threshold
GROUP_CHARS: Final = 1 << 18  # whole documents joined per string-only scan (str.find, regex)

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
        self.ends: I64 = self.starts + lengths

    def virtual(self, start: int, stop: int) -> str:
        """The virtual text from ``start`` to ``stop`` (clipped to its end), documents joined."""
        stop = min(stop, self.total)
        if start >= stop:
            return ""
        first = int(np.searchsorted(self.ends, start, side="right"))
        last = int(np.searchsorted(self.starts, stop, side="left")) - 1
        lo = start - int(self.starts[first])
        if first == last:
            return self.texts[first][lo : stop - int(self.starts[first])]
        tail = self.texts[last][: stop - int(self.starts[last])]
        return "".join([self.texts[first][lo:], *self.texts[first + 1 : last], tail])

    def owners(self, starts: I64, ends: I64) -> tuple[I64, npt.NDArray[np.bool_]]:
        """For virtual ranges ``[starts, ends)`` (non-empty): the document each starts in, and
        whether it ends in that document too (ranges that cross a document end are false)."""
        docs = np.searchsorted(self.ends, starts, side="right").astype(np.int64)
        inside = ends <= self.ends[np.minimum(docs, len(self.ends) - 1)]
        return docs, inside & (docs < len(self.ends))

    def groups(self) -> Iterator[tuple[int, int, str]]:
        """Runs of whole documents joined into strings of about ``GROUP_CHARS`` (a longer
        document alone), as (first document number, virtual offset, text)."""
        if not self.texts:
            return
        marks = np.arange(0, max(self.total, 1), GROUP_CHARS, dtype=np.int64)
        cuts = np.unique(np.searchsorted(self.starts, marks, side="left")).tolist()
        cuts = [c for c in cuts if c < len(self.texts)]
        if not cuts or cuts[0] != 0:
            cuts.insert(0, 0)
        cuts.append(len(self.texts))
        for lo, hi in pairwise(cuts):
            yield lo, int(self.starts[lo]), "".join(self.texts[lo:hi])

    def blocks(self, chars: int = BLOCK_CHARS) -> Iterator[tuple[int, str]]:
        """The documents' texts as one virtual string, in blocks of ``chars``.

        Each block is cut out of the documents it covers (two binary searches and one join),
        not assembled document by document: a corpus of 100,000 short documents paid a
        Python step per document on every pass."""
        for offset in range(0, self.total, chars):
            yield offset, self.virtual(offset, offset + chars)
