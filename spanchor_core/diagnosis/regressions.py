"""The causes of every regressed query of a comparison, and their summary line.

:func:`diagnose_regressions` is what the gate, the comparison file and the reports call after
:func:`~spanchor_core.compare.compare`: it picks the cutoff each regressed query is judged at
and asks :func:`~spanchor_core.diagnosis.causes.regression_causes` for its causes.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
from collections.abc import Sequence

from spanchor_core.compare import Comparison, QueryChange
from spanchor_core.diagnosis.causes import regression_causes, summarise
from spanchor_core.diagnosis.inventory import ChunkInventory
from spanchor_core.diagnosis.model import QueryDiagnosis, RegressionDiagnosis
from spanchor_core.diagnosis.oracle import MetricSplit, chunking_split
from spanchor_core.evaluate import Evaluation
from spanchor_core.evaluate.file_fork import Forked, can_fork
from spanchor_core.metrics import metric_parts

__all__ = [
    "QueryDiagnosis",
    "RegressionDiagnosis",
    "diagnose_regressions",
    "diagnosis_cutoffs",
    "with_diagnosis",
]


def diagnosis_cutoffs(row: QueryChange, evaluation: Evaluation) -> tuple[int, ...]:
    """The cutoffs a regressed query is judged at, deepest first.

    The K of each regressed metric; a whole-list metric (``mrr``, ``iou``) stands for the
    evaluation's deepest K, the depth the user asked to be scored.
    """
    return _cutoffs(row, max(evaluation.settings.k))


def _cutoffs(row: QueryChange, deepest: int) -> tuple[int, ...]:
    cutoffs = {metric_parts(name)[1] or deepest for name in row.regressed}
    return tuple(sorted(cutoffs or {deepest}, reverse=True))


def diagnose_regressions(
    comparison: Comparison,
    baseline: Evaluation,
    candidate: Evaluation,
    *,
    candidate_chunks: ChunkInventory | None = None,
    baseline_chunks: ChunkInventory | None = None,
) -> RegressionDiagnosis:
    """Causes for every regressed query of ``comparison`` (flaky ones included).

    Each query is judged at the deepest cutoff of :func:`diagnosis_cutoffs` at which it lost
    gold characters (so ``hit@1`` falling while ``recall@5`` holds is judged at 1); a query
    that lost none at any of them has no causes and counts as unexplained. Queries only in
    the baseline are not regressions (the comparison reports them as missing); call
    ``regression_causes(baseline[qid], None, k)`` for them. ``candidate_chunks`` is passed
    on to :func:`~spanchor_core.diagnosis.causes.regression_causes`; with ``baseline_chunks``
    too, the diagnosis also splits every ``recall@K`` both sides score into its chunking and
    ranking parts (:func:`~spanchor_core.diagnosis.oracle.chunking_split`).
    """
    collecting = gc.isenabled()
    gc.disable()  # a few objects per regressed query, none cyclic: no collection passes
    try:
        return _diagnose(comparison, baseline, candidate, candidate_chunks, baseline_chunks)
    finally:
        if collecting:
            gc.enable()


def _diagnose(
    comparison: Comparison,
    baseline: Evaluation,
    candidate: Evaluation,
    candidate_chunks: ChunkInventory | None,
    baseline_chunks: ChunkInventory | None,
) -> RegressionDiagnosis:
    rows = comparison.regressions()
    splits = _splits(baseline, candidate, baseline_chunks, candidate_chunks)
    for side, evaluation in (("baseline", baseline), ("candidate", candidate)):
        if not evaluation.has_result_spans:
            note = (
                f"the {side} evaluation was read from {evaluation.settings.source_format}, "
                "which keeps no result spans: causes need spanchor evaluations or runs"
            )
            summary = summarise({row.query_id: () for row in rows})
            return RegressionDiagnosis({}, summary, note, splits)
    out = _diagnosed(rows, baseline, candidate, candidate_chunks)
    summary = summarise({qid: row.causes for qid, row in out.items()})
    return RegressionDiagnosis(out, summary, None, splits)


def _diagnosed(
    rows: Sequence[QueryChange],
    baseline: Evaluation,
    candidate: Evaluation,
    candidate_chunks: ChunkInventory | None,
) -> dict[str, QueryDiagnosis]:
    """Each regressed query judged at the deepest of its cutoffs at which it lost gold
    characters (see :func:`diagnose_regressions`).

    Many regressions are judged half here and half on a forked child
    (:mod:`~spanchor_core.evaluate.file_fork`: building each query from its text is most of
    the cost): the same judgements in the same order, the child's half judged here instead
    when it gives no answer."""
    if len(rows) < _FORK_ROWS or not can_fork():
        return _judged(rows, baseline, candidate, candidate_chunks)
    half = len(rows) // 2
    helper: Forked[dict[str, QueryDiagnosis]] | None = Forked(
        functools.partial(_judged, rows[half:], baseline, candidate, candidate_chunks)
    )
    try:
        out = _judged(rows[:half], baseline, candidate, candidate_chunks)
        answer, helper = helper.result(), None  # type: ignore[union-attr]
    finally:
        if helper is not None:
            helper.close()
    out.update(
        _judged(rows[half:], baseline, candidate, candidate_chunks) if answer is None else answer[0]
    )
    return out


_FORK_ROWS = 2000
"""Regressed queries from which half are judged on a forked child."""


def _judged(
    rows: Sequence[QueryChange],
    baseline: Evaluation,
    candidate: Evaluation,
    candidate_chunks: ChunkInventory | None,
) -> dict[str, QueryDiagnosis]:
    out: dict[str, QueryDiagnosis] = {}
    if not rows:
        return out
    deepest = max(candidate.settings.k)
    before_of, after_of = baseline.queries.get, candidate.queries.get
    known: dict[tuple[str, ...], tuple[int, ...]] = {}  # the same few sets of regressed metrics
    for row in rows:
        qid = row.query_id
        before = before_of(qid)
        if before is None:  # compared tables that are not these evaluations
            continue
        after = after_of(qid)
        cutoffs = known.get(row.regressed)
        if cutoffs is None:
            cutoffs = known[row.regressed] = _cutoffs(row, deepest)
        chosen = QueryDiagnosis(qid, cutoffs[0], ())
        for k in cutoffs:
            causes = regression_causes(before, after, k, candidate_chunks=candidate_chunks)
            if causes:
                chosen = QueryDiagnosis(qid, k, causes)
                break
        out[qid] = chosen
    return out


def _splits(
    baseline: Evaluation,
    candidate: Evaluation,
    baseline_chunks: ChunkInventory | None,
    candidate_chunks: ChunkInventory | None,
) -> tuple[MetricSplit, ...]:
    if baseline_chunks is None or candidate_chunks is None:
        return ()
    shared = sorted(set(baseline.settings.k) & set(candidate.settings.k))
    return tuple(
        chunking_split(baseline, candidate, baseline_chunks, candidate_chunks, k=k)
        for k in shared
        if f"recall@{k}" in baseline.metric_names and f"recall@{k}" in candidate.metric_names
    )


def with_diagnosis(
    comparison: Comparison,
    baseline: Evaluation,
    candidate: Evaluation,
    *,
    candidate_chunks: ChunkInventory | None = None,
    baseline_chunks: ChunkInventory | None = None,
) -> Comparison:
    """``comparison`` carrying its :func:`diagnose_regressions` (what the comparison file,
    Markdown, JUnit and HTML reports show). A comparison without regressions and without
    both inventories is returned as it is."""
    if not comparison.regressions() and (baseline_chunks is None or candidate_chunks is None):
        return comparison
    diagnosis = diagnose_regressions(
        comparison,
        baseline,
        candidate,
        candidate_chunks=candidate_chunks,
        baseline_chunks=baseline_chunks,
    )
    return dataclasses.replace(comparison, diagnosis=diagnosis)
