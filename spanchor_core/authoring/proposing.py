"""Proposing evidence candidates: each document cut into sentence-level spans, near
duplicates dropped (:func:`propose_candidates`, ``spanchor gold extract``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from spanchor_core.authoring.candidates import Candidate
from spanchor_core.corpus import Corpus, sha256_text
from spanchor_core.errors import InputError

__all__ = ["propose_candidates"]

_TERMINATORS: Final = frozenset(".!?\u2026\u0964\u0965\u3002\uff01\uff1f")
_CLOSERS: Final = frozenset("\"')]\u201d\u2019\u00bb")
# a whitespace run, or the point right after a CJK full stop (written without a space)
_BOUNDARY: Final = re.compile(r"\s+|(?<=[\u3002\uff01\uff1f])(?=\S)")
_WORD: Final = re.compile(r"\w+")
_PARAGRAPH, _LINE, _SENTENCE = 2, 1, 0


def _pieces(text: str) -> Iterator[tuple[int, int, int]]:
    """Sentence-ish pieces ``(start, end, break_after)`` of one document, in one pass.

    A piece ends at a whitespace run that holds a newline (two or more: paragraph break; one,
    unless it is a hard wrap inside a sentence, see :func:`_wrapped`) or follows a sentence
    terminator (optionally behind a closing quote or bracket), or
    right after a CJK full stop. Pieces never start or end with whitespace.
    """
    pos = 0
    for match in _BOUNDARY.finditer(text):
        start = match.start()
        gap = match.group()
        newlines = gap.count("\n")
        if newlines >= 2:
            kind = _PARAGRAPH
        elif newlines == 1 and not _wrapped(text, start, match.end()):
            kind = _LINE
        else:
            before = text[start - 1] if start > 0 else ""
            if before in _CLOSERS and start > 1:
                before = text[start - 2]
            if not gap or before in _TERMINATORS:
                kind = _SENTENCE
            else:
                if start == pos:  # leading whitespace of a document: skip it
                    pos = match.end()
                continue
        if start > pos:
            yield pos, start, kind
        pos = match.end()
    end = len(text)
    while end > pos and text[end - 1].isspace():
        end -= 1
    if pos < end:
        yield pos, end, _PARAGRAPH


def _wrapped(text: str, start: int, end: int) -> bool:
    """Whether the single line break in ``text[start:end]`` is a hard wrap inside a sentence:
    the line before ends in no terminator and the next one goes on in lower case ("... the MIN
    mark (0.5 litres)\nand the MAX mark"). A list item, a heading or a new sentence starts
    with something else, and keeps its own piece."""
    if end >= len(text) or not text[end].islower():
        return False
    before = text[start - 1] if start > 0 else ""
    if before in _CLOSERS and start > 1:
        before = text[start - 2]
    return before not in _TERMINATORS


def _split_long(
    text: str, start: int, end: int, min_chars: int, max_chars: int
) -> Iterator[tuple[int, int]]:
    """Cut an over-long piece at the last space before ``max_chars`` (hard cut if none)."""
    while end - start > max_chars:
        cut = text.rfind(" ", start + min_chars, start + max_chars + 1)
        if cut <= start:
            cut = start + max_chars
        stop = cut
        while text[stop - 1].isspace():  # never empties: pieces start with non-space
            stop -= 1
        yield start, stop
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if start < end:
        yield start, end


def _segment(text: str, min_chars: int, max_chars: int) -> list[tuple[int, int]]:
    """Candidate spans of one document: pieces merged within a paragraph to fit the bounds."""
    out: list[tuple[int, int, int]] = []  # (start, end, paragraph number)
    current: list[int] | None = None
    paragraph = 0

    def flush() -> None:
        nonlocal current
        if current is None:
            return
        start, end = current
        if end - start >= min_chars:
            out.append((start, end, paragraph))
        elif out and out[-1][2] == paragraph and end - out[-1][0] <= max_chars:
            out[-1] = (out[-1][0], end, paragraph)  # a short tail joins its predecessor
        current = None

    for p_start, p_end, kind in _pieces(text):
        for start, end in _split_long(text, p_start, p_end, min_chars, max_chars):
            if current is None:
                current = [start, end]
            elif current[1] - current[0] < min_chars and end - current[0] <= max_chars:
                current[1] = end
            else:
                flush()
                current = [start, end]
        if kind == _PARAGRAPH:
            flush()
            paragraph += 1
    flush()
    return [(start, end) for start, end, _ in out]


def _dedup_key(text: str) -> str:
    return " ".join(_WORD.findall(text.casefold()))


def propose_candidates(
    corpus: Corpus, *, min_chars: int = 40, max_chars: int = 400
) -> list[Candidate]:
    """Sentence-level evidence candidates of every document, pending review.

    Each document is cut into sentences (terminator followed by whitespace, line breaks,
    CJK full stops); consecutive short sentences of one paragraph are joined until they
    reach ``min_chars``; pieces longer than ``max_chars`` are cut at the last space that
    keeps them under it. Every candidate is a span of one document, ``min_chars <= length
    <= max_chars``, without surrounding whitespace, and candidates of a document do not
    overlap. Near duplicates — texts equal after case folding and dropping everything but
    words — are removed, keeping the first in document id then offset order: one hash
    lookup each, linear overall. (Paraphrases and one-word edits are not caught.)
    """
    if min_chars < 1 or max_chars < min_chars:
        raise InputError(
            f"need 1 <= min_chars <= max_chars, got {min_chars} and {max_chars}",
            hint="e.g. --min-chars 40 --max-chars 400",
        )
    seen: set[str] = set()
    found: list[Candidate] = []
    for doc_id in corpus:
        text = corpus.text(doc_id)
        for n, (start, end) in enumerate(_segment(text, min_chars, max_chars)):
            piece = text[start:end]
            key = _dedup_key(piece)
            if key in seen:
                continue
            seen.add(key)
            found.append(Candidate(f"{doc_id}#{n}", doc_id, start, end, sha256_text(piece), piece))
    return found
