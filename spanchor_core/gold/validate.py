"""Checking a gold set against a corpus: every problem at once, each with its line.

Reading is strict about shape and lenient about meaning, so that :func:`validate_gold` can
report every duplicate id, empty question, query without anchors and bad anchor (negative,
inverted, empty, unknown document, out of bounds, hash mismatch) together.
:func:`read_gold_checked` goes one step further for ``spanchor validate``: a line that cannot
be read at all (not JSON, a missing field) becomes a ``malformed_line`` problem and the other
lines are still read, so one bad line does not hide every other problem.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from spanchor_core._io import jsonl_lines, open_for_reading
from spanchor_core.corpus import Corpus, sha256_text
from spanchor_core.errors import GoldError
from spanchor_core.gold.file import _parse_line, _read_header, _read_query, read_gold
from spanchor_core.gold.legacy import read_legacy_query
from spanchor_core.gold.model import GOLD_KIND, GOLD_SCHEMA_VERSION, Anchor, GoldQuery, GoldSet

__all__ = ["PROBLEM_CODES", "GoldProblem", "preview", "read_gold_checked", "validate_gold"]

PROBLEM_CODES: dict[str, str] = {
    "malformed_line": "the line cannot be read (not JSON, or a field missing or mistyped)",
    "empty_gold_set": "the gold set has no queries, so nothing can be scored",
    "duplicate_query_id": "a query id used on an earlier line (the mapping keeps the first)",
    "empty_query_id": "the query id is empty",
    "empty_question": "the question is empty or only whitespace",
    "no_anchors": "the query has no anchors, so no retrieval can be scored against it",
    "unknown_document": "the anchor names a document the corpus does not have",
    "negative_offset": "start or end is negative",
    "inverted_span": "start is after end",
    "empty_span": "start equals end: the anchor covers no text",
    "out_of_bounds": "end is past the end of the document",
    "hash_mismatch": "the text at the span no longer hashes to the anchor's hash",
}
"""Every :attr:`GoldProblem.code` with what it means."""


@dataclass(frozen=True, slots=True)
class GoldProblem:
    """One thing wrong with a gold set, located by line, query and anchor."""

    line: int | None
    query_id: str
    code: str
    message: str
    anchor: int | None = None
    """0-based index of the anchor in its query, when the problem is about one anchor."""

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        if self.code == "empty_gold_set":  # about the set, not about a query
            return f"{self.message} [{self.code}]"
        if self.code == "malformed_line":  # no query id could be read
            return f"{where}{self.message} [{self.code}]"
        return f"{where}{self.query_id!r}: {self.message} [{self.code}]"


def preview(text: str, limit: int = 40) -> str:
    """``text`` quoted, its middle elided past ``limit`` characters."""
    if len(text) <= limit:
        return repr(text)
    half = (limit - 1) // 2
    return repr(text[:half]) + "…" + repr(text[-half:])


def _anchor_problems(
    anchor: Anchor, corpus: Corpus, texts: dict[str, str | None] | None = None
) -> list[tuple[str, str]]:
    """What is wrong with ``anchor`` in ``corpus``, as ``(code, message)`` pairs: none for a
    sound anchor (then no message is worded). ``texts`` keeps the documents' texts looked up
    so far (``None`` for a document the corpus does not have), for a corpus that holds its
    texts; without it the corpus is asked for each anchor."""
    start, end = anchor.start, anchor.end
    if start < 0 or end < 0:
        return [("negative_offset", f"{_where(anchor)}: offsets must not be negative")]
    if start > end:
        return [("inverted_span", f"{_where(anchor)}: start is after end")]
    found = []
    if start == end:
        found.append(("empty_span", f"{_where(anchor)}: empty span covers no text"))
    document_id = anchor.document_id
    if texts is not None and document_id in texts:
        text = texts[document_id]
    else:
        text = corpus.text(document_id) if document_id in corpus else None
        if texts is not None:
            texts[document_id] = text
    if text is None:
        message = f"{_where(anchor)}: the corpus has no document {document_id!r}"
        found.append(("unknown_document", message))
        return found
    if end > len(text):
        message = (
            f"{_where(anchor)}: the document is only {len(text)} characters long"
            f"{_bom_note(anchor, text)}"
        )
        found.append(("out_of_bounds", message))
        return found
    if start == end:
        return found
    actual = text[start:end]
    actual_hash = sha256_text(actual)
    if actual_hash != anchor.hash:
        message = (
            f"{_where(anchor)}: text changed: expected hash {anchor.hash[:12]}, the text there "
            f"now is {preview(actual)} (hash {actual_hash[:12]}){_bom_note(anchor, text)}"
        )
        found.append(("hash_mismatch", message))
    return found


def _where(anchor: Anchor) -> str:
    return f"anchor [{anchor.start}, {anchor.end}) in {anchor.document_id!r}"


def _bom_note(anchor: Anchor, text: str) -> str:
    """What to add to a problem's message when the text one character earlier matches.

    spanchor 0.x kept a leading byte-order mark as a character; our corpus drops it, so 0.x
    anchors into such files sit one character late: say so when that explains it. Only for
    an anchor with a problem (hashing the earlier text of every anchor doubled the check).
    """
    earlier = text[anchor.start - 1 : anchor.end - 1] if anchor.start > 0 else None
    if earlier is not None and anchor.end <= len(text) + 1 and sha256_text(earlier) == anchor.hash:
        return (
            "; the text one character earlier matches: if spanchor 0.x made this anchor "
            "on a file starting with a byte-order mark, subtract 1 from start and end"
        )
    return ""


def validate_gold(gold: GoldSet, corpus: Corpus) -> list[GoldProblem]:
    """Every problem of ``gold`` against ``corpus`` at once, sorted by line.

    Checks the set (no queries at all), each query line (duplicate or empty id, empty
    question, no anchors) and each
    anchor (negative, inverted or empty span, unknown document, out of bounds, hash
    mismatch with a preview of the text now at the span). An empty list means every anchor
    points at the text it was made from. Codes and their meaning: :data:`PROBLEM_CODES`.
    """
    found: list[tuple[tuple[int, int, int, int], GoldProblem]] = []

    def add(index: int, query: GoldQuery, code: str, message: str, anchor: int | None) -> None:
        line = query.line
        key = (
            0 if line is not None else 1,
            line if line is not None else index,
            -1 if anchor is None else anchor,
            list(PROBLEM_CODES).index(code),
        )
        found.append((key, GoldProblem(line, query.query_id, code, message, anchor)))

    first_line: dict[str, int | None] = {}
    # texts by document id, for a corpus that holds them all (a lazy one reads them again)
    texts: dict[str, str | None] | None = {} if type(corpus) is Corpus else None
    for index, query in enumerate(gold.entries):
        if query.query_id in first_line:
            earlier = first_line[query.query_id]
            at = f"line {earlier}" if earlier is not None else "an earlier entry"
            message = f"query id {query.query_id!r} already used on {at}"
            add(index, query, "duplicate_query_id", message, None)
        else:
            first_line[query.query_id] = query.line
        if not query.query_id.strip():
            add(index, query, "empty_query_id", "the query id is empty", None)
        if not query.question.strip():
            add(index, query, "empty_question", "the question is empty", None)
        if not query.anchors:
            add(index, query, "no_anchors", "the query has no anchors", None)
        for position, anchor in enumerate(query.anchors):
            for code, message in _anchor_problems(anchor, corpus, texts):
                add(index, query, code, message, position)
    found.sort(key=lambda item: item[0])
    problems = [problem for _, problem in found]
    if not gold.entries:
        problems.append(
            GoldProblem(None, "", "empty_gold_set", "the gold set has no queries", None)
        )
    return problems


def _malformed(err: GoldError) -> GoldProblem:
    message = err.message if err.hint is None else f"{err.message}; {err.hint}"
    return GoldProblem(err.line, "", "malformed_line", message)


def read_gold_checked(path: str | os.PathLike[str]) -> tuple[GoldSet, list[GoldProblem]]:
    """The gold set at ``path`` with its unreadable query lines left out, and one
    ``malformed_line`` problem for each of them.

    A file :func:`~spanchor_core.gold.read_gold` reads gives the same set and no problem. A
    file whose first line (the header, or the first 0.x query line) cannot be read, or that
    cannot be opened, still raises :class:`~spanchor_core.errors.GoldError`: nothing else
    in it could be trusted. Pass the problems along with those of :func:`validate_gold`.
    """
    source = Path(path)
    try:
        return read_gold(source), []
    except GoldError as err:
        if err.line is None:
            raise
    problems: list[GoldProblem] = []
    queries: list[GoldQuery] = []
    with open_for_reading(source, error=GoldError, what="gold set file") as handle:
        lines = jsonl_lines(handle, source, error=GoldError, hint="save the gold set as UTF-8")
        first = next(lines)
        data = _parse_line(first.text, source, first.number)
        ours = "kind" in data
        header = _read_header(data, source, first.number) if ours else None
        if not ours:
            queries.append(read_legacy_query(data, source, first.number))
        try:
            for item in lines:
                try:
                    parsed = _parse_line(item.text, source, item.number)
                    if ours:
                        queries.append(_read_query(parsed, source, item.number))
                    else:
                        queries.append(read_legacy_query(parsed, source, item.number))
                except GoldError as err:
                    problems.append(_malformed(err))
        except GoldError as err:  # the reading layer itself stopped (a line past the limit)
            problems.append(_malformed(err))
    if header is None:
        return GoldSet(queries, path=source, file_format="spanchor-0.x"), problems
    gold = GoldSet(
        queries,
        path=source,
        description=header.description,
        corpus_fingerprint=header.corpus_fingerprint,
        metadata=header.metadata,
        file_format=f"{GOLD_KIND}/{GOLD_SCHEMA_VERSION}",
    )
    return gold, problems
