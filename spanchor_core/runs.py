"""Run files: what a retriever returned for each query, and the recorder that writes them.

A run file is the contract between whoever ran the retriever (the LangChain and LlamaIndex
recorders, a user's script, a spanchor 0.x results file) and the gate. It is JSONL so that a
crashed process leaves every complete line readable and runs diff and stream well::

    {"kind": "spanchor.run", "schema_version": 1, "spanchor_version": "0.5.0", "created_at": ...,
     "retriever": {"description": ..., "parameters": {...}}, "corpus_fingerprint": ...,
     "gold_sha256": ..., "tags": {...}}
    {"query_id": "q1", "query": "...", "results": [{"rank": 1, "text": "...", "score": 0.8,
     "document_id": null, "start": null, "end": null, "metadata": {}}], "latency_ms": 3.1,
     "error": null}

Format decisions (the reader and the writer agree on all of them):

* Keys are written in the fixed order above, every key every time (``null`` when unknown), with
  ``ensure_ascii=False``; metadata keeps the insertion order it was given in. The same inputs give
  the same bytes; only the header's ``created_at`` differs between two recordings.
* JSON has no NaN or infinity. A non-finite ``score`` or ``latency_ms`` is written as ``null``
  ("unknown"): a NaN score carries no ranking information, and a recorder must never fail a
  retrieval over it. Non-finite floats inside metadata or parameters become ``null`` too. Our
  reader rejects ``NaN``/``Infinity`` tokens in our own files (we never write them); spanchor 0.x
  files are read leniently and such scores become ``None``.
* Metadata values JSON cannot hold are converted, not dropped: numpy scalars and arrays to numbers
  and lists, dates to ISO strings, sets to sorted lists, anything else to ``str(value)``.
* Text with lone surrogates (which UTF-8 cannot hold) is written with ``\\u`` escapes for that line
  only, so it reads back unchanged.
* Lines are split on ``\\n`` only (a ``\\u2028`` inside text is not a line break); blank lines are
  skipped; ``\\r`` before ``\\n`` is tolerated; a leading byte-order mark is ignored.
* A torn last line (invalid JSON on the last line and no newline after it: the writer died
  mid-line) is skipped and reported in :attr:`Run.warnings`. Invalid JSON anywhere else is a
  :class:`~spanchor_core.errors.RunError` ``path:line: ...``.
* Results are sorted by ``rank`` (stably); a missing rank means list position, 1-based.

spanchor 0.x results are read as they are, in each shape 0.x users have: a JSON object
``{query_id: [result, ...]}`` (what its CLI read), JSONL lines ``{query_id, question,
retrieved: [...]}`` (its example data), and JSON lists of such records or of bare result dicts.
Result dicts may use 0.x's field aliases (see :func:`result_from_mapping`). LangChain and
LlamaIndex offsets found in a result's metadata (``start_index``, ``start_char_idx``,
``end_char_idx``) are kept in metadata and surfaced as ``start``/``end`` when the result has text
and no explicit offsets: every offset is verified against the text before it is trusted, so a
wrong hint costs nothing, while a right one saves a search. Framework document identifiers
(``source``, ``ref_doc_id`` inside metadata) are file paths or UUIDs, not corpus ids, so they stay
in metadata and are never used as ``document_id``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import math
import operator
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO, Final, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from spanchor_core._io import atomic_write, describe_validation_error
from spanchor_core._version import __version__
from spanchor_core.corpus import canonicalize
from spanchor_core.errors import RecorderError, RunError

__all__ = [
    "RUN_KIND",
    "RUN_SCHEMA_VERSION",
    "STAGES",
    "GoldLookup",
    "RetrievalRecord",
    "RetrievalRecordModel",
    "RetrievedResult",
    "RetrievedResultModel",
    "RetrieverInfo",
    "Run",
    "RunHeader",
    "RunRecorder",
    "RunStream",
    "Stage",
    "iter_run",
    "read_run",
    "resolve_query_ids",
    "result_from_mapping",
    "run_file_schemas",
    "write_run",
]

RUN_KIND: Final = "spanchor.run"
RUN_SCHEMA_VERSION: Final = 1

_log = logging.getLogger(__name__)

# Source formats a Run can come from (Run.source_format).
_FORMAT_OURS = "spanchor.run"
_FORMAT_0X_JSON = "spanchor-0.x-json"
_FORMAT_0X_JSONL = "spanchor-0.x-jsonl"
_FORMAT_0X_LIST = "spanchor-0.x-list"

# What other spanchor files look like, to say so when one is passed as a run.
_OTHER_KINDS = {
    "spanchor.gold": "this is a gold set, not a run",
    "spanchor.evaluation": "this is an evaluation, not a run; runs are what `evaluate` reads",
}


Stage = Literal["retrieval", "postprocessed", "context"]
"""What a record's results are: ``retrieval`` the raw output of a retriever;
``postprocessed`` after node postprocessors or a reranker; ``context`` the final context
handed to the model (what evaluation prefers when a trace holds it)."""

STAGES: Final[tuple[Stage, ...]] = ("retrieval", "postprocessed", "context")


# --------------------------------------------------------------------------------------------
# Hot-path values
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RetrievedResult:
    """One ranked item a retriever returned.

    ``text`` is what the retriever handed to the model; ``document_id``/``start``/``end``, when
    known, are hints or explicit spans that the locator verifies against ``text``.
    """

    rank: int
    text: str | None
    score: float | None = None
    document_id: str | None = None
    start: int | None = None
    end: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RetrievalRecord:
    """One retrieval: the query, its ranked results, and how it went.

    ``line`` is where the record was read from (1-based); it is provenance, not content, and is
    ignored by ``==`` so a written-then-read record equals the original.

    Where the retrieval came from, so that evaluation can group the several retrievals one
    question causes (hybrid retrievers, sub-questions, agent tool calls, fallbacks):
    ``source`` names the retriever, tool or graph node; ``stage`` says what the results are
    (see :data:`STAGES`); ``trace_id`` is the root run of the question's trace, ``run_id``
    and ``parent_run_id`` this retrieval's own run and its parent; ``sequence`` orders the
    retrievals of one trace as the recorder saw them start; ``metadata`` holds free-form
    provenance (tags, ``ls_retriever_name``, ...). All optional: files without them keep
    their meaning (one record = one retrieval of its own).
    """

    query_id: str | None
    query: str
    results: tuple[RetrievedResult, ...]
    latency_ms: float | None = None
    error: str | None = None
    source: str | None = None
    stage: Stage | None = None
    trace_id: str | None = None
    run_id: str | None = None
    parent_run_id: str | None = None
    sequence: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    line: int | None = field(default=None, compare=False)


# --------------------------------------------------------------------------------------------
# File-edge models
# --------------------------------------------------------------------------------------------


def _utc_now() -> str:
    now = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    return now.replace("+00:00", "Z")


class RetrieverInfo(BaseModel):
    """What produced the run: a free-text description and the settings that matter."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)

    @field_validator("parameters", mode="after")
    @classmethod
    def _json_native(cls, value: dict[str, Any]) -> dict[str, Any]:
        # Parameters are provenance: keep what JSON can hold, convert the rest once, here.
        native: dict[str, Any] = json.loads(_dumps(value))
        return native


class RunHeader(BaseModel):
    """The first line of a run file: what the run is and where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    kind: Literal["spanchor.run"] = RUN_KIND
    schema_version: Literal[1] = RUN_SCHEMA_VERSION
    spanchor_version: str = Field(default_factory=lambda: __version__)
    created_at: str = Field(default_factory=_utc_now)
    retriever: RetrieverInfo = Field(default_factory=RetrieverInfo)
    corpus_fingerprint: str | None = None
    gold_sha256: str | None = None
    tags: dict[str, Any] = Field(default_factory=dict)

    @field_validator("created_at", mode="after")
    @classmethod
    def _iso_8601_with_zone(cls, value: str) -> str:
        try:
            parsed = dt.datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"not an ISO 8601 timestamp: {value!r}") from None
        if parsed.tzinfo is None:
            raise ValueError(f"timestamp {value!r} has no time zone; write it in UTC ('Z')")
        return value

    @field_validator("tags", mode="after")
    @classmethod
    def _json_native(cls, value: dict[str, Any]) -> dict[str, Any]:
        native: dict[str, Any] = json.loads(_dumps(value))
        return native


class RetrievedResultModel(BaseModel):
    """Schema of one result inside a run file record (validation at the file edge only)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    rank: int | None = None
    text: str | None = None
    score: float | None = None
    document_id: str | None = None
    start: int | None = None
    end: int | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class RetrievalRecordModel(BaseModel):
    """Schema of one retrieval line of a run file (validation at the file edge only)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    query_id: str | None = None
    query: str
    results: list[RetrievedResultModel]
    latency_ms: float | None = None
    error: str | None = None
    source: str | None = None
    stage: Stage | None = None
    trace_id: str | None = None
    run_id: str | None = None
    parent_run_id: str | None = None
    sequence: int | None = Field(default=None, ge=0)
    metadata: dict[str, Any] = Field(default_factory=dict)


def run_file_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schemas of the two line types of a run file, keyed by a stable name."""
    return {
        "spanchor.run.header": RunHeader.model_json_schema(),
        "spanchor.run.record": RetrievalRecordModel.model_json_schema(),
    }


@dataclass(slots=True)
class Run:
    """A run as read: its header, its records in file order, and what the reader noticed.

    ``source_format`` says which file shape it came from (``"spanchor.run"`` or one of the
    spanchor 0.x shapes), so reports can say that a header was synthesised.
    """

    header: RunHeader
    records: list[RetrievalRecord]
    path: Path | None = None
    warnings: list[str] = field(default_factory=list)
    source_format: str = _FORMAT_OURS


# --------------------------------------------------------------------------------------------
# JSON encoding (deterministic, no NaN, never fails on odd metadata)
# --------------------------------------------------------------------------------------------


def _json_default(value: Any) -> Any:
    """Turn what JSON cannot hold into what it can, the same way every time."""
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, set | frozenset):
        try:
            return sorted(value)
        except TypeError:
            return sorted(value, key=repr)
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    tolist = getattr(value, "tolist", None)  # numpy scalars and arrays
    if callable(tolist):
        with contextlib.suppress(Exception):
            return tolist()
    return str(value)


_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=_json_default)
_ASCII_ENCODER = json.JSONEncoder(ensure_ascii=True, allow_nan=False, default=_json_default)
_MAX_DEPTH = 100


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def _sanitize(value: Any, depth: int = 0) -> Any:
    """Slow path: rebuild ``value`` with JSON-only types (NaN -> None, keys -> str)."""
    if depth > _MAX_DEPTH:  # cycles and absurd nesting end as text
        return str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, str | int):
        return value
    if isinstance(value, Mapping):
        return {_json_key(k): _sanitize(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_sanitize(v, depth + 1) for v in value]
    converted = _json_default(value)
    if isinstance(converted, str):
        return converted
    return _sanitize(converted, depth + 1)


def _dumps(value: Any) -> str:
    try:
        return _ENCODER.encode(value)
    except (ValueError, TypeError, RecursionError):
        # NaN somewhere, a non-string key, a cycle: rare, so the fast path stays plain.
        return _ENCODER.encode(_sanitize(value))


def _encode_line(value: Any) -> bytes:
    """One JSONL line as UTF-8 bytes, newline included."""
    text = _dumps(value)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates: escape this line so it stays valid UTF-8 and reads back the same.
        return (_ASCII_ENCODER.encode(json.loads(text)) + "\n").encode("ascii")


# --------------------------------------------------------------------------------------------
# Normalising results (shared by the recorder, write_run and the 0.x reader)
# --------------------------------------------------------------------------------------------


def _strict_int(value: Any, name: str) -> int:
    if type(value) is int:
        return value
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got a boolean")
    try:
        return operator.index(value)  # numpy integers
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None


def _optional_int(value: Any, name: str) -> int | None:
    return None if value is None else _strict_int(value, name)


def _finite_float(value: Any, name: str) -> float | None:
    """A float, or None when absent or non-finite (see the module doc on NaN)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got a boolean")
    if isinstance(value, str):
        raise TypeError(f"{name} must be a number, got a string")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}") from None
    return number if math.isfinite(number) else None


def _optional_str(value: Any, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{name} must be a string, got {type(value).__name__}")


def _result_payload(result: RetrievedResult) -> dict[str, Any]:
    """The JSON object for one result, type-checked so that we never write an unreadable file."""
    metadata = result.metadata
    if type(metadata) is not dict:
        if not isinstance(metadata, Mapping):
            raise TypeError(f"metadata must be a mapping, got {type(metadata).__name__}")
        metadata = dict(metadata)
    return {
        "rank": _strict_int(result.rank, "rank"),
        "text": _optional_str(result.text, "text"),
        "score": _finite_float(result.score, "score"),
        "document_id": _optional_str(result.document_id, "document_id"),
        "start": _optional_int(result.start, "start"),
        "end": _optional_int(result.end, "end"),
        "metadata": metadata,
    }


def _error_text(error: str | BaseException | None) -> str | None:
    if error is None or isinstance(error, str):
        return error
    if isinstance(error, BaseException):
        message = str(error)
        return f"{type(error).__name__}: {message}" if message else type(error).__name__
    raise TypeError(f"error must be a string or an exception, got {type(error).__name__}")


def _provenance_payload(
    source: str | None,
    stage: str | None,
    trace_id: str | None,
    run_id: str | None,
    parent_run_id: str | None,
    sequence: int | None,
    metadata: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The provenance keys of a record line; absent values are left out, not written as null."""
    payload: dict[str, Any] = {}
    for name, value in (
        ("source", source),
        ("trace_id", trace_id),
        ("run_id", run_id),
        ("parent_run_id", parent_run_id),
    ):
        if value is not None:
            payload[name] = _optional_str(value, name)
    if stage is not None:
        if stage not in STAGES:
            raise ValueError(f"stage must be one of {', '.join(STAGES)}, got {stage!r}")
        payload["stage"] = stage
    if sequence is not None:
        number = _strict_int(sequence, "sequence")
        if number < 0:
            raise ValueError(f"sequence must be >= 0, got {number}")
        payload["sequence"] = number
    if metadata:
        if not isinstance(metadata, Mapping):
            raise TypeError(f"metadata must be a mapping, got {type(metadata).__name__}")
        payload["metadata"] = dict(metadata)
    return payload


def _record_provenance(record: RetrievalRecord) -> dict[str, Any]:
    return _provenance_payload(
        record.source,
        record.stage,
        record.trace_id,
        record.run_id,
        record.parent_run_id,
        record.sequence,
        record.metadata,
    )


def _record_payload(
    query_id: str | None,
    query: str,
    results: Iterable[RetrievedResult | Mapping[str, Any]],
    latency_ms: float | None,
    error: str | BaseException | None,
    provenance: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    if not isinstance(query, str):
        raise TypeError(f"query must be a string, got {type(query).__name__}")
    payload = []
    for position, item in enumerate(results, start=1):
        if not isinstance(item, RetrievedResult):
            if not isinstance(item, Mapping):
                raise TypeError(
                    f"result {position} must be a RetrievedResult or a mapping, "
                    f"got {type(item).__name__}"
                )
            payload.append(_payload_from_mapping(item, position))
        else:
            payload.append(_result_payload(item))
    line = {
        "query_id": _optional_str(query_id, "query_id"),
        "query": query,
        "results": payload,
        "latency_ms": _finite_float(latency_ms, "latency_ms"),
        "error": _error_text(error),
    }
    if provenance:
        line.update(provenance)
    return line


# Field aliases. The first alias present with a non-null value wins; 0 and "" are real values.
_TEXT_KEYS = ("text", "chunk", "content", "body", "page_content")
_SCORE_KEYS = ("score", "relevance_score", "similarity", "confidence")
_RANK_KEYS = ("rank", "position", "index")
_DOCUMENT_KEYS = ("document_id", "doc_id", "source", "document")
_START_KEYS = ("start", "start_char", "offset")
_END_KEYS = ("end", "end_char")
# Framework offsets: kept in metadata, surfaced as hints (see the module doc).
_HINT_START_KEYS = ("start_char_idx", "start_index")  # LlamaIndex, LangChain
_HINT_END_KEY = "end_char_idx"  # LlamaIndex
# key -> (field, priority): one dict lookup per key of a result instead of a scan per field.
_FIELD_OF: dict[str, tuple[str, int]] = {
    key: (name, priority)
    for name, keys in (
        ("text", _TEXT_KEYS),
        ("score", _SCORE_KEYS),
        ("rank", _RANK_KEYS),
        ("document_id", _DOCUMENT_KEYS),
        ("start", _START_KEYS),
        ("end", _END_KEYS),
    )
    for priority, key in enumerate(keys)
}


def _pick(data: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for key in keys:
        value = data.get(key)
        if value is not None:
            return key, value
    return None, None


def _chosen(chosen: dict[str, tuple[int, str, Any]], name: str) -> tuple[str, Any]:
    found = chosen.get(name)
    return (name, None) if found is None else (found[1], found[2])


def _lenient_int(value: Any, name: str) -> int:
    """Integers as 0.x files hold them: ints, integral floats, digit strings."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise TypeError(f"{name} must be an integer, got {value!r}") from None
    return _strict_int(value, name)


def _lenient_float(value: Any, name: str) -> float | None:
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise TypeError(f"{name} must be a number, got {value!r}") from None
    return _finite_float(value, name)


def _hint_offset(value: Any) -> int | None:
    if type(value) is int and value >= 0:  # LangChain writes -1 when it could not find the chunk
        return value
    return None


def result_from_mapping(data: Mapping[str, Any], *, rank: int | None = None) -> RetrievedResult:
    """Build a :class:`RetrievedResult` from a plain dict, accepting the usual field aliases.

    Aliases (first present non-null value wins; ``0`` is an offset, not a missing one):
    text ``text|chunk|content|body|page_content``; score ``score|relevance_score|similarity|
    confidence``; rank ``rank|position|index``; document id ``document_id|doc_id|source|document``;
    start ``start|start_char|offset``; end ``end|end_char``. A nested ``metadata`` mapping and every
    other key (and any alias that lost to an earlier one) end up in ``metadata``. ``rank`` is used
    when the mapping has none. Numbers may be strings (0.x files); a non-finite score is ``None``.

    Raises ``TypeError`` for a field of the wrong type and ``ValueError`` when there is no rank.
    """
    return RetrievedResult(**_payload_from_mapping(data, rank))


def _payload_from_mapping(data: Mapping[str, Any], rank: int | None) -> dict[str, Any]:
    """result_from_mapping as the dict we write: the recorder skips building a frozen object."""
    chosen: dict[str, tuple[int, str, Any]] = {}  # field -> (priority, key, value)
    extras: list[tuple[str, Any]] = []
    for key, value in data.items():
        spec = _FIELD_OF.get(key)
        if spec is None:
            if key != "metadata":
                extras.append((key, value))
            continue
        if value is None:
            continue  # an empty alias says nothing
        name, priority = spec
        current = chosen.get(name)
        if current is None or priority < current[0]:
            if current is not None:
                extras.append((current[1], current[2]))
            chosen[name] = (priority, key, value)
        else:
            extras.append((key, value))
    nested = data.get("metadata")
    if nested is None:
        metadata: dict[str, Any] = {}
    elif isinstance(nested, Mapping):
        metadata = dict(nested)
    else:
        metadata = {"metadata": nested}
    for key, value in extras:
        metadata.setdefault(key, value)  # the nested mapping wins a clash

    text_key, text = _chosen(chosen, "text")
    score_key, score = _chosen(chosen, "score")
    rank_key, found_rank = _chosen(chosen, "rank")
    document_key, document_id = _chosen(chosen, "document_id")
    start_key, start = _chosen(chosen, "start")
    end_key, end = _chosen(chosen, "end")

    if text is not None and not isinstance(text, str):
        raise TypeError(f"{text_key} must be a string, got {type(text).__name__}")
    if found_rank is not None:
        final_rank = _lenient_int(found_rank, rank_key)
    elif rank is not None:
        final_rank = rank
    else:
        raise ValueError("result has no rank and no position was given")
    if document_id is not None and not isinstance(document_id, str):
        document_id = str(_strict_int(document_id, document_key))
    final_start = None if start is None else _lenient_int(start, start_key)
    final_end = None if end is None else _lenient_int(end, end_key)

    if final_start is None and final_end is None and text is not None:
        # Framework offsets are hints; only useful (and only checkable) when there is text.
        hint_start = None
        for key in _HINT_START_KEYS:
            hint_start = _hint_offset(data.get(key, metadata.get(key)))
            if hint_start is not None:
                break
        if hint_start is not None:
            hint_end = _hint_offset(data.get(_HINT_END_KEY, metadata.get(_HINT_END_KEY)))
            final_start = hint_start
            final_end = hint_end if hint_end is not None else hint_start + len(text)

    return {
        "rank": final_rank,
        "text": text,
        "score": _lenient_float(score, score_key),
        "document_id": document_id,
        "start": final_start,
        "end": final_end,
        "metadata": metadata,
    }


def _sorted_by_rank(results: Iterable[RetrievedResult]) -> tuple[RetrievedResult, ...]:
    return tuple(sorted(results, key=operator.attrgetter("rank")))


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


class _NonFiniteConstantError(ValueError):
    pass


def _reject_constant(name: str) -> float:
    raise _NonFiniteConstantError(f"{name} is not valid JSON; write null for an unknown number")


def _keep_constant(name: str) -> float:
    return float(name)  # "NaN", "Infinity", "-Infinity": float() understands all three


def _unreadable(exc: OSError, path: Path) -> RunError:
    """The RunError for a run file that cannot be opened or read."""
    if isinstance(exc, FileNotFoundError):
        return RunError("run file not found", path=path)
    if isinstance(exc, IsADirectoryError):
        return RunError("is a directory, not a run file", path=path)
    if isinstance(exc, PermissionError):
        return RunError("permission denied", path=path)
    return RunError(f"cannot read run file: {exc.strerror or exc}", path=path)


def _not_utf8(path: Path, offset: int, line: int) -> RunError:
    return RunError(
        f"not UTF-8 (invalid byte at offset {offset})",
        path=path,
        line=line,
        hint="run files are UTF-8 JSONL",
    )


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise _unreadable(exc, path) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, exc.start, raw.count(b"\n", 0, exc.start) + 1) from None
    return text[1:] if text.startswith("\ufeff") else text


def _is_torn_tail(lines: list[str], index: int) -> bool:
    # The last element of text.split("\n") is non-empty only if the file lacks a final newline.
    return index == len(lines) - 1


def _header_from_line(obj: Any, path: Path, line: int) -> RunHeader:
    if not isinstance(obj, dict):
        raise RunError(f"expected a JSON object, got {type(obj).__name__}", path=path, line=line)
    kind = obj.get("kind")
    if kind != RUN_KIND:
        raise RunError(
            f"unknown kind {kind!r}; expected {RUN_KIND!r}",
            path=path,
            line=line,
            hint=_OTHER_KINDS.get(str(kind), "is this a spanchor run file?"),
        )
    version = obj.get("schema_version")
    if version != RUN_SCHEMA_VERSION or isinstance(version, bool):
        if type(version) is int and version > RUN_SCHEMA_VERSION:
            raise RunError(
                f"schema_version {version} is newer than this spanchor reads "
                f"({RUN_SCHEMA_VERSION})",
                path=path,
                line=line,
                hint="upgrade spanchor",
            )
        raise RunError(
            f"unsupported schema_version {version!r}; expected {RUN_SCHEMA_VERSION}",
            path=path,
            line=line,
        )
    try:
        return RunHeader.model_validate(obj)
    except ValidationError as exc:
        raise RunError(
            f"bad header: {describe_validation_error(exc)}", path=path, line=line
        ) from None


def _record_from_model(model: RetrievalRecordModel, line: int | None) -> RetrievalRecord:
    results = [
        RetrievedResult(
            rank=position if r.rank is None else r.rank,
            text=r.text,
            score=r.score,
            document_id=r.document_id,
            start=r.start,
            end=r.end,
            metadata=r.metadata,
        )
        for position, r in enumerate(model.results, start=1)
    ]
    return RetrievalRecord(
        query_id=model.query_id,
        query=model.query,
        results=_sorted_by_rank(results),
        latency_ms=model.latency_ms,
        error=model.error,
        source=model.source,
        stage=model.stage,
        trace_id=model.trace_id,
        run_id=model.run_id,
        parent_run_id=model.parent_run_id,
        sequence=model.sequence,
        metadata=model.metadata,
        line=line,
    )


_RECORD_KEYS = frozenset(RetrievalRecordModel.model_fields)
_RESULT_KEYS = frozenset(RetrievedResultModel.model_fields)
_STR_OR_NONE = frozenset({str, type(None)})
_INT_OR_NONE = frozenset({int, type(None)})
_NUMBER_OR_NONE = frozenset({float, int, type(None)})
_ABSENT: Any = object()


def _record_fast(obj: Any, line: int) -> RetrievalRecord | None:
    """The record a well-formed line of our own format holds, without pydantic; else ``None``.

    Accepts exactly the shapes :class:`RetrievalRecordModel` accepts that our writers produce
    (plain JSON types, ints where floats go), and gives the same values. Anything else returns
    ``None`` and the caller validates the line with the model, so a bad line gets the same
    ``path:line`` error either way. At 100,000 results this halves reading time.
    """
    if type(obj) is not dict or not _RECORD_KEYS.issuperset(obj):
        return None
    get = obj.get
    query, items, query_id = get("query"), get("results"), get("query_id")
    latency, error = get("latency_ms"), get("error")
    if (
        type(query) is not str
        or type(items) is not list
        or type(query_id) not in _STR_OR_NONE
        or type(latency) not in _NUMBER_OR_NONE
        or type(error) not in _STR_OR_NONE
    ):
        return None
    source, stage, trace_id = get("source"), get("stage"), get("trace_id")
    run_id, parent_run_id, sequence = get("run_id"), get("parent_run_id"), get("sequence")
    record_metadata = get("metadata", _ABSENT)
    if (
        type(source) not in _STR_OR_NONE
        or (stage is not None and stage not in STAGES)
        or type(trace_id) not in _STR_OR_NONE
        or type(run_id) not in _STR_OR_NONE
        or type(parent_run_id) not in _STR_OR_NONE
        or type(sequence) not in _INT_OR_NONE
        or (sequence is not None and sequence < 0)
    ):
        return None
    if record_metadata is _ABSENT:
        record_metadata = {}
    elif type(record_metadata) is not dict:
        return None
    results: list[RetrievedResult] = []
    for position, item in enumerate(items, start=1):
        if type(item) is not dict or not _RESULT_KEYS.issuperset(item):
            return None
        get = item.get
        rank, text, score = get("rank"), get("text"), get("score")
        document_id, start, end = get("document_id"), get("start"), get("end")
        metadata = get("metadata", _ABSENT)
        if (
            type(rank) not in _INT_OR_NONE
            or type(text) not in _STR_OR_NONE
            or type(score) not in _NUMBER_OR_NONE
            or type(document_id) not in _STR_OR_NONE
            or type(start) not in _INT_OR_NONE
            or type(end) not in _INT_OR_NONE
        ):
            return None
        if metadata is _ABSENT:
            metadata = {}
        elif type(metadata) is not dict:
            return None
        results.append(
            RetrievedResult(
                position if rank is None else rank,
                text,
                None if score is None else float(score),
                document_id,
                start,
                end,
                metadata,
            )
        )
    return RetrievalRecord(
        query_id=query_id,
        query=query,
        results=_sorted_by_rank(results),
        latency_ms=None if latency is None else float(latency),
        error=error,
        source=source,
        stage=stage,
        trace_id=trace_id,
        run_id=run_id,
        parent_run_id=parent_run_id,
        sequence=sequence,
        metadata=record_metadata,
        line=line,
    )


def _header_ours(text: str, path: Path, number: int) -> RunHeader:
    """The header line of our format (``number`` is its 1-based line)."""
    try:
        header_obj = json.loads(text, parse_constant=_reject_constant)
    except _NonFiniteConstantError as exc:
        raise RunError(str(exc), path=path, line=number) from None
    except (ValueError, RecursionError) as exc:
        raise RunError(
            f"invalid JSON: {exc or 'nested too deeply'}", path=path, line=number
        ) from None
    return _header_from_line(header_obj, path, number)


def _record_ours(
    text: str, path: Path, number: int, last: bool, warnings: list[str]
) -> RetrievalRecord | None:
    """The record on one stripped, non-blank line of our format.

    ``last`` says the line is the file's final one with no newline after it: if it is not
    valid JSON it is a torn write, skipped with a warning (``None``); anywhere else invalid
    JSON is a RunError. Shared by :func:`read_run` and :class:`RunStream`.
    """
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except _NonFiniteConstantError as exc:
        raise RunError(str(exc), path=path, line=number) from None
    except json.JSONDecodeError as exc:
        if last:
            warnings.append(
                f"{path}:{number}: incomplete last line skipped ({len(text)} characters; "
                "the writer was interrupted mid-line)"
            )
            return None
        raise RunError(
            f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=number
        ) from None
    except (ValueError, RecursionError) as exc:
        raise RunError(
            f"invalid JSON: {exc or 'nested too deeply'}", path=path, line=number
        ) from None
    if isinstance(obj, dict) and "kind" in obj:
        raise RunError(
            "a second header line; one run per file (were two run files concatenated?)",
            path=path,
            line=number,
        )
    record = _record_fast(obj, number)
    if record is None:
        try:
            model = RetrievalRecordModel.model_validate(obj)
        except ValidationError as exc:
            raise RunError(
                f"bad record: {describe_validation_error(exc)}", path=path, line=number
            ) from None
        record = _record_from_model(model, number)
    return record


def _read_ours(path: Path, lines: list[str], header_index: int) -> Run:
    header = _header_ours(lines[header_index], path, header_index + 1)
    records: list[RetrievalRecord] = []
    warnings: list[str] = []
    for index in range(header_index + 1, len(lines)):
        text = lines[index].strip()
        if not text:
            continue
        lines[index] = ""  # let the text go once parsed: the file is held only once
        record = _record_ours(text, path, index + 1, _is_torn_tail(lines, index), warnings)
        if record is not None:
            records.append(record)
    return Run(header=header, records=records, path=path, warnings=warnings)


# 0.x record fields: query id, query text, the results list.
_ID_KEYS = ("query_id", "qid", "id")
_QUESTION_KEYS = ("question", "query", "query_text")
_RESULTS_KEYS = ("retrieved", "results")


def _looks_like_0x_record(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    _, results = _pick(obj, _RESULTS_KEYS)
    return isinstance(results, list) and any(key in obj for key in _ID_KEYS + _QUESTION_KEYS)


def _results_0x(
    items: Any, where: str, path: Path, line: int | None
) -> tuple[RetrievedResult, ...]:
    if not isinstance(items, list):
        raise RunError(
            f"{where}: results must be a list, got {type(items).__name__}", path=path, line=line
        )
    results = []
    for position, item in enumerate(items, start=1):
        if not isinstance(item, Mapping):
            raise RunError(
                f"{where}: result {position} must be an object, got {type(item).__name__}",
                path=path,
                line=line,
            )
        try:
            results.append(result_from_mapping(item, rank=position))
        except (TypeError, ValueError) as exc:
            raise RunError(f"{where}: result {position}: {exc}", path=path, line=line) from None
    return _sorted_by_rank(results)


def _record_0x(obj: Any, path: Path, line: int | None, where: str) -> RetrievalRecord:
    if not isinstance(obj, dict):
        raise RunError(
            f"{where}: expected a JSON object, got {type(obj).__name__}", path=path, line=line
        )
    _, query_id = _pick(obj, _ID_KEYS)
    if query_id is not None and not isinstance(query_id, str):
        if type(query_id) is not int:
            raise RunError(f"{where}: query_id must be a string", path=path, line=line)
        query_id = str(query_id)
    _, question = _pick(obj, _QUESTION_KEYS)
    if question is not None and not isinstance(question, str):
        raise RunError(f"{where}: question must be a string", path=path, line=line)
    results_key, items = _pick(obj, _RESULTS_KEYS)
    try:
        latency = _lenient_float(obj.get("latency_ms"), "latency_ms")
        error = _optional_str(obj.get("error"), "error")
    except TypeError as exc:
        raise RunError(f"{where}: {exc}", path=path, line=line) from None
    return RetrievalRecord(
        query_id=query_id,
        query=question or "",
        results=_results_0x([] if results_key is None else items, where, path, line),
        latency_ms=latency,
        error=error,
        line=line,
    )


def _header_0x(path: Path, shape: str) -> RunHeader:
    # The file's modification time is the best "created at" a 0.x file offers, and it keeps
    # two reads of the same file identical.
    mtime = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC)
    return RunHeader(
        spanchor_version="0.x",
        created_at=mtime.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        retriever=RetrieverInfo(description=f"imported from spanchor 0.x results ({shape})"),
    )


def _record_0x_line(
    text: str, path: Path, number: int, last: bool, warnings: list[str]
) -> RetrievalRecord | None:
    """The record on one stripped, non-blank line of 0.x JSONL (``last``: see _record_ours)."""
    try:
        obj = json.loads(text, parse_constant=_keep_constant)
    except json.JSONDecodeError as exc:
        if last:
            warnings.append(f"{path}:{number}: incomplete last line skipped")
            return None
        raise RunError(
            f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=number
        ) from None
    except (ValueError, RecursionError) as exc:
        raise RunError(
            f"invalid JSON: {exc or 'nested too deeply'}", path=path, line=number
        ) from None
    return _record_0x(obj, path, number, "record")


def _read_0x_jsonl(path: Path, lines: list[str]) -> Run:
    records: list[RetrievalRecord] = []
    warnings: list[str] = []
    for index, raw in enumerate(lines):
        text = raw.strip()
        if not text:
            continue
        record = _record_0x_line(text, path, index + 1, _is_torn_tail(lines, index), warnings)
        if record is not None:
            records.append(record)
    return Run(
        header=_header_0x(path, "JSONL"),
        records=records,
        path=path,
        warnings=warnings,
        source_format=_FORMAT_0X_JSONL,
    )


def _read_0x_document(path: Path, text: str) -> Run:
    try:
        data = json.loads(text, parse_constant=_keep_constant)
    except json.JSONDecodeError as exc:
        raise RunError(
            f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=exc.lineno
        ) from None
    except (ValueError, RecursionError) as exc:
        raise RunError(f"invalid JSON: {exc or 'nested too deeply'}", path=path) from None
    if isinstance(data, dict):
        if "kind" in data:
            raise RunError(
                f"unknown kind {data['kind']!r}; expected {RUN_KIND!r}",
                path=path,
                line=1,
                hint=_OTHER_KINDS.get(str(data["kind"]), "a run file is JSONL with a header line"),
            )
        if "anchors" in data or "per_query_metrics" in data:
            what = "a gold query" if "anchors" in data else "an evaluation"
            raise RunError(f"this looks like {what}, not retrieval results", path=path)
        records = []
        for query_id, items in data.items():
            where = f"query {query_id!r}"
            records.append(RetrievalRecord(query_id, "", _results_0x(items, where, path, None)))
        return Run(_header_0x(path, "JSON object"), records, path, [], _FORMAT_0X_JSON)
    if isinstance(data, list):
        if all(_looks_like_0x_record(item) for item in data) and data:
            records = [
                _record_0x(item, path, None, f"record {i}") for i, item in enumerate(data, 1)
            ]
            return Run(_header_0x(path, "JSON list"), records, path, [], _FORMAT_0X_LIST)
        results = _results_0x(data, "list", path, None)
        warning = (
            f"{path}: a bare list of results has no query; it was read as one retrieval "
            "without query id or text"
        )
        record = RetrievalRecord(None, "", results)
        return Run(_header_0x(path, "JSON list"), [record], path, [warning], _FORMAT_0X_LIST)
    raise RunError(
        f"expected a run file (JSONL) or spanchor 0.x results (JSON object or list), "
        f"got a JSON {type(data).__name__}",
        path=path,
    )


def read_run(path: str | os.PathLike[str]) -> Run:
    """Read a run file, or spanchor 0.x results in any of their shapes (see the module doc).

    Dispatches on content, never on the file extension: a first line with ``kind`` is our
    format (the ``kind``/``schema_version`` pair picks the reader), a first line holding a
    ``{query_id, question, retrieved}`` record is 0.x JSONL, anything else is read as one JSON
    document (0.x ``{query_id: [results]}`` or a list).
    """
    file = Path(path)
    text = _read_text(file)
    lines = text.split("\n")
    first_index = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first_index is None:
        raise RunError(
            "empty file",
            path=file,
            hint="expected a spanchor run file (JSONL with a header line) or spanchor 0.x results",
        )
    first_line = lines[first_index].strip()
    try:
        first = json.loads(first_line, parse_constant=_keep_constant)
    except (ValueError, RecursionError):
        first = None
        if first_index == len(lines) - 1 and first_line.startswith('{"kind"'):
            # Only a torn header: the writer died before finishing its first line.
            raise RunError(
                "the header line is incomplete (the writer was interrupted)",
                path=file,
                line=first_index + 1,
            ) from None
    if isinstance(first, dict) and "kind" in first:
        del text  # the lines hold it; _read_ours frees them as it goes
        return _read_ours(file, lines, first_index)
    if _looks_like_0x_record(first):
        return _read_0x_jsonl(file, lines)
    if isinstance(first, dict) and any(line.strip() for line in lines[first_index + 1 :]):
        # JSONL, but its first line is neither our header nor a 0.x results record.
        gold = "anchors" in first
        raise RunError(
            "this looks like a gold set, not retrieval results"
            if gold
            else "the first line is neither a run header (no 'kind') nor a spanchor 0.x "
            "results record (no 'retrieved')",
            path=file,
            line=first_index + 1,
        )
    return _read_0x_document(file, text)


_LineParser = Callable[[str, Path, int, bool, list[str]], RetrievalRecord | None]


def _decoded_lines(
    handle: BinaryIO, path: Path, offset: int, number: int
) -> Iterator[tuple[int, str, bool, int]]:
    """``(line number, text, last, end)`` per line from byte ``offset`` (line ``number``) on.

    Lines are split on ``\\n`` only, as :func:`read_run` splits them; ``last`` is true for a
    final line with no newline after it (the only line that may be a torn write); ``end`` is
    the byte offset just after the line. A leading byte-order mark is dropped. Invalid UTF-8
    raises the same RunError read_run raises.
    """
    for raw in handle:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _not_utf8(path, offset + exc.start, number) from None
        if offset == 0 and text.startswith("\ufeff"):
            text = text[1:]
        offset += len(raw)
        yield number, text, not raw.endswith(b"\n"), offset
        number += 1


class RunStream:
    """A run file read one record at a time, so that a large run is never held whole.

    Constructing one reads only up to the header line, so :attr:`header` (and
    :attr:`source_format`) are there at once, and a file that is missing, not UTF-8 up to its
    header or has a bad header raises :class:`~spanchor_core.errors.RunError` right away,
    exactly as :func:`read_run` does. Iterating yields the records in file order, each line
    validated and converted as :func:`read_run` does it (same errors with ``path:line``, same
    torn-last-line rule); the records read equal ``read_run(path).records``. Errors in later
    lines are raised when iteration reaches them, so on a file with several problems the first
    one in file order is reported (read_run reports a UTF-8 error anywhere before any other).

    Our format and spanchor 0.x JSONL are streamed. spanchor 0.x single-document files (a
    JSON object or list) cannot be read in pieces: they are read whole with :func:`read_run`
    when the stream is opened.

    :attr:`warnings` (torn last line) and :attr:`records_read` are complete once the records
    have been iterated. Iterating again reads the file again and starts both afresh.
    """

    __slots__ = (
        "_parse",
        "_run",
        "_start",
        "_start_line",
        "header",
        "path",
        "records_read",
        "source_format",
        "warnings",
    )

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.warnings: list[str] = []
        self.records_read = 0
        self._run: Run | None = None
        self._start = 0  # byte offset where the record lines begin
        self._start_line = 1
        self._parse: _LineParser = _record_ours
        self.header, self.source_format = self._open()

    def _open(self) -> tuple[RunHeader, str]:
        """Read up to the first non-blank line and decide how the file is to be read."""
        try:
            with self.path.open("rb") as handle:
                start = 0
                for number, text, last, end in _decoded_lines(handle, self.path, 0, 1):
                    first_line = text.strip()
                    if first_line:
                        return self._dispatch(text, first_line, number, last, start, end)
                    start = end
        except OSError as exc:
            raise _unreadable(exc, self.path) from None
        return self._whole()  # empty: read_run says so

    def _dispatch(
        self, text: str, first_line: str, number: int, last: bool, start: int, end: int
    ) -> tuple[RunHeader, str]:
        # The same decisions as read_run, on the same first non-blank line.
        try:
            first = json.loads(first_line, parse_constant=_keep_constant)
        except (ValueError, RecursionError):
            if last and first_line.startswith('{"kind"'):
                raise RunError(
                    "the header line is incomplete (the writer was interrupted)",
                    path=self.path,
                    line=number,
                ) from None
            return self._whole()
        if isinstance(first, dict) and "kind" in first:
            header = _header_ours(text, self.path, number)
            self._start, self._start_line = end, number + 1
            return header, _FORMAT_OURS
        if _looks_like_0x_record(first):
            self._parse = _record_0x_line  # from the first line on: it is a record
            self._start, self._start_line = start, number
            return _header_0x(self.path, "JSONL"), _FORMAT_0X_JSONL
        return self._whole()  # a 0.x JSON document, or an error read_run words

    def _whole(self) -> tuple[RunHeader, str]:
        run = read_run(self.path)
        self._run = run
        return run.header, run.source_format

    def __iter__(self) -> Iterator[RetrievalRecord]:
        return self._records()

    def _records(self) -> Iterator[RetrievalRecord]:
        self.records_read = 0
        if self._run is not None:
            self.warnings = list(self._run.warnings)
            for record in self._run.records:
                self.records_read += 1
                yield record
            return
        self.warnings = []
        parse, path = self._parse, self.path
        try:
            handle = path.open("rb")
        except OSError as exc:
            raise _unreadable(exc, path) from None
        with handle:
            handle.seek(self._start)
            lines = _decoded_lines(handle, path, self._start, self._start_line)
            for number, text, last, _ in lines:
                stripped = text.strip()
                if not stripped:
                    continue
                parsed = parse(stripped, path, number, last, self.warnings)
                if parsed is not None:
                    self.records_read += 1
                    yield parsed

    def __repr__(self) -> str:
        return f"RunStream({str(self.path)!r}, {self.source_format})"


def iter_run(path: str | os.PathLike[str]) -> RunStream:
    """Open a run file for reading record by record: ``for record in iter_run(path): ...``.

    The stream's ``header`` is read at once; see :class:`RunStream`. Use it instead of
    :func:`read_run` when the run may be large and each record can be handled and dropped.
    """
    return RunStream(path)


# --------------------------------------------------------------------------------------------
# Writing and resolving
# --------------------------------------------------------------------------------------------


def _header_line(header: RunHeader) -> bytes:
    return _encode_line(header.model_dump(mode="json"))


def write_run(run: Run, path: str | os.PathLike[str]) -> None:
    """Write ``run`` as a run file, atomically (a temporary file, then a rename).

    The bytes depend only on ``run``: the header (``created_at`` included) is written as it is,
    records in their order. Runs read from spanchor 0.x files are written in our format.
    """
    file = Path(path)
    chunks = [_header_line(run.header)]
    for number, record in enumerate(run.records, start=1):
        try:
            payload = _record_payload(
                record.query_id,
                record.query,
                record.results,
                record.latency_ms,
                record.error,
                _record_provenance(record),
            )
        except (TypeError, ValueError) as exc:
            raise RunError(f"record {number} cannot be written: {exc}", path=file) from None
        chunks.append(_encode_line(payload))
    atomic_write(file, b"".join(chunks), error=RunError, what="run file")


class _HasQueryId(Protocol):
    @property
    def query_id(self) -> str: ...


class GoldLookup(Protocol):
    """What resolving query ids needs from a gold set (``spanchor_core.gold.GoldSet`` fits)."""

    def by_question(self, text: str, /) -> _HasQueryId | None: ...


def _lookup(gold: GoldLookup, query: str) -> str | None:
    key = canonicalize(query).strip()
    if not key:
        return None
    found = gold.by_question(key)
    return None if found is None else found.query_id


def _resolve_record(record: RetrievalRecord, gold: GoldLookup) -> tuple[RetrievalRecord, bool]:
    """One record of :func:`resolve_query_ids`: the record with its id, and whether it has one.

    A record that already carries an id is returned as it is (``True``); one without gets the
    id of the gold query with its text, or stays as it is (``False``) when none matches.
    Shared with the streaming evaluation, which resolves records as it reads them.
    """
    if record.query_id:
        return record, True
    query_id = _lookup(gold, record.query)
    if query_id is None:
        return record, False
    return replace(record, query_id=query_id), True


def resolve_query_ids(run: Run, gold: GoldLookup) -> tuple[Run, list[RetrievalRecord]]:
    """Give records without a query id the id of the gold query with exactly their text.

    Matching is exact after canonicalisation and stripping. Records that already carry an id
    keep it, even if the gold set has no such query (evaluation reports those). Returns a new
    run (the input is not changed) and the records that are still without an id.
    """
    records: list[RetrievalRecord] = []
    unmatched: list[RetrievalRecord] = []
    for record in run.records:
        resolved_record, matched = _resolve_record(record, gold)
        records.append(resolved_record)
        if not matched:
            unmatched.append(record)
    resolved = Run(
        header=run.header,
        records=records,
        path=run.path,
        warnings=list(run.warnings),
        source_format=run.source_format,
    )
    return resolved, unmatched


# --------------------------------------------------------------------------------------------
# Recording
# --------------------------------------------------------------------------------------------

_OPEN_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_BINARY", 0)


def _existing_header(path: Path) -> RunHeader | None:
    """Check the file we are about to append to; drop a torn tail so appends stay line-aligned."""
    try:
        with path.open("r+b") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size == 0:
                return None
            handle.seek(max(0, size - 1))
            if handle.read(1) != b"\n":
                # A torn last line (a crash mid-write): appending would glue our first line onto
                # it and turn a skippable tail into a corrupt middle line. Cut it off.
                keep = _last_newline_end(handle, size)
                handle.truncate(keep)
                _log.warning("%s: dropped an incomplete last line before appending", path)
                if keep == 0:
                    return None
            handle.seek(0)
            first = handle.readline()
    except FileNotFoundError:
        return None
    try:
        obj = json.loads(first.decode("utf-8-sig"), parse_constant=_reject_constant)
        return _header_from_line(obj, path, 1)
    except (ValueError, RunError) as exc:
        raise RecorderError(f"{path}: cannot append, not a spanchor run file: {exc}") from None


def _last_newline_end(handle: BinaryIO, size: int) -> int:
    block = 65536
    end = size
    while end > 0:
        start = max(0, end - block)
        handle.seek(start)
        chunk = handle.read(end - start)
        found = chunk.rfind(b"\n")
        if found >= 0:
            return start + found + 1
        end = start
    return 0


class RunRecorder:
    """Append retrievals to a run file as they happen; shared by every integration.

    * One header line when the file is created (mode ``"w"``, or ``"a"`` on a missing or empty
      file); appending to an existing run file checks its header and writes none.
    * One ``write`` system call per record on an ``O_APPEND`` descriptor, no user-space buffer:
      a crash (even SIGKILL) loses at most the line being written, and :func:`read_run` skips
      such a torn line. (Durability against power loss would need fsync; we do not pay for it.)
    * Thread-safe (a lock around the write only; encoding happens outside it) and usable from
      async code: :meth:`arecord` never awaits while holding the lock.
    * Never raises into the caller's retrieval: failures are counted in :attr:`failures`, the
      last one kept in :attr:`last_error`, the first one logged. ``strict=True`` raises
      :class:`~spanchor_core.errors.RecorderError` instead. Opening the file happens at
      construction, before any retrieval, and a failure there always raises RecorderError.
    * ``gold`` (optional) fills in query ids from the query text at record time; a query that
      matches nothing is written with a null id and counted in :attr:`unmatched`.
    * ``mode="a"`` on an existing run file keeps that file's header (:attr:`header` is the one
      read back; the provenance arguments are then unused) and first cuts off a torn last line,
      so the appended lines stay readable. Appending to anything else raises RecorderError.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        retriever: str = "",
        parameters: Mapping[str, Any] | None = None,
        corpus_fingerprint: str | None = None,
        gold_sha256: str | None = None,
        tags: Mapping[str, Any] | None = None,
        gold: GoldLookup | None = None,
        strict: bool = False,
        mode: Literal["w", "a"] = "w",
    ) -> None:
        if mode not in ("w", "a"):
            raise ValueError(f"mode must be 'w' or 'a', got {mode!r}")
        self.path = Path(path)
        self.strict = strict
        self._gold = gold
        self._lock = threading.Lock()
        self._records = 0
        self._failures = 0
        self._unmatched = 0
        self._last_error: BaseException | None = None
        if gold_sha256 is None and gold is not None:
            candidate = getattr(gold, "sha256", None)
            gold_sha256 = candidate if isinstance(candidate, str) else None
        try:
            header = RunHeader(
                retriever=RetrieverInfo(description=retriever, parameters=dict(parameters or {})),
                corpus_fingerprint=corpus_fingerprint,
                gold_sha256=gold_sha256,
                tags=dict(tags or {}),
            )
        except ValidationError as exc:
            raise RecorderError(f"bad run header: {describe_validation_error(exc)}") from None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            existing = _existing_header(self.path) if mode == "a" else None
            flags = _OPEN_FLAGS | (os.O_TRUNC if mode == "w" else 0)
            self._fd = os.open(self.path, flags, 0o666)
        except OSError as exc:
            raise RecorderError(
                f"{self.path}: cannot open run file: {exc.strerror or exc}"
            ) from exc
        self._finalizer = weakref.finalize(self, _close_quietly, self._fd)
        if existing is not None:
            self.header = existing
            return
        self.header = header
        try:
            self._write(_header_line(header))
        except OSError as exc:
            self.close()
            raise RecorderError(f"{self.path}: cannot write header: {exc.strerror or exc}") from exc

    # -- state --------------------------------------------------------------------------------

    @property
    def records(self) -> int:
        """Records written so far."""
        return self._records

    @property
    def failures(self) -> int:
        """Records that could not be written (each one is lost, the retrieval is not)."""
        return self._failures

    @property
    def unmatched(self) -> int:
        """Records written without a query id because ``gold`` had no such question."""
        return self._unmatched

    @property
    def last_error(self) -> BaseException | None:
        return self._last_error

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return (
            f"RunRecorder({str(self.path)!r}, {state}, records={self._records}, "
            f"failures={self._failures})"
        )

    # -- recording ----------------------------------------------------------------------------

    def record(
        self,
        query: str,
        results: Iterable[RetrievedResult | Mapping[str, Any]],
        *,
        query_id: str | None = None,
        latency_ms: float | None = None,
        error: str | BaseException | None = None,
        source: str | None = None,
        stage: Stage | None = None,
        trace_id: str | None = None,
        run_id: str | None = None,
        parent_run_id: str | None = None,
        sequence: int | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Append one retrieval. Results are written in the order given.

        ``results`` may mix :class:`RetrievedResult` and plain dicts (see
        :func:`result_from_mapping`; a dict without a rank gets its position). The provenance
        keywords are those of :class:`RetrievalRecord`; absent ones are not written.
        """
        try:
            matched = True
            if query_id is None and self._gold is not None and isinstance(query, str):
                query_id = _lookup(self._gold, query)
                matched = query_id is not None
            provenance = _provenance_payload(
                source, stage, trace_id, run_id, parent_run_id, sequence, metadata
            )
            line = _encode_line(
                _record_payload(query_id, query, results, latency_ms, error, provenance)
            )
            with self._lock:
                if self._fd < 0:
                    raise RecorderError(f"{self.path}: recorder is closed")
                self._write(line)
                self._records += 1
                if not matched:
                    self._unmatched += 1
        except Exception as exc:
            self._failed(exc)

    async def arecord(
        self,
        query: str,
        results: Iterable[RetrievedResult | Mapping[str, Any]],
        *,
        query_id: str | None = None,
        latency_ms: float | None = None,
        error: str | BaseException | None = None,
        source: str | None = None,
        stage: Stage | None = None,
        trace_id: str | None = None,
        run_id: str | None = None,
        parent_run_id: str | None = None,
        sequence: int | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """:meth:`record` for async code: one small write, cheaper inline than in a thread."""
        self.record(
            query,
            results,
            query_id=query_id,
            latency_ms=latency_ms,
            error=error,
            source=source,
            stage=stage,
            trace_id=trace_id,
            run_id=run_id,
            parent_run_id=parent_run_id,
            sequence=sequence,
            metadata=metadata,
        )

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        written = 0
        try:
            while written < len(view):
                written += os.write(self._fd, view[written:])
        except OSError:
            if written:
                # Half a line would corrupt the next one: cut it off (we hold the lock).
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, os.fstat(self._fd).st_size - written)
            raise

    def _failed(self, exc: Exception) -> None:
        with self._lock:
            self._failures += 1
            self._last_error = exc
            first = self._failures == 1
        if first:
            _log.warning(
                "spanchor: could not record a retrieval to %s (%s: %s); the retrieval itself "
                "is unaffected, further failures are counted in recorder.failures",
                self.path,
                type(exc).__name__,
                exc,
            )
        else:
            _log.debug("spanchor: recording failed again: %r", exc)
        if self.strict:
            if isinstance(exc, RecorderError):
                raise exc
            raise RecorderError(f"{self.path}: could not record a retrieval: {exc}") from exc

    # -- lifetime -----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the file. Idempotent; records after this count as failures."""
        with self._lock:
            if self._fd >= 0:
                self._fd = -1
                self._finalizer()

    def __enter__(self) -> RunRecorder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
