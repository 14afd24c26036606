"""Changing one anchor of a gold query in place: :func:`replace_anchor`
(``spanchor anchor replace``), an atomic rewrite that keeps the query's id, question, tags and
the anchor's position.

For an anchor that ``check-corpus`` reports as not recoverable, or evidence that was cut too
short or too long: the new text is located in the corpus exactly as ``anchor add`` does.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from spanchor_core.authoring.gold_edits import rebuilt
from spanchor_core.authoring.occurrences import check_document, choose_occurrence
from spanchor_core.authoring.removal import chosen_anchor, existing_query
from spanchor_core.corpus import Corpus, canonicalize
from spanchor_core.errors import AnchorError
from spanchor_core.gold import Anchor, GoldQuery, read_gold, write_gold

__all__ = ["ReplacedAnchor", "replace_anchor"]


class ReplacedAnchor(NamedTuple):
    """What :func:`replace_anchor` did: the query as it is now, the old and the new anchor."""

    query: GoldQuery
    old: Anchor
    new: Anchor


def replace_anchor(
    gold_path: str | os.PathLike[str],
    corpus: Corpus,
    query_id: str,
    *,
    text: str,
    index: int | None = None,
    old_text: str | None = None,
    document_id: str | None = None,
    occurrence: int | None = None,
) -> ReplacedAnchor:
    """Replace one anchor of ``query_id`` with the anchor of ``text``; rewrite atomically.

    The anchor replaced is chosen as :func:`~spanchor_core.authoring.remove_anchor` chooses
    it: the ``index``-th (**from 1**), the one whose text is ``old_text``, or the only one.
    ``text`` is located like :func:`~spanchor_core.authoring.add_anchor` locates it
    (``document_id`` to look in one document, ``occurrence`` from 1 when it occurs more than
    once). The query keeps its id, question, tags and metadata; the new anchor takes the old
    one's place. Replacing an anchor by another anchor of the same query is an error.
    """
    path = Path(gold_path)
    check_document(corpus, document_id)
    needle = canonicalize(text)
    if not needle:
        raise AnchorError("cannot anchor empty text", hint="give the new evidence text")
    gold = read_gold(path)
    query = existing_query(gold, query_id, path)
    position, old = chosen_anchor(query, path, index, old_text)
    found = choose_occurrence(corpus, needle, document_id, occurrence)
    new = Anchor.from_span(corpus, found.document_id, found.start, found.end)
    others = query.anchors[:position] + query.anchors[position + 1 :]
    if new.span == old.span:
        raise AnchorError(
            f"the new text is the anchor {old.document_id}[{old.start}:{old.end}] already",
            path=path,
            line=query.line,
            hint="nothing to replace",
        )
    if any(a.span == new.span for a in others):
        raise AnchorError(
            f"query {query_id!r} already has the anchor {new.document_id}[{new.start}:{new.end}]",
            path=path,
            line=query.line,
            hint=f"remove the old one instead: spanchor anchor remove {query_id}",
        )
    anchors = (*query.anchors[:position], new, *query.anchors[position + 1 :])
    updated = replace(query, anchors=anchors, line=None)
    entries = [updated if entry is query else entry for entry in gold.entries]
    write_gold(rebuilt(gold, entries), path)
    return ReplacedAnchor(updated, old, new)
