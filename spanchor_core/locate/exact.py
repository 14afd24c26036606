"""The exact stage: the text itself, found once (``EXACT``) or more than once (``AMBIGUOUS``).

Candidates from the canonical index are confirmed with ``str.startswith``.
"""

from __future__ import annotations

from itertools import compress

from spanchor_core.locate.context import SearchContext
from spanchor_core.locate.documents import Occurrence
from spanchor_core.locate.find import find_occurrences
from spanchor_core.locate.model import Location, MatchStatus
from spanchor_core.locate.resolve import Pending, choose, placed_once

__all__ = ["exact_occurrences", "exact_stage"]


def exact_occurrences(ctx: SearchContext, texts: list[str]) -> list[list[Occurrence]]:
    """Every verbatim occurrence of each text, in document then offset order: what the exact
    stage chooses from — here, or on each shard of a sharded search (:mod:`.reduce`)."""
    docs = ctx.documents

    def lookup(needles: list[str]) -> list[list[Occurrence] | None]:
        index = ctx.exact_index()
        usable, places = ctx.search.anchor_candidates(index, needles, docs.starts, docs.lengths)
        numbers, found, starts = (column.tolist() for column in places)
        out: list[list[Occurrence] | None] = [[] if ok else None for ok in usable]
        # every candidate of every text confirmed by one C-level pass of str.startswith
        sources = map(docs.texts.__getitem__, found)
        same = map(str.startswith, sources, map(needles.__getitem__, numbers), starts)
        for number, d, s in compress(zip(numbers, found, starts, strict=True), same):
            out[number].append((d, s, s + len(needles[number])))
        return out

    return find_occurrences(ctx, texts, lookup, normalised=False)


def exact_stage(
    ctx: SearchContext, pending: list[Pending], results: list[Location | None]
) -> list[Pending]:
    """Place every job whose text occurs verbatim; return the others."""
    found = exact_occurrences(ctx, [job.text for job in pending])
    remaining: list[Pending] = []
    ids = ctx.documents.ids
    exact = MatchStatus.EXACT
    for job, occ in zip(pending, found, strict=True):
        if not occ:
            remaining.append(job)
        elif len(occ) == 1 and job.named is None:  # choose's common case, without its call
            doc, start, end = occ[0]
            results[job.slot] = placed_once(ids[doc], job, start, end, exact, 1.0)
        else:
            results[job.slot] = choose(ctx, job, occ, exact, 1.0, "text")
    return remaining
