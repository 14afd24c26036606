"""The evaluation file (``kind: spanchor.evaluation``, schema_version 1): :func:`write_evaluation`
and :func:`read_evaluation` (models in :mod:`.file_models`, parsing in :mod:`.file_read`).

The file is read through the strict JSON layer (:mod:`spanchor_core._io`), dispatched on its
``kind``; files without one are spanchor 0.x evaluations (:mod:`spanchor_core.evaluate.legacy`).
"""

from __future__ import annotations

import gc
import itertools
import json
import json.encoder
import math
import operator
import os
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from spanchor_core._io import atomic_write, describe_validation_error, loads_strict
from spanchor_core.errors import EvaluationFileError
from spanchor_core.evaluate.file_models import (
    EvaluationFile,
    MappingModel,
    SettingsModel,
    SummaryModel,
    evaluation_json_schema,
)
from spanchor_core.evaluate.file_read import (
    _check_consistent,
    _from_file,
    _read_fast,
)
from spanchor_core.evaluate.legacy import evaluation_from_0x, is_0x_evaluation
from spanchor_core.evaluate.model import (
    EVALUATION_KIND,
    EVALUATION_SCHEMA_VERSION,
    Evaluation,
    LocatedResult,
    MappingStats,
    QueryEvaluation,
    QueryStatus,
    TraceSummary,
)

__all__ = [
    "REDACTED",
    "EvaluationFile",
    "evaluation_json_schema",
    "read_evaluation",
    "redact_evaluation",
    "write_evaluation",
]

REDACTED = "[redacted]"
"""What stands in for a text left out by ``--redact``."""


def _redact_trace(trace: TraceSummary) -> TraceSummary:
    return trace if trace.error is None else replace(trace, error=REDACTED)


def redact_evaluation(evaluation: Evaluation) -> Evaluation:
    """``evaluation`` without the texts ``--redact`` keeps out of every output: retriever error
    messages (of queries and of their traces) and the query texts of unresolved records, each
    replaced by :data:`REDACTED` so that counts and statuses stay as they were.

    The evaluation file holds no question or evidence text otherwise (results are spans).
    """
    queries = {}
    for query_id, query in evaluation.queries.items():
        if query.error is not None or any(t.error is not None for t in query.traces):
            query = replace(
                query,
                error=None if query.error is None else REDACTED,
                traces=tuple(_redact_trace(t) for t in query.traces),
            )
        queries[query_id] = query
    return replace(
        evaluation,
        queries=queries,
        unresolved=tuple(REDACTED for _ in evaluation.unresolved),
    )


def _mapping_model(stats: MappingStats) -> MappingModel:
    return MappingModel(
        counts=dict(stats.counts),
        hint_rejected=stats.hint_rejected,
        total=stats.total,
        unmapped_rate=stats.unmapped_rate,
    )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _to_file(evaluation: Evaluation) -> EvaluationFile:
    """Everything of the evaluation file but its ``queries`` (validated: it is small).

    The queries, nearly all of the file, are converted by :func:`_query_json` without building
    a model per result: at 100,000 results the models cost seconds.
    """
    s = evaluation.settings
    return EvaluationFile(
        spanchor_version=s.spanchor_version,
        created_at=s.created_at,
        settings=SettingsModel(
            k=list(s.k),
            min_overlap=s.min_overlap,
            corpus_fingerprint=s.corpus_fingerprint,
            gold_sha256=s.gold_sha256,
            gold_path=s.gold_path,
            run_path=s.run_path,
            run_header=None if s.run_header is None else dict(s.run_header),
            source_format=s.source_format,
            group=s.group,
        ),
        metric_names=list(evaluation.metric_names),
        aggregates={
            name: SummaryModel(
                mean=_finite(summary.mean),
                std=_finite(summary.std),
                min=_finite(summary.min),
                max=_finite(summary.max),
                n=summary.n,
            )
            for name, summary in evaluation.aggregates().items()
        },
        mapping=_mapping_model(evaluation.mapping),
        missing_in_run=list(evaluation.missing_in_run),
        not_in_gold=list(evaluation.not_in_gold),
        unresolved=list(evaluation.unresolved),
        duplicates=list(evaluation.duplicates),
        errors=list(evaluation.errors),
        skipped=dict(evaluation.skipped),
        warnings=list(evaluation.warnings),
        records=evaluation.records,
        queries=[],
    )


def _mapping_json(stats: MappingStats) -> dict[str, Any]:
    """``MappingModel(...).model_dump(mode="json")``, without the model."""
    return {
        "counts": {status: int(n) for status, n in stats.counts.items()},
        "hint_rejected": int(stats.hint_rejected),
        "total": int(stats.total),
        "unmapped_rate": float(stats.unmapped_rate),
    }


def _query_json(query: QueryEvaluation) -> dict[str, Any]:
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


def _mapping_text(stats: MappingStats) -> str:
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


def _query_text(query: QueryEvaluation) -> str:
    """``json.dumps(_query_json(query), ensure_ascii=False, allow_nan=False)``, the same text,
    written without building the dicts (one per result: most of the evaluation's writing).

    Only the shapes an evaluation holds are written here; anything else (a value of another
    type, a non-finite number, traces) is handed to :func:`_query_json` and the standard
    encoder, so the text, or the error, is always theirs.
    """
    if query.traces:
        return json.dumps(_query_json(query), ensure_ascii=False, allow_nan=False)
    try:
        gold = ", ".join(
            f'{{"document_id": {_scalar(d)}, "start": {_scalar(a)}, "end": {_scalar(b)}}}'
            for d, a, b in query.gold
        )
        return (
            f'{{"query_id": {_scalar(str(query.query_id))}, '
            f'"status": {_scalar(QueryStatus(query.status).value)}, '
            f'"error": {_scalar(query.error)}, "metrics": {{{_metrics_text(query.metrics)}}}, '
            f'"gold": [{gold}], "mapping": {_mapping_text(query.mapping)}, '
            f'"results": [{", ".join(map(_result_text, query.results))}]}}'
        )
    except (_Unusual, TypeError, ValueError):
        return json.dumps(_query_json(query), ensure_ascii=False, allow_nan=False)


def _evaluation_json_parts(evaluation: Evaluation) -> Iterator[str]:
    """The evaluation file's text in pieces, ending with a newline.

    The settings and summary part is indented JSON; each query is one compact JSON object on
    a line of its own inside ``"queries"`` — still one JSON document, but one line per query
    diffs well and is written by the standard library's C encoder (``indent`` would force its
    pure-Python encoder, seconds for a large run). Written piece by piece so that the text of
    a large evaluation is never held in memory whole.
    """
    head = _to_file(evaluation).model_dump(mode="json")
    del head["queries"]
    head_text = json.dumps(head, indent=2, ensure_ascii=False, allow_nan=False)
    if not evaluation.queries:
        yield head_text[: -len("\n}")] + ',\n  "queries": []\n}\n'
        return
    yield head_text[: -len("\n}")] + ',\n  "queries": ['
    separator = "\n    "
    for query in evaluation.queries.values():
        yield separator + _query_text(query)
        separator = ",\n    "
    yield "\n  ]\n}\n"


def write_evaluation(
    evaluation: Evaluation, path: str | os.PathLike[str], *, redact: bool = False
) -> None:
    """Write ``evaluation`` as JSON, atomically (a temporary file, then a rename).

    ``redact`` leaves retriever error text and unresolved query text out
    (:func:`redact_evaluation`).

    The bytes depend only on the evaluation: keys in a fixed order, queries in gold order,
    floats in their shortest round-tripping form. Only ``created_at`` differs between two
    evaluations of the same inputs.
    """
    parts = _evaluation_json_parts(redact_evaluation(evaluation) if redact else evaluation)
    first = next(parts)  # the validated head: a bad evaluation fails before any file exists
    atomic_write(
        path, itertools.chain([first], parts), error=EvaluationFileError, what="the evaluation"
    )


def read_evaluation(path: str | os.PathLike[str]) -> Evaluation:
    """Read an evaluation file written by :func:`write_evaluation` or by spanchor 0.x.

    Dispatches on ``kind`` (0.x files have none and are recognised by ``per_query_metrics``).
    Raises :class:`EvaluationFileError`, naming the file, for anything else.
    """
    source = Path(path)
    collecting = gc.isenabled()
    gc.disable()  # hundreds of thousands of new objects, none cyclic: no collection passes
    try:
        fast = _read_fast(source)
    finally:
        if collecting:
            gc.enable()
    if fast is not None:
        return fast
    try:  # read again: what is wrong is worded by the strict path
        raw = source.read_bytes()
    except OSError as err:
        raise EvaluationFileError(f"cannot read: {err.strerror or err}", path=source) from None
    try:
        text = raw.decode("utf-8-sig")  # a byte-order mark is dropped, as by every reader
    except UnicodeDecodeError as err:
        raise EvaluationFileError(f"not UTF-8 at byte {err.start}", path=source) from None
    data = loads_strict(text, path=source, error=EvaluationFileError)
    if not isinstance(data, dict):
        raise EvaluationFileError("an evaluation file holds one JSON object", path=source)
    kind = data.get("kind")
    if kind is None:
        if is_0x_evaluation(data):
            return evaluation_from_0x(data, source)
        if "aggregate_metrics" in data:
            raise EvaluationFileError(
                "this file holds aggregate metrics only, no per-query metrics",
                path=source,
                hint="evaluate the run again to get a file that can be compared query by query",
            )
        raise EvaluationFileError(
            "not an evaluation file (no 'kind')",
            path=source,
            hint="pass a file written by `spanchor evaluate`",
        )
    if kind != EVALUATION_KIND:
        raise EvaluationFileError(f"this is a {kind!r} file, not an evaluation", path=source)
    version = data.get("schema_version")
    if version != EVALUATION_SCHEMA_VERSION:
        raise EvaluationFileError(
            f"evaluation schema_version {version!r} is not supported (this spanchor reads "
            f"{EVALUATION_SCHEMA_VERSION})",
            path=source,
            hint="upgrade spanchor" if isinstance(version, int) and version > 1 else None,
        )
    try:
        model = EvaluationFile.model_validate(data)
    except ValidationError as err:
        raise EvaluationFileError(describe_validation_error(err), path=source) from None
    _check_consistent(model, source, text)
    return _from_file(model)
