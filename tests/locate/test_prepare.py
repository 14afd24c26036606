"""Locator: offsets given with text (verified or re-anchored) and explicit spans without text."""

from __future__ import annotations

import pytest

from spanchor_core.corpus import Corpus
from spanchor_core.locate import Location, Locator, MatchStatus
from spanchor_core.spans import DocSpan
from tests.locate.texts import (
    DOC_A,
    DOC_B,
    DOC_C,
    DUP,
    DUP_B1,
    DUP_B2,
    UNIQUE,
    UNIQUE_AT,
)


def test_fixture_layout_is_what_the_tests_assume() -> None:
    assert DOC_A.count(UNIQUE) == 1
    assert DOC_B.count(UNIQUE) == 0
    assert DOC_C.count(UNIQUE) == 0
    assert DOC_A.count(DUP) == 1
    assert DOC_B.count(DUP) == 2
    assert DOC_C.count(DUP) == 0
    assert DOC_B[DUP_B1 : DUP_B1 + len(DUP)] == DUP == DOC_B[DUP_B2 : DUP_B2 + len(DUP)]


def test_offsets_that_match_are_verified(locator: Locator) -> None:
    end = UNIQUE_AT + len(UNIQUE)
    loc = locator.locate(UNIQUE, document_id="a", start=UNIQUE_AT, end=end)
    assert (loc.status, loc.span, loc.hint_rejected) == (
        MatchStatus.VERIFIED,
        DocSpan("a", UNIQUE_AT, end),
        False,
    )


def test_start_only_hint_is_verified_and_end_derived(locator: Locator) -> None:
    loc = locator.locate(DUP, document_id="b", start=DUP_B2)
    assert loc.status is MatchStatus.VERIFIED
    assert loc.span == DocSpan("b", DUP_B2, DUP_B2 + len(DUP))


def test_wrong_start_is_reanchored_and_flagged(locator: Locator) -> None:
    loc = locator.locate(UNIQUE, document_id="a", start=UNIQUE_AT - 7)
    assert (loc.status, loc.hint_rejected) == (MatchStatus.EXACT, True)
    assert loc.span == DocSpan("a", UNIQUE_AT, UNIQUE_AT + len(UNIQUE))


def test_wrong_end_is_flagged_even_when_start_is_right(locator: Locator) -> None:
    loc = locator.locate(UNIQUE, document_id="a", start=UNIQUE_AT, end=UNIQUE_AT + 3)
    assert (loc.status, loc.hint_rejected) == (MatchStatus.EXACT, True)
    assert loc.span == DocSpan("a", UNIQUE_AT, UNIQUE_AT + len(UNIQUE))


def test_offsets_past_the_document_end_are_rejected_not_raised(locator: Locator) -> None:
    loc = locator.locate(UNIQUE, document_id="a", start=10**9)
    assert (loc.status, loc.hint_rejected, loc.start) == (MatchStatus.EXACT, True, UNIQUE_AT)


def test_unknown_document_id_with_text_searches_the_whole_corpus(locator: Locator) -> None:
    loc = locator.locate(UNIQUE, document_id="0b7e6c1a-uuid", start=UNIQUE_AT)
    assert (loc.status, loc.span) == (
        MatchStatus.EXACT,
        DocSpan("a", UNIQUE_AT, UNIQUE_AT + len(UNIQUE)),
    )
    # the offset coincides with the text's start in "a", but the document claimed does not
    # exist: a wrong document id is a wrong location claim, counted as a rejected hint
    assert loc.hint_rejected is True
    assert loc.reason is not None
    assert "not in the corpus" in loc.reason


def test_named_document_without_the_text_falls_back_to_the_corpus(locator: Locator) -> None:
    loc = locator.locate(UNIQUE, document_id="c")
    assert (loc.status, loc.document_id) == (MatchStatus.EXACT, "a")
    assert loc.reason is not None
    assert "not found in the named document 'c'" in loc.reason


def test_text_is_canonicalised_before_matching(locator: Locator) -> None:
    crlf = UNIQUE[:50] + "\r\n" + UNIQUE[51:]
    source = UNIQUE[:50] + "\n" + UNIQUE[51:]
    corpus = Corpus.from_texts({"x": "lead " + source + " tail"})
    loc = Locator(corpus).locate(crlf)
    assert (loc.status, loc.span) == (MatchStatus.EXACT, DocSpan("x", 5, 5 + len(source)))


# ---------------------------------------------------------------- explicit spans


def test_explicit_span_in_bounds_is_a_span(locator: Locator) -> None:
    loc = locator.locate(None, document_id="b", start=3, end=40)
    assert loc == Location(MatchStatus.SPAN, "b", 3, 40, 1.0, (DocSpan("b", 3, 40),))


@pytest.mark.parametrize(
    ("document_id", "start", "end", "why"),
    [
        ("nope", 0, 5, "unknown document"),
        ("a", None, 5, "needs both start and end"),
        ("a", 0, None, "needs both start and end"),
        ("a", -1, 5, "negative"),
        ("a", 9, 4, "inverted"),
        ("a", 4, 4, "empty span"),
        ("a", 0, len(DOC_A) + 1, "ends past"),
        (None, None, None, "nothing to locate"),
    ],
)
def test_explicit_span_problems_are_invalid(
    locator: Locator, document_id: str | None, start: int | None, end: int | None, why: str
) -> None:
    loc = locator.locate(None, document_id=document_id, start=start, end=end)
    assert (loc.status, loc.confidence, loc.span) == (MatchStatus.INVALID, 0.0, None)
    assert loc.reason is not None
    assert why in loc.reason


def test_explicit_span_reaching_exactly_the_end_is_valid(locator: Locator) -> None:
    loc = locator.locate(None, document_id="a", start=0, end=len(DOC_A))
    assert loc.status is MatchStatus.SPAN
