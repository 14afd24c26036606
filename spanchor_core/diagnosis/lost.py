"""Lost gold evidence: the gold characters a baseline's top K covered and a candidate's does not.

One implementation of the rule, over the evaluation models only, so that causes, reports and
assertions name the same characters. Pieces are maximal: a lost piece never touches another.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from spanchor_core.evaluate import QueryEvaluation, QueryStatus
from spanchor_core.spans import (
    DocSpan,
    Span,
    group_by_document,
    intersect_spans,
    subtract_spans,
)

__all__ = ["gold_pieces", "lost_evidence", "top_k_spans"]


def _ranked_spans(query: QueryEvaluation | None, k: int | None) -> list[DocSpan]:
    """The spans of the mapped results at ranks ``1..k`` (``None``: the whole list), in rank
    order; none for a missing query or a failed record."""
    if query is None or query.status is not QueryStatus.SCORED:
        return []
    return [
        span
        for result in query.results
        if (k is None or result.rank <= k) and (span := result.span) is not None
    ]


def top_k_spans(query: QueryEvaluation | None, k: int | None) -> Mapping[str, list[Span]]:
    """Per-document union of the mapped results at ranks ``1..k`` (``None``: the whole list).

    A query that is missing, or whose record failed, retrieved nothing.
    """
    return group_by_document(_ranked_spans(query, k))


def gold_pieces(gold: Sequence[DocSpan]) -> list[DocSpan]:
    """The maximal contiguous pieces of the per-document union of ``gold``, by document then offset.

    Two anchors that overlap or touch are one piece of evidence here: a chunk boundary between
    them cuts nothing.
    """
    return [
        DocSpan(document_id, start, end)
        for document_id, spans in sorted(group_by_document(gold).items())
        for start, end in spans
    ]


def lost_evidence(
    baseline: QueryEvaluation,
    candidate: QueryEvaluation | None,
    k: int | None,
    *,
    gold: Sequence[DocSpan] | None = None,
) -> list[DocSpan]:
    """Maximal gold sub-spans covered by the baseline's top ``k`` and not by the candidate's.

    ``gold`` defaults to the candidate's gold spans (the baseline's when the candidate has none
    or is ``None``); ``k=None`` compares the whole ranked lists. Pieces come back in document-id,
    then offset order.
    """
    if gold is None:
        gold = candidate.gold if candidate is not None and candidate.gold else baseline.gold
    documents = {span.document_id for span in gold}
    kept = [span for span in _ranked_spans(baseline, k) if span.document_id in documents]
    if not kept:
        return []  # the baseline covered no gold document: nothing to lose
    ranked = _ranked_spans(candidate, k)
    if set(ranked).issuperset(kept):
        return []  # the candidate kept every baseline span that could cover gold
    before = group_by_document(kept)
    after = group_by_document(ranked)
    lost: list[DocSpan] = []
    for document_id, spans in sorted(group_by_document(gold).items()):
        covered = intersect_spans(spans, before.get(document_id, []))
        for start, end in subtract_spans(covered, after.get(document_id, [])):
            lost.append(DocSpan(document_id, start, end))
    return lost
