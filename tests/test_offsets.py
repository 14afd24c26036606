"""Raw-text, UTF-8 and UTF-16 offsets translated into canonical code-point offsets."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.corpus import canonicalize
from spanchor_core.errors import InputError
from spanchor_core.offsets import (
    CodeUnitIndex,
    OffsetMap,
    OffsetUnit,
    canonical_span,
    codepoint_to_utf8,
    codepoint_to_utf16,
    utf8_to_codepoint,
    utf16_to_codepoint,
)

# pieces that canonicalisation changes or that sit next to changing text
TRICKY = [
    "a",
    "e",
    "x",
    " ",
    "\n",
    "\r",
    "\r\n",
    "\u0301",  # combining acute: composes with e
    "\u0323",  # combining dot below: reorders before the acute
    "\u00e9",  # é precomposed
    "\u212b",  # ANGSTROM SIGN: singleton, becomes U+00C5
    "\u1100",  # Hangul L
    "\u1161",  # Hangul V
    "\u11a8",  # Hangul T
    "\uac00",  # Hangul LV syllable
    "\u0915",  # Devanagari KA
    "\u093c",  # Devanagari nukta
    "\u0958",  # Devanagari QA: composition exclusion, decomposes to KA + nukta
    "\u0928",  # NA: NA + nukta composes to U+0929
    "\u094d",  # virama
    "\u093f",  # vowel sign I
    "\U0001f600",  # outside the BMP: 4 UTF-8 bytes, a surrogate pair in UTF-16
    "\u0959",  # Devanagari KHHA: excluded, but its decomposition starts with a stable KHA
    "\u0f40",  # Tibetan KA ...
    "\u0f73",  # ... and a vowel sign that decomposes into two non-starters
    "\u0344",  # combining, decomposes into two combining marks
    "\u1fee",  # Greek dialytika and oxia: decomposes via U+0385
    "\u0b47",  # Oriya vowel sign E ...
    "\u0b3e",  # ... composes with AA (a starter that is a second element)
]

tricky_text = st.lists(st.sampled_from(TRICKY), max_size=30).map("".join)


def _is_boundary(text: str, i: int) -> bool:
    """A boundary by an independent, sufficient test: before an ASCII letter or space."""
    return i in (0, len(text)) or text[i] in "aex "


# ---------------------------------------------------------------- OffsetMap, hand-computed


def test_crlf_collapses_and_offsets_after_it_shift() -> None:
    raw = "ab\r\ncd\ref"
    offsets = OffsetMap(raw)
    assert offsets.canonical == "ab\ncd\nef"
    assert [offsets.raw_to_canonical(i) for i in range(len(raw) + 1)] == [
        0, 1, 2, 2, 3, 4, 5, 6, 7, 8,
    ]  # fmt: skip
    # between \r and \n: a start widens back, an end widens forward
    assert offsets.raw_to_canonical(3, "start") == 2
    assert offsets.raw_to_canonical(3, "end") == 3
    assert offsets.raw_span_to_canonical(4, 6) == (3, 5)  # "cd"
    assert offsets.raw_span_to_canonical(3, 3) == (2, 3)
    assert offsets.changed_segments == [((2, 4), (2, 3)), ((6, 7), (5, 6))]


def test_combining_sequence_composes_and_widens() -> None:
    raw = "cafe\u0301 ok"  # é written as e + combining acute
    offsets = OffsetMap(raw)
    assert offsets.canonical == "caf\u00e9 ok"
    assert offsets.raw_span_to_canonical(5, 8) == (4, 7)  # " ok"
    assert offsets.raw_span_to_canonical(0, 5) == (0, 4)  # "café"
    # a span ending between e and its accent covers the whole é
    assert offsets.raw_span_to_canonical(0, 4) == (0, 4)
    # a span starting on the accent starts at the é
    assert offsets.raw_span_to_canonical(4, 6) == (3, 5)


def test_hangul_jamo_compose_into_one_syllable() -> None:
    raw = "x\u1100\u1161\u11a8y"
    offsets = OffsetMap(raw)
    assert offsets.canonical == "x\uac01y"
    assert offsets.raw_span_to_canonical(1, 4) == (1, 2)
    assert offsets.raw_to_canonical(4) == 2
    assert offsets.raw_to_canonical(5) == 3


def test_devanagari_exclusion_decomposes_and_grows() -> None:
    raw = "\u0958x\u0928\u093c"  # QA (excluded) then NA + nukta (composes to U+0929)
    offsets = OffsetMap(raw)
    assert offsets.canonical == "\u0915\u093cx\u0929"
    assert offsets.raw_span_to_canonical(0, 1) == (0, 2)
    assert offsets.raw_span_to_canonical(1, 2) == (2, 3)
    assert offsets.raw_span_to_canonical(2, 4) == (3, 4)


def test_excluded_letter_starts_its_own_segment() -> None:
    # from XQuAD hi: an answer starting at KHHA must not widen back over the space before it
    raw = "\u0940 \u0959\u0930"
    offsets = OffsetMap(raw)
    assert offsets.canonical == "\u0940 \u0916\u093c\u0930"
    assert offsets.raw_span_to_canonical(2, 4) == (2, 5)
    assert offsets.changed_segments == [((2, 3), (2, 4))]


def test_canonical_to_raw_inverts_at_boundaries() -> None:
    offsets = OffsetMap("ab\r\ncd")
    assert [offsets.canonical_to_raw(i) for i in range(6)] == [0, 1, 2, 4, 5, 6]


def test_already_canonical_is_identity_and_shares_the_string() -> None:
    raw = "plain caf\u00e9\n"
    offsets = OffsetMap(raw)
    assert offsets.is_identity
    assert offsets.canonical is raw
    assert offsets.raw_span_to_canonical(2, 7) == (2, 7)


def test_out_of_range_and_inverted_are_input_errors() -> None:
    offsets = OffsetMap("a\r\nb")
    with pytest.raises(InputError, match="raw offset 5 is outside the text"):
        offsets.raw_to_canonical(5)
    with pytest.raises(InputError, match="raw offset -1"):
        offsets.raw_to_canonical(-1)
    with pytest.raises(InputError, match="inverted"):
        offsets.raw_span_to_canonical(3, 1)
    with pytest.raises(InputError, match="canonical offset 4"):
        offsets.canonical_to_raw(4)


# ---------------------------------------------------------------- OffsetMap, properties


@settings(max_examples=400)
@given(tricky_text)
def test_canonical_text_is_exactly_canonicalize(raw: str) -> None:
    assert OffsetMap(raw).canonical == canonicalize(raw)


@settings(max_examples=300)
@given(st.text())
def test_canonical_text_matches_for_any_unicode(raw: str) -> None:
    assert OffsetMap(raw).canonical == canonicalize(raw)


@settings(max_examples=300)
@given(tricky_text, st.data())
def test_boundary_slices_canonicalise_to_mapped_slices(raw: str, data: st.DataObject) -> None:
    offsets = OffsetMap(raw)
    bounds = [i for i in range(len(raw) + 1) if _is_boundary(raw, i)]
    a = data.draw(st.sampled_from(bounds))
    b = data.draw(st.sampled_from([i for i in bounds if i >= a]))
    start, end = offsets.raw_span_to_canonical(a, b)
    assert offsets.canonical[start:end] == canonicalize(raw[a:b])


@settings(max_examples=300)
@given(tricky_text)
def test_every_offset_maps_monotonically_and_widens_outward(raw: str) -> None:
    offsets = OffsetMap(raw)
    starts = [offsets.raw_to_canonical(i, "start") for i in range(len(raw) + 1)]
    ends = [offsets.raw_to_canonical(i, "end") for i in range(len(raw) + 1)]
    assert starts[0] == ends[0] == 0
    assert starts[-1] == ends[-1] == len(offsets.canonical)
    assert starts == sorted(starts)
    assert ends == sorted(ends)
    assert all(s <= e for s, e in zip(starts, ends, strict=True))
    # outside changed segments start and end agree; inside, they are that segment's ends
    for (raw_start, raw_end), (canon_start, canon_end) in offsets.changed_segments:
        for i in range(raw_start + 1, raw_end):
            assert (starts[i], ends[i]) == (canon_start, canon_end)


@given(st.text(alphabet=st.characters(blacklist_characters="\r")))
def test_identity_when_raw_is_already_canonical(text: str) -> None:
    raw = canonicalize(text)
    offsets = OffsetMap(raw)
    assert offsets.is_identity
    assert all(offsets.raw_to_canonical(i) == i for i in range(len(raw) + 1))


# ---------------------------------------------------------------- code units


def test_utf8_and_utf16_offsets_hand_computed() -> None:
    text = "a\u00e9\u20ac\U0001f600b"  # 1 + 2 + 3 + 4 + 1 UTF-8 bytes; 1+1+1+2+1 UTF-16 units
    assert [codepoint_to_utf8(text, i) for i in range(6)] == [0, 1, 3, 6, 10, 11]
    assert [codepoint_to_utf16(text, i) for i in range(6)] == [0, 1, 2, 3, 5, 6]
    assert utf8_to_codepoint(text, 10) == 4
    assert utf16_to_codepoint(text, 5) == 4
    index = CodeUnitIndex(text)
    assert index.to_codepoint(6, "utf8") == 3
    assert index.from_codepoint(4, OffsetUnit.UTF16) == 5
    assert index.to_codepoint(3, OffsetUnit.CODEPOINT) == 3


def test_offset_inside_a_character_is_an_error_not_rounded() -> None:
    text = "a\u00e9\U0001f600"
    with pytest.raises(InputError, match="UTF-8 byte offset 2 falls inside the character"):
        utf8_to_codepoint(text, 2)
    with pytest.raises(InputError, match="UTF-16 code unit offset 3 falls inside"):
        utf16_to_codepoint(text, 3)
    with pytest.raises(InputError, match="outside the text"):
        utf8_to_codepoint(text, 8)
    with pytest.raises(ValueError, match="'utf32' is not a valid OffsetUnit"):
        CodeUnitIndex(text).to_codepoint(0, "utf32")


@given(st.text(), st.data())
def test_code_unit_conversions_round_trip(text: str, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(text)))
    index = CodeUnitIndex(text)
    for unit in (OffsetUnit.UTF8, OffsetUnit.UTF16):
        assert index.to_codepoint(index.from_codepoint(i, unit), unit) == i
    assert codepoint_to_utf8(text, i) == index.from_codepoint(i, OffsetUnit.UTF8)
    assert codepoint_to_utf16(text, i) == index.from_codepoint(i, OffsetUnit.UTF16)
    assert utf8_to_codepoint(text, len(text[:i].encode("utf-8", "surrogatepass"))) == i


def test_canonical_span_from_raw_bytes() -> None:
    raw = "Caf\u0065\u0301\r\nna\u00efve"  # café (decomposed), CRLF, naïve
    # "naïve" in the raw UTF-8 bytes: C a f e ´(2) \r \n -> starts at byte 8
    start = len(raw[:7].encode("utf-8"))
    end = len(raw.encode("utf-8"))
    assert (start, end) == (8, 14)
    assert canonical_span(raw, start, end, "utf8") == (5, 10)
    assert canonicalize(raw)[5:10] == "na\u00efve"
    assert canonical_span(raw, 7, 12) == (5, 10)  # code points of the raw text
    assert canonical_span(raw, 7, 12, OffsetUnit.UTF16) == (5, 10)
    with pytest.raises(InputError, match="inverted"):
        canonical_span(raw, 4, 2)


# ---------------------------------------------------------------- byte-order mark


def test_leading_bom_is_dropped_and_offsets_after_it_shift() -> None:
    raw = "\ufeffab\r\ncd"
    offsets = OffsetMap(raw)
    assert offsets.canonical == canonicalize(raw) == "ab\ncd"
    assert offsets.changed_segments == [((0, 1), (0, 0)), ((3, 5), (2, 3))]
    assert offsets.raw_span_to_canonical(1, 3) == (0, 2)  # "ab" right after the mark
    assert offsets.raw_span_to_canonical(5, 7) == (3, 5)  # "cd" after the mark and CRLF
    assert offsets.canonical_to_raw(3) == 5


def test_canonical_span_translates_bytes_after_a_bom() -> None:
    raw = "\ufeffhello \u00e9t\u00e9"
    # UTF-8: the mark is 3 bytes, so "hello" is bytes [3, 8)
    assert canonical_span(raw, 3, 8, "utf8") == (0, 5)
    assert canonical_span(raw, 1, 6) == (0, 5)
    start, end = canonical_span(raw, 7, 10)
    assert canonicalize(raw)[start:end] == "\u00e9t\u00e9"


def test_a_bom_inside_the_text_is_a_character() -> None:
    offsets = OffsetMap("a\ufeffb")
    assert offsets.is_identity
    assert offsets.canonical == "a\ufeffb"


@given(st.text(alphabet=st.sampled_from("\ufeffa\r\ne\u0301")))
def test_bom_texts_map_like_canonicalize(raw: str) -> None:
    offsets = OffsetMap(raw)
    assert offsets.canonical == canonicalize(raw)
    assert offsets.raw_to_canonical(len(raw), "end") == len(offsets.canonical)
