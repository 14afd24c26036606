"""Locator, normalised stage: text that differs only in whitespace and letter case."""

from __future__ import annotations

from spanchor_core.corpus import Corpus
from spanchor_core.locate import Locator, MatchStatus
from spanchor_core.spans import DocSpan
from tests.locate.texts import (
    DOC_A,
    UNIQUE,
    UNIQUE_AT,
    prose,
)

# ---------------------------------------------------------------- normalised


def test_collapsed_whitespace_and_case_are_normalised(locator: Locator) -> None:
    start = DOC_A.index(" ", UNIQUE_AT + len(UNIQUE) - 60) + 1
    true_end = UNIQUE_AT + len(UNIQUE) + 2 + 80
    region = DOC_A[start:true_end]
    assert "\n\n" in region
    loc = locator.locate(" ".join(region.split()).upper())
    assert (loc.status, loc.span) == (MatchStatus.NORMALISED, DocSpan("a", start, true_end))
    assert 0.9 <= loc.confidence < 1.0


def test_leading_and_trailing_whitespace_do_not_widen_the_span(locator: Locator) -> None:
    text = "\n  " + UNIQUE[:40].replace(" ", "  ") + "  \n"
    loc = locator.locate(text)
    assert (loc.status, loc.span) == (
        MatchStatus.NORMALISED,
        DocSpan("a", UNIQUE_AT, UNIQUE_AT + 40),
    )


def test_non_ascii_text_and_context_free_case_folding() -> None:
    doc = "Ὀδυσσεύς ΛΌΓΟΣ İstanbul straße " + prose(30, 30)
    corpus = Corpus.from_texts({"g": doc})
    locator = Locator(corpus)
    swapped = "".join(c.swapcase() if len(c.swapcase()) == 1 else c for c in doc[:80])
    loc = locator.locate(swapped.replace(" ", "\n "))
    assert (loc.status, loc.span) == (MatchStatus.NORMALISED, DocSpan("g", 0, 80))
