"""Near matches for authoring: quotes, dashes, case, spacing and small edits, with spans."""

from __future__ import annotations

import pytest

from spanchor_core.corpus import Corpus
from spanchor_core.errors import InputError
from spanchor_core.locate import Locator

DOC = "Intro. It\u2019s the user\u2019s guide \u2014 read   it twice. Another Line here, at the end"


@pytest.fixture
def locator() -> Locator:
    return Locator(Corpus.from_texts({"a": DOC, "b": "the users guide - read it"}))


def test_quotes_dashes_case_and_spacing_are_found_with_their_span(locator: Locator) -> None:
    best = locator.near_matches("it's the user's guide - read it")[0]
    start = DOC.index("It\u2019s")
    assert (best.span.document_id, best.span.start) == ("a", start)
    assert best.text == DOC[start : DOC.index(" twice")]
    assert best.score == 1.0
    assert best.differences == ("quotes", "dashes", "case", "whitespace")


def test_small_edits_are_offered_below_the_loose_exact_ones(locator: Locator) -> None:
    found = locator.near_matches("it's the user's guide - read it")
    assert [m.span.document_id for m in found] == ["a", "b"]
    assert found[1].differences == ("edits",)
    assert found[1].score < 1.0
    typo = locator.near_matches("another lime here")[0]
    assert typo.text == "Another Line here"
    assert typo.differences == ("case", "edits")


def test_exact_text_is_a_near_match_with_no_differences(locator: Locator) -> None:
    (match,) = locator.near_matches("Another Line here", document_id="a", limit=1)
    assert (match.score, match.differences) == (1.0, ())


def test_nothing_near_and_bad_arguments(locator: Locator) -> None:
    assert locator.near_matches("zebra quantum pineapple") == []
    with pytest.raises(InputError):
        locator.near_matches("x", limit=0)
    with pytest.raises(InputError):
        locator.near_matches("x", document_id="nope")
