"""Where a text occurs in a corpus: :func:`locate_text`, and the choice of one occurrence.

Occurrences are numbered from 1, in document id then offset order, everywhere in spanchor
(``spanchor locate`` lists them so, ``add_anchor(occurrence=)`` and ``--occurrence`` take
that number).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from spanchor_core.corpus import Corpus, canonicalize, sha256_text
from spanchor_core.errors import AnchorError, InputError
from spanchor_core.spans import DocSpan

__all__ = ["Occurrence", "check_document", "choose_occurrence", "locate_text"]


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One place a text occurs: its span, the hash an anchor there would carry, context.

    ``whitespace_insensitive`` is true when the text was not found as given and this match
    differs from it in whitespace only (runs of whitespace of any kind count as equal).
    """

    document_id: str
    start: int
    end: int
    sha256: str
    text: str
    left: str
    right: str
    whitespace_insensitive: bool = False

    @property
    def span(self) -> DocSpan:
        return DocSpan(self.document_id, self.start, self.end)


def check_document(corpus: Corpus, document_id: str | None) -> None:
    """AnchorError unless ``document_id`` is None or a document of ``corpus``."""
    if document_id is not None and document_id not in corpus:
        raise AnchorError(
            f"document {document_id!r} is not in the corpus",
            hint="use a document id the corpus has (its path without suffix)",
        )


def _whitespace_insensitive(corpus: Corpus, text: str, ids: Iterable[str]) -> list[DocSpan]:
    # tokens never contain whitespace, so the pattern cannot backtrack across a token:
    # one left-to-right regex pass per document
    tokens = text.split()
    pattern = re.compile(r"\s+".join(re.escape(token) for token in tokens))
    return [
        DocSpan(doc_id, m.start(), m.end())
        for doc_id in ids
        for m in pattern.finditer(corpus.text(doc_id))
    ]


def locate_text(
    corpus: Corpus, text: str, *, context: int = 80, document_id: str | None = None
) -> list[Occurrence]:
    """Every occurrence of ``text`` in ``corpus``, in document id then offset order.

    ``text`` is canonicalised like the documents. Exact occurrences (overlapping ones
    included) are returned when there are any; otherwise the occurrences that differ only
    in whitespace (non-overlapping), marked ``whitespace_insensitive``. ``context``
    characters either side are kept for display. A single scan of the corpus: right for
    one text, not for thousands (use :class:`spanchor_core.Locator` for those).
    """
    if context < 0:
        raise InputError(f"context must be >= 0, got {context}")
    check_document(corpus, document_id)
    needle = canonicalize(text)
    if not needle.strip():
        raise AnchorError("cannot locate empty text", hint="give the text to look for")
    ids = list(corpus) if document_id is None else [document_id]
    spans = corpus.find_all(needle, document_id)
    loose = not spans
    if loose:
        spans = _whitespace_insensitive(corpus, needle, ids)
    found: list[Occurrence] = []
    for span in spans:
        doc_text = corpus.text(span.document_id)
        matched = doc_text[span.start : span.end]
        found.append(
            Occurrence(
                span.document_id,
                span.start,
                span.end,
                sha256_text(matched),
                matched,
                doc_text[max(0, span.start - context) : span.start],
                doc_text[span.end : span.end + context],
                loose,
            )
        )
    return found


def choose_occurrence(
    corpus: Corpus, text: str, document_id: str | None, occurrence: int | None
) -> DocSpan:
    """The one occurrence of ``text`` to anchor: number ``occurrence`` (from 1), or the only one.

    AnchorError when the text is absent, the number is out of range, or the text occurs
    more than once and no number was given.
    """
    matches = corpus.find_all(text, document_id)
    scope = "the corpus" if document_id is None else f"document {document_id!r}"
    if not matches:
        raise AnchorError(
            f"text {text[:60]!r} does not occur in {scope}",
            hint="copy the evidence exactly from the document; `spanchor locate` shows "
            "near matches that differ in whitespace",
        )
    if occurrence is not None:
        if not 1 <= occurrence <= len(matches):
            raise AnchorError(
                f"occurrence {occurrence} asked for, but the text occurs {len(matches)} "
                f"time{'s' if len(matches) > 1 else ''} in {scope}",
                hint=f"occurrences are numbered from 1 to {len(matches)}",
            )
        return matches[occurrence - 1]
    if len(matches) > 1:
        shown = ", ".join(
            f"#{n} {m.document_id}[{m.start}:{m.end}]" for n, m in enumerate(matches[:5], 1)
        )
        more = f" and {len(matches) - 5} more" if len(matches) > 5 else ""
        raise AnchorError(
            f"text occurs {len(matches)} times in {scope}: {shown}{more}",
            hint="choose one with --occurrence N (numbered from 1), or look in one document "
            "with --doc ID",
        )
    return matches[0]
