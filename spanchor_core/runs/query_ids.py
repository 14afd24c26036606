"""Query ids from a gold set: records without an id get the id of the gold query with their text.

Matching is exact after canonicalisation and stripping, so a run recorded without ids (a user's
script, a framework that knows only the question) can still be scored. The gold set is only
asked for ``by_question`` (:class:`GoldLookup`), so this layer does not depend on gold files.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from spanchor_core.corpus import canonicalize
from spanchor_core.runs.model import RetrievalRecord, Run

__all__ = ["GoldLookup", "lookup_query_id", "resolve_query_ids", "resolve_record"]


class _HasQueryId(Protocol):
    @property
    def query_id(self) -> str: ...


class GoldLookup(Protocol):
    """What resolving query ids needs from a gold set (``spanchor_core.gold.GoldSet`` fits)."""

    def by_question(self, text: str, /) -> _HasQueryId | None: ...


def lookup_query_id(gold: GoldLookup, query: str) -> str | None:
    """The id of the gold query whose question is ``query``, or ``None``."""
    key = canonicalize(query).strip()
    if not key:
        return None
    found = gold.by_question(key)
    return None if found is None else found.query_id


def resolve_record(record: RetrievalRecord, gold: GoldLookup) -> tuple[RetrievalRecord, bool]:
    """One record of :func:`resolve_query_ids`: the record with its id, and whether it has one.

    A record that already carries an id is returned as it is (``True``); one without gets the
    id of the gold query with its text, or stays as it is (``False``) when none matches.
    Shared with the streaming evaluation, which resolves records as it reads them.
    """
    if record.query_id:
        return record, True
    query_id = lookup_query_id(gold, record.query)
    if query_id is None:
        return record, False
    return replace(record, query_id=query_id), True


def resolve_query_ids(run: Run, gold: GoldLookup) -> tuple[Run, list[RetrievalRecord]]:
    """Give records without a query id the id of the gold query with exactly their text.

    Matching is exact after canonicalisation and stripping. Records that already carry an id
    keep it, even if the gold set has no such query (evaluation reports those). Returns a new
    run (the input is not changed) and the records that are still without an id.
    """
    records: list[RetrievalRecord] = []
    unmatched: list[RetrievalRecord] = []
    for record in run.records:
        resolved_record, matched = resolve_record(record, gold)
        records.append(resolved_record)
        if not matched:
            unmatched.append(record)
    resolved = Run(
        header=run.header,
        records=records,
        path=run.path,
        warnings=list(run.warnings),
        source_format=run.source_format,
    )
    return resolved, unmatched
