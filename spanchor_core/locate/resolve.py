"""Turning the occurrences a stage found into one :class:`Location`: the tie-breaking rules.

:class:`Pending` is a request still being searched for. :func:`choose` applies the rule of the
package docstring (named document, then nearest offset hint, then the query's gold, then
lowest ``(document, start)``) and says whether the location claimed was rejected;
:func:`unmapped` is the verdict when nothing was found.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from operator import itemgetter
from typing import Final

import numpy as np

from spanchor_core.locate.context import SearchContext
from spanchor_core.locate.documents import Occurrence
from spanchor_core.locate.model import Location, MatchStatus
from spanchor_core.spans import DocSpan

__all__ = ["Pending", "choose", "placed_once", "unmapped"]

_DOCUMENT: Final = itemgetter(0)
_FEW: Final = 16  # more occurrences than this: the nearest to a hint found in numpy
_FAR: Final = 1 << 62  # a hint this far out (any integer is allowed) stays in Python ints
_new_span: Final = tuple.__new__  # DocSpan(a, b, c) without its Python-level __new__


@dataclass(slots=True)
class Pending:
    """A request still being searched for (internal working state)."""

    slot: int
    text: str
    doc: int | None  # number of the named document, when it is in the corpus
    named: str | None  # the document id as given
    hint_start: int | None
    hint_end: int | None
    prefer: tuple[Occurrence, ...] = ()  # the query's gold spans, in document numbers
    norm: str = ""
    # what happened on the way, for the reason; a tuple (most jobs have none): no list made
    # and freed per job
    notes: tuple[str, ...] = ()


def _overlap(occ: Occurrence, prefer: tuple[Occurrence, ...]) -> int:
    doc, start, end = occ
    return sum(max(0, min(end, e) - max(start, s)) for d, s, e in prefer if d == doc)


def _in_document(found: list[Occurrence], doc: int) -> tuple[int, int]:
    """Where the occurrences in document ``doc`` are in ``found`` (sorted): ``found[lo:hi]``."""
    lo = bisect.bisect_left(found, doc, key=_DOCUMENT)
    return lo, bisect.bisect_left(found, doc + 1, lo, key=_DOCUMENT)


def _nearest(scope: list[Occurrence], hint: int) -> tuple[Occurrence, Occurrence]:
    """The two occurrences nearest to ``hint`` (by start; then lowest document and start),
    as the first two of ``sorted(scope)`` by that key."""
    if len(scope) <= _FEW or not -_FAR < hint < _FAR:
        ranked = sorted(scope, key=lambda f: (abs(f[1] - hint), f[0], f[1]))
        return ranked[0], ranked[1]
    # in numpy for the many copies of boilerplate (a stable sort, as sorted is)
    table = np.array(scope, dtype=np.int64)
    order = np.lexsort((table[:, 1], table[:, 0], np.abs(table[:, 1] - hint)))
    return scope[int(order[0])], scope[int(order[1])]


def _pick(
    ctx: SearchContext, job: Pending, scope: list[Occurrence]
) -> tuple[Occurrence, str, bool]:
    """The occurrence of ``scope`` (two or more, sorted) a rule picks, the rule, and whether it
    told the occurrences apart (a hint near one of them) rather than choosing by convention."""
    if job.hint_start is not None:
        hint = job.hint_start
        best, runner_up = _nearest(scope, hint)
        near = abs(best[1] - hint) < max(1, best[2] - best[1])
        return best, "nearest_hint", near and abs(runner_up[1] - hint) > abs(best[1] - hint)
    if ctx.settings.tie_break == "gold" and job.prefer:
        prefer = job.prefer
        # most copies lie in documents no gold span names: only the named ones' are weighed,
        # in scope order, the first with the most overlap winning
        most, chosen = 0, -1
        for doc in sorted({d for d, _, _ in prefer}):
            lo, hi = _in_document(scope, doc)
            for at in range(lo, hi):
                overlap = _overlap(scope[at], prefer)
                if overlap > most:
                    most, chosen = overlap, at
        if most > 0:
            return scope[chosen], "gold", False
    return scope[0], "first", False


def choose(
    ctx: SearchContext,
    job: Pending,
    found: list[Occurrence],
    single: MatchStatus,
    confidence: float,
    what: str,
) -> Location:
    """Turn the sorted occurrences ``(doc, start, end)`` of one text into a Location (the
    occurrences of boilerplate may number thousands: only those in the named document, or in
    documents the gold names, are looked at one by one).

    The rule of the package docstring: the named document, then the nearest offset hint, then
    (``tie_break="gold"``) the occurrence that overlaps the query's gold spans most, then the
    lowest ``(document, start)``. When no document or nearby hint told the occurrences apart,
    ``confidence`` is divided by their number: each is as likely to be the source.
    """
    ids = ctx.documents.ids
    if len(found) == 1 and job.named is None:  # the common case: one place, no document claim
        doc, start, end = found[0]
        return placed_once(ids[doc], job, start, end, single, confidence)
    notes = list(job.notes)
    scope = found
    rule: str | None = None
    decided = True
    if job.doc is not None:
        lo, hi = _in_document(found, job.doc)
        inside = found[lo:hi]
        if inside:
            scope = inside
            if len(found) > 1 and len(inside) == 1:
                rule = "document_id"
        else:
            notes.append(f"not found in the named document {job.named!r}")
    if len(scope) == 1:
        chosen = scope[0]
    else:
        chosen, rule, decided = _pick(ctx, job, scope)
    status = single
    if len(found) > 1:
        status = MatchStatus.AMBIGUOUS
        notes.append(f"{what} occurs {len(found)} times; chosen by {rule}")
        if not decided:
            confidence /= len(scope)
    doc, start, end = chosen
    rejected = job.hint_start is not None and (
        start != job.hint_start or (job.hint_end is not None and end != job.hint_end)
    )
    if job.hint_start is None and job.hint_end is not None:
        rejected = end != job.hint_end
    if job.named is not None and doc != job.doc:
        rejected = True  # a wrong document id is a wrong location claim, whatever the offsets
    candidates = tuple(
        _new_span(DocSpan, (ids[d], s, e)) for d, s, e in found[: ctx.settings.max_candidates]
    )
    return Location(
        status,
        ids[doc],
        start,
        end,
        confidence,
        candidates,
        rule if status is MatchStatus.AMBIGUOUS else None,
        rejected,
        "; ".join(notes) or None,
    )


def placed_once(
    document_id: str, job: Pending, start: int, end: int, status: MatchStatus, confidence: float
) -> Location:
    """What :func:`choose` gives for the one occurrence ``[start, end)`` of a job that names no
    document: that place, rejected when an offset claimed differs from it. The stages call it
    directly for the common case (one occurrence, no document claim)."""
    hint_start, hint_end = job.hint_start, job.hint_end
    if hint_start is not None:
        rejected = start != hint_start or (hint_end is not None and end != hint_end)
    else:
        rejected = hint_end is not None and end != hint_end
    span = _new_span(DocSpan, (document_id, start, end))
    notes = job.notes
    reason = ("; ".join(notes) or None) if notes else None
    return Location(status, document_id, start, end, confidence, (span,), None, rejected, reason)


def unmapped(job: Pending, reason: str) -> Location:
    """Nothing found for ``job``: ``reason`` joins the notes gathered on the way."""
    notes = [*job.notes, reason]
    has_hint = job.hint_start is not None or job.hint_end is not None
    has_hint = has_hint or (job.named is not None and job.doc is None)
    return Location(
        MatchStatus.UNMAPPED,
        None,
        None,
        None,
        0.0,
        hint_rejected=has_hint,
        reason="; ".join(notes),
    )
