"""Writing run files: the JSON object each record line holds, and :func:`write_run`.

The recorder and :func:`write_run` build record lines here, so both write the same bytes for
the same retrieval: keys in a fixed order, every key every time (``null`` when unknown),
provenance keys only when set. Every value is type-checked before it is written, so spanchor
never writes a file it cannot read back. A non-finite ``score`` or ``latency_ms`` is written as
``null`` ("unknown"): a NaN score carries no ranking information, and a recorder must never fail
a retrieval over it; a negative latency (a clock that went backwards) is unknown too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from operator import itemgetter
from pathlib import Path
from typing import Any
from uuid import UUID

from spanchor_core import _io
from spanchor_core._io import atomic_write
from spanchor_core.errors import RunError
from spanchor_core.runs.encoding import encode_line
from spanchor_core.runs.file_models import RunHeader
from spanchor_core.runs.model import STAGES, RetrievedResult, Run
from spanchor_core.runs.results import (
    finite_float,
    optional_int,
    optional_str,
    payload_from_mapping,
    strict_int,
)

__all__ = [
    "ResultEntries",
    "add_provenance",
    "check_line_size",
    "header_line",
    "provenance_payload",
    "record_line",
    "record_payload",
    "result_entry",
    "write_run",
]


class ResultEntries(list[dict[str, Any]]):
    """Results already in line form: the recorders' hot path.

    An integration that knows its values' types builds each result's JSON object itself,
    with :func:`result_entry` or the same checks inline, and collects them in this list;
    :func:`record_payload` then writes them as they are, with no intermediate
    :class:`RetrievedResult` and no second round of checks. Only objects made that way may be
    put in it: it is the promise that they were checked. JSON encoders see a plain list.

    ``characters`` (optional) is the number of characters of the results' texts, for a builder
    that counts them as it goes: the size check before encoding then need not walk the list
    again. Left unset, it is counted when the line is built.
    """

    __slots__ = ("characters",)

    characters: int


def result_entry(
    rank: int,
    text: str | None,
    score: float | None = None,
    document_id: str | None = None,
    start: int | None = None,
    end: int | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A result in line form, checked as :class:`RetrievedResult` results are when written.

    Same positional order as :class:`RetrievedResult`. The common types (``int``, ``str``,
    finite ``float``, ``dict``) pass with one ``type`` test each; anything else takes the
    full checks (numpy numbers, NaN -> ``null``, non-dict mappings copied). ``metadata`` is
    not copied when it is a dict: the line is encoded before the caller returns.
    """
    if type(rank) is not int:
        rank = strict_int(rank, "rank")
    if text is not None and type(text) is not str:
        text = optional_str(text, "text")
    if score is not None and (type(score) is not float or score - score != 0.0):
        score = finite_float(score, "score")  # NaN and infinities give nan here: unknown
    if document_id is not None and type(document_id) is not str:
        document_id = optional_str(document_id, "document_id")
    if start is not None and type(start) is not int:
        start = optional_int(start, "start")
    if end is not None and type(end) is not int:
        end = optional_int(end, "end")
    if metadata is None:
        metadata = {}
    elif type(metadata) is not dict:
        if not isinstance(metadata, Mapping):
            raise TypeError(f"metadata must be a mapping, got {type(metadata).__name__}")
        metadata = dict(metadata)
    return {
        "rank": rank,
        "text": text,
        "score": score,
        "document_id": document_id,
        "start": start,
        "end": end,
        "metadata": metadata,
    }


def _result_payload(result: RetrievedResult) -> dict[str, Any]:
    """The JSON object for one result, type-checked so that we never write an unreadable file."""
    metadata = result.metadata
    if type(metadata) is not dict:
        if not isinstance(metadata, Mapping):
            raise TypeError(f"metadata must be a mapping, got {type(metadata).__name__}")
        metadata = dict(metadata)
    return {
        "rank": strict_int(result.rank, "rank"),
        "text": optional_str(result.text, "text"),
        "score": finite_float(result.score, "score"),
        "document_id": optional_str(result.document_id, "document_id"),
        "start": optional_int(result.start, "start"),
        "end": optional_int(result.end, "end"),
        "metadata": metadata,
    }


def _latency(value: Any) -> float | None:
    if type(value) is float and value - value == 0.0:  # finite: the common case
        return value if value >= 0.0 else None
    if value is None:
        return None
    latency = finite_float(value, "latency_ms")
    return None if latency is None or latency < 0 else latency


def _error_text(error: str | BaseException | None) -> str | None:
    if error is None or isinstance(error, str):
        return error
    if isinstance(error, BaseException):
        message = str(error)
        return f"{type(error).__name__}: {message}" if message else type(error).__name__
    raise TypeError(f"error must be a string or an exception, got {type(error).__name__}")


_text_of = itemgetter("text")

# Run ids may be given as UUIDs: both encoders write a UUID as its canonical text (orjson
# natively, the stdlib through ``str``), so formatting it is left to the C encoder.
_ID_TYPES: frozenset[type] = frozenset({str, UUID})


def provenance_payload(
    source: str | None,
    stage: str | None,
    trace_id: str | UUID | None,
    run_id: str | UUID | None,
    parent_run_id: str | UUID | None,
    sequence: int | None,
    metadata: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The provenance keys of a record line; absent values are left out, not written as null."""
    return add_provenance({}, source, stage, trace_id, run_id, parent_run_id, sequence, metadata)


def add_provenance(
    payload: dict[str, Any],
    source: str | None,
    stage: str | None,
    trace_id: str | UUID | None,
    run_id: str | UUID | None,
    parent_run_id: str | UUID | None,
    sequence: int | None,
    metadata: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """:func:`provenance_payload`'s keys added to ``payload`` (a record line's object, after
    its base keys), which is returned: the recorder builds each line in one dict.

    Called once per recorded retrieval: each value is checked with one ``type`` test in the
    usual case and fully only when that fails.
    """
    if source is not None:
        payload["source"] = source if type(source) is str else optional_str(source, "source")
    if trace_id is not None:
        payload["trace_id"] = (
            trace_id if type(trace_id) in _ID_TYPES else optional_str(trace_id, "trace_id")
        )
    if run_id is not None:
        payload["run_id"] = run_id if type(run_id) in _ID_TYPES else optional_str(run_id, "run_id")
    if parent_run_id is not None:
        payload["parent_run_id"] = (
            parent_run_id
            if type(parent_run_id) in _ID_TYPES
            else optional_str(parent_run_id, "parent_run_id")
        )
    if stage is not None:
        if stage not in STAGES:
            raise ValueError(f"stage must be one of {', '.join(STAGES)}, got {stage!r}")
        payload["stage"] = stage
    if sequence is not None:
        number = sequence if type(sequence) is int else strict_int(sequence, "sequence")
        if number < 0:
            raise ValueError(f"sequence must be >= 0, got {number}")
        payload["sequence"] = number
    if metadata:
        if type(metadata) is not dict:
            if not isinstance(metadata, Mapping):
                raise TypeError(f"metadata must be a mapping, got {type(metadata).__name__}")
            metadata = dict(metadata)
        payload["metadata"] = metadata  # encoded before the caller returns: no copy
    return payload


def _results_payload(
    results: Iterable[RetrievedResult | Mapping[str, Any]],
) -> list[dict[str, Any]]:
    payload = []
    for position, item in enumerate(results, start=1):
        if isinstance(item, RetrievedResult):
            payload.append(_result_payload(item))
        elif isinstance(item, Mapping):
            payload.append(payload_from_mapping(item, position))
        else:
            raise TypeError(
                f"result {position} must be a RetrievedResult or a mapping, "
                f"got {type(item).__name__}"
            )
    return payload


def record_payload(
    query_id: str | None,
    query: str,
    results: Iterable[RetrievedResult | Mapping[str, Any]],
    latency_ms: float | None,
    error: str | BaseException | None,
    provenance: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A record line's JSON object: the base keys, then ``provenance`` (as
    :func:`provenance_payload` builds it) as given."""
    line = _base_object(query_id, query, results, latency_ms, error)
    if provenance:
        line.update(provenance)
    return line


def _base_object(
    query_id: str | None,
    query: str,
    results: Iterable[RetrievedResult | Mapping[str, Any]],
    latency_ms: float | None,
    error: str | BaseException | None,
) -> dict[str, Any]:
    """The base keys of a record line, in their order, each value checked."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a string, got {type(query).__name__}")
    payload = results if type(results) is ResultEntries else _results_payload(results)
    line = {
        "query_id": query_id
        if query_id is None or type(query_id) is str
        else optional_str(query_id, "query_id"),
        "query": query,
        "results": payload,
        "latency_ms": _latency(latency_ms),
        "error": error if error is None or type(error) is str else _error_text(error),
    }
    # Each character is at least one byte: a record whose texts alone are over the limit is
    # refused before it is encoded (which would cost several times its size in memory).
    characters = len(query) + sum(map(len, filter(None, map(_text_of, payload))))
    if characters > _io.MAX_LINE_BYTES:
        _too_large(characters, "characters of text")
    return line


def record_line(
    query_id: str | None,
    query: str,
    results: Iterable[RetrievedResult | Mapping[str, Any]],
    latency_ms: float | None,
    error: str | BaseException | None,
    source: str | None = None,
    stage: str | None = None,
    trace_id: str | UUID | None = None,
    run_id: str | UUID | None = None,
    parent_run_id: str | UUID | None = None,
    sequence: int | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> bytes:
    """One record line's bytes, newline included: what the recorder and :func:`write_run`
    write. The object of :func:`record_payload` with the provenance of
    :func:`add_provenance`, encoded by :func:`~spanchor_core.runs.encoding.encode_line`;
    raises ``ValueError`` for a line over the limit, ``TypeError``/``ValueError`` for a value
    that could not be read back.

    Called once per recorded retrieval, so the usual values (a string query, results in line
    form, a finite float latency, no error) pass with one ``type`` test each, and when every
    provenance key is given with its usual type too (string or UUID ids, a non-negative int
    sequence, a non-empty metadata dict: what the callback handler writes), or only a source
    and a stage (what the recording wrappers write), the line is one dict literal. Anything
    else takes :func:`_base_object` and :func:`add_provenance`, which
    build the same object.
    """
    if not (
        type(query) is str
        and type(results) is ResultEntries
        and (query_id is None or type(query_id) is str)
        and error is None
        and type(latency_ms) is float
        and latency_ms - latency_ms == 0.0
        and latency_ms >= 0.0
    ):
        payload = _base_object(query_id, query, results, latency_ms, error)
        add_provenance(payload, source, stage, trace_id, run_id, parent_run_id, sequence, metadata)
        return _encoded(payload)
    characters = getattr(results, "characters", None)
    if characters is None:
        characters = sum(map(len, filter(None, map(_text_of, results))))
    if characters + len(query) > _io.MAX_LINE_BYTES:
        _too_large(characters + len(query), "characters of text")
    if (
        type(source) is str
        and type(trace_id) in _ID_TYPES
        and type(run_id) in _ID_TYPES
        and stage in STAGES
        and type(sequence) is int
        and sequence >= 0
        and type(metadata) is dict
        and metadata
    ):
        # The two usual shapes are encoded here rather than through _encoded: one Python call
        # less on every recorded retrieval.
        if parent_run_id is None:
            line = encode_line(
                {
                    "query_id": query_id,
                    "query": query,
                    "results": results,
                    "latency_ms": latency_ms,
                    "error": None,
                    "source": source,
                    "trace_id": trace_id,
                    "run_id": run_id,
                    "stage": stage,
                    "sequence": sequence,
                    "metadata": metadata,  # encoded before the caller returns: no copy
                }
            )
            if len(line) > _io.MAX_LINE_BYTES + 1:  # the newline is not counted
                _too_large(len(line), "bytes encoded")
            return line
        if type(parent_run_id) in _ID_TYPES:
            line = encode_line(
                {
                    "query_id": query_id,
                    "query": query,
                    "results": results,
                    "latency_ms": latency_ms,
                    "error": None,
                    "source": source,
                    "trace_id": trace_id,
                    "run_id": run_id,
                    "parent_run_id": parent_run_id,
                    "stage": stage,
                    "sequence": sequence,
                    "metadata": metadata,
                }
            )
            if len(line) > _io.MAX_LINE_BYTES + 1:
                _too_large(len(line), "bytes encoded")
            return line
    elif (
        type(source) is str
        and stage in STAGES
        and trace_id is None
        and run_id is None
        and parent_run_id is None
        and sequence is None
        and not metadata
    ):  # a source and a stage only: what the recording wrappers write
        line = encode_line(
            {
                "query_id": query_id,
                "query": query,
                "results": results,
                "latency_ms": latency_ms,
                "error": None,
                "source": source,
                "stage": stage,
            }
        )
        if len(line) > _io.MAX_LINE_BYTES + 1:
            _too_large(len(line), "bytes encoded")
        return line
    payload = {
        "query_id": query_id,
        "query": query,
        "results": results,
        "latency_ms": latency_ms,
        "error": None,
    }
    add_provenance(payload, source, stage, trace_id, run_id, parent_run_id, sequence, metadata)
    return _encoded(payload)


def _encoded(payload: dict[str, Any]) -> bytes:
    """A record line's object as its bytes, refused when over the line limit."""
    line = encode_line(payload)
    if len(line) > _io.MAX_LINE_BYTES + 1:  # the newline is not counted
        _too_large(len(line), "bytes encoded")
    return line


def _too_large(size: int, unit: str) -> None:
    raise ValueError(
        f"the record holds {size:,} {unit}, over the "
        f"{_io.MAX_LINE_BYTES / 2**20:g} MiB a run file line may hold; split huge texts "
        "before recording them"
    )


def check_line_size(line: bytes) -> None:
    """Refuse a line no reader would read (over :data:`~spanchor_core._io.MAX_LINE_BYTES`)."""
    if len(line) > _io.MAX_LINE_BYTES + 1:  # the newline is not counted
        _too_large(len(line), "bytes encoded")


def header_line(header: RunHeader) -> bytes:
    """The header's line, as the recorder and :func:`write_run` write it."""
    return encode_line(header.model_dump(mode="json"))


def write_run(run: Run, path: str | os.PathLike[str]) -> None:
    """Write ``run`` as a run file, atomically (a temporary file, then a rename).

    The bytes depend only on ``run``: the header (``created_at`` included) is written as it is,
    records in their order. Runs read from spanchor 0.x files are written in our format.
    """
    file = Path(path)
    chunks = [header_line(run.header)]
    for number, record in enumerate(run.records, start=1):
        try:
            line = record_line(
                record.query_id,
                record.query,
                record.results,
                record.latency_ms,
                record.error,
                record.source,
                record.stage,
                record.trace_id,
                record.run_id,
                record.parent_run_id,
                record.sequence,
                record.metadata,
            )
        except (TypeError, ValueError) as exc:
            raise RunError(f"record {number} cannot be written: {exc}", path=file) from None
        chunks.append(line)
    atomic_write(file, b"".join(chunks), error=RunError, what="run file")
