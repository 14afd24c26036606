"""Tests for spanchor_core.locate: every status and rule by hand, then properties and real data."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanchor_core.corpus import Corpus, load_corpus
from spanchor_core.locate import LocateRequest, Location, Locator, MatchStatus
from spanchor_core.spans import DocSpan

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
REPO = Path(__file__).resolve().parents[1]

_WORDS = [
    "river",
    "stone",
    "quiet",
    "lamp",
    "orchard",
    "velvet",
    "signal",
    "harbor",
    "meadow",
    "copper",
    "lantern",
    "thistle",
    "granite",
    "willow",
    "ember",
    "falcon",
    "cobalt",
    "prairie",
    "summit",
    "beacon",
    "marble",
    "tundra",
    "juniper",
    "canyon",
    "saffron",
    "glacier",
    "hollow",
    "mosaic",
    "pepper",
    "quartz",
    "ribbon",
    "tide",
    "ember",
    "violet",
    "walnut",
    "zephyr",
]


def prose(seed: int, words: int) -> str:
    """Deterministic sentences; distinct seeds give texts that share no long passage."""
    rng = random.Random(seed)
    out: list[str] = []
    for n in range(words):
        word = rng.choice(_WORDS) + str(rng.randrange(1000))
        out.append(word.capitalize() if n % 9 == 0 else word)
        if n % 9 == 8:
            out[-1] += "."
    text = " ".join(out)
    return text if text.endswith(".") else text + "."


# A passage that occurs exactly once, one that occurs three times, and documents around them.
UNIQUE = prose(1, 30)
DUP = prose(2, 25)
HEAD_A = prose(3, 40) + "\n\n"
HEAD_B = prose(4, 40) + " "
MID_B = " " + prose(5, 30) + " "
DOC_A = HEAD_A + UNIQUE + "\n\n" + prose(6, 20) + " " + DUP + " " + prose(7, 20)
DOC_B = HEAD_B + DUP + MID_B + DUP + "\n\n" + prose(8, 40)
DOC_C = "# Heading one\n\nSome **bold claims** and " + prose(9, 60) + "\n\n" + prose(10, 30) + "."
UNIQUE_AT = len(HEAD_A)
DUP_A = DOC_A.index(DUP)
DUP_B1 = len(HEAD_B)
DUP_B2 = len(HEAD_B) + len(DUP) + len(MID_B)


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus.from_texts({"a": DOC_A, "b": DOC_B, "c": DOC_C})


@pytest.fixture(scope="module")
def locator(corpus: Corpus) -> Locator:
    return Locator(corpus)


def test_fixture_layout_is_what_the_tests_assume() -> None:
    assert DOC_A.count(UNIQUE) == 1
    assert DOC_B.count(UNIQUE) == 0
    assert DOC_C.count(UNIQUE) == 0
    assert DOC_A.count(DUP) == 1
    assert DOC_B.count(DUP) == 2
    assert DOC_C.count(DUP) == 0
    assert DOC_B[DUP_B1 : DUP_B1 + len(DUP)] == DUP == DOC_B[DUP_B2 : DUP_B2 + len(DUP)]


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
    assert loc.hint_rejected is False  # the offset pointed at the right place after all
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


# ---------------------------------------------------------------- fuzzy


def _near(loc: Location, document_id: str, start: int, end: int, slack: int = 2) -> bool:
    span = loc.span
    return (
        span is not None
        and span.document_id == document_id
        and abs(span.start - start) <= slack
        and abs(span.end - end) <= slack
    )


def test_prepended_metadata_header_is_fuzzy(locator: Locator) -> None:
    loc = locator.locate("title: Report\nfile_path: a.md\n\n" + UNIQUE)
    assert loc.status is MatchStatus.FUZZY
    assert _near(loc, "a", UNIQUE_AT, UNIQUE_AT + len(UNIQUE))
    assert 0.8 <= loc.confidence < 1.0


def test_stripped_markdown_markup_is_fuzzy(locator: Locator) -> None:
    end = DOC_C.index("\n\n", 20)
    plain = DOC_C[:end].replace("# ", "").replace("**", "")
    loc = locator.locate(plain)
    assert loc.status is MatchStatus.FUZZY
    assert _near(loc, "c", 0, end)
    assert loc.confidence < 1.0


def test_dropped_sentence_periods_and_collapsed_whitespace_are_fuzzy(locator: Locator) -> None:
    region = DOC_A[UNIQUE_AT : UNIQUE_AT + len(UNIQUE) + 60]
    altered = " ".join(region.split()).replace(".", "")
    loc = locator.locate(altered)
    assert loc.status is MatchStatus.FUZZY
    assert _near(loc, "a", UNIQUE_AT, UNIQUE_AT + len(region))
    assert loc.confidence < 1.0


def test_single_trailing_period_dropped_is_still_exact_text(locator: Locator) -> None:
    # The rest of the text is a substring, so it maps exactly onto what it contains.
    assert UNIQUE.endswith(".")
    loc = locator.locate(UNIQUE[:-1])
    assert (loc.status, loc.span) == (
        MatchStatus.EXACT,
        DocSpan("a", UNIQUE_AT, UNIQUE_AT + len(UNIQUE) - 1),
    )


def test_trailing_period_dropped_with_header_is_fuzzy(locator: Locator) -> None:
    loc = locator.locate("source: a\n\n" + UNIQUE[:-1])
    assert loc.status is MatchStatus.FUZZY
    assert _near(loc, "a", UNIQUE_AT, UNIQUE_AT + len(UNIQUE))
    assert loc.confidence < 1.0


def test_long_altered_text_is_aligned_at_both_ends() -> None:
    doc = prose(50, 6000)
    corpus = Corpus.from_texts({"long": doc, "other": prose(51, 300)})
    start = doc.index(" ", 1000) + 1
    end = doc.index(".", 50_000) + 1
    altered = "title: long\n\n" + " ".join(doc[start:end].split()).replace(". ", " ")
    loc = Locator(corpus).locate(altered)
    assert loc.status is MatchStatus.FUZZY
    assert _near(loc, "long", start, end)
    assert 0.9 < loc.confidence < 1.0


def test_fuzzy_below_threshold_is_unmapped_with_reason(corpus: Corpus) -> None:
    strict = Locator(corpus, fuzzy_threshold=0.999)
    loc = strict.locate("title: Report\n\n" + UNIQUE)
    assert loc.status is MatchStatus.UNMAPPED
    assert loc.reason is not None
    assert "below the threshold" in loc.reason


def test_short_altered_text_uses_the_fuzzy_scan(locator: Locator) -> None:
    text = "xq " + UNIQUE[5:45]
    assert len(text) < locator.min_indexed_length
    loc = locator.locate(text)
    assert loc.status is MatchStatus.FUZZY
    assert _near(loc, "a", UNIQUE_AT + 5, UNIQUE_AT + 45, slack=4)


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


def test_non_ascii_text_and_context_free_case_folding() -> None:
    doc = "Ὀδυσσεύς ΛΌΓΟΣ İstanbul straße " + prose(30, 30)
    corpus = Corpus.from_texts({"g": doc})
    locator = Locator(corpus)
    swapped = "".join(c.swapcase() if len(c.swapcase()) == 1 else c for c in doc[:80])
    loc = locator.locate(swapped.replace(" ", "\n "))
    assert (loc.status, loc.span) == (MatchStatus.NORMALISED, DocSpan("g", 0, 80))


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
    assert _near(fuzzy, "c", want.start, want.end)


def test_bad_parameters_are_rejected(corpus: Corpus) -> None:
    with pytest.raises(ValueError, match="fuzzy_threshold"):
        Locator(corpus, fuzzy_threshold=1.5)
    with pytest.raises(ValueError, match="kgram"):
        Locator(corpus, kgram=2)


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


# ---------------------------------------------------------------- real data and bench smoke


def test_chroma_langchain_chunks_map_back_exactly() -> None:
    root = DATA / "chroma" / "corpora"
    if not root.is_dir():
        pytest.skip(f"real data absent: {root} (needs ../shared/data beside the repository)")
    splitters = pytest.importorskip("langchain_text_splitters")
    corpus = load_corpus(root)
    splitter = splitters.RecursiveCharacterTextSplitter(
        chunk_size=800, chunk_overlap=100, add_start_index=True
    )
    requests: list[LocateRequest] = []
    truth: list[DocSpan] = []
    for doc_id in corpus:
        for piece in splitter.create_documents([corpus.text(doc_id)]):
            requests.append(LocateRequest(piece.page_content))
            start = piece.metadata["start_index"]
            truth.append(DocSpan(doc_id, start, start + len(piece.page_content)))
    locations = Locator(corpus).locate_many(requests)
    assert len(locations) > 1000
    unique = 0
    for request, loc, true in zip(requests, locations, truth, strict=True):
        assert loc.status in (MatchStatus.EXACT, MatchStatus.AMBIGUOUS), (request, loc)
        span = loc.span
        assert span is not None
        assert corpus.text(span.document_id)[span.start : span.end] == request.text
        if loc.status is MatchStatus.EXACT:
            unique += 1
            assert span == true
        else:
            assert true in loc.candidates or len(loc.candidates) == 50
    assert unique > len(requests) // 2


def _load_bench() -> ModuleType:
    path = REPO / "bench" / "bench_mapping.py"
    spec = importlib.util.spec_from_file_location("bench_mapping", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_mapping"] = module
    spec.loader.exec_module(module)
    return module


def test_bench_generator_and_mapping_smoke() -> None:
    bench = _load_bench()
    texts = bench.make_corpus_texts(0.1, seed=3)
    assert texts == bench.make_corpus_texts(0.1, seed=3)  # deterministic
    chunks = bench.make_chunks(texts, 200, seed=4)
    report, locations = bench.run_mapping(Corpus.from_texts(texts), chunks)
    assert len(locations) == 200
    assert sum(report.statuses.values()) == 200
    for kind in ("exact", "whitespace", "absent", "hint", "wrong-hint"):
        assert report.correct[kind] == report.kinds[kind], kind
