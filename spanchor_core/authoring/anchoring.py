"""Appending one verified anchor to a gold file: :func:`add_anchor` (``spanchor anchor add``)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from spanchor_core.authoring.gold_edits import read_gold_or_empty, rebuilt
from spanchor_core.authoring.occurrences import check_document, choose_occurrence
from spanchor_core.authoring.storable import lone_surrogate
from spanchor_core.corpus import Corpus, canonicalize
from spanchor_core.errors import AnchorError, GoldError
from spanchor_core.gold import Anchor, GoldQuery, write_gold

__all__ = ["add_anchor"]


def add_anchor(
    gold_path: str | os.PathLike[str],
    corpus: Corpus,
    *,
    query_id: str,
    question: str | None,
    text: str,
    document_id: str | None = None,
    occurrence: int | None = None,
) -> GoldQuery:
    """Anchor ``text`` and append it to the gold file at ``gold_path``; return the query.

    A new ``query_id`` becomes a new query (``question`` required). An existing one gets
    the anchor added; ``question`` must then be ``None`` or equal the stored question
    (compared after canonicalising and stripping), and an anchor already on that query is
    an error. ``occurrence`` is **1-based**, counted over every occurrence in document id
    then offset order (within ``document_id`` when given) — the numbering of spanchor
    0.x's ``anchor add --occurrence`` — and required when the text occurs more than once.

    The file is read, changed in memory and rewritten atomically with
    :func:`spanchor_core.write_gold` (created, with our header, if missing). A spanchor 0.x
    gold file is rewritten in our format. Concurrent writers are not serialised: the last
    rename wins.
    """
    path = Path(gold_path)
    if not query_id.strip():
        raise GoldError("the query id is empty", hint="give a query id such as q1")
    check_document(corpus, document_id)
    bad = None if question is None else lone_surrogate(question)
    if bad is not None:
        raise GoldError(
            f"the question holds a lone surrogate {bad}, which UTF-8 cannot store",
            hint="give the question as plain text",
        )
    needle = canonicalize(text)
    if not needle:
        raise AnchorError("cannot anchor empty text", hint="give the evidence text to anchor")
    gold = read_gold_or_empty(path)
    chosen = choose_occurrence(corpus, needle, document_id, occurrence)
    anchor = Anchor.from_span(corpus, chosen.document_id, chosen.start, chosen.end)
    existing = gold.get(query_id)
    if existing is None:
        if question is None or not question.strip():
            raise GoldError(
                f"query {query_id!r} is new and needs a question",
                path=path,
                hint="give the question the evidence answers "
                "(spanchor anchor add QID QUESTION DOCS TEXT)",
            )
        updated = GoldQuery(query_id, question, (anchor,))
        entries = [*gold.entries, updated]
    else:
        if (
            question is not None
            and canonicalize(question).strip() != canonicalize(existing.question).strip()
        ):
            raise GoldError(
                f"query {query_id!r} already exists with the question {existing.question!r}",
                path=path,
                line=existing.line,
                hint="leave the question out (spanchor anchor add QID DOCS TEXT) to add evidence "
                "to that query, or use a new query id",
            )
        if any(a.span == anchor.span for a in existing.anchors):
            raise AnchorError(
                f"query {query_id!r} already has the anchor "
                f"{anchor.document_id}[{anchor.start}:{anchor.end}]",
                path=path,
                line=existing.line,
                hint="nothing to add",
            )
        updated = replace(existing, anchors=(*existing.anchors, anchor), line=None)
        index = gold.entries.index(existing)
        entries = list(gold.entries)
        entries[index] = updated
    write_gold(rebuilt(gold, entries), path)
    return updated
