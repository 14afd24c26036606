"""The exact stage: the text itself, found once (``EXACT``) or more than once (``AMBIGUOUS``).

Candidates from the canonical index are confirmed with ``str.startswith``.
"""

from __future__ import annotations

from spanchor_core.locate.context import SearchContext
from spanchor_core.locate.documents import Occurrence
from spanchor_core.locate.find import find_occurrences
from spanchor_core.locate.model import Location, MatchStatus
from spanchor_core.locate.resolve import Pending, choose

__all__ = ["exact_occurrences", "exact_stage"]


def exact_occurrences(ctx: SearchContext, texts: list[str]) -> list[list[Occurrence]]:
    """Every verbatim occurrence of each text, in document then offset order: what the exact
    stage chooses from — here, or on each shard of a sharded search (:mod:`.reduce`)."""
    docs = ctx.documents

    def lookup(needles: list[str]) -> list[list[Occurrence] | None]:
        hits = ctx.search.anchor_candidates(ctx.exact_index(), needles, docs.starts, docs.lengths)
        return [
            None
            if cands is None
            else [(d, s, s + len(text)) for d, s in cands if docs.texts[d].startswith(text, s)]
            for text, cands in zip(needles, hits, strict=True)
        ]

    return find_occurrences(ctx, texts, lookup, normalised=False)


def exact_stage(
    ctx: SearchContext, pending: list[Pending], results: list[Location | None]
) -> list[Pending]:
    """Place every job whose text occurs verbatim; return the others."""
    found = exact_occurrences(ctx, [job.text for job in pending])
    remaining: list[Pending] = []
    for job, occ in zip(pending, found, strict=True):
        if occ:
            results[job.slot] = choose(ctx, job, occ, MatchStatus.EXACT, 1.0, "text")
        else:
            remaining.append(job)
    return remaining
