"""The causes of every regressed query of a comparison, and their summary line.

:func:`diagnose_regressions` is what the gate, the comparison file and the reports call after
:func:`~spanchor_core.compare.compare`: it picks the cutoff each regressed query is judged at
and asks :func:`~spanchor_core.diagnosis.causes.regression_causes` for its causes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from spanchor_core.compare import Comparison, QueryChange
from spanchor_core.diagnosis.causes import Cause, CauseSummary, regression_causes, summarise
from spanchor_core.diagnosis.inventory import ChunkInventory
from spanchor_core.evaluate import Evaluation
from spanchor_core.metrics import metric_parts

__all__ = ["QueryDiagnosis", "RegressionDiagnosis", "diagnose_regressions", "diagnosis_cutoffs"]


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
    """

    queries: Mapping[str, QueryDiagnosis]
    summary: CauseSummary
    note: str | None = None

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
            "queries": [row.to_json() for row in self.queries.values()],
        }


def diagnosis_cutoffs(row: QueryChange, evaluation: Evaluation) -> tuple[int, ...]:
    """The cutoffs a regressed query is judged at, deepest first.

    The K of each regressed metric; a whole-list metric (``mrr``, ``iou``) stands for the
    evaluation's deepest K, the depth the user asked to be scored.
    """
    deepest = max(evaluation.settings.k)
    cutoffs = {metric_parts(name)[1] or deepest for name in row.regressed}
    return tuple(sorted(cutoffs or {deepest}, reverse=True))


def diagnose_regressions(
    comparison: Comparison,
    baseline: Evaluation,
    candidate: Evaluation,
    *,
    candidate_chunks: ChunkInventory | None = None,
) -> RegressionDiagnosis:
    """Causes for every regressed query of ``comparison`` (flaky ones included).

    Each query is judged at the deepest cutoff of :func:`diagnosis_cutoffs` at which it lost
    gold characters (so ``hit@1`` falling while ``recall@5`` holds is judged at 1); a query
    that lost none at any of them has no causes and counts as unexplained. Queries only in
    the baseline are not regressions (the comparison reports them as missing); call
    ``regression_causes(baseline[qid], None, k)`` for them. ``candidate_chunks`` is passed
    on to :func:`~spanchor_core.diagnosis.causes.regression_causes`.
    """
    rows = comparison.regressions()
    for side, evaluation in (("baseline", baseline), ("candidate", candidate)):
        if not evaluation.has_result_spans:
            note = (
                f"the {side} evaluation was read from {evaluation.settings.source_format}, "
                "which keeps no result spans: causes need spanchor evaluations or runs"
            )
            return RegressionDiagnosis({}, summarise({row.query_id: () for row in rows}), note)
    out: dict[str, QueryDiagnosis] = {}
    for row in rows:
        qid = row.query_id
        before = baseline.queries.get(qid)
        if before is None:  # compared tables that are not these evaluations
            continue
        after = candidate.queries.get(qid)
        cutoffs = diagnosis_cutoffs(row, candidate)
        chosen = QueryDiagnosis(qid, cutoffs[0], ())
        for k in cutoffs:
            causes = regression_causes(before, after, k, candidate_chunks=candidate_chunks)
            if causes:
                chosen = QueryDiagnosis(qid, k, causes)
                break
        out[qid] = chosen
    return RegressionDiagnosis(out, summarise({qid: row.causes for qid, row in out.items()}))
