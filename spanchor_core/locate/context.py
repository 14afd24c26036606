"""What every matching stage shares for one corpus: :class:`SearchContext`.

The documents, the settings, the query-side search and the slow-path scanner, plus the two
indexes, each built on first need under a lock so that threads sharing a locator build it once.
"""

from __future__ import annotations

import threading

import numpy as np

from spanchor_core.corpus import Corpus
from spanchor_core.locate.candidates import MinimizerSearch
from spanchor_core.locate.documents import CorpusTexts
from spanchor_core.locate.hashing import KgramHasher
from spanchor_core.locate.index import MinimizerIndex, index_documents
from spanchor_core.locate.normalised_view import NormalisedView, build_normalised_view
from spanchor_core.locate.scan import CorpusScanner
from spanchor_core.locate.settings import LocatorSettings

__all__ = ["SearchContext"]


class SearchContext:
    """One corpus prepared for searching, with its lazily built indexes."""

    def __init__(self, corpus: Corpus, settings: LocatorSettings) -> None:
        self.settings = settings
        self.documents = CorpusTexts(corpus)
        self.hasher = KgramHasher(settings.kgram)
        self.search = MinimizerSearch(self.hasher, settings)
        self.scanner = CorpusScanner(self.documents)
        self._lock = threading.Lock()
        # as built or adopted (``Locator.built_indexes`` hands these out), and the same arrays
        # as plain ndarrays for searching: an ``np.memmap`` (an index read from the cache)
        # pays a Python-level ``__getitem__`` and ``__array_finalize__`` on every element read
        self._exact: MinimizerIndex | None = None
        self._normalised: NormalisedView | None = None
        self._exact_plain: MinimizerIndex | None = None
        self._normalised_plain: NormalisedView | None = None

    def adopt(self, exact: MinimizerIndex, normalised: NormalisedView | None) -> None:
        """Use indexes built elsewhere (e.g. memory-mapped from the index cache)."""
        with self._lock:
            self._exact = exact
            self._exact_plain = _plain_index(exact)
            if normalised is not None:
                self._normalised = normalised
                self._normalised_plain = _plain_view(normalised)

    def exact_index(self) -> MinimizerIndex:
        """The minimizer index of the canonical texts (built on first call)."""
        with self._lock:
            if self._exact_plain is None:
                self._exact = self._exact_plain = index_documents(
                    self.documents, self.hasher, self.settings.window
                )
            return self._exact_plain

    def normalised_view(self) -> NormalisedView:
        """The whitespace-and-case view and its index (built on first call)."""
        with self._lock:
            if self._normalised_plain is None:
                self._normalised = self._normalised_plain = build_normalised_view(
                    self.documents, self.hasher, self.settings.window
                )
            return self._normalised_plain

    @property
    def index_nbytes(self) -> int:
        """Bytes held by the indexes built so far (numpy arrays only)."""
        total = 0
        if self._exact is not None:
            total += self._exact.nbytes
        if self._normalised is not None:
            total += self._normalised.nbytes
        return total


def _plain_index(index: MinimizerIndex) -> MinimizerIndex:
    """``index`` over a plain ndarray view of its entries (the same memory)."""
    if type(index.packed) is np.ndarray:
        return index
    return MinimizerIndex(np.asarray(index.packed), index.pos_bits)


def _plain_view(view: NormalisedView) -> NormalisedView:
    """``view`` over plain ndarray views of its arrays (the same memory)."""
    return NormalisedView(
        _plain_index(view.index),
        np.asarray(view.starts),
        np.asarray(view.lengths),
        np.asarray(view.checkpoint_base),
        np.asarray(view.checkpoints),
    )
