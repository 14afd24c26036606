"""Locator as a whole: unmapped results, document boundaries, batch equals single, edge corpora."""

from __future__ import annotations

import pytest

from spanchor_core.corpus import Corpus
from spanchor_core.locate import LocateRequest, Locator, MatchStatus
from spanchor_core.spans import DocSpan
from tests.locate.texts import (
    DOC_A,
    DOC_B,
    DOC_C,
    DUP,
    DUP_B2,
    HEAD_A,
    UNIQUE,
    UNIQUE_AT,
    near,
    prose,
)

# ---------------------------------------------------------------- unmapped


@pytest.mark.parametrize("text", ["", "   ", "\n\t \n"])
def test_empty_text_is_unmapped(locator: Locator, text: str) -> None:
    loc = locator.locate(text)
    assert (loc.status, loc.span, loc.confidence) == (MatchStatus.UNMAPPED, None, 0.0)
    assert loc.reason == "empty or whitespace-only text"


@pytest.mark.parametrize("text", [prose(99, 120), prose(98, 4)])
def test_absent_text_is_unmapped(locator: Locator, text: str) -> None:
    loc = locator.locate(text, document_id="a", start=5)
    assert (loc.status, loc.span, loc.hint_rejected) == (MatchStatus.UNMAPPED, None, True)
    assert loc.reason


@pytest.mark.parametrize("half", [20, 60])
def test_no_match_across_a_document_boundary(half: int) -> None:
    left, right = prose(20, 50), prose(21, 50)
    corpus = Corpus.from_texts({"left": left, "right": right})
    assert (left[-half:] + right[:half]) not in left + right[half:]
    loc = Locator(corpus).locate(left[-half:] + right[:half])
    assert loc.status is MatchStatus.UNMAPPED


def test_result_is_independent_of_document_load_order() -> None:
    texts = {"a": DOC_A, "b": DOC_B, "c": DOC_C}
    forward = Locator(Corpus.from_texts(texts))
    backward = Locator(Corpus.from_texts(dict(reversed(texts.items()))))
    requests = [
        LocateRequest(DUP),
        LocateRequest(DUP.lower()),
        LocateRequest(DUP[:15]),
        LocateRequest("h: x\n\n" + UNIQUE),
    ]
    assert forward.locate_many(requests) == backward.locate_many(requests)


def test_locate_many_equals_locate_one_by_one(locator: Locator) -> None:
    requests = [
        LocateRequest(UNIQUE),
        LocateRequest(None, "a", 1, 9),
        LocateRequest(None, "zz", 1, 9),
        LocateRequest(DUP, "b", DUP_B2 + 1),
        LocateRequest(UNIQUE.upper()),
        LocateRequest("meta: 1\n\n" + UNIQUE),
        LocateRequest(prose(77, 100)),
        LocateRequest(""),
        LocateRequest(DUP[:10]),
    ]
    batch = locator.locate_many(requests)
    single = [
        locator.locate(r.text, document_id=r.document_id, start=r.start, end=r.end)
        for r in requests
    ]
    assert batch == single
    assert [loc.status for loc in batch] == [
        MatchStatus.EXACT,
        MatchStatus.SPAN,
        MatchStatus.INVALID,
        MatchStatus.AMBIGUOUS,
        MatchStatus.NORMALISED,
        MatchStatus.FUZZY,
        MatchStatus.UNMAPPED,
        MatchStatus.UNMAPPED,
        MatchStatus.AMBIGUOUS,
    ]


def test_empty_corpus_maps_nothing_and_does_not_fail() -> None:
    locator = Locator(Corpus.from_texts({}))
    assert [
        loc.status for loc in locator.locate_many([LocateRequest(UNIQUE), LocateRequest("ab")])
    ] == [
        MatchStatus.UNMAPPED,
        MatchStatus.UNMAPPED,
    ]


def test_empty_and_blank_documents_between_others_keep_offsets_right() -> None:
    texts = {"a0": "", "a1": HEAD_A, "b0": "  \n\n ", "b1": "", "c": DOC_A, "z": ""}
    corpus = Corpus.from_texts(texts)
    locator = Locator(corpus)
    region = DOC_A[UNIQUE_AT : UNIQUE_AT + len(UNIQUE)]
    exact, folded, fuzzy = locator.locate_many(
        [LocateRequest(region), LocateRequest(region.upper()), LocateRequest("x: y\n\n" + region)]
    )
    want = DocSpan("c", UNIQUE_AT, UNIQUE_AT + len(UNIQUE))
    assert (exact.status, exact.span) == (MatchStatus.EXACT, want)
    assert (folded.status, folded.span) == (MatchStatus.NORMALISED, want)
    assert fuzzy.status is MatchStatus.FUZZY
    assert near(fuzzy, "c", want.start, want.end)


def test_bad_parameters_are_rejected(corpus: Corpus) -> None:
    with pytest.raises(ValueError, match="fuzzy_threshold"):
        Locator(corpus, fuzzy_threshold=1.5)
    with pytest.raises(ValueError, match="kgram"):
        Locator(corpus, kgram=2)
