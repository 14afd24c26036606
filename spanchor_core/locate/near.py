"""Near matches for authoring: where a typed quote almost occurs, :func:`near_matches`.

An author who types a straight ``'`` where the document has ``’``, another dash, other letter
case or other spacing, or makes a small slip, should be offered the places meant, not told
"no matches". The search runs on a *loose view* of each document — quotes and dashes unified,
letters folded, whitespace removed — first exactly, then by partial alignment (small edits);
each place found is reported with its canonical span, text, similarity to what was typed and
what differs. A direct scan, linear in the corpus: right for one lookup, never for mapping runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
from rapidfuzz import fuzz
from rapidfuzz.distance import Indel

from spanchor_core.corpus import canonicalize
from spanchor_core.errors import InputError
from spanchor_core.locate.documents import CorpusTexts
from spanchor_core.locate.text import code_points, fold, non_space_mask
from spanchor_core.spans import DocSpan

__all__ = ["NearMatch", "near_matches"]

_QUOTES: Final = dict.fromkeys("‘’‚‛′`´", "'") | dict.fromkeys("“”„‟″«»", '"')
_DASHES: Final = dict.fromkeys("‐‑‒–—―−﹘﹣－", "-")
_QUOTE_TABLE: Final = str.maketrans(_QUOTES)
_DASH_TABLE: Final = str.maketrans(_DASHES)
_MIN_EDIT_CHARS: Final = 8  # shorter texts are only matched up to quotes/dashes/case/spacing


def _quotes(text: str) -> str:
    return text.translate(_QUOTE_TABLE)


def _dashes(text: str) -> str:
    return text.translate(_DASH_TABLE)


def _spacing(text: str) -> str:
    return " ".join(text.split())


_DIFFERENCES: Final[tuple[tuple[str, Callable[[str], str]], ...]] = (
    ("quotes", _quotes),
    ("dashes", _dashes),
    ("case", fold),
    ("whitespace", _spacing),
)


@dataclass(frozen=True, slots=True)
class NearMatch:
    """One place a typed text nearly occurs.

    ``span`` and ``text`` are the canonical span and its text (what an anchor would hold);
    ``score`` in [0, 1] is the rapidfuzz ratio between the typed text and ``text`` once quotes,
    dashes, case and spacing are unified (1.0: they differ in nothing else); ``differences``
    names what differs, among ``"quotes"``, ``"dashes"``, ``"case"``, ``"whitespace"`` and
    ``"edits"`` (empty for an exact occurrence).
    """

    span: DocSpan
    text: str
    score: float
    differences: tuple[str, ...]


def _loose(text: str) -> tuple[str, np.ndarray]:
    """The loose view of ``text`` and the canonical offset of each of its characters."""
    codes = code_points(fold(_dashes(_quotes(text))))
    kept = np.flatnonzero(non_space_mask(codes))
    return codes[kept].tobytes().decode("utf-32-le", "surrogatepass"), kept


def _differences(typed: str, found: str) -> tuple[str, ...]:
    kinds: list[str] = []
    x, y = typed, found
    for name, step in _DIFFERENCES:
        if x == y:
            break
        nx, ny = step(x), step(y)
        if Indel.distance(nx, ny) < Indel.distance(x, y):
            kinds.append(name)
        x, y = nx, ny
    if x != y:
        kinds.append("edits")
    return tuple(kinds)


def near_matches(
    documents: CorpusTexts,
    text: str,
    *,
    document_id: str | None = None,
    limit: int = 5,
    min_score: float = 0.8,
) -> list[NearMatch]:
    """Up to ``limit`` places where ``text`` occurs up to quotes, dashes, case, spacing or
    small edits, best first (then by document id and start); overlapping places are reported
    once. ``min_score`` bounds the small-edit search (the ratio on the loose view). An unknown
    ``document_id`` or a bad ``limit``/``min_score`` is an :class:`InputError`.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InputError(f"limit must be a positive whole number, got {limit!r}")
    if isinstance(min_score, bool) or not isinstance(min_score, int | float):
        raise InputError(f"min_score must be a number in [0, 1], got {min_score!r}")
    if not 0.0 <= min_score <= 1.0:
        raise InputError(f"min_score must be a number in [0, 1], got {min_score!r}")
    if document_id is not None and document_id not in documents.number:
        raise InputError(f"unknown document {document_id!r}", hint="check the document id")
    typed = canonicalize(text).strip()
    needle, _ = _loose(typed)
    if not needle:
        return []
    numbers: Sequence[int] = (
        range(len(documents.ids)) if document_id is None else [documents.number[document_id]]
    )
    places: list[tuple[float, float, int, int, int]] = []  # score, raw ratio, doc, start, end
    for d in numbers:
        source = documents.texts[d]
        loose, kept = _loose(source)
        pos = loose.find(needle)
        while pos != -1:
            start, end = int(kept[pos]), int(kept[pos + len(needle) - 1]) + 1
            places.append((1.0, fuzz.ratio(typed, source[start:end]) / 100.0, d, start, end))
            pos = loose.find(needle, pos + 1)
        if len(needle) >= _MIN_EDIT_CHARS:
            found = fuzz.partial_ratio_alignment(needle, loose, score_cutoff=100 * min_score)
            if found is not None and found.dest_end > found.dest_start:
                start = int(kept[found.dest_start])
                end = int(kept[found.dest_end - 1]) + 1
                raw = fuzz.ratio(typed, source[start:end]) / 100.0
                loose_score = fuzz.ratio(needle, loose[found.dest_start : found.dest_end]) / 100.0
                places.append((loose_score, raw, d, start, end))
    out: list[NearMatch] = []
    taken: list[tuple[int, int, int]] = []
    for score, _, d, start, end in sorted(places, key=lambda p: (-p[0], -p[1], p[2], p[3])):
        if any(td == d and ts < end and start < te for td, ts, te in taken):
            continue
        taken.append((d, start, end))
        found_text = documents.texts[d][start:end]
        span = DocSpan(documents.ids[d], start, end)
        out.append(NearMatch(span, found_text, score, _differences(typed, found_text)))
        if len(out) == limit:
            break
    return out
