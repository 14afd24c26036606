"""Turning the occurrences a stage found into one :class:`Location`: the tie-breaking rules.

:class:`Pending` is a request still being searched for. :func:`choose` applies the rule of the
package docstring (named document, then nearest offset hint, then the query's gold, then
lowest ``(document, start)``) and says whether the location claimed was rejected;
:func:`unmapped` is the verdict when nothing was found.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spanchor_core.locate.context import SearchContext
from spanchor_core.locate.documents import Occurrence
from spanchor_core.locate.model import Location, MatchStatus
from spanchor_core.spans import DocSpan

__all__ = ["Pending", "choose", "unmapped"]


@dataclass(slots=True)
class Pending:
    """A request still being searched for (internal working state)."""

    slot: int
    text: str
    doc: int | None  # number of the named document, when it is in the corpus
    named: str | None  # the document id as given
    hint_start: int | None
    hint_end: int | None
    norm: str = ""
    notes: list[str] = field(default_factory=list)
    prefer: tuple[Occurrence, ...] = ()  # the query's gold spans, in document numbers


def _overlap(occ: Occurrence, prefer: tuple[Occurrence, ...]) -> int:
    doc, start, end = occ
    return sum(max(0, min(end, e) - max(start, s)) for d, s, e in prefer if d == doc)


def _pick(
    ctx: SearchContext, job: Pending, scope: list[Occurrence]
) -> tuple[Occurrence, str, bool]:
    """The occurrence of ``scope`` (two or more) a rule picks, the rule, and whether it told
    the occurrences apart (a hint near one of them) rather than choosing by convention."""
    if job.hint_start is not None:
        hint = job.hint_start
        ranked = sorted(scope, key=lambda f: (abs(f[1] - hint), f[0], f[1]))
        best, runner_up = ranked[0], ranked[1]
        near = abs(best[1] - hint) < max(1, best[2] - best[1])
        return best, "nearest_hint", near and abs(runner_up[1] - hint) > abs(best[1] - hint)
    if ctx.settings.tie_break == "gold" and job.prefer:
        prefer = job.prefer
        named = {d for d, _, _ in prefer}  # most copies lie in documents no gold span names
        overlaps = [_overlap(f, prefer) if f[0] in named else 0 for f in scope]
        most = max(overlaps)
        if most > 0:
            return scope[overlaps.index(most)], "gold", False
    return scope[0], "first", False


def choose(
    ctx: SearchContext,
    job: Pending,
    found: list[Occurrence],
    single: MatchStatus,
    confidence: float,
    what: str,
) -> Location:
    """Turn the sorted occurrences ``(doc, start, end)`` of one text into a Location.

    The rule of the package docstring: the named document, then the nearest offset hint, then
    (``tie_break="gold"``) the occurrence that overlaps the query's gold spans most, then the
    lowest ``(document, start)``. When no document or nearby hint told the occurrences apart,
    ``confidence`` is divided by their number: each is as likely to be the source.
    """
    ids = ctx.documents.ids
    if len(found) == 1 and job.named is None:  # the common case: one place, no document claim
        doc, start, end = found[0]
        if job.hint_start is not None:
            rejected = start != job.hint_start or (job.hint_end is not None and end != job.hint_end)
        else:
            rejected = job.hint_end is not None and end != job.hint_end
        span = DocSpan(ids[doc], start, end)
        reason = "; ".join(job.notes) or None
        return Location(
            single, span.document_id, start, end, confidence, (span,), None, rejected, reason
        )
    notes = list(job.notes)
    scope = found
    rule: str | None = None
    decided = True
    if job.doc is not None:
        inside = [f for f in found if f[0] == job.doc]
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
    candidates = tuple(DocSpan(ids[d], s, e) for d, s, e in found[: ctx.settings.max_candidates])
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
