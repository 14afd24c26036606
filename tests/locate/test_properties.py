"""Locator properties (hypothesis): slices map back to equal text, batches equal single lookups."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanchor_core.corpus import Corpus
from spanchor_core.locate import LocateRequest, Locator, MatchStatus
from spanchor_core.spans import DocSpan
from tests.locate.texts import (
    prose,
)

# ---------------------------------------------------------------- properties


_word = st.sampled_from(["ab", "ba", "abc", "a", "cab", "bb"])
_doc = st.lists(_word, min_size=1, max_size=120).map(" ".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(_doc, min_size=1, max_size=3), data=st.data())
def test_any_slice_maps_onto_text_equal_to_it(docs: list[str], data: st.DataObject) -> None:
    corpus = Corpus.from_texts({f"d{i}": text for i, text in enumerate(docs)})
    locator = Locator(corpus, kgram=8, window=6)  # small parameters: both paths get exercised
    which = data.draw(st.integers(0, len(docs) - 1))
    text = docs[which]
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    piece = text[start:end]
    loc = locator.locate(piece)
    if not piece.strip():
        assert loc.status is MatchStatus.UNMAPPED
        return
    assert loc.status in (MatchStatus.EXACT, MatchStatus.AMBIGUOUS)
    span = loc.span
    assert span is not None
    assert corpus.text(span.document_id)[span.start : span.end] == piece
    assert DocSpan(f"d{which}", start, end) in loc.candidates or len(loc.candidates) == 50
    hinted = locator.locate(piece, document_id=f"d{which}", start=start)
    assert (hinted.status, hinted.span) == (MatchStatus.VERIFIED, DocSpan(f"d{which}", start, end))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10**6),
    cuts=st.lists(st.tuples(st.integers(0, 2999), st.integers(1, 900)), min_size=1, max_size=8),
)
def test_long_and_short_slices_of_prose_and_batch_equals_single(
    seed: int, cuts: list[tuple[int, int]]
) -> None:
    texts = {"p": prose(seed, 400), "q": prose(seed + 1, 200)}
    corpus = Corpus.from_texts(texts)
    locator = Locator(corpus)
    doc = texts["p"]
    pieces = [doc[s : s + n] for s, n in cuts if doc[s : s + n].strip()]
    requests = [LocateRequest(p) for p in pieces]
    batch = locator.locate_many(requests)
    assert batch == [locator.locate(p) for p in pieces]
    for piece, loc in zip(pieces, batch, strict=True):
        assert loc.status in (MatchStatus.EXACT, MatchStatus.AMBIGUOUS)
        assert loc.span is not None
        assert corpus.text(loc.span.document_id)[loc.span.start : loc.span.end] == piece


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10**6),
    start=st.integers(0, 2000),
    size=st.integers(3, 700),
    spaces=st.sampled_from([" ", "  ", "\n", " \t "]),
)
def test_whitespace_and_case_changes_map_to_the_same_letters(
    seed: int, start: int, size: int, spaces: str
) -> None:
    text = prose(seed, 400).replace(". ", ".\n\n")
    corpus = Corpus.from_texts({"p": text, "q": prose(seed + 7, 100)})
    locator = Locator(corpus)
    piece = text[start : start + size]
    altered = spaces.join(piece.split()).swapcase()
    if not altered.strip():
        return
    loc = locator.locate(altered)
    assert loc.status in (MatchStatus.EXACT, MatchStatus.NORMALISED, MatchStatus.AMBIGUOUS)
    assert loc.span is not None
    found = corpus.text(loc.span.document_id)[loc.span.start : loc.span.end]
    assert "".join(found.lower().split()) == "".join(piece.lower().split())
    assert found == found.strip()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10**6),
    cuts=st.lists(st.tuples(st.integers(0, 2500), st.integers(1, 66)), min_size=16, max_size=40),
    swap=st.booleans(),
)
def test_many_short_texts_share_one_scan_and_match_single_lookups(
    seed: int, cuts: list[tuple[int, int]], swap: bool
) -> None:
    texts = {"p": prose(seed, 400).replace(". ", ".\n"), "q": prose(seed + 3, 100)}
    corpus = Corpus.from_texts(texts)
    locator = Locator(corpus)
    pieces = [texts["p"][s : s + n] for s, n in cuts]
    pieces = [p.swapcase() if swap else p for p in pieces if p.strip()]
    batch = locator.locate_many([LocateRequest(p) for p in pieces])
    assert batch == [locator.locate(p) for p in pieces]
    for piece, loc in zip(pieces, batch, strict=True):
        assert loc.span is not None, (piece, loc)
        found = corpus.text(loc.span.document_id)[loc.span.start : loc.span.end]
        if loc.status in (MatchStatus.EXACT, MatchStatus.AMBIGUOUS) and not swap:
            assert found == piece
        else:
            assert "".join(found.lower().split()) == "".join(piece.lower().split())
