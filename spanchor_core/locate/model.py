"""What the locator takes and gives: :class:`LocateRequest`, :class:`Location`, and
:class:`MatchStatus`.

Plain frozen values with no behaviour beyond :attr:`Location.span`, so that evaluation, run
files and reports can use them without importing the index or the matching stages.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from spanchor_core.spans import DocSpan

__all__ = ["LocateRequest", "Location", "MatchStatus"]


class MatchStatus(StrEnum):
    """How a retrieved result was placed in the corpus."""

    EXACT = "exact"
    """The text occurs exactly once in the corpus."""
    VERIFIED = "verified"
    """The offsets given with the text were checked against the canonical text."""
    SPAN = "span"
    """An explicit span without text: inside the bounds of a known document."""
    NORMALISED = "normalised"
    """Found once when whitespace and letter case are ignored."""
    FUZZY = "fuzzy"
    """Found by approximate alignment; ``confidence`` is the alignment score."""
    AMBIGUOUS = "ambiguous"
    """Found more than once; one occurrence chosen by the rule in ``resolved_by``."""
    UNMAPPED = "unmapped"
    """Not found; ``reason`` says why."""
    INVALID = "invalid"
    """An explicit span that cannot exist (unknown document, out of bounds, inverted)."""


@dataclass(frozen=True, slots=True, init=False)
class Location:
    """Where one retrieved result lies in the corpus, and how sure we are.

    ``candidates`` lists the occurrences considered (sorted by document id then start,
    at most ``Locator.max_candidates`` of them; ``reason`` gives the full count when the
    list was cut). ``resolved_by`` names the rule that chose among several (``"document_id"``,
    ``"nearest_hint"``, ``"gold"``, ``"first"``; ``None`` when there was one). ``hint_rejected``
    is true when the result came with a location (offsets, or a document id) and the text was
    not found there — the count users need to judge their pipeline's offsets. ``reason`` says,
    in words, what happened on the way (why unmapped, how an ambiguity was resolved).
    """

    status: MatchStatus
    document_id: str | None
    start: int | None
    end: int | None
    confidence: float
    candidates: tuple[DocSpan, ...] = ()
    resolved_by: str | None = None
    hint_rejected: bool = False
    reason: str | None = None

    def __init__(
        self,
        status: MatchStatus,
        document_id: str | None,
        start: int | None,
        end: int | None,
        confidence: float,
        candidates: tuple[DocSpan, ...] = (),
        resolved_by: str | None = None,
        hint_rejected: bool = False,
        reason: str | None = None,
    ) -> None:
        # the dataclass's own __init__ of a frozen class sets each field through
        # ``object.__setattr__`` (a lookup and a call per field); the slots' descriptors,
        # called directly, make a location in half the time (one or more per mapped result)
        _SET_STATUS(self, status)
        _SET_DOCUMENT_ID(self, document_id)
        _SET_START(self, start)
        _SET_END(self, end)
        _SET_CONFIDENCE(self, confidence)
        _SET_CANDIDATES(self, candidates)
        _SET_RESOLVED_BY(self, resolved_by)
        _SET_HINT_REJECTED(self, hint_rejected)
        _SET_REASON(self, reason)

    @property
    def span(self) -> DocSpan | None:
        """The chosen span, or ``None`` when nothing was mapped."""
        if self.document_id is None or self.start is None or self.end is None:
            return None
        if self.status in (MatchStatus.UNMAPPED, MatchStatus.INVALID):
            return None
        return DocSpan(self.document_id, self.start, self.end)


(
    _SET_STATUS,
    _SET_DOCUMENT_ID,
    _SET_START,
    _SET_END,
    _SET_CONFIDENCE,
    _SET_CANDIDATES,
    _SET_RESOLVED_BY,
    _SET_HINT_REJECTED,
    _SET_REASON,
) = (Location.__dict__[name].__set__ for name in Location.__slots__)


@dataclass(frozen=True, slots=True)
class LocateRequest:
    """One result to map: text, and whatever location the retriever claimed for it.

    ``prefer`` holds the query's gold spans, when known: text found equally well in several
    places that no document id or offset tells apart is credited to the place that overlaps
    them (``resolved_by="gold"``, see the package docstring). It never moves a unique match.
    """

    text: str | None
    document_id: str | None = None
    start: int | None = None
    end: int | None = None
    prefer: tuple[DocSpan, ...] = ()
