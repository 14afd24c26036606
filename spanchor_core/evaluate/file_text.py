"""The per-query text of the evaluation file: each query as one line of JSON, exactly the
text ``json.dumps(_query_json(query), ensure_ascii=False, allow_nan=False)`` gives, written
without building a dict per result (most of the writing of a large evaluation).

Only the shapes an evaluation holds take the fast paths (cached fragments for statuses,
document ids and mapping counts; the metric numbers of a batch of queries formatted by one
``orjson.dumps`` call where orjson writes them as ``repr`` does); anything else goes to the
standard encoder, so the text, or the error, is always its own.
"""

from __future__ import annotations

import itertools
import json
import json.encoder
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from spanchor_core.evaluate.model import (
    LocatedResult,
    MappingStats,
    QueryEvaluation,
    QueryStatus,
)

__all__ = ["BATCH", "metric_rows_texts", "queries_text", "query_json"]


def _mapping_json(stats: MappingStats) -> dict[str, Any]:
    """``MappingModel(...).model_dump(mode="json")``, without the model."""
    return {
        "counts": {status: int(n) for status, n in stats.counts.items()},
        "hint_rejected": int(stats.hint_rejected),
        "total": int(stats.total),
        "unmapped_rate": float(stats.unmapped_rate),
    }


def query_json(query: QueryEvaluation) -> dict[str, Any]:
    """``QueryModel(...).model_dump(mode="json")`` for one query, without the models.

    Same keys in the same order and the same conversions (numbers to ``float`` where the model
    says float, the status to its value), so the bytes written are the same.
    """
    line: dict[str, Any] = {
        "query_id": str(query.query_id),
        "status": QueryStatus(query.status).value,
        "error": query.error,
        "metrics": {name: float(value) for name, value in query.metrics.items()},
        "gold": [{"document_id": d, "start": a, "end": b} for d, a, b in query.gold],
        "mapping": _mapping_json(query.mapping),
        "results": [
            {
                "rank": r.rank,
                "status": r.status,
                "document_id": r.document_id,
                "start": r.start,
                "end": r.end,
                "confidence": float(r.confidence),
                "hint_rejected": r.hint_rejected,
                **({} if r.resolved_by is None else {"resolved_by": r.resolved_by}),
                **({} if r.reason is None else {"reason": r.reason}),
            }
            for r in query.results
        ],
    }
    if query.traces:
        line["traces"] = [
            {
                "trace_id": t.trace_id,
                "records": t.records,
                "sources": list(t.sources),
                "stage": t.stage,
                "error": t.error,
            }
            for t in query.traces
        ]
    return line


class _Unusual(Exception):
    """A value :func:`_query_text` leaves to the standard encoder (its text, or its error)."""


_encode_str = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) calls
_float_repr = float.__repr__
_int_repr = int.__repr__


def _scalar(value: object) -> str:
    """A JSON scalar as ``json.dumps(..., ensure_ascii=False, allow_nan=False)`` writes it
    (strings through the same C function, numbers through the same ``repr``); anything else,
    or a non-finite float, raises :class:`_Unusual`."""
    kind = type(value)
    if kind is str:
        return _encode_str(value)  # type: ignore[arg-type]
    if value is None:
        return "null"
    if kind is int:
        return _int_repr(value)
    if kind is float:
        if value - value == 0.0:  # type: ignore[operator]  # finite (inf - inf and nan are nan)
            return _float_repr(value)
        raise _Unusual
    if value is True:
        return "true"
    if value is False:
        return "false"
    raise _Unusual


def _float_text(value: object) -> str:
    """``float(value)`` as written (the conversion :func:`_query_json` makes)."""
    return _scalar(value if type(value) is float else float(value))  # type: ignore[arg-type]


def _key(name: object) -> str:
    """A JSON object key: strings only (the standard encoder turns other keys into strings)."""
    if type(name) is not str:
        raise _Unusual
    return _encode_str(name)


_MAPPING_TEXT: dict[tuple[object, ...], str] = {}
"""Mapping counts -> the mapping's JSON text (a few hundred distinct ones in a large run)."""


def _mapping_text(stats: MappingStats) -> str:
    """The mapping object of a query; its text depends on the counts alone (the total and the
    rate are computed from them), so it is written once per distinct counts."""
    if type(stats) is MappingStats and type(stats.counts) is dict:
        key = (*stats.counts.items(), stats.hint_rejected)
        if set(map(type, key[-1:] + tuple(stats.counts.values()))) <= {int}:
            text = _MAPPING_TEXT.get(key)
            if text is None:
                text = _mapping_text_of(stats)
                if len(_MAPPING_TEXT) < 4096:
                    _MAPPING_TEXT[key] = text
            return text
    return _mapping_text_of(stats)


def _mapping_text_of(stats: MappingStats) -> str:
    counts = ", ".join(f"{_key(status)}: {int(n)}" for status, n in stats.counts.items())
    return (
        f'{{"counts": {{{counts}}}, "hint_rejected": {int(stats.hint_rejected)}, '
        f'"total": {int(stats.total)}, "unmapped_rate": {_float_text(stats.unmapped_rate)}}}'
    )


_KEYS_TEXT: dict[tuple[str, ...], list[str]] = {}
"""Metric names -> each one's JSON text and ``": "`` (the same names on every line)."""
_STRING_TEXT: dict[str, str] = {}
"""Statuses and document ids -> their JSON text (few, and repeated on every result)."""


def _metrics_text(metrics: Mapping[str, float]) -> str:
    names = tuple(metrics)
    keys = _KEYS_TEXT.get(names)
    if keys is None:
        keys = [_key(name) + ": " for name in names]
        if len(_KEYS_TEXT) < 64:
            _KEYS_TEXT[names] = keys
    values = list(metrics.values())
    total = sum(values)  # a value that is no number raises TypeError: the standard path
    if total - total == 0.0:  # all finite (a nan or an infinity makes the sum one)
        # float.__repr__ refuses anything but a float (TypeError: the standard path)
        return ", ".join(map(operator.add, keys, map(_float_repr, values)))
    return ", ".join(key + _float_text(value) for key, value in zip(keys, values, strict=True))


def _string_text(value: str) -> str:
    text = _STRING_TEXT.get(value)
    if text is None:
        text = _encode_str(value)
        if len(_STRING_TEXT) < 100_000:
            _STRING_TEXT[value] = text
    return text


def _result_text(r: LocatedResult) -> str:
    rank, status, doc, start, end = r.rank, r.status, r.document_id, r.start, r.end
    confidence, rejected = r.confidence, r.hint_rejected
    if (
        type(rank) is int
        and type(status) is str
        and (doc is None or type(doc) is str)
        and (start is None or type(start) is int)
        and (end is None or type(end) is int)
        and type(confidence) is float
        and confidence - confidence == 0.0
        and type(rejected) is bool
    ):  # the shapes evaluate() gives, written with the fewest calls
        strings = _STRING_TEXT
        text = (
            f'{{"rank": {rank}, "status": {strings.get(status) or _string_text(status)}, '
            f'"document_id": {"null" if doc is None else strings.get(doc) or _string_text(doc)}, '
            f'"start": {"null" if start is None else start}, '
            f'"end": {"null" if end is None else end}, "confidence": {confidence!r}, '
            f'"hint_rejected": {"true" if rejected else "false"}'
        )
    else:
        text = (
            f'{{"rank": {_scalar(rank)}, "status": {_scalar(status)}, '
            f'"document_id": {_scalar(doc)}, "start": {_scalar(start)}, '
            f'"end": {_scalar(end)}, "confidence": {_float_text(confidence)}, '
            f'"hint_rejected": {_scalar(rejected)}'
        )
    if r.resolved_by is not None:
        text += f', "resolved_by": {_scalar(r.resolved_by)}'
    if r.reason is not None:
        text += f', "reason": {_scalar(r.reason)}'
    return text + "}"


_PLACED_TEXT: dict[tuple[str, str], str] = {}
"""(status, document id) -> the text between a placed result's rank and its start."""


def _results_text(results: Sequence[LocatedResult]) -> str:
    """``", ".join(map(_result_text, results))``: a result placed in a document, with ints,
    a finite float and no ``resolved_by`` or ``reason`` (nearly all of them), is written
    inline here with its status and document id text cached together; any other goes
    through :func:`_result_text`."""
    parts = []
    placed = _PLACED_TEXT
    for r in results:
        rank, start, end, confidence, rejected = (
            r.rank,
            r.start,
            r.end,
            r.confidence,
            r.hint_rejected,
        )
        if (
            type(rank) is int
            and type(start) is int
            and type(end) is int
            and type(confidence) is float
            and confidence - confidence == 0.0
            and type(rejected) is bool
            and r.resolved_by is None
            and r.reason is None
        ):
            key = (r.status, r.document_id)
            middle = placed.get(key)  # type: ignore[arg-type]
            if middle is None:
                status, doc = key
                if type(status) is not str or type(doc) is not str:
                    parts.append(_result_text(r))
                    continue
                middle = f', "status": {_encode_str(status)}, "document_id": {_encode_str(doc)}, '
                if len(placed) < 100_000:
                    placed[key] = middle  # type: ignore[index]
            parts.append(
                f'{{"rank": {rank}{middle}"start": {start}, "end": {end}, '
                f'"confidence": {confidence!r}, '
                f'"hint_rejected": {"true" if rejected else "false"}}}'
            )
        else:
            parts.append(_result_text(r))
    return ", ".join(parts)


def _query_text(query: QueryEvaluation, metrics_text: str | None = None) -> str:
    """``json.dumps(query_json(query), ensure_ascii=False, allow_nan=False)``, the same text,
    written without building the dicts (one per result: most of the evaluation's writing).

    Only the shapes an evaluation holds are written here; anything else (a value of another
    type, a non-finite number, traces) is handed to :func:`_query_json` and the standard
    encoder, so the text, or the error, is always theirs. ``metrics_text`` is the inside of
    the ``metrics`` object when :func:`_metrics_texts` already wrote it.
    """
    if query.traces:
        return json.dumps(query_json(query), ensure_ascii=False, allow_nan=False)
    try:
        query_id, status, error = query.query_id, query.status, query.error
        status_text = _STATUS_TEXT.get(status)
        anchors = []
        for d, a, b in query.gold:
            if type(d) is str and type(a) is int and type(b) is int:
                anchors.append(f'{{"document_id": {_string_text(d)}, "start": {a}, "end": {b}}}')
            else:
                anchors.append(
                    f'{{"document_id": {_scalar(d)}, "start": {_scalar(a)}, "end": {_scalar(b)}}}'
                )
        if metrics_text is None:
            metrics_text = _metrics_text(query.metrics)
        id_text = _encode_str(query_id) if type(query_id) is str else _scalar(str(query_id))
        return (
            f'{{"query_id": {id_text}, '
            f'"status": {status_text or _scalar(QueryStatus(status).value)}, '
            f'"error": {"null" if error is None else _scalar(error)}, '
            f'"metrics": {{{metrics_text}}}, '
            f'"gold": [{", ".join(anchors)}], "mapping": {_mapping_text(query.mapping)}, '
            f'"results": [{_results_text(query.results)}]}}'
        )
    except (_Unusual, TypeError, ValueError):
        return json.dumps(query_json(query), ensure_ascii=False, allow_nan=False)


_STATUS_TEXT: dict[object, str] = {status: _encode_str(status.value) for status in QueryStatus}
"""Each query status (or the string equal to it) -> the text of its value."""


_ORJSON_DIFFERS = ("e", "n", "0.0000")
"""What orjson's text of a float holds when it may not be ``float.__repr__``'s: an exponent
(``repr`` writes one below 1e-4 and from 1e16, orjson at other places), ``null`` (a
non-finite value) or a magnitude under 1e-4 written out (``0.00003`` for ``3e-05``). Between
1e-4 and 1e16, and for zeros, the two agree digit for digit (tests/test_evaluation_writer_text)."""


def _metrics_texts(queries: Sequence[QueryEvaluation]) -> list[str | None]:
    """The inside of each query's ``metrics`` object as :func:`_metrics_text` writes it, the
    numbers of all the queries formatted by one ``orjson.dumps`` call; ``None`` for a query
    left to :func:`_metrics_text` (other metric names than the first query's, a value that is
    not a float, or one orjson may write otherwise than ``repr``)."""
    if not queries:
        return []
    names = tuple(queries[0].metrics)
    same = [type(q.metrics) is dict and tuple(q.metrics) == names for q in queries]
    rows = [tuple(q.metrics.values()) for q, alike in zip(queries, same, strict=True) if alike]
    return metric_rows_texts(names, rows, same)


def metric_rows_texts(
    names: tuple[str, ...], rows: Sequence[Sequence[float]], same: Sequence[bool]
) -> list[str | None]:
    """:func:`_metrics_texts` of queries given by their values: ``rows`` holds the values
    (in ``names`` order) of each query whose ``same`` is true; ``None`` for the others, and
    for every query when a value is not a float."""
    try:
        keys = [_key(name) + ": " for name in names]
    except _Unusual:
        return [None] * len(same)
    if not rows or not set(map(type, itertools.chain.from_iterable(rows))) <= {float}:
        return [None] * len(same)
    # rows of floats: "[[0.0,1.0],[0.5,0.25]]", no string in it to hold a "],["
    text = orjson.dumps(rows).decode()
    suspect = any(mark in text for mark in _ORJSON_DIFFERS)  # rarely: then row by row
    pieces = iter(text[2:-2].split("],["))
    join, add = ", ".join, operator.add
    texts: list[str | None] = []
    for alike in same:
        if not alike:
            texts.append(None)
            continue
        piece = next(pieces)
        if suspect and any(mark in piece for mark in _ORJSON_DIFFERS):
            texts.append(None)
        else:
            texts.append(join(map(add, keys, piece.split(","))))
    return texts


BATCH = 256
"""Queries written per :func:`_metrics_texts` call (and per piece handed to the writer): 256
keeps the pieces of a 10,000-query evaluation to ~0.6 MB of text and its write 12 MiB below
the 1,024 it was (same CPU)."""


def queries_text(queries: Sequence[QueryEvaluation], separator: str) -> str:
    """Each query's :func:`_query_text`, each after ``separator``, as one string."""
    metrics = _metrics_texts(queries)
    return "".join(
        separator + _query_text(query, text) for query, text in zip(queries, metrics, strict=True)
    )
