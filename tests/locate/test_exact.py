"""Locator, exact stage: verbatim text found once, through the index or the short-text scan."""

from __future__ import annotations

from spanchor_core.locate import Location, Locator, MatchStatus
from spanchor_core.spans import DocSpan
from tests.locate.texts import (
    UNIQUE,
    UNIQUE_AT,
)

# ---------------------------------------------------------------- exact and verified


def test_exact_unique_text(locator: Locator) -> None:
    loc = locator.locate(UNIQUE)
    span = DocSpan("a", UNIQUE_AT, UNIQUE_AT + len(UNIQUE))
    assert loc == Location(MatchStatus.EXACT, "a", span.start, span.end, 1.0, (span,))
    assert loc.span == span


def test_short_exact_text_takes_the_scan_path(locator: Locator) -> None:
    text = UNIQUE[10:40]
    assert len(text) < locator.min_indexed_length
    loc = locator.locate(text)
    assert (loc.status, loc.span) == (
        MatchStatus.EXACT,
        DocSpan("a", UNIQUE_AT + 10, UNIQUE_AT + 40),
    )
