"""Per-query tables of span metrics, like LlamaIndex's ``get_retrieval_results_df``.

:func:`span_results_table` takes what LlamaIndex's runners return — a ``BatchEvalRunner``
result (``{evaluator name: [EvaluationResult, ...]}``), a list of
:class:`~spanchor_llamaindex.batch.SpanEvaluationResult`, or the ``RetrievalEvalResult`` list
of ``RetrieverEvaluator`` / :class:`~spanchor_llamaindex.SpanRetrieverEvaluator` — and gives
one row per query with every span metric as a number: a pandas ``DataFrame`` when pandas is
installed, else a list of dicts (the same rows). Results of other evaluators in a batch are
left out; invalid span results keep their row with the reason and no metric values.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from llama_index.core.evaluation.base import EvaluationResult
from llama_index.core.evaluation.retrieval.base import RetrievalEvalResult

from spanchor_llamaindex.batch import SpanEvaluationResult
from spanchor_llamaindex.metrics import SPAN_METRIC_PREFIX

__all__ = ["span_results_rows", "span_results_table"]

Results = (
    Mapping[str, Sequence[EvaluationResult]]
    | Iterable[SpanEvaluationResult | EvaluationResult | RetrievalEvalResult]
)


def _row_of(result: Any, name: str | None) -> dict[str, Any] | None:
    row: dict[str, Any] = {}
    if name is not None:
        row["evaluator"] = name
    if isinstance(result, SpanEvaluationResult):
        row.update(
            query_id=result.query_id,
            query=result.query,
            passing=result.passing,
            score=result.score,
            invalid_reason=result.invalid_reason,
        )
        row.update(result.metrics)
        return row
    if isinstance(result, RetrievalEvalResult):
        values = {
            key: value.score
            for key, value in result.metric_dict.items()
            if key.startswith(SPAN_METRIC_PREFIX)
        }
        if not values:
            return None
        first = next(iter(result.metric_dict.values()))
        row.update(
            query_id=getattr(result, "query_id", None) or first.metadata.get("query_id"),
            query=result.query,
        )
        row.update(values)
        return row
    return None  # another evaluator's result


def span_results_rows(results: Results) -> list[dict[str, Any]]:
    """The rows of :func:`span_results_table`, as dicts (always available)."""
    rows: list[dict[str, Any]] = []
    if isinstance(results, Mapping):
        for name, batch in results.items():
            for result in batch:
                row = _row_of(result, name)
                if row is not None:
                    rows.append(row)
        return rows
    for result in results:
        row = _row_of(result, None)
        if row is not None:
            rows.append(row)
    return rows


def span_results_table(results: Results) -> Any:
    """One row per query with every span metric: a pandas DataFrame, else a list of dicts."""
    rows = span_results_rows(results)
    if importlib.util.find_spec("pandas") is None:
        return rows
    import pandas  # type: ignore[import-untyped,unused-ignore]  # optional

    return pandas.DataFrame(rows)
