"""The fuzzy stage: text a pipeline altered, placed by approximate alignment (``FUZZY``).

Long texts vote with all their minimizers in the normalised view for a region (the densest
diagonal, in the named document first), which is then aligned; short texts are aligned
against whole documents with ``partial_ratio_alignment``, only while the corpus is small.
Everything this stage cannot place is ``UNMAPPED`` with a reason.
"""

from __future__ import annotations

from typing import Final

import numpy as np
from rapidfuzz import fuzz

from spanchor_core.locate.align import align_in_region
from spanchor_core.locate.context import SearchContext
from spanchor_core.locate.model import Location, MatchStatus
from spanchor_core.locate.normalised_view import NormalisedView
from spanchor_core.locate.resolve import Pending, choose, unmapped

__all__ = ["fuzzy_stage"]

_FUZZY_MIN_CHARS: Final = 12  # below this, approximate matching means nothing
_MARGIN: Final = 16  # canonical characters added on each side of a voted region
_NOTHING: Final = "not found, and no part of it matches the corpus"


def fuzzy_stage(
    ctx: SearchContext, pending: list[Pending], results: list[Location | None]
) -> list[Pending]:
    """Give every job a final location (``FUZZY``, ``AMBIGUOUS`` or ``UNMAPPED``)."""
    shortest = ctx.settings.min_indexed_length
    indexed = [job for job in pending if len(job.norm) >= shortest]
    for job in pending:
        if len(job.norm) < shortest:
            results[job.slot] = _fuzzy_scan(ctx, job)
    if not indexed:
        return []
    view = ctx.normalised_view()
    max_occurrences = ctx.settings.max_occurrences
    votes: list[list[tuple[int, int]]] = [[] for _ in indexed]
    for lo_row, rows, offs, keys in ctx.search.batched_minimizers([j.norm for j in indexed]):
        first, count = view.index.lookup(keys)
        keep = np.flatnonzero((count > 0) & (count <= max_occurrences))
        pos, owner = view.index.positions(first[keep], count[keep])
        diag = pos - offs[keep][owner]
        for row, dg, p in zip(
            (lo_row + rows[keep][owner]).tolist(), diag.tolist(), pos.tolist(), strict=True
        ):
            votes[row].append((dg, p))
    for job, vote in zip(indexed, votes, strict=True):
        results[job.slot] = _from_votes(ctx, job, vote, view)
    return []


def _from_votes(
    ctx: SearchContext, job: Pending, vote: list[tuple[int, int]], view: NormalisedView
) -> Location:
    """Pick the densest diagonal cluster (in the named document first) and align there."""
    if not vote:
        return unmapped(job, _NOTHING)
    n = len(job.norm)
    band = max(2 * ctx.settings.window, n // 2)
    diag = np.array(sorted(vote), dtype=np.int64)
    docs = np.searchsorted(view.starts, diag[:, 1], side="right") - 1
    regions: list[tuple[int, int, int]] = []
    scopes: list[int | None] = [job.doc, None] if job.doc is not None else [None]
    for restrict in scopes:
        sel = np.arange(len(diag)) if restrict is None else np.flatnonzero(docs == restrict)
        if not len(sel):
            continue
        d_sel = diag[sel, 0]
        reach = np.searchsorted(d_sel, d_sel + band, side="right")
        i = int(np.argmax(reach - np.arange(len(sel))))
        cluster = sel[i : int(reach[i])]
        doc = int(np.bincount(docs[cluster]).argmax())
        cluster = cluster[docs[cluster] == doc]
        base = int(view.starts[doc])
        lo = max(0, int(diag[cluster[0], 0]) - base)
        hi = min(int(view.lengths[doc]), int(diag[cluster[-1], 0]) - base + n)
        if hi > lo and (doc, lo, hi) not in regions:
            regions.append((doc, lo, hi))
    outcome: Location | None = None
    for doc, lo, hi in regions:
        source = ctx.documents.texts[doc]
        c_lo = max(0, view.to_canonical(source, doc, lo) - _MARGIN)
        c_hi = min(len(source), view.to_canonical(source, doc, hi - 1) + 1 + _MARGIN)
        outcome = align_in_region(ctx, job, doc, c_lo, c_hi)
        if outcome.status is not MatchStatus.UNMAPPED:
            return outcome
    return outcome if outcome is not None else unmapped(job, _NOTHING)


def _fuzzy_scan(ctx: SearchContext, job: Pending) -> Location:
    """Slow path for short texts: rapidfuzz partial alignment per document, size-capped."""
    if len(job.norm) < _FUZZY_MIN_CHARS:
        return unmapped(job, "not found, and too short to match approximately")
    texts = ctx.documents.texts
    settings = ctx.settings
    scopes = [range(len(texts))]
    if job.doc is not None:
        scopes.insert(0, range(job.doc, job.doc + 1))
    needle = job.text.strip()
    best: tuple[float, int, int, int] | None = None
    for docs in scopes:
        if sum(len(texts[d]) for d in docs) > settings.fuzzy_scan_limit:
            return unmapped(
                job,
                f"not found; approximate search for texts under {settings.min_indexed_length} "
                f"characters is limited to {settings.fuzzy_scan_limit} characters of corpus",
            )
        best = None
        for d in docs:
            al = fuzz.partial_ratio_alignment(needle, texts[d])
            if al is None:
                continue
            key = (al.score / 100.0, -d, -al.dest_start, al.dest_end)
            if best is None or key[:3] > best[:3]:
                best = key
        if best is not None and best[0] >= settings.fuzzy_threshold:
            score, nd, ns, end = best
            return choose(ctx, job, [(-nd, -ns, end)], MatchStatus.FUZZY, score, "approximate text")
    score = 0.0 if best is None else best[0]
    return unmapped(
        job, f"not found; best approximate match scored {score:.3f}, below the threshold"
    )
