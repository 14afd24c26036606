"""Why one query regressed: a cause per lost piece of gold evidence, from a fixed vocabulary.

A *lost piece* is a maximal gold sub-span that the baseline's top K covered and the
candidate's top K does not (:func:`~spanchor_core.diagnosis.lost.lost_evidence`). Each lost
piece gets exactly one cause; the *evidence* of a piece is the maximal contiguous piece of gold
(anchors unioned per document) that contains it. The vocabulary:

``missing``   the candidate has no usable record for the query: none at all (``None``, or
              status ``missing_in_run``) or a record that failed (status ``error``).
``unmapped``  more of the candidate's top K are results that could not be mapped than of the
              baseline's: the lost text may well sit inside one of them.
``split``     the evidence is now cut by a chunk boundary: some candidate result (at any rank)
              overlaps it, but the best single candidate result covers less of it than the
              best single result of the baseline's top K did. Shows the boundary offsets
              inside the evidence and that coverage, before -> after.
``rank``      a candidate result that overlaps the lost piece is still retrieved, but below K
              (its rank before -> after).
``dropped``   no candidate result at any rank overlaps the lost piece.

Precedence, when several apply to one piece: ``missing > unmapped > split > rank > dropped``.
``missing`` leaves nothing else to inspect. ``unmapped`` comes next because an unmapped result
may be the lost evidence itself, which makes every other reading uncertain (fix the mapping
first). ``split`` outranks ``rank`` and ``dropped`` because a cut is what makes the fragments
rank lower or vanish: the action is on the chunker, not the ranker. ``rank`` and ``dropped``
exclude each other. The kinds that also applied are kept in ``also``.

Everything here is a pure function over :class:`~spanchor_core.evaluate.QueryEvaluation`.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias

from spanchor_core.diagnosis.inventory import ChunkInventory
from spanchor_core.diagnosis.lost import gold_pieces, lost_evidence
from spanchor_core.errors import InputError
from spanchor_core.evaluate import QueryEvaluation, QueryStatus
from spanchor_core.spans import DocSpan, overlap_length

__all__ = [
    "CAUSE_KINDS",
    "Cause",
    "CauseKind",
    "CauseSummary",
    "DroppedCause",
    "MissingCause",
    "RankCause",
    "SplitCause",
    "UnmappedCause",
    "primary_cause",
    "regression_causes",
    "summarise",
]

CauseKind: TypeAlias = Literal["missing", "unmapped", "split", "rank", "dropped"]

CAUSE_KINDS: tuple[CauseKind, ...] = ("missing", "unmapped", "split", "rank", "dropped")
"""Every cause, in precedence order (the first that applies to a piece wins)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Cause:
    """What every cause holds: the lost piece, the cutoff it was lost at, the other kinds."""

    kind: ClassVar[CauseKind]
    piece: DocSpan
    """The lost gold characters ``[start, end)`` of one document."""
    k: int
    rank_before: int
    """The baseline's first rank (``<= k``) whose result overlaps the piece."""
    also: tuple[CauseKind, ...] = ()
    """Other causes that applied to the piece, in precedence order."""

    @property
    def lost_chars(self) -> int:
        return self.piece.length

    def evidence(self) -> dict[str, Any]:
        """The cause-specific facts, as JSON-ready values."""
        return {}

    def to_json(self) -> dict[str, Any]:
        return {
            "cause": self.kind,
            "document_id": self.piece.document_id,
            "start": self.piece.start,
            "end": self.piece.end,
            "k": self.k,
            "rank_before": self.rank_before,
            **self.evidence(),
            "also": list(self.also),
        }

    def describe(self) -> str:
        """One plain-text clause for reports (no markup: renderers escape it)."""
        return self.kind

    @property
    def _where(self) -> str:
        return f"{self.piece.document_id}[{self.piece.start}:{self.piece.end}]"


@dataclass(frozen=True, slots=True, kw_only=True)
class MissingCause(_Cause):
    kind: ClassVar[CauseKind] = "missing"
    reason: Literal["missing_in_run", "error"]
    error: str | None = None

    def evidence(self) -> dict[str, Any]:
        return {"reason": self.reason, "error": self.error}

    def describe(self) -> str:
        if self.reason == "error":
            return f"missing: the candidate's record failed ({self.error or 'no message'})"
        return "missing: the candidate has no record for this query"


@dataclass(frozen=True, slots=True, kw_only=True)
class UnmappedCause(_Cause):
    kind: ClassVar[CauseKind] = "unmapped"
    unmapped_before: int
    """Unmapped results in the baseline's top K."""
    unmapped_after: int
    """Unmapped results in the candidate's top K."""
    ranks: tuple[int, ...]
    """The candidate's ranks (``<= k``) holding unmapped results."""

    def evidence(self) -> dict[str, Any]:
        return {
            "unmapped_before": self.unmapped_before,
            "unmapped_after": self.unmapped_after,
            "ranks": list(self.ranks),
        }

    def describe(self) -> str:
        ranks = ", ".join(str(rank) for rank in self.ranks)
        return (
            f"unmapped: {self.unmapped_before} → {self.unmapped_after} unmapped results in the "
            f"top {self.k} (ranks {ranks}); {self._where} may be inside one of them"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SplitCause(_Cause):
    kind: ClassVar[CauseKind] = "split"
    evidence_span: DocSpan
    """The gold piece the lost characters belong to."""
    boundaries: tuple[int, ...]
    """Offsets strictly inside ``evidence_span`` where a candidate result starts or ends."""
    coverage_before: float
    """Share of ``evidence_span`` inside the best single result of the baseline's top K."""
    coverage_after: float
    """Share of ``evidence_span`` inside the best single candidate result, at any rank."""
    rank_after: int | None = None
    """The candidate's first rank overlapping the piece (``None``: none does)."""

    def evidence(self) -> dict[str, Any]:
        return {
            "evidence": {
                "document_id": self.evidence_span.document_id,
                "start": self.evidence_span.start,
                "end": self.evidence_span.end,
            },
            "boundaries": list(self.boundaries),
            "coverage_before": self.coverage_before,
            "coverage_after": self.coverage_after,
            "rank_after": self.rank_after,
        }

    def describe(self) -> str:
        cuts = ", ".join(str(offset) for offset in self.boundaries)
        evidence = self.evidence_span
        return (
            f"split: {evidence.document_id}[{evidence.start}:{evidence.end}] is cut at {cuts} "
            f"and [{self.piece.start}:{self.piece.end}] left the top {self.k}; the best single "
            f"chunk covers {self.coverage_before:.0%} → {self.coverage_after:.0%} of it"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RankCause(_Cause):
    kind: ClassVar[CauseKind] = "rank"
    rank_after: int
    """The candidate's first rank (``> k``) whose result overlaps the piece."""

    def evidence(self) -> dict[str, Any]:
        return {"rank_after": self.rank_after}

    def describe(self) -> str:
        return f"rank: {self._where} ranked {self.rank_before} → {self.rank_after} (K = {self.k})"


@dataclass(frozen=True, slots=True, kw_only=True)
class DroppedCause(_Cause):
    kind: ClassVar[CauseKind] = "dropped"
    results: int
    """How many results the candidate returned (none of them overlaps the piece)."""
    indexed: float | None = None
    """Share of the piece inside the best single chunk of the candidate's index (``None``: no
    chunk inventory given). 1.0 means the index holds it whole: it ranked below the depth
    the run recorded, which only a deeper run or the inventory can tell from a real drop."""

    def evidence(self) -> dict[str, Any]:
        return {"results": self.results, "indexed": self.indexed}

    def describe(self) -> str:
        text = (
            f"dropped: none of the candidate's {self.results} results overlaps {self._where} "
            f"(rank {self.rank_before} before)"
        )
        if self.indexed is not None:
            text += f"; the index holds {self.indexed:.0%} of it in one chunk"
        return text


Cause: TypeAlias = MissingCause | UnmappedCause | SplitCause | RankCause | DroppedCause


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError(f"K must be a whole number of at least 1, got {k!r}")
    return k


def _first_overlap(query: QueryEvaluation, piece: DocSpan, *, upto: int | None) -> int | None:
    for result in query.results:
        if upto is not None and result.rank > upto:
            break
        span = result.span
        if (
            span is not None
            and span.document_id == piece.document_id
            and overlap_length((span.start, span.end), (piece.start, piece.end)) > 0
        ):
            return result.rank
    return None


def _best_share(query: QueryEvaluation, evidence: DocSpan, *, upto: int | None) -> float:
    best = 0
    target = (evidence.start, evidence.end)
    for result in query.results:
        if upto is not None and result.rank > upto:
            break
        span = result.span
        if span is not None and span.document_id == evidence.document_id:
            best = max(best, overlap_length((span.start, span.end), target))
    return best / evidence.length


def _unmapped_ranks(query: QueryEvaluation, k: int) -> tuple[int, ...]:
    return tuple(
        result.rank for result in query.results if result.rank <= k and result.span is None
    )


def _boundaries(query: QueryEvaluation, evidence: DocSpan) -> tuple[int, ...]:
    cuts: set[int] = set()
    for result in query.results:
        span = result.span
        if span is None or span.document_id != evidence.document_id:
            continue
        if overlap_length((span.start, span.end), (evidence.start, evidence.end)) > 0:
            cuts.update(x for x in (span.start, span.end) if evidence.start < x < evidence.end)
    return tuple(sorted(cuts))


def _indexed_share(chunks: ChunkInventory, piece: DocSpan) -> float:
    target = (piece.start, piece.end)
    best = max(
        (overlap_length(span, target) for span in chunks.spans.get(piece.document_id, ())),
        default=0,
    )
    return best / piece.length


def _piece_cause(
    piece: DocSpan,
    evidence: DocSpan,
    baseline: QueryEvaluation,
    candidate: QueryEvaluation | None,
    k: int,
    chunks: ChunkInventory | None,
) -> Cause:
    rank_before = _first_overlap(baseline, piece, upto=k)
    if rank_before is None:  # pragma: no cover - a lost piece is covered by the baseline
        raise InputError(f"{piece} is not covered by the baseline's top {k}")
    if candidate is None or candidate.status is QueryStatus.MISSING_IN_RUN:
        return MissingCause(piece=piece, k=k, rank_before=rank_before, reason="missing_in_run")
    if candidate.status is QueryStatus.ERROR:
        return MissingCause(
            piece=piece, k=k, rank_before=rank_before, reason="error", error=candidate.error
        )

    found: dict[CauseKind, Cause] = {}
    ranks = _unmapped_ranks(candidate, k)
    before = len(_unmapped_ranks(baseline, k))
    if len(ranks) > before:
        found["unmapped"] = UnmappedCause(
            piece=piece,
            k=k,
            rank_before=rank_before,
            unmapped_before=before,
            unmapped_after=len(ranks),
            ranks=ranks,
        )
    rank_after = _first_overlap(candidate, piece, upto=None)
    cuts = _boundaries(candidate, evidence)
    share_before = _best_share(baseline, evidence, upto=k)
    share_after = _best_share(candidate, evidence, upto=None)
    if cuts and share_after < share_before:
        found["split"] = SplitCause(
            piece=piece,
            k=k,
            rank_before=rank_before,
            evidence_span=evidence,
            boundaries=cuts,
            coverage_before=share_before,
            coverage_after=share_after,
            rank_after=rank_after,
        )
    if rank_after is not None:
        found["rank"] = RankCause(piece=piece, k=k, rank_before=rank_before, rank_after=rank_after)
    else:
        found["dropped"] = DroppedCause(
            piece=piece,
            k=k,
            rank_before=rank_before,
            results=len(candidate.results),
            indexed=None if chunks is None else _indexed_share(chunks, piece),
        )
    kinds = [kind for kind in CAUSE_KINDS if kind in found]
    winner = found[kinds[0]]
    return dataclasses.replace(winner, also=tuple(kinds[1:]))


def regression_causes(
    baseline: QueryEvaluation,
    candidate: QueryEvaluation | None,
    k: int,
    *,
    gold: Sequence[DocSpan] | None = None,
    candidate_chunks: ChunkInventory | None = None,
) -> tuple[Cause, ...]:
    """One cause per piece of gold evidence lost at ``k``, in document-id then offset order.

    ``candidate`` is ``None`` when the candidate evaluation has no row for the query. ``gold``
    defaults to the queries' own gold spans. ``candidate_chunks``, the chunk inventory of the
    candidate's index, tells a ``dropped`` piece the index holds whole (ranked below the
    recorded depth) from one it does not. No lost piece (the query regressed on precision,
    say) gives ``()``. Raises :class:`~spanchor_core.errors.InputError` for a bad ``k``.
    """
    k = _check_k(k)
    spans = gold
    if spans is None:
        spans = candidate.gold if candidate is not None and candidate.gold else baseline.gold
    lost_pieces = lost_evidence(baseline, candidate, k, gold=spans)
    if not lost_pieces:
        return ()
    pieces = gold_pieces(spans)
    causes: list[Cause] = []
    for lost in lost_pieces:
        evidence = next(
            p
            for p in pieces
            if p.document_id == lost.document_id and p.start <= lost.start and lost.end <= p.end
        )
        causes.append(_piece_cause(lost, evidence, baseline, candidate, k, candidate_chunks))
    return tuple(causes)


def primary_cause(causes: Sequence[Cause]) -> Cause | None:
    """The cause that lost the most characters (ties: precedence, then position)."""
    if not causes:
        return None
    order = {kind: n for n, kind in enumerate(CAUSE_KINDS)}
    return min(causes, key=lambda cause: (-cause.lost_chars, order[cause.kind]))


@dataclass(frozen=True, slots=True)
class CauseSummary:
    """Counts of causes over the regressed queries.

    ``queries`` counts each query once, by its :func:`primary_cause`, so the counts add up to
    ``regressed - unexplained``; ``pieces`` counts every cause of every query.
    """

    regressed: int
    queries: Mapping[CauseKind, int] = field(default_factory=dict)
    pieces: Mapping[CauseKind, int] = field(default_factory=dict)
    unexplained: int = 0
    """Regressed queries that lost no gold characters (e.g. a precision-only regression)."""

    def line(self) -> str:
        """``"14 regressed: 9 split, 4 rank, 1 dropped"``, kinds in precedence order."""
        parts = [f"{self.queries[kind]} {kind}" for kind in CAUSE_KINDS if self.queries.get(kind)]
        if self.unexplained:
            parts.append(f"{self.unexplained} without lost evidence")
        head = f"{self.regressed} regressed"
        return f"{head}: {', '.join(parts)}" if parts else head

    def to_json(self) -> dict[str, Any]:
        return {
            "regressed": self.regressed,
            "queries": {kind: self.queries.get(kind, 0) for kind in CAUSE_KINDS},
            "pieces": {kind: self.pieces.get(kind, 0) for kind in CAUSE_KINDS},
            "unexplained": self.unexplained,
        }


def summarise(causes: Mapping[str, Sequence[Cause]]) -> CauseSummary:
    """Counts over ``{query_id: causes}`` of the regressed queries (see :class:`CauseSummary`)."""
    by_query: Counter[CauseKind] = Counter()
    by_piece: Counter[CauseKind] = Counter()
    unexplained = 0
    for items in causes.values():
        first = primary_cause(items)
        if first is None:
            unexplained += 1
            continue
        by_query[first.kind] += 1
        by_piece.update(cause.kind for cause in items)
    return CauseSummary(
        regressed=len(causes),
        queries={kind: by_query[kind] for kind in CAUSE_KINDS if by_query[kind]},
        pieces={kind: by_piece[kind] for kind in CAUSE_KINDS if by_piece[kind]},
        unexplained=unexplained,
    )
