"""Locator, normalised stage: text that differs only in whitespace and letter case."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz

from spanchor_core.corpus import Corpus
from spanchor_core.locate import Locator, MatchStatus
from spanchor_core.locate.normalised import _NORMALISED_CAP, _score
from spanchor_core.locate.text import fold, normalise
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


# ---------------------------------------------------------------- the score, bounded search

_LETTERS = "abcXYZ.,-é\u03c2\u0130"
_SPACES = [" ", "  ", "\n", "\n\n", "\t", " \n", "\u00a0", "\u3000"]


@st.composite
def _respaced(draw: st.DrawFn) -> tuple[str, str]:
    """A text and a canonical slice with its letters, spaced apart differently."""
    words = draw(st.lists(st.text(_LETTERS, min_size=1, max_size=6), min_size=1, max_size=30))

    def spaced() -> str:
        out = [words[0]]
        for word in words[1:]:
            out.append(draw(st.sampled_from(["", *_SPACES])) + word)
        return "".join(out)

    edge = draw(st.sampled_from(["", *_SPACES]))
    return edge + spaced() + edge, spaced()


@settings(max_examples=400, deadline=None)
@given(_respaced())
def test_normalised_score_is_the_plain_ratio(pair: tuple[str, str]) -> None:
    """The ratio found with a cutoff under the common letters' bound is, bit for bit, the ratio
    rapidfuzz gives without one, for any whitespace between the same letters."""
    text, chosen = pair
    norm = normalise(text)
    assert normalise(chosen) == norm
    plain = min(_NORMALISED_CAP, fuzz.ratio(fold(text.strip()), fold(chosen)) / 100.0)
    assert repr(_score(text, chosen, len(norm))) == repr(plain)


@given(st.text(_LETTERS + " \n", max_size=40), st.text(_LETTERS + " \n", max_size=40))
def test_normalised_score_falls_back_when_the_bound_is_wrong(a: str, b: str) -> None:
    """Letters that overstate what the two share only cost the search its cutoff."""
    plain = min(_NORMALISED_CAP, fuzz.ratio(fold(a.strip()), fold(b)) / 100.0)
    assert repr(_score(a, b, len(a) + len(b))) == repr(plain)
