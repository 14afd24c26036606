"""Taking evidence out of a gold file: :func:`remove_anchor` (``spanchor anchor remove``) and
:func:`remove_query` (``spanchor query remove``), each an atomic rewrite.

For the anchors ``check-corpus`` reports as not recoverable, and for queries that no longer
belong in the set, so that nobody has to edit the JSONL by hand.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from spanchor_core.authoring.gold_edits import rebuilt
from spanchor_core.corpus import canonicalize, sha256_text
from spanchor_core.errors import AnchorError, GoldError
from spanchor_core.gold import Anchor, GoldQuery, GoldSet, read_gold, write_gold

__all__ = [
    "RemovedAnchor",
    "chosen_anchor",
    "existing_query",
    "remove_anchor",
    "remove_query",
]


class RemovedAnchor(NamedTuple):
    """What :func:`remove_anchor` did: the query as it is now, and the anchor it took out."""

    query: GoldQuery
    anchor: Anchor


def existing_query(gold: GoldSet, query_id: str, path: Path) -> GoldQuery:
    """The query ``query_id`` of ``gold``; GoldError with the closest id when there is none."""
    found = gold.get(query_id)
    if found is not None:
        return found
    close = difflib.get_close_matches(query_id, list(gold), n=1)
    raise GoldError(
        f"no query {query_id!r} in the gold set",
        path=path,
        hint=f"did you mean {close[0]!r}?" if close else "give the id of an existing query",
    )


def _listed(anchors: tuple[Anchor, ...]) -> str:
    return ", ".join(
        f"{number}: {a.document_id}[{a.start}:{a.end}]" for number, a in enumerate(anchors, 1)
    )


def chosen_anchor(
    query: GoldQuery, path: Path, index: int | None, text: str | None
) -> tuple[int, Anchor]:
    """The position (from 0) and the anchor that ``index`` (from 1) or ``text`` names."""
    anchors = query.anchors
    choose = f"choose one with --index N (numbered from 1) or --text T: {_listed(anchors)}"
    if index is not None and text is not None:
        raise AnchorError("give --index or --text, not both", path=path, line=query.line)
    if index is not None:
        if not 1 <= index <= len(anchors):
            raise AnchorError(
                f"query {query.query_id!r} has no anchor {index} (it has {len(anchors)})",
                path=path,
                line=query.line,
                hint=choose,
            )
        return index - 1, anchors[index - 1]
    if text is not None:
        digest = sha256_text(canonicalize(text))
        matches = [i for i, a in enumerate(anchors) if a.hash == digest]
        if len(matches) != 1:
            what = "no anchor" if not matches else f"{len(matches)} anchors"
            raise AnchorError(
                f"query {query.query_id!r} has {what} with this text",
                path=path,
                line=query.line,
                hint=choose,
            )
        return matches[0], anchors[matches[0]]
    if len(anchors) != 1:
        raise AnchorError(
            f"query {query.query_id!r} has {len(anchors)} anchors",
            path=path,
            line=query.line,
            hint=choose,
        )
    return 0, anchors[0]


def remove_anchor(
    gold_path: str | os.PathLike[str],
    query_id: str,
    *,
    index: int | None = None,
    text: str | None = None,
) -> RemovedAnchor:
    """Remove one anchor of ``query_id`` from the gold file and rewrite it atomically.

    The anchor is the ``index``-th of the query (**numbered from 1**, in file order), or the
    one whose text is ``text`` (compared by hash after canonicalising, so no corpus is needed),
    or the query's only anchor when neither is given. A query keeps at least one anchor: to
    take out the last one, remove the query (:func:`remove_query`).
    """
    path = Path(gold_path)
    gold = read_gold(path)
    query = existing_query(gold, query_id, path)
    position, anchor = chosen_anchor(query, path, index, text)
    if len(query.anchors) == 1:
        raise AnchorError(
            f"{anchor.document_id}[{anchor.start}:{anchor.end}] is the only anchor of "
            f"query {query_id!r}",
            path=path,
            line=query.line,
            hint=f"remove the query instead: spanchor query remove {query_id}",
        )
    kept = query.anchors[:position] + query.anchors[position + 1 :]
    updated = replace(query, anchors=kept, line=None)
    entries = [updated if entry is query else entry for entry in gold.entries]
    write_gold(rebuilt(gold, entries), path)
    return RemovedAnchor(updated, anchor)


def remove_query(gold_path: str | os.PathLike[str], query_id: str) -> GoldQuery:
    """Remove ``query_id`` (every line with that id) from the gold file, atomically; return
    the query removed (its first line)."""
    path = Path(gold_path)
    gold = read_gold(path)
    query = existing_query(gold, query_id, path)
    write_gold(rebuilt(gold, [e for e in gold.entries if e.query_id != query_id]), path)
    return query
