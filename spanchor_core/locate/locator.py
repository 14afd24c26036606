"""The public entry point, :class:`Locator`: the matching stages composed over one corpus.

Each request goes through :func:`~spanchor_core.locate.prepare.prepare`, then the search
stages in order — exact, normalised, fuzzy — each placing what it can and passing the rest on.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence

from spanchor_core.corpus import Corpus
from spanchor_core.errors import InputError
from spanchor_core.locate.context import SearchContext
from spanchor_core.locate.exact import exact_stage
from spanchor_core.locate.fuzzy import fuzzy_stage
from spanchor_core.locate.index import MinimizerIndex
from spanchor_core.locate.model import LocateRequest, Location
from spanchor_core.locate.near import NearMatch, near_matches
from spanchor_core.locate.normalised import normalised_stage
from spanchor_core.locate.normalised_view import NormalisedView
from spanchor_core.locate.prepare import prepare, prepare_batch
from spanchor_core.locate.resolve import Pending
from spanchor_core.locate.sampled import SampledIndex
from spanchor_core.locate.scan import ShortIndexStore
from spanchor_core.locate.settings import LocatorSettings, TieBreak
from spanchor_core.spans import DocSpan

__all__ = ["STAGES", "Locator", "Stage"]

Stage = Callable[[SearchContext, list[Pending], list[Location | None]], list[Pending]]
"""A matching stage: fills ``results[job.slot]`` for the jobs it places, returns the rest."""

STAGES: tuple[Stage, ...] = (exact_stage, normalised_stage, fuzzy_stage)
"""The search stages in order of evidence; the last one places every job it is given."""


class Locator:
    """Maps retrieved results onto canonical spans of one corpus.

    Build one per corpus and reuse it: the index is built on first need and kept.
    ``locate_many`` is the fast path (batched numpy work); ``locate`` is the same
    computation for one result, so both always give the same answer.

    Parameters: ``fuzzy_threshold`` is the lowest alignment score accepted as
    ``FUZZY``; ``max_candidates`` caps ``Location.candidates``; ``kgram`` and
    ``window`` size the minimizer index (texts shorter than ``kgram + window - 1``
    characters use a per-document scan); ``max_occurrences`` is how many occurrences
    of one minimizer are enumerated before it counts as too frequent to use;
    ``fuzzy_scan_limit`` bounds, in characters, the scan used for short texts
    that need approximate matching; ``fuzzy_min_chars`` is the shortest text (in
    non-space characters) matched approximately at all; ``fuzzy_tie`` is how far below
    the best score an approximate match still counts as equally good (``AMBIGUOUS``);
    ``tie_break`` chooses between equally good places that no document id or offset
    hint tells apart: ``"gold"`` (default) credits the one overlapping
    ``LocateRequest.prefer``, ``"position"`` always takes the lowest (document, start).
    A bad value, or a ``corpus`` that is not a :class:`~spanchor_core.corpus.Corpus`,
    raises :class:`~spanchor_core.errors.InputError`.
    """

    def __init__(
        self,
        corpus: Corpus,
        *,
        fuzzy_threshold: float = 0.8,
        max_candidates: int = 50,
        kgram: int = 20,
        window: int = 48,
        max_occurrences: int = 128,
        fuzzy_scan_limit: int = 2_000_000,
        tie_break: TieBreak = "gold",
        fuzzy_min_chars: int = 32,
        fuzzy_tie: float = 0.02,
    ) -> None:
        if not isinstance(corpus, Corpus):
            raise InputError(
                f"Locator needs a Corpus, got {type(corpus).__name__}",
                hint="build one with load_corpus() or Corpus.from_texts()",
            )
        self.corpus = corpus
        self.settings = LocatorSettings(
            fuzzy_threshold=fuzzy_threshold,
            max_candidates=max_candidates,
            kgram=kgram,
            window=window,
            max_occurrences=max_occurrences,
            fuzzy_scan_limit=fuzzy_scan_limit,
            tie_break=tie_break,
            fuzzy_min_chars=fuzzy_min_chars,
            fuzzy_tie=fuzzy_tie,
        )
        self._ctx = SearchContext(corpus, self.settings)

    # the parameters, read-only: the stages read them from ``settings``
    @property
    def fuzzy_threshold(self) -> float:
        return self.settings.fuzzy_threshold

    @property
    def max_candidates(self) -> int:
        return self.settings.max_candidates

    @property
    def kgram(self) -> int:
        return self.settings.kgram

    @property
    def window(self) -> int:
        return self.settings.window

    @property
    def max_occurrences(self) -> int:
        return self.settings.max_occurrences

    @property
    def fuzzy_scan_limit(self) -> int:
        return self.settings.fuzzy_scan_limit

    @property
    def tie_break(self) -> TieBreak:
        return self.settings.tie_break

    @property
    def min_indexed_length(self) -> int:
        """Shortest text found through the index (``kgram + window - 1``)."""
        return self.settings.min_indexed_length

    def locate(
        self,
        text: str | None,
        *,
        document_id: str | None = None,
        start: int | None = None,
        end: int | None = None,
        prefer: tuple[DocSpan, ...] = (),
    ) -> Location:
        """Map one result; see :meth:`locate_many`."""
        return self.locate_many([LocateRequest(text, document_id, start, end, prefer)])[0]

    def locate_many(self, requests: Sequence[LocateRequest]) -> list[Location]:
        """Map every request, in order. Equal to ``[locate(r) for r in requests]``."""
        # a batch allocates a few objects per request and no reference cycle: the cyclic
        # collector would only walk the whole heap (the corpus, earlier results) again and
        # again, a tenth of the mapping time, and freeing is left to reference counting
        collecting = gc.isenabled()
        if collecting:
            gc.disable()
        try:
            return self._locate_many(requests)
        finally:
            if collecting:
                gc.enable()

    def _locate_many(self, requests: Sequence[LocateRequest]) -> list[Location]:
        results, pending = prepare_batch(self._ctx.documents, requests)
        for stage in STAGES:
            if not pending:
                break
            pending = stage(self._ctx, pending, results)
        done = [r for r in results if r is not None]
        if len(done) != len(requests):  # pragma: no cover - internal invariant
            raise RuntimeError("locate_many left a request without a location")
        return done

    def near_matches(
        self,
        text: str,
        *,
        document_id: str | None = None,
        limit: int = 5,
        min_score: float = 0.8,
    ) -> list[NearMatch]:
        """Places where ``text`` occurs up to quotes, dashes, case, spacing or small edits.

        For authoring anchors (``spanchor locate``, ``anchor add``): what to offer when the
        exact text is not found. See :func:`spanchor_core.locate.near.near_matches`.
        """
        return near_matches(
            self._ctx.documents, text, document_id=document_id, limit=limit, min_score=min_score
        )

    def build_index(self, *, normalised: bool = False) -> None:
        """Build the exact index now (and the normalised one if asked) instead of lazily."""
        self._ctx.exact_index()
        if normalised:
            self._ctx.normalised_view()

    def build_short_index(self, *, normalised: bool = False) -> SampledIndex:
        """Build now the sampled index that texts shorter than :attr:`min_indexed_length` are
        found through (of the canonical texts, or of the normalised stream), and return it.

        Otherwise it is built on the first batch that holds many such texts, about a second
        for 50 MB; a run read on several forked processes builds it here first, so that they
        inherit one index instead of building one each. Which way a text is found never
        changes its location, so building it early changes nothing but when the time is
        spent."""
        return self._ctx.scanner.build_sampled(normalised=normalised)

    def keep_short_indexes(self, store: ShortIndexStore | None) -> None:
        """Take the short-text indexes from ``store`` before building them, and keep them there
        once built (the persistent index cache does this for the locators it gives out); ``None``:
        build them in memory."""
        self._ctx.scanner.store = store

    def short_indexes_kept(self) -> bool:
        """Whether both short-text indexes are built, or kept where :meth:`keep_short_indexes`
        points: then :meth:`build_short_index` costs next to nothing."""
        scanner = self._ctx.scanner
        return scanner.sampled_kept(normalised=False) and scanner.sampled_kept(normalised=True)

    def use_short_index(self, index: SampledIndex, *, normalised: bool = False) -> None:
        """Adopt ``index``, what :meth:`build_short_index` returned for this corpus and these
        settings (in another process: it pickles), unless this locator has its own already."""
        self._ctx.scanner.adopt_sampled(index, normalised=normalised)

    def decide_without_search(self, request: LocateRequest) -> Location | None:
        """The location of ``request`` when it needs no search — an explicit span, offsets that
        verify, empty text — else None. Such a location depends on the named document only."""
        outcome = prepare(self._ctx.documents, 0, request)
        return outcome if isinstance(outcome, Location) else None

    def built_indexes(self) -> tuple[MinimizerIndex | None, NormalisedView | None]:
        """The exact index and the normalised view built so far (None: not yet)."""
        return self._ctx._exact, self._ctx._normalised

    def use_indexes(self, exact: MinimizerIndex, normalised: NormalisedView | None = None) -> None:
        """Adopt indexes built earlier for this corpus with these ``kgram`` and ``window``
        (e.g. memory-mapped from :mod:`spanchor_core.index_store`) instead of building them."""
        self._ctx.adopt(exact, normalised)

    @property
    def index_nbytes(self) -> int:
        """Bytes held by the indexes built so far (numpy arrays only)."""
        return self._ctx.index_nbytes
