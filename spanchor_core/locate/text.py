"""The whitespace- and case-insensitive view of text, one code point at a time.

Folding maps each code point to exactly one code point, so folding a slice equals slicing
the folded text; the normalised view drops whitespace on top of that. The helpers work on
``str`` and on numpy arrays of code points, which is how the index and the scans see text.
"""

from __future__ import annotations

import re
from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = [
    "advance_nonspace",
    "code_points",
    "fold",
    "non_space_mask",
    "normalise",
    "normalise_with_positions",
]

_WS_LIMIT: Final = 0x3001  # every str.isspace() code point is below this
_WS_TABLE: Final = np.array([chr(c).isspace() for c in range(_WS_LIMIT + 1)], dtype=np.bool_)
_WS_TABLE[_WS_LIMIT] = False
_WS_FIRST_HIGH: Final = 0x85  # the first whitespace code point above U+0020
_SPACE_OPT: Final = re.compile(r"\s*")
_NONSPACE_RUN: Final = re.compile(r"\S+")
_ASCII_SPACE: Final = bytes(c for c in range(128) if chr(c).isspace())
_ASCII_KEEP: Final = np.array([not chr(c).isspace() for c in range(256)], dtype=np.bool_)
# ``bytes.lower`` as a translation table (A-Z to a-z, every other byte itself): folding and
# dropping whitespace then take one pass of ``bytes.translate`` instead of two passes
_ASCII_LOWER: Final = bytes.maketrans(bytes(range(65, 91)), bytes(range(97, 123)))
_ADVANCE: dict[int, re.Pattern[str]] = {}  # n -> "n non-space characters and the spaces after"


def fold(text: str) -> str:
    """Lower-case ``text`` one code point to one code point, independent of context.

    ``str.lower`` changes length only for U+0130 and treats a final sigma by context;
    both are flattened so that folding a slice equals slicing the folded text.
    """
    if "\u0130" in text:
        text = text.replace("\u0130", "i")
    return text.lower().replace("\u03c2", "\u03c3")


def normalise(text: str) -> str:
    """The whitespace- and case-insensitive view: folded, every whitespace removed."""
    if text.isascii():  # the same, as two passes over bytes (no list of words)
        return text.encode("ascii").translate(_ASCII_LOWER, _ASCII_SPACE).decode("ascii")
    return "".join(fold(text).split())


def normalise_with_positions(text: str) -> tuple[str, npt.NDArray[np.intp]]:
    """:func:`normalise` of ``text`` and, for each of its characters, its offset in ``text``."""
    if text.isascii():
        raw = text.encode("ascii")
        octets = np.frombuffer(raw, dtype=np.uint8)
        # every byte above U+0020 is kept; only control characters are looked up (a table
        # lookup of every byte costs a hundred comparisons)
        mask = octets > 32
        check = np.flatnonzero(octets < 32)
        if len(check):
            mask[check] = _ASCII_KEEP[octets[check]]
        kept = np.flatnonzero(mask)
        return raw.translate(_ASCII_LOWER, _ASCII_SPACE).decode("ascii"), kept
    codes = code_points(fold(text))
    kept = np.flatnonzero(non_space_mask(codes))
    return codes[kept].tobytes().decode("utf-32-le", "surrogatepass"), kept


def code_points(text: str) -> npt.NDArray[np.uint32]:
    """``text`` as an array of code points (lone surrogates kept)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")


def non_space_mask(codes: npt.NDArray[np.uint32]) -> npt.NDArray[np.bool_]:
    """True where a code point is not whitespace."""
    # U+0020 is whitespace and nothing from U+0021 to U+0084 is: only control characters
    # (line ends, mostly) and code points from U+0085 on are looked up in the table
    mask = codes > 32
    check = np.flatnonzero((codes < 32) | (codes >= _WS_FIRST_HIGH))
    if len(check):
        mask[check] = ~_WS_TABLE[np.minimum(codes[check], _WS_LIMIT)]
    return mask


def advance_nonspace(text: str, pos: int, n: int) -> int:
    """Index of the non-space character ``n`` non-space characters after ``text[pos]``."""
    if n <= 0:
        return pos
    # one regular-expression match instead of a loop over the runs (n < CHECKPOINT here)
    pattern = _ADVANCE.get(n)
    if pattern is None:
        pattern = _ADVANCE.setdefault(n, re.compile(rf"\s*(?:\S\s*){{{n}}}"))
    found = pattern.match(text, pos)
    if found is not None:
        return found.end()
    while n > 0:
        run_end = _NONSPACE_RUN.match(text, pos)
        stop = run_end.end() if run_end else pos
        if stop - pos > n:
            return pos + n
        n -= stop - pos
        skip = _SPACE_OPT.match(text, stop)
        pos = skip.end() if skip else stop
    return pos
