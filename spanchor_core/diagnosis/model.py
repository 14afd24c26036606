"""The diagnosis of a comparison as data: causes per regressed query, their counts, and the
chunking / ranking split of recall@K when both sides' chunk inventories were known.

Apart from :mod:`~spanchor_core.diagnosis.regressions` (which computes it from a comparison)
so that the comparison file can read a diagnosis back without importing the comparison logic:
:func:`diagnosis_from_json` is the inverse of :meth:`RegressionDiagnosis.to_json`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spanchor_core.diagnosis.causes import (
    CAUSE_KINDS,
    Cause,
    CauseKind,
    CauseSummary,
    DroppedCause,
    MissingCause,
    RankCause,
    SplitCause,
    UnmappedCause,
)
from spanchor_core.diagnosis.oracle import MetricSplit, QuerySplit
from spanchor_core.spans import DocSpan

__all__ = [
    "QueryDiagnosis",
    "RegressionDiagnosis",
    "cause_from_json",
    "diagnosis_from_json",
    "redact_diagnosis",
]


@dataclass(frozen=True, slots=True)
class QueryDiagnosis:
    """The causes of one regressed query, judged at cutoff ``k``."""

    query_id: str
    k: int
    causes: tuple[Cause, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "k": self.k,
            "causes": [cause.to_json() for cause in self.causes],
        }


@dataclass(frozen=True, slots=True)
class RegressionDiagnosis(Mapping[str, QueryDiagnosis]):
    """Causes per regressed query (in :meth:`Comparison.regressions` order) and their counts.

    ``note`` says why no cause could be computed (an evaluation without result spans);
    the mapping is then empty and ``summary`` counts every regressed query as unexplained.
    ``splits`` holds the chunking / ranking split of each ``recall@K`` when the chunk
    inventories of both sides were given (empty otherwise).
    """

    queries: Mapping[str, QueryDiagnosis]
    summary: CauseSummary
    note: str | None = None
    splits: tuple[MetricSplit, ...] = ()

    def __getitem__(self, query_id: str) -> QueryDiagnosis:
        return self.queries[query_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self.queries)

    def __len__(self) -> int:
        return len(self.queries)

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary.to_json(),
            "note": self.note,
            "splits": [split.to_json() for split in self.splits],
            "queries": [row.to_json() for row in self.queries.values()],
        }


def _span(data: Mapping[str, Any]) -> DocSpan:
    return DocSpan(str(data["document_id"]), int(data["start"]), int(data["end"]))


def cause_from_json(data: Mapping[str, Any]) -> Cause:
    """The cause :meth:`to_json` wrote (``data`` already validated by the file model)."""
    kind = data["cause"]
    common: dict[str, Any] = {
        "piece": _span(data),
        "k": int(data["k"]),
        "rank_before": int(data["rank_before"]),
        "also": tuple(data.get("also", ())),
    }
    if kind == "missing":
        return MissingCause(**common, reason=data["reason"], error=data.get("error"))
    if kind == "unmapped":
        return UnmappedCause(
            **common,
            unmapped_before=int(data["unmapped_before"]),
            unmapped_after=int(data["unmapped_after"]),
            ranks=tuple(int(rank) for rank in data["ranks"]),
        )
    if kind == "split":
        return SplitCause(
            **common,
            evidence_span=_span(data["evidence"]),
            boundaries=tuple(int(x) for x in data["boundaries"]),
            coverage_before=float(data["coverage_before"]),
            coverage_after=float(data["coverage_after"]),
            rank_after=data.get("rank_after"),
        )
    if kind == "rank":
        return RankCause(**common, rank_after=int(data["rank_after"]))
    if kind == "dropped":
        indexed = data.get("indexed")
        return DroppedCause(
            **common,
            results=int(data["results"]),
            indexed=None if indexed is None else float(indexed),
        )
    raise ValueError(f"unknown cause {kind!r}; expected one of {', '.join(CAUSE_KINDS)}")


def _split_from_json(data: Mapping[str, Any]) -> MetricSplit:
    rows = tuple(
        QuerySplit(
            str(row["query_id"]),
            float(row["baseline"]),
            float(row["candidate"]),
            float(row["oracle_baseline"]),
            float(row["oracle_candidate"]),
        )
        for row in data["queries"]
    )
    return MetricSplit(str(data["metric"]), rows)


def _counts(data: Mapping[str, int]) -> dict[CauseKind, int]:
    return {kind: int(data[kind]) for kind in CAUSE_KINDS if data.get(kind)}


def diagnosis_from_json(data: Mapping[str, Any]) -> RegressionDiagnosis:
    """The diagnosis :meth:`RegressionDiagnosis.to_json` wrote."""
    summary = data["summary"]
    queries: Sequence[Mapping[str, Any]] = data["queries"]
    return RegressionDiagnosis(
        {
            str(row["query_id"]): QueryDiagnosis(
                str(row["query_id"]),
                int(row["k"]),
                tuple(cause_from_json(cause) for cause in row["causes"]),
            )
            for row in queries
        },
        CauseSummary(
            regressed=int(summary["regressed"]),
            queries=_counts(summary["queries"]),
            pieces=_counts(summary["pieces"]),
            unexplained=int(summary["unexplained"]),
        ),
        data.get("note"),
        tuple(_split_from_json(split) for split in data.get("splits", ())),
    )


def redact_diagnosis(diagnosis: RegressionDiagnosis, marker: str) -> RegressionDiagnosis:
    """The same diagnosis with every retriever error text replaced by ``marker``.

    ``--redact`` promises that no question, evidence or error text reaches an output; a
    ``missing`` cause quotes the candidate's error, and nothing else in a diagnosis is text
    taken from the user's data (pieces are offsets, counts and ranks).
    """

    def clean(cause: Cause) -> Cause:
        if isinstance(cause, MissingCause) and cause.error is not None:
            return dataclasses.replace(cause, error=marker)
        return cause

    queries = {
        query_id: dataclasses.replace(query, causes=tuple(clean(c) for c in query.causes))
        for query_id, query in diagnosis.queries.items()
    }
    return dataclasses.replace(diagnosis, queries=queries)
