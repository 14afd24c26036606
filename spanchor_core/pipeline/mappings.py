"""Each distinct result mapped once across the sides of a comparison (:class:`SharedMappings`).

A baseline and a candidate of one regression test usually come from the same chunk store:
most results the candidate returns for a query, the baseline returned for it too, only ranked
differently. Mapping one is a search of the corpus; looking its location up again is a dict
access. A location depends on the request alone (``Locator.locate_many(requests)`` equals
``[locate(r) for r in requests]``), so taking it from an earlier batch changes nothing: the
evaluations are byte for byte those of mapping every side on its own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence

from spanchor_core.locate import LocateRequest, Location, Locator, NearMatch
from spanchor_core.locate.index import MinimizerIndex
from spanchor_core.locate.normalised_view import NormalisedView
from spanchor_core.locate.sampled import SampledIndex
from spanchor_core.locate.scan import ShortIndexStore

__all__ = ["SharedMappings"]


class SharedMappings(Locator):
    """A :class:`Locator` that maps with ``base`` and remembers every location it gave, so a
    request seen before (same text, document id, offsets and gold spans) is not mapped again.

    Everything else is ``base``'s: its corpus, settings and indexes. The memory kept is a
    SHA-256 digest of each distinct text (not the text) and its location.
    """

    def __init__(self, base: Locator) -> None:
        # not Locator.__init__: no second search context, every search is base's
        self.corpus = base.corpus
        self.settings = base.settings
        self.base = base
        self._known: dict[Hashable, Location] = {}
        self.reused = 0
        """Requests answered from an earlier batch (for benchmarks and tests)."""

    def locate_many(self, requests: Sequence[LocateRequest]) -> list[Location]:
        """Map every request, in order: :meth:`Locator.locate_many` of ``base`` for those not
        seen before, the location given then for the others."""
        known = self._known
        keys = [_key(request) for request in requests]
        found = [None if key is None else known.get(key) for key in keys]
        missing = [slot for slot, location in enumerate(found) if location is None]
        self.reused += len(requests) - len(missing)
        if missing:
            mapped = self.base.locate_many([requests[slot] for slot in missing])
            for slot, location in zip(missing, mapped, strict=True):
                found[slot] = location
                key = keys[slot]
                if key is not None:
                    known[key] = location
        return found  # type: ignore[return-value]  # every slot is filled above

    @property
    def fork_safe(self) -> bool:
        """Whether a forked child may map with this (:mod:`spanchor_core.evaluate.run_parts`):
        when ``base`` maps on this process. What the child maps is not remembered here (see
        :mod:`~spanchor_core.evaluate.run_parts`): the locations are the
        same either way."""
        return type(self.base) is Locator

    # the rest is base's -----------------------------------------------------------------------

    def near_matches(
        self,
        text: str,
        *,
        document_id: str | None = None,
        limit: int = 5,
        min_score: float = 0.8,
    ) -> list[NearMatch]:
        return self.base.near_matches(
            text, document_id=document_id, limit=limit, min_score=min_score
        )

    def build_index(self, *, normalised: bool = False) -> None:
        self.base.build_index(normalised=normalised)

    def decide_without_search(self, request: LocateRequest) -> Location | None:
        return self.base.decide_without_search(request)

    def build_short_index(self, *, normalised: bool = False) -> SampledIndex:
        return self.base.build_short_index(normalised=normalised)

    def use_short_index(self, index: SampledIndex, *, normalised: bool = False) -> None:
        self.base.use_short_index(index, normalised=normalised)

    def keep_short_indexes(self, store: ShortIndexStore | None) -> None:
        self.base.keep_short_indexes(store)

    def short_indexes_kept(self) -> bool:
        return self.base.short_indexes_kept()

    def built_indexes(self) -> tuple[MinimizerIndex | None, NormalisedView | None]:
        return self.base.built_indexes()

    def use_indexes(self, exact: MinimizerIndex, normalised: NormalisedView | None = None) -> None:
        self.base.use_indexes(exact, normalised)

    @property
    def index_nbytes(self) -> int:
        return self.base.index_nbytes


def _key(request: LocateRequest) -> Hashable | None:
    """What a request's location depends on, with its text as a digest; None for a request
    that is not a plain :class:`LocateRequest` of a text (mapped every time)."""
    text = request.text
    if type(request) is not LocateRequest or type(text) is not str:
        return None
    try:
        data = text.encode()
    except UnicodeEncodeError:  # a lone surrogate: still one byte string per text
        data = text.encode("utf-8", "surrogatepass")
    # SHA-256 (hardware-accelerated on most CPUs, faster here than BLAKE2 for chunk-sized texts)
    digest = hashlib.sha256(data).digest()
    return (digest, request.document_id, request.start, request.end, request.prefer)
