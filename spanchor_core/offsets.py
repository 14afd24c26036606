"""Translating offsets from other coordinate systems into canonical code-point offsets.

Anchors live in canonical text (see :mod:`spanchor_core.corpus`): newlines unified, then NFC,
offsets in code points. Other tools give offsets against the raw text (a file with ``\\r\\n``
line ends, a source that is not NFC), or count UTF-8 bytes (Rust, Go, most tokenizers) or
UTF-16 code units (JavaScript, Java, .NET, LSP). Reusing such an offset as a canonical
code-point offset is silently wrong as soon as the text holds one character outside ASCII or
one CR, so every such offset goes through this module.

**Raw to canonical.** :class:`OffsetMap` splits the raw text into normalisation segments: a
segment starts at each *stable starter* (a character of canonical combining class 0 that
never composes with a character before it, nor decomposes into one that would) and runs up
to the next one; ``\\r\\n`` is never split. NFC and newline unification act on each segment on its
own, so each raw segment maps onto exactly one canonical segment and offsets at segment
boundaries translate exactly. A segment that canonicalisation leaves unchanged maps offsets
inside it one to one. An offset *inside* a segment that canonicalisation changed (between
``\\r`` and ``\\n``, between ``e`` and a combining acute that NFC fuses into ``é``) has no
exact image; the rule is to widen: a start offset moves to the start of the canonical
segment and an end offset to its end, so a translated span always covers the canonical form
of every raw character it covered.

**Code units.** :class:`CodeUnitIndex` turns UTF-8 byte and UTF-16 code-unit offsets into
code-point offsets of the same text and back. An offset that falls inside one character
(inside a multi-byte sequence or a surrogate pair) is an error, never rounded. Code units
counted against canonical text need only this step; counted against raw text, convert to
raw code points first, then through :class:`OffsetMap` (:func:`canonical_span` does both).

**Byte-order mark.** A leading U+FEFF is dropped by canonicalisation (one rule for every entry
point, see :mod:`spanchor_core.corpus.canonical`): the leading marks are a changed segment of
their own, raw ``[0, n)`` onto canonical ``[0, 0)``, so a raw offset after one mark moves one
code point left (a UTF-8 byte offset three bytes, through :class:`CodeUnitIndex` of the raw text).

Everything is linear in the length of the text; an already canonical text maps by identity
without building anything.
"""

from __future__ import annotations

import bisect
import sys
import unicodedata
from enum import StrEnum
from functools import cache
from typing import Literal

import numpy as np
import numpy.typing as npt

from spanchor_core.corpus import BOM, canonical_form
from spanchor_core.errors import InputError
from spanchor_core.spans import Span

__all__ = [
    "CodeUnitIndex",
    "OffsetMap",
    "OffsetUnit",
    "Side",
    "canonical_span",
    "codepoint_to_utf8",
    "codepoint_to_utf16",
    "utf8_to_codepoint",
    "utf16_to_codepoint",
]

Side = Literal["start", "end"]
"""Which end of a span an offset is: decides how an offset inside a changed segment widens."""


class OffsetUnit(StrEnum):
    """What an offset counts."""

    CODEPOINT = "codepoint"
    UTF8 = "utf8"
    UTF16 = "utf16"


# --------------------------------------------------------------------------- segmentation


def _hangul_second_elements() -> set[int]:
    # Hangul compositions are algorithmic (no entries in the decomposition table):
    # vowel jamo V compose onto a leading consonant L, trailing consonants T onto an LV syllable.
    return set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))


@cache
def _character_tables() -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Two lookup tables indexed by code point: ``(continues, changes)``.

    ``continues[c]``: ``c`` cannot start a normalisation segment, because it is a non-starter,
    may compose with the character before it, or decomposes into something that does.
    ``changes[c]``: NFC does not keep ``c`` as it is, even alone (singletons, composition
    exclusions such as U+0958).

    Derived from the running interpreter's ``unicodedata`` so that segmentation always agrees
    with the ``unicodedata.normalize`` that builds canonical text, whatever Unicode version
    this Python ships. Computed once (a fraction of a second), on the first text that is not
    already canonical.
    """
    size = sys.maxunicode + 1
    continues = np.zeros(size, dtype=np.bool_)
    changes = np.zeros(size, dtype=np.bool_)
    combining = unicodedata.combining
    decomposition_of = unicodedata.decomposition
    decomposable: list[str] = []
    for code in range(size):
        char = chr(code)
        if combining(char):
            continues[code] = True
        decomposition = decomposition_of(char)
        if decomposition and not decomposition.startswith("<"):
            decomposable.append(char)
    second_elements = _hangul_second_elements()
    for char in decomposable:
        parts = decomposition_of(char).split()
        if unicodedata.normalize("NFC", char) != char:
            changes[ord(char)] = True
        elif len(parts) == 2:
            # a primary composite: its second part may fuse with whatever precedes it
            second_elements.add(int(parts[1], 16))
    continues[list(second_elements)] = True
    for char in decomposable:
        first = unicodedata.normalize("NFD", char)[0]
        if combining(first) or ord(first) in second_elements:
            continues[ord(char)] = True
    return continues, changes


def _candidate_segments(raw: str) -> tuple[list[int], list[int]]:
    """Start and end of every segment that canonicalisation *might* change.

    A segment starts at each stable starter (and at 0), except that ``\\n`` after ``\\r``
    continues the ``\\r`` segment. A segment of one character that NFC keeps, other than
    ``\\r``, is unchanged by canonicalisation, so only the other segments are candidates.
    Vectorised: the Python work is proportional to the number of candidates.
    """
    continues_table, changes_table = _character_tables()
    cps = _code_points(raw)
    n = len(cps)
    is_cr = cps == 0x0D
    continues = continues_table[cps]
    continues[1:] |= (cps[1:] == 0x0A) & is_cr[:-1]
    continues[0] = False
    starts = np.flatnonzero(~continues)
    ends = np.empty_like(starts)
    ends[:-1] = starts[1:]
    ends[-1] = n
    candidate = ((ends - starts) > 1) | is_cr[starts] | changes_table[cps[starts]]
    return starts[candidate].tolist(), ends[candidate].tolist()


class OffsetMap:
    """Exact translation of offsets in a raw text into offsets in its canonical text.

    ``canonical`` equals :func:`spanchor_core.canonicalize` of the raw text. Only the
    segments that canonicalisation changed are stored (as sorted boundary lists), so a text
    that is already canonical costs nothing and a lookup is a binary search.
    """

    __slots__ = ("_canon_ends", "_canon_starts", "_raw_ends", "_raw_starts", "canonical", "raw")

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self._raw_starts: list[int] = []
        self._raw_ends: list[int] = []
        self._canon_starts: list[int] = []
        self._canon_ends: list[int] = []
        lead = len(raw) - len(raw.lstrip(BOM)) if raw.startswith(BOM) else 0
        if not lead and "\r" not in raw and unicodedata.is_normalized("NFC", raw):
            self.canonical = raw
            return
        if lead:
            self._raw_starts.append(0)
            self._raw_ends.append(lead)
            self._canon_starts.append(0)
            self._canon_ends.append(0)
        pieces: list[str] = []
        raw_pos = lead
        canon_pos = 0
        body = raw[lead:]
        body_starts, body_ends = _candidate_segments(body) if body else ([], [])
        for seg_start, seg_end in zip(
            [s + lead for s in body_starts], [e + lead for e in body_ends], strict=True
        ):
            segment = raw[seg_start:seg_end]
            canonical_segment = canonical_form(segment)
            if canonical_segment == segment:
                continue
            pieces.append(raw[raw_pos:seg_start])
            canon_pos += seg_start - raw_pos
            pieces.append(canonical_segment)
            self._raw_starts.append(seg_start)
            self._raw_ends.append(seg_end)
            self._canon_starts.append(canon_pos)
            canon_pos += len(canonical_segment)
            self._canon_ends.append(canon_pos)
            raw_pos = seg_end
        pieces.append(raw[raw_pos:])
        self.canonical = "".join(pieces)

    def __repr__(self) -> str:
        return (
            f"OffsetMap({len(self.raw)} raw -> {len(self.canonical)} canonical chars, "
            f"{len(self._raw_starts)} changed segments)"
        )

    @property
    def is_identity(self) -> bool:
        """True when the raw text was already canonical: every offset maps to itself."""
        return not self._raw_starts

    @property
    def changed_segments(self) -> list[tuple[Span, Span]]:
        """``(raw span, canonical span)`` of each segment canonicalisation changed, in order."""
        return [
            ((rs, re_), (cs, ce))
            for rs, re_, cs, ce in zip(
                self._raw_starts, self._raw_ends, self._canon_starts, self._canon_ends, strict=True
            )
        ]

    def raw_to_canonical(self, offset: int, side: Side = "start") -> int:
        """The canonical offset of raw ``offset``; inside a changed segment, widen by ``side``."""
        if not 0 <= offset <= len(self.raw):
            raise InputError(
                f"raw offset {offset} is outside the text (length {len(self.raw)})",
                hint="offsets are 0-based and at most the text length",
            )
        i = bisect.bisect_right(self._raw_starts, offset) - 1
        if i < 0:
            return offset
        if offset == self._raw_starts[i]:
            return self._canon_starts[i]
        if offset < self._raw_ends[i]:
            return self._canon_starts[i] if side == "start" else self._canon_ends[i]
        return offset - self._raw_ends[i] + self._canon_ends[i]

    def raw_span_to_canonical(self, start: int, end: int) -> Span:
        """The canonical span covering raw ``[start, end)`` (widened inside changed segments)."""
        if start > end:
            raise InputError(f"span [{start}, {end}) is inverted", hint="start must be <= end")
        return self.raw_to_canonical(start, "start"), self.raw_to_canonical(end, "end")

    def canonical_to_raw(self, offset: int, side: Side = "start") -> int:
        """The raw offset of canonical ``offset`` (the inverse direction, same widening rule)."""
        if not 0 <= offset <= len(self.canonical):
            raise InputError(
                f"canonical offset {offset} is outside the text (length {len(self.canonical)})",
                hint="offsets are 0-based and at most the text length",
            )
        i = bisect.bisect_right(self._canon_starts, offset) - 1
        if i < 0:
            return offset
        if offset == self._canon_starts[i]:
            return self._raw_starts[i]
        if offset < self._canon_ends[i]:
            return self._raw_starts[i] if side == "start" else self._raw_ends[i]
        return offset - self._canon_ends[i] + self._raw_ends[i]


# --------------------------------------------------------------------------- code units


def _code_points(text: str) -> npt.NDArray[np.uint32]:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


class CodeUnitIndex:
    """Code-point <-> UTF-8 byte / UTF-16 code-unit offsets of one text, for many lookups.

    Builds the cumulative code-unit offset of every character boundary once (numpy,
    linear); each conversion is then a binary search.
    """

    __slots__ = ("_bounds", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._bounds: dict[OffsetUnit, npt.NDArray[np.int64]] = {}

    def _boundaries(self, unit: OffsetUnit) -> npt.NDArray[np.int64]:
        cached = self._bounds.get(unit)
        if cached is not None:
            return cached
        cps = _code_points(self.text).astype(np.int64)
        if unit is OffsetUnit.UTF8:
            widths = 1 + (cps >= 0x80) + (cps >= 0x800) + (cps >= 0x10000)
        else:
            widths = 1 + (cps >= 0x10000)
        bounds = np.zeros(len(cps) + 1, dtype=np.int64)
        np.cumsum(widths, out=bounds[1:])
        self._bounds[unit] = bounds
        return bounds

    def to_codepoint(self, offset: int, unit: OffsetUnit | str) -> int:
        """The code-point offset of a ``unit`` offset; InputError if it splits a character."""
        unit = OffsetUnit(unit)
        if unit is OffsetUnit.CODEPOINT:
            _check_range(offset, len(self.text), unit)
            return offset
        bounds = self._boundaries(unit)
        _check_range(offset, int(bounds[-1]), unit)
        index = int(np.searchsorted(bounds, offset))
        if int(bounds[index]) != offset:
            char = self.text[index - 1]
            raise InputError(
                f"{_unit_name(unit)} offset {offset} falls inside the character {char!r} "
                f"(U+{ord(char):04X}) at code point {index - 1}",
                hint=f"give offsets on character boundaries, counted in {_unit_name(unit)}s",
            )
        return index

    def from_codepoint(self, offset: int, unit: OffsetUnit | str) -> int:
        """The ``unit`` offset of a code-point offset."""
        unit = OffsetUnit(unit)
        _check_range(offset, len(self.text), OffsetUnit.CODEPOINT)
        if unit is OffsetUnit.CODEPOINT:
            return offset
        return int(self._boundaries(unit)[offset])


def _unit_name(unit: OffsetUnit) -> str:
    return {
        OffsetUnit.CODEPOINT: "code point",
        OffsetUnit.UTF8: "UTF-8 byte",
        OffsetUnit.UTF16: "UTF-16 code unit",
    }[unit]


def _check_range(offset: int, length: int, unit: OffsetUnit) -> None:
    if not 0 <= offset <= length:
        raise InputError(
            f"{_unit_name(unit)} offset {offset} is outside the text "
            f"({length} {_unit_name(unit)}s long)",
            hint="check which unit the offsets are counted in",
        )


def utf8_to_codepoint(text: str, offset: int) -> int:
    """Code-point offset in ``text`` of a UTF-8 byte offset (linear; use CodeUnitIndex for many)."""
    return CodeUnitIndex(text).to_codepoint(offset, OffsetUnit.UTF8)


def codepoint_to_utf8(text: str, offset: int) -> int:
    """UTF-8 byte offset in ``text`` of a code-point offset."""
    _check_range(offset, len(text), OffsetUnit.CODEPOINT)
    return len(text[:offset].encode("utf-8", "surrogatepass"))


def utf16_to_codepoint(text: str, offset: int) -> int:
    """Code-point offset in ``text`` of a UTF-16 code-unit offset."""
    return CodeUnitIndex(text).to_codepoint(offset, OffsetUnit.UTF16)


def codepoint_to_utf16(text: str, offset: int) -> int:
    """UTF-16 code-unit offset in ``text`` of a code-point offset."""
    _check_range(offset, len(text), OffsetUnit.CODEPOINT)
    return len(text[:offset].encode("utf-16-le", "surrogatepass")) // 2


def canonical_span(
    raw: str, start: int, end: int, unit: OffsetUnit | str = OffsetUnit.CODEPOINT
) -> Span:
    """Canonical code-point span of ``[start, end)`` given in ``unit`` against the raw text.

    One call for the common case "this tool reported offsets into the file as it was":
    convert code units to code points of the raw text, then raw to canonical (widening
    inside changed segments, see the module docs). For many spans of one text, build a
    :class:`CodeUnitIndex` and an :class:`OffsetMap` once instead.
    """
    if start > end:
        raise InputError(f"span [{start}, {end}) is inverted", hint="start must be <= end")
    index = CodeUnitIndex(raw)
    raw_start = index.to_codepoint(start, unit)
    raw_end = index.to_codepoint(end, unit)
    return OffsetMap(raw).raw_span_to_canonical(raw_start, raw_end)
