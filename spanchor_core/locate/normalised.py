"""The normalised stage: the text found when whitespace and letter case are ignored.

Candidates from the normalised view are mapped back to canonical offsets and confirmed by
normalising the canonical slice. Confidence is the similarity of the case-folded texts,
capped below an exact match.
"""

from __future__ import annotations

from typing import Final

import numpy as np
from rapidfuzz import fuzz

from spanchor_core.locate.context import SearchContext
from spanchor_core.locate.documents import Occurrence
from spanchor_core.locate.find import find_occurrences
from spanchor_core.locate.model import Location, MatchStatus
from spanchor_core.locate.resolve import Pending, choose, placed_once
from spanchor_core.locate.text import advance_nonspace, fold, normalise

__all__ = ["normalised_occurrences", "normalised_stage"]

_NORMALISED_CAP: Final = 0.99  # a normalised match never scores like an exact one


def normalised_occurrences(ctx: SearchContext, norms: list[str]) -> list[list[Occurrence]]:
    """Every occurrence of each normalised text, as canonical ``(document, start, end)``
    slices whose normalised form is that text: what the normalised stage chooses from — here,
    or on each shard of a sharded search (:mod:`.reduce`)."""
    texts = ctx.documents.texts

    def lookup(norms: list[str]) -> list[list[Occurrence] | None]:
        view = ctx.normalised_view()
        usable, (numbers, found, starts) = ctx.search.anchor_candidates(
            view.index, norms, view.starts, view.lengths
        )
        out: list[list[Occurrence] | None] = [[] if ok else None for ok in usable]
        if not len(numbers):
            return out
        # the candidates' first and last characters, by their checkpoints read in one numpy
        # pass each (``view.to_canonical`` of each, without two array reads per call)
        lengths = np.array([len(norm) for norm in norms], dtype=np.int64)
        heads, head_rest = view.checkpoints_before(found, starts)
        tails, tail_rest = view.checkpoints_before(found, starts + lengths[numbers] - 1)
        for number, d, p, a, q, b in zip(
            numbers.tolist(), found.tolist(), heads, head_rest, tails, tail_rest, strict=True
        ):
            source = texts[d]
            cs = advance_nonspace(source, p, a)
            ce = advance_nonspace(source, q, b) + 1
            if normalise(source[cs:ce]) == norms[number]:
                out[number].append((d, cs, ce))
        return out

    return find_occurrences(ctx, norms, lookup, normalised=True)


def normalised_stage(
    ctx: SearchContext, pending: list[Pending], results: list[Location | None]
) -> list[Pending]:
    """Place every job whose normalised text occurs; return the others (``norm`` filled in)."""
    texts = ctx.documents.texts
    ids = ctx.documents.ids
    for job in pending:
        job.norm = normalise(job.text)
    found = normalised_occurrences(ctx, [job.norm for job in pending])
    remaining: list[Pending] = []
    status = MatchStatus.NORMALISED
    for job, occ in zip(pending, found, strict=True):
        if not occ:
            remaining.append(job)
            continue
        if len(occ) == 1 and job.named is None:  # choose's common case: made once, scored
            doc, start, end = occ[0]
            score = _score(job.text, texts[doc][start:end], len(job.norm))
            results[job.slot] = placed_once(ids[doc], job, start, end, status, score)
            continue
        loc = choose(ctx, job, occ, status, 1.0, "normalised text")
        chosen = texts[ctx.documents.number[loc.document_id or ""]][loc.start : loc.end]
        score = _score(job.text, chosen, len(job.norm))
        # loc.confidence is 1.0, or 1 / n when nothing told n equally good places apart
        results[job.slot] = Location(
            loc.status,
            loc.document_id,
            loc.start,
            loc.end,
            score * loc.confidence,
            loc.candidates,
            loc.resolved_by,
            loc.hint_rejected,
            loc.reason,
        )
    return remaining


def _score(text: str, chosen: str, letters: int) -> float:
    """The confidence of a normalised match of ``text`` at the canonical ``chosen``: the same
    letters, so whitespace differences lower the score; a normalised match stays below an
    exact one. (A single place's confidence is this times 1.0, which is this.)

    ``letters`` is the length of their common normalised text, a common subsequence of the
    two: their ratio is at least ``200 letters / (len(a) + len(b))``, and a cutoff just under
    that lets rapidfuzz bound its search. A ratio at or above its cutoff is the exact ratio,
    the same float (rapidfuzz computes it the same way, only stops earlier below the cutoff);
    one below it (0, which the bound rules out) is computed again without one.
    """
    a, b = fold(text.strip()), fold(chosen)
    cutoff = max(0.0, 100.0 * (2 * letters - 1) / max(1, len(a) + len(b)))
    ratio = fuzz.ratio(a, b, score_cutoff=cutoff)
    if ratio < cutoff:
        ratio = fuzz.ratio(a, b)
    return min(_NORMALISED_CAP, ratio / 100.0)
