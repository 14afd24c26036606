"""Locator: which occurrence wins when a text occurs more than once, and what is reported."""

from __future__ import annotations

from spanchor_core.corpus import Corpus
from spanchor_core.locate import Locator, MatchStatus
from spanchor_core.spans import DocSpan
from tests.locate.texts import (
    DUP,
    DUP_A,
    DUP_B1,
    DUP_B2,
    prose,
)

# ---------------------------------------------------------------- ambiguous


def test_ambiguous_without_hints_takes_the_lowest_document_and_start(locator: Locator) -> None:
    loc = locator.locate(DUP)
    assert (loc.status, loc.resolved_by, loc.span) == (
        MatchStatus.AMBIGUOUS,
        "first",
        DocSpan("a", DUP_A, DUP_A + len(DUP)),
    )
    assert loc.candidates == (
        DocSpan("a", DUP_A, DUP_A + len(DUP)),
        DocSpan("b", DUP_B1, DUP_B1 + len(DUP)),
        DocSpan("b", DUP_B2, DUP_B2 + len(DUP)),
    )
    assert loc.reason is not None
    assert "occurs 3 times" in loc.reason


def test_ambiguous_resolved_by_the_named_document(locator: Locator) -> None:
    loc = locator.locate(DUP, document_id="a")
    assert (loc.status, loc.resolved_by, loc.start) == (MatchStatus.AMBIGUOUS, "document_id", DUP_A)


def test_ambiguous_resolved_by_nearest_hint_inside_the_named_document(locator: Locator) -> None:
    loc = locator.locate(DUP, document_id="b", start=DUP_B2 - 40)
    assert (loc.status, loc.resolved_by, loc.span) == (
        MatchStatus.AMBIGUOUS,
        "nearest_hint",
        DocSpan("b", DUP_B2, DUP_B2 + len(DUP)),
    )
    assert loc.hint_rejected is True


def test_ambiguous_named_document_with_two_occurrences_and_no_hint_takes_first(
    locator: Locator,
) -> None:
    loc = locator.locate(DUP, document_id="b")
    assert (loc.resolved_by, loc.start) == ("first", DUP_B1)


def test_ambiguous_resolved_by_nearest_hint_without_document(locator: Locator) -> None:
    loc = locator.locate(DUP, start=DUP_B2 + 3)
    assert (loc.resolved_by, loc.span) == (
        "nearest_hint",
        DocSpan("b", DUP_B2, DUP_B2 + len(DUP)),
    )


def test_short_ambiguous_text_on_the_scan_path(locator: Locator) -> None:
    loc = locator.locate(DUP[:20])
    assert (loc.status, loc.resolved_by, len(loc.candidates)) == (MatchStatus.AMBIGUOUS, "first", 3)


def test_candidate_list_is_capped_but_the_count_is_kept() -> None:
    piece = prose(11, 14) + "\n"
    corpus = Corpus.from_texts({"r": piece * 60})
    loc = Locator(corpus, max_candidates=50).locate(piece)
    assert loc.status is MatchStatus.AMBIGUOUS
    assert len(loc.candidates) == 50
    assert loc.reason is not None
    assert "occurs 60 times" in loc.reason


def test_ambiguous_normalised_text(locator: Locator) -> None:
    loc = locator.locate(DUP.upper())
    assert (loc.status, loc.resolved_by, loc.start) == (MatchStatus.AMBIGUOUS, "first", DUP_A)
    assert loc.reason is not None
    assert "normalised text occurs 3 times" in loc.reason
    assert loc.confidence < 1.0
