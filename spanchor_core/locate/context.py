"""What every matching stage shares for one corpus: :class:`SearchContext`.

The documents, the settings, the query-side search and the slow-path scanner, plus the two
indexes, each built on first need under a lock so that threads sharing a locator build it once.
"""

from __future__ import annotations

import threading

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
        self._exact: MinimizerIndex | None = None
        self._normalised: NormalisedView | None = None

    def exact_index(self) -> MinimizerIndex:
        """The minimizer index of the canonical texts (built on first call)."""
        with self._lock:
            if self._exact is None:
                self._exact = index_documents(self.documents, self.hasher, self.settings.window)
            return self._exact

    def normalised_view(self) -> NormalisedView:
        """The whitespace-and-case view and its index (built on first call)."""
        with self._lock:
            if self._normalised is None:
                self._normalised = build_normalised_view(
                    self.documents, self.hasher, self.settings.window
                )
            return self._normalised

    @property
    def index_nbytes(self) -> int:
        """Bytes held by the indexes built so far (numpy arrays only)."""
        total = 0
        if self._exact is not None:
            total += self._exact.nbytes
        if self._normalised is not None:
            total += self._normalised.nbytes
        return total
