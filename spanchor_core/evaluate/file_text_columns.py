"""The per-query text of the evaluation file written straight from a scored evaluation's
columns (:class:`~spanchor_core.evaluate.scored_columns.ScoredQueries`): the same text as
:func:`~spanchor_core.evaluate.file_text.queries_text` of the queries built from them.

Why: a :class:`~spanchor_core.evaluate.model.QueryEvaluation` and a
:class:`~spanchor_core.evaluate.model.LocatedResult` per result, built only to be written,
were most of the writer's time (10,000 queries x 10 results: 1.6 s CPU, 0.45 s from the
columns). Here the results of a batch of queries are gathered from the columns with numpy,
their confidences formatted by one ``orjson.dumps`` call (``repr``'s text wherever orjson's
could differ), and each result written by one f-string. A query that holds anything else
than the usual shapes (traces, a non-finite number, a value of another type) is built and
written by :mod:`.file_text`, so the text, or the error, is always its own.
"""

from __future__ import annotations

import numpy as np
import orjson
from numpy.typing import NDArray

from spanchor_core.evaluate.file_text import (
    _STATUS_TEXT,
    _encode_str,
    _mapping_text,
    _query_text,
    _scalar,
    _string_text,
    _Unusual,
    metric_rows_texts,
)
from spanchor_core.evaluate.scored_columns import NONE_OFFSET, ResultColumns, ScoredQueries
from spanchor_core.spans import DocSpan

__all__ = ["scored_queries_text"]


def _name_text(name: object) -> str:
    """A status, document id or ``resolved_by`` value as JSON (they are strings or None)."""
    if name is None:
        return "null"
    if isinstance(name, str):
        return _encode_str(name)
    raise _Unusual


def _results_texts(columns: ResultColumns, index: NDArray[np.int64]) -> list[str] | None:
    """The text of each result at ``index`` (in that order) as the writer of result objects
    gives it; ``None`` when a confidence is not finite or a value is of another type (the
    objects' writer words that)."""
    try:
        return _usual_results_texts(columns, index)
    except _Unusual:
        return None


def _usual_results_texts(columns: ResultColumns, index: NDArray[np.int64]) -> list[str] | None:
    confidences = np.frombuffer(columns.confidences, dtype=np.float64)[index]
    if not np.isfinite(confidences).all():
        return None
    names = columns.names
    count = len(names)
    statuses = np.frombuffer(columns.statuses, dtype=np.int32)[index].astype(np.int64)
    documents = np.frombuffer(columns.documents, dtype=np.int32)[index]
    # the status and document id part, one text per distinct (status, document) pair
    pairs = (statuses * count + documents).tolist()
    middles: dict[int, str] = {}
    for pair in set(pairs):  # (not np.unique: it imports numpy.ma, 50 ms of a start-up)
        status, document = divmod(pair, count)
        middles[pair] = (
            f', "status": {_name_text(names[status])}, '
            f'"document_id": {_name_text(names[document])}, '
        )
    offsets = []
    for column in (columns.starts, columns.ends):
        values = np.frombuffer(column, dtype=np.int64)[index]
        absent = values == NONE_OFFSET
        if absent.any():
            held = values.astype(object)
            held[absent] = "null"
            offsets.append(held.tolist())
        else:
            offsets.append(values.tolist())
    rejected = np.frombuffer(columns.rejected, dtype=np.int8)[index]
    flags = np.where(rejected == 1, "true", "false").tolist()
    extras = [""] * len(index)
    resolved = np.frombuffer(columns.resolved, dtype=np.int32)[index]
    for at in np.flatnonzero(resolved).tolist():
        extras[at] = f', "resolved_by": {_name_text(names[int(resolved[at])])}'
    reasons = columns.reasons
    if reasons:
        for at, position in enumerate(index.tolist()):
            reason = reasons.get(position)
            if reason is not None:
                extras[at] += f', "reason": {_scalar(reason)}'
    ranks = np.frombuffer(columns.ranks, dtype=np.int64)[index].tolist()
    return [
        f'{{"rank": {rank}{middle}"start": {start}, "end": {end}, "confidence": {confidence}, '
        f'"hint_rejected": {flag}{extra}}}'
        for rank, middle, start, end, confidence, flag, extra in zip(
            ranks,
            map(middles.__getitem__, pairs),
            offsets[0],
            offsets[1],
            _float_texts(confidences),
            flags,
            extras,
            strict=True,
        )
    ]


def _float_texts(values: NDArray[np.float64]) -> list[str]:
    """``repr`` of each (finite) value: one ``orjson.dumps`` call, ``repr`` where orjson writes
    otherwise (below 1e-4 and from 1e16, see :data:`~.file_text._ORJSON_DIFFERS`)."""
    texts: list[str] = orjson.dumps(values.tolist()).decode()[1:-1].split(",")
    magnitudes = np.abs(values)
    for at in np.flatnonzero(((magnitudes < 1e-4) & (magnitudes > 0)) | (magnitudes >= 1e16)):
        texts[at] = repr(float(values[at]))
    return texts if len(values) else []


def _gold_text(gold: tuple[DocSpan, ...]) -> str:
    anchors = []
    for d, a, b in gold:
        if type(d) is str and type(a) is int and type(b) is int:
            anchors.append(f'{{"document_id": {_string_text(d)}, "start": {a}, "end": {b}}}')
        else:
            anchors.append(
                f'{{"document_id": {_scalar(d)}, "start": {_scalar(a)}, "end": {_scalar(b)}}}'
            )
    return ", ".join(anchors)


def scored_queries_text(table: ScoredQueries, start: int, stop: int, separator: str) -> str:
    """The lines of the queries at rows ``start`` to ``stop`` of ``table``, each after
    ``separator``: ``queries_text([table(row) for row in range(start, stop)], separator)``,
    the same text, without building the queries."""
    firsts = np.frombuffer(table.firsts, dtype=np.int64)[start:stop]
    sizes = np.frombuffer(table.sizes, dtype=np.int64)[start:stop]
    ends = np.cumsum(sizes)
    # each query's results are ``sizes[q]`` results from ``firsts[q]`` in the columns
    index = np.arange(int(ends[-1]) if len(ends) else 0, dtype=np.int64)
    index += np.repeat(firsts - (ends - sizes), sizes)
    texts = _results_texts(table.results, index)
    names = table.metric_names
    metrics = metric_rows_texts(names, table.matrix[start:stop].tolist(), [True] * len(sizes))
    lines = []
    bounds = ends.tolist()
    mappings: dict[int, str] = {}  # the same few MappingStats objects are shared by the rows
    low = 0
    for row, high, metrics_text in zip(range(start, stop), bounds, metrics, strict=True):
        line = None
        if texts is not None and metrics_text is not None and row not in table.traces:
            try:
                line = _line(table, row, metrics_text, ", ".join(texts[low:high]), mappings)
            except (_Unusual, TypeError, ValueError):
                line = None
        if line is None:  # not the usual shapes: the query built, written as ever
            line = _query_text(table(row))
        lines.append(separator + line)
        low = high
    return "".join(lines)


def _line(
    table: ScoredQueries, row: int, metrics_text: str, results_text: str, mappings: dict[int, str]
) -> str:
    query_id, status, error = table.ids[row], table.statuses[row], table.errors.get(row)
    status_text = _STATUS_TEXT.get(status)
    if type(query_id) is not str or status_text is None:
        raise _Unusual
    mapping = table.mappings[row]
    mapping_text = mappings.get(id(mapping))
    if mapping_text is None:
        mapping_text = mappings[id(mapping)] = _mapping_text(mapping)
    return (
        f'{{"query_id": {_encode_str(query_id)}, "status": {status_text}, '
        f'"error": {"null" if error is None else _scalar(error)}, '
        f'"metrics": {{{metrics_text}}}, '
        f'"gold": [{_gold_text(table.golds[row])}], "mapping": {mapping_text}, '
        f'"results": [{results_text}]}}'
    )
