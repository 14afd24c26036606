"""Reading the lines of our own run format: the header line and each record line.

The header's ``kind`` and ``schema_version`` are checked before anything else, so a gold set,
an evaluation or a newer run file passed as a run is named as such. A record line is read by a
plain fast path when it has exactly the shapes our writers produce, and validated with
:class:`~spanchor_core.runs.file_models.RetrievalRecordModel` otherwise, so a bad line gets the
same ``path:line`` error either way. A torn last line (not JSON, no newline after it: the writer
died mid-line) is skipped with one warning.
"""

from __future__ import annotations

import operator
import sys
from itertools import islice
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from spanchor_core._io import TORN, JsonlLine, describe_validation_error, loads_strict
from spanchor_core.errors import RunError
from spanchor_core.runs.file_models import (
    RUN_KIND,
    RUN_SCHEMA_VERSION,
    RetrievalRecordModel,
    RetrievedResultModel,
    RunHeader,
)
from spanchor_core.runs.model import STAGES, RecordFields, RetrievalRecord, RetrievedResult
from spanchor_core.runs.results import sorted_by_rank

__all__ = [
    "OTHER_KINDS",
    "fields_fast",
    "header_from_object",
    "read_header_line",
    "read_record_line",
]

# What other spanchor files look like, to say so when one is passed as a run.
OTHER_KINDS: Final = {
    "spanchor.gold": "this is a gold set, not a run",
    "spanchor.evaluation": "this is an evaluation, not a run; runs are what `evaluate` reads",
}
_INVALID: Final = "invalid JSON"


def header_from_object(obj: Any, path: Path, line: int) -> RunHeader:
    if not isinstance(obj, dict):
        raise RunError(f"expected a JSON object, got {type(obj).__name__}", path=path, line=line)
    kind = obj.get("kind")
    if kind != RUN_KIND:
        raise RunError(
            f"unknown kind {kind!r}; expected {RUN_KIND!r}",
            path=path,
            line=line,
            hint=OTHER_KINDS.get(str(kind), "is this a spanchor run file?"),
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
        results=sorted_by_rank(results),
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
_FLOAT_MAX: Final = sys.float_info.max


def _too_big(number: Any) -> bool:
    """An integer no float can hold (the model then words the error)."""
    return type(number) is int and not -_FLOAT_MAX <= number <= _FLOAT_MAX


_ABSENT: Any = object()


_Checked = tuple[
    Any, str, Any, Any, Any, Any, Any, Any, Any, Any, dict[str, Any], list[tuple[Any, ...]]
]
"""A record line's values once checked: query_id, query, latency_ms, error, source, stage,
trace_id, run_id, parent_run_id, sequence, metadata, and each result as ``(rank, text, score,
document_id, start, end, metadata)`` in file order, its rank filled in from its position."""

_Record = tuple[Any, str, Any, Any, Any, Any, Any, Any, Any, Any, dict[str, Any], list[Any]]
""":data:`_Checked` with the results as they were parsed (not yet checked)."""


def _checked(obj: Any) -> _Checked | None:
    """A well-formed line's values (:data:`_Checked`), without pydantic; else ``None``.

    Accepts exactly the shapes :class:`RetrievalRecordModel` accepts that our writers produce
    (plain JSON types, ints where floats go). Anything else returns ``None`` and the caller
    validates the line with the model, so a bad line gets the same ``path:line`` error either
    way. Shared by :func:`_record_fast` and :func:`fields_fast`, so both accept the same lines.
    """
    record = _record_checked(obj)
    if record is None:
        return None
    results = _results_checked(record[11])
    if results is None:
        return None
    return (*record[:11], results)


def _record_checked(obj: Any) -> _Record | None:
    """The record-level half of :func:`_checked`: every value but the results checked."""
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
        or (latency is not None and (latency < 0 or _too_big(latency)))
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
    return (
        query_id,
        query,
        latency,
        error,
        source,
        stage,
        trace_id,
        run_id,
        parent_run_id,
        sequence,
        record_metadata,
        items,
    )


def _results_checked(items: list[Any]) -> list[tuple[Any, ...]] | None:
    """The results half of :func:`_checked`: each result's values, or ``None``."""
    results: list[tuple[Any, ...]] = []
    append = results.append
    str_or_none, int_or_none, number_or_none = _STR_OR_NONE, _INT_OR_NONE, _NUMBER_OR_NONE
    for position, item in enumerate(items, start=1):
        if type(item) is not dict or not _RESULT_KEYS.issuperset(item):
            return None
        get = item.get
        rank, text, score = get("rank"), get("text"), get("score")
        document_id, start, end = get("document_id"), get("start"), get("end")
        metadata = get("metadata", _ABSENT)
        if (
            type(rank) not in int_or_none
            or type(text) not in str_or_none
            or type(score) not in number_or_none
            or _too_big(score)
            or type(document_id) not in str_or_none
            or type(start) not in int_or_none
            or type(end) not in int_or_none
        ):
            return None
        if metadata is _ABSENT:
            metadata = {}
        elif type(metadata) is not dict:
            return None
        append((position if rank is None else rank, text, score, document_id, start, end, metadata))
    return results


_NONE_TYPE: Final = type(None)
_SEVEN: Final = operator.itemgetter(
    "rank", "text", "score", "document_id", "start", "end", "metadata"
)
_DICT: Final = frozenset({dict})
_INT: Final = frozenset({int})
_INT_OR_NONE_T: Final = frozenset({int, _NONE_TYPE})
_STR_OR_NONE_T: Final = frozenset({str, _NONE_TYPE})
_FLOAT_OR_NONE: Final = frozenset({float, _NONE_TYPE})
_SEVEN_KEYS: Final = frozenset({7})


def _plain_fields(items: list[Any]) -> list[tuple[Any, ...]] | None:
    """:func:`fields_fast`'s results when every result holds all seven keys and plain values,
    in rank order: an int rank, a float score (so never too big), text and document id
    ``str``/``None``, offsets ``int``/``None``, a metadata dict — what our writers write,
    which :func:`_results_checked` accepts as it is. Checked column by column in C loops
    (a result is read once, into a tuple); any other list returns ``None`` and is checked
    one result at a time."""
    if set(map(type, items)) != _DICT or set(map(len, items)) != _SEVEN_KEYS:
        return None
    try:  # seven keys, all of them known: exactly the result keys
        ranks, texts, scores, documents, starts, ends, metadata = zip(
            *map(_SEVEN, items), strict=True
        )
    except KeyError:
        return None
    if not (
        _INT.issuperset(map(type, ranks))
        and _STR_OR_NONE_T.issuperset(map(type, texts))
        and _FLOAT_OR_NONE.issuperset(map(type, scores))
        and _STR_OR_NONE_T.issuperset(map(type, documents))
        and _INT_OR_NONE_T.issuperset(map(type, starts))
        and _INT_OR_NONE_T.issuperset(map(type, ends))
        and _DICT.issuperset(map(type, metadata))
        and all(map(operator.le, ranks, islice(ranks, 1, None)))  # else sorted by the other way
    ):
        return None
    return list(zip(texts, documents, starts, ends, strict=True))


def _record_fast(obj: Any, line: int) -> RetrievalRecord | None:
    """The record a well-formed line of our own format holds (see :func:`_checked`), or
    ``None``. At 100,000 results this halves reading time."""
    checked = _checked(obj)
    if checked is None:
        return None
    (
        query_id,
        query,
        latency,
        error,
        source,
        stage,
        trace_id,
        run_id,
        parent_run_id,
        sequence,
        record_metadata,
        items,
    ) = checked
    results = [
        RetrievedResult(
            rank, text, None if score is None else float(score), document_id, start, end, metadata
        )
        for rank, text, score, document_id, start, end, metadata in items
    ]
    return RetrievalRecord(
        query_id=query_id,
        query=query,
        results=sorted_by_rank(results),
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


_BY_RANK: Final = operator.itemgetter(0)


def fields_fast(obj: Any, line: int) -> RecordFields | None:
    """:func:`_record_fast` as scoring reads it (:class:`RecordFields`): the same lines
    accepted, the same values, the results in the same (stable) rank order, without building
    a :class:`RetrievedResult` per result."""
    checked = _record_checked(obj)
    if checked is None:
        return None
    items = checked[11]
    results = _plain_fields(items) if items else []
    if results is None:
        results = _ranked_fields(items)
        if results is None:
            return None
    return RecordFields(
        checked[0],
        checked[1],
        checked[3],
        checked[4],
        checked[5],
        checked[6],
        checked[9],
        line,
        results,
    )


def _ranked_fields(items: list[Any]) -> list[tuple[Any, ...]] | None:
    """``(text, document_id, start, end)`` of each result in (stable) rank order, checked one
    result at a time (:func:`_results_checked`); ``None`` if one is not well formed."""
    checked = _results_checked(items)
    if checked is None:
        return None
    previous = -_FLOAT_MAX
    for item in checked:  # almost always in rank order already: then no sort
        if item[0] < previous:
            checked = sorted(checked, key=_BY_RANK)
            break
        previous = item[0]
    return [(text, document_id, start, end) for _, text, _, document_id, start, end, _ in checked]


def read_header_line(text: str, path: Path, number: int) -> RunHeader:
    """The header on line ``number`` of our format."""
    obj = loads_strict(text, path=path, line=number, error=RunError, invalid=_INVALID)
    return header_from_object(obj, path, number)


_RECORD_START = '{"query_id":'
"""How every record line our writers produce begins (``record_line``'s first key)."""


def _after_torn_record(text: str, path: Path, number: int, warnings: list[str]) -> Any:
    """The record glued after a torn one on line ``number``, or None.

    Several processes append to one run file; one that dies inside its ``write`` leaves a torn
    line with no newline, and the next process's whole line follows on the same line. Only
    the torn part is lost: a line that is not JSON but ends in a complete record line of ours
    (it starts at a ``{"query_id":`` that no JSON string can hold unescaped) is read as that
    record, with a warning. Anything else stays the error it was.
    """
    whole_start = text.startswith(_RECORD_START)
    at = text.find(_RECORD_START, 1)
    while at > 0:
        if not whole_start and not _RECORD_START.startswith(text[:at]):
            return None  # the torn part must be the start of one of our record lines
        try:
            obj = loads_strict(text[at:], path=path, line=number, error=RunError)
        except RunError:
            obj = None
        if isinstance(obj, dict) and "kind" not in obj:
            warnings.append(
                f"{path}:{number}: a torn record skipped ({at} characters, the start of a line "
                "whose writer was interrupted while others went on); the record after it on "
                "the same line was read"
            )
            return obj
        at = text.find(_RECORD_START, at + 1)
    return None


def read_record_line(line: JsonlLine, path: Path, warnings: list[str]) -> RetrievalRecord | None:
    """The record on one non-blank line of our format, or ``None`` for a torn last line.

    Shared by :func:`~spanchor_core.runs.read_run` and :class:`~spanchor_core.runs.RunStream`.
    """
    number, text = line.number, line.text
    try:
        obj = loads_strict(
            text, path=path, line=number, error=RunError, invalid=_INVALID, torn=line.last
        )
    except RunError:
        obj = _after_torn_record(text, path, number, warnings)
        if obj is None:
            raise
    if obj is TORN:
        warnings.append(
            f"{path}:{number}: incomplete last line skipped ({len(text)} characters; "
            "the writer was interrupted mid-line)"
        )
        return None
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
