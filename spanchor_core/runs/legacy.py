"""spanchor 0.x results, read as they are, in each shape 0.x users have.

A JSON object ``{query_id: [result, ...]}`` (what the 0.x CLI read), JSONL lines ``{query_id,
question, retrieved: [...]}`` (its example data), and JSON lists of such records or of bare
result dicts. Result dicts may use 0.x's field aliases (see
:func:`~spanchor_core.runs.result_from_mapping`). 0.x files are read leniently where 0.x was:
``NaN``/``Infinity`` scores (and numbers beyond a float) become ``None``; duplicate keys are
refused as in every spanchor file. The header is synthesised from the file's modification time,
so two reads of one file are identical.
"""

from __future__ import annotations

import codecs
import datetime as dt
import json
import json.decoder
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from spanchor_core._io import (
    BOM,
    LENIENT_DECODER,
    TORN,
    JsonlLine,
    JsonRejected,
    loads_strict,
    open_for_reading,
    read_text,
)
from spanchor_core.errors import RunError
from spanchor_core.runs.file_models import RUN_KIND, RetrieverInfo, RunHeader
from spanchor_core.runs.lines import OTHER_KINDS
from spanchor_core.runs.model import (
    FORMAT_0X_JSON,
    FORMAT_0X_LIST,
    RetrievalRecord,
    RetrievedResult,
    Run,
)
from spanchor_core.runs.results import (
    lenient_float,
    optional_str,
    pick,
    result_from_mapping,
    sorted_by_rank,
)

__all__ = ["header_0x", "looks_like_0x_record", "read_0x_document", "read_0x_record_line"]

_INVALID: Final = "invalid JSON"

# 0.x record fields: query id, query text, the results list.
_ID_KEYS = ("query_id", "qid", "id")
_QUESTION_KEYS = ("question", "query", "query_text")
_RESULTS_KEYS = ("retrieved", "results")


def looks_like_0x_record(obj: Any) -> bool:
    """Whether ``obj`` is a 0.x JSONL record: a results list and a query id or text."""
    if not isinstance(obj, dict):
        return False
    _, results = pick(obj, _RESULTS_KEYS)
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
    return sorted_by_rank(results)


def _record_0x(obj: Any, path: Path, line: int | None, where: str) -> RetrievalRecord:
    if not isinstance(obj, dict):
        raise RunError(
            f"{where}: expected a JSON object, got {type(obj).__name__}", path=path, line=line
        )
    _, query_id = pick(obj, _ID_KEYS)
    if query_id is not None and not isinstance(query_id, str):
        if type(query_id) is not int:
            raise RunError(f"{where}: query_id must be a string", path=path, line=line)
        query_id = str(query_id)
    _, question = pick(obj, _QUESTION_KEYS)
    if question is not None and not isinstance(question, str):
        raise RunError(f"{where}: question must be a string", path=path, line=line)
    results_key, items = pick(obj, _RESULTS_KEYS)
    try:
        latency = lenient_float(obj.get("latency_ms"), "latency_ms")
        error = optional_str(obj.get("error"), "error")
    except TypeError as exc:
        raise RunError(f"{where}: {exc}", path=path, line=line) from None
    if latency is not None and latency < 0:
        raise RunError(f"{where}: latency_ms {latency} is negative", path=path, line=line)
    return RetrievalRecord(
        query_id=query_id,
        query=question or "",
        results=_results_0x([] if results_key is None else items, where, path, line),
        latency_ms=latency,
        error=error,
        line=line,
    )


def header_0x(path: Path, shape: str) -> RunHeader:
    """The header a 0.x file lacks. Its modification time is the best "created at" it offers,
    and keeps two reads of the same file identical."""
    mtime = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC)
    return RunHeader(
        spanchor_version="0.x",
        created_at=mtime.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        retriever=RetrieverInfo(description=f"imported from spanchor 0.x results ({shape})"),
    )


def read_0x_record_line(line: JsonlLine, path: Path, warnings: list[str]) -> RetrievalRecord | None:
    """The record on one non-blank line of 0.x JSONL, or ``None`` for a torn last line."""
    obj = loads_strict(
        line.text,
        path=path,
        line=line.number,
        error=RunError,
        invalid=_INVALID,
        allow_nan=True,
        torn=line.last,
    )
    if obj is TORN:
        warnings.append(f"{path}:{line.number}: incomplete last line skipped")
        return None
    return _record_0x(obj, path, line.number, "record")


_UNREAD: Any = object()


def read_0x_document(path: Path, data: Any = _UNREAD) -> Run:
    """A 0.x results file that is one JSON document (an object or a list), read whole.

    ``data`` is the document when the caller has parsed it already (a file on one line,
    parsed with the same leniency), so that a large file is parsed once. Each query's parsed
    results are dropped as soon as its record is built, so the parsed document and the run
    are not both held whole.
    """
    if data is _UNREAD:
        streamed = _stream_0x_object(path)
        if streamed is not None:
            return streamed
        text = read_text(path, error=RunError, what="run file", hint="run files are UTF-8")
        data = loads_strict(text, path=path, error=RunError, invalid=_INVALID, allow_nan=True)
        del text
    if isinstance(data, dict):
        if "kind" in data:
            raise RunError(
                f"unknown kind {data['kind']!r}; expected {RUN_KIND!r}",
                path=path,
                line=1,
                hint=OTHER_KINDS.get(str(data["kind"]), "a run file is JSONL with a header line"),
            )
        if "anchors" in data or "per_query_metrics" in data:
            what = "a gold query" if "anchors" in data else "an evaluation"
            raise RunError(f"this looks like {what}, not retrieval results", path=path)
        records = []
        for query_id in list(data):
            items = data.pop(query_id)  # the parsed results go once their record is built
            where = f"query {query_id!r}"
            records.append(RetrievalRecord(query_id, "", _results_0x(items, where, path, None)))
            del items
        return Run(header_0x(path, "JSON object"), records, path, [], FORMAT_0X_JSON)
    if isinstance(data, list):
        if all(looks_like_0x_record(item) for item in data) and data:
            records = []
            for i in range(len(data)):
                item, data[i] = data[i], None  # dropped once its record is built
                records.append(_record_0x(item, path, None, f"record {i + 1}"))
            del item
            return Run(header_0x(path, "JSON list"), records, path, [], FORMAT_0X_LIST)
        results = _results_0x(data, "list", path, None)
        warning = (
            f"{path}: a bare list of results has no query; it was read as one retrieval "
            "without query id or text"
        )
        record = RetrievalRecord(None, "", results)
        return Run(header_0x(path, "JSON list"), [record], path, [warning], FORMAT_0X_LIST)
    raise RunError(
        f"expected a run file (JSONL) or spanchor 0.x results (JSON object or list), "
        f"got a JSON {type(data).__name__}",
        path=path,
    )


_CHUNK: Final = 1 << 20
"""Bytes read at a time by :func:`_stream_0x_object`."""
_NOT_QUERIES: Final = frozenset({"kind", "anchors", "per_query_metrics"})
_SPACE: Final = " \t\n\r"


class _Unusual(Exception):
    """Something :func:`_stream_0x_object` leaves to the whole-document reader to word."""


def _members(path: Path) -> Iterator[tuple[str, Any]]:
    """The members of a JSON object file, ``(key, parsed value)`` one at a time, the file read
    a megabyte at a time. Parsed as :func:`loads_strict` parses 0.x files (``allow_nan``,
    duplicate keys refused, nested ones included); raises :class:`_Unusual` at anything it
    would refuse, or that is not an object, so that the caller reads the file whole instead
    and the error is worded exactly as before."""
    decode = codecs.getincrementaldecoder("utf-8")().decode
    # the decoder's own scanner and string reader (set by json, not in its type stubs)
    scan: Callable[[str, int], tuple[Any, int]] = getattr(LENIENT_DECODER, "scan_once")  # noqa: B009
    scanstring: Callable[[str, int, bool], tuple[str, int]] = getattr(json.decoder, "scanstring")  # noqa: B009
    with open_for_reading(path, error=RunError, what="run file") as handle:
        raw = handle.read(_CHUNK)
        buffer = decode(raw[3:] if raw.startswith(BOM) else raw)
        done = not raw
        at = len(buffer) - len(buffer.lstrip(_SPACE))
        if buffer[at : at + 1] != "{":
            raise _Unusual
        at += 1
        seen: set[str] = set()
        first = True
        while True:
            # a member needs at least its key, colon and value in the buffer: top it up first
            while not done and len(buffer) - at < _CHUNK:
                raw = handle.read(_CHUNK)
                done = not raw
                buffer = buffer[at:] + decode(raw, final=done)
                at = 0
            while at < len(buffer) and buffer[at] in _SPACE:
                at += 1
            if buffer.startswith("}", at):
                if buffer[at + 1 :].strip(_SPACE) or not done:
                    raise _Unusual  # something after the object
                return
            if not first:
                if not buffer.startswith(",", at):
                    raise _Unusual
                at += 1
                while at < len(buffer) and buffer[at] in _SPACE:
                    at += 1
            if not buffer.startswith('"', at):
                raise _Unusual
            try:
                key, at = scanstring(buffer, at + 1, True)
                while at < len(buffer) and buffer[at] in _SPACE:
                    at += 1
                if not buffer.startswith(":", at):
                    raise _Unusual
                at += 1
                while at < len(buffer) and buffer[at] in _SPACE:
                    at += 1
                value, at = scan(buffer, at)
            except (ValueError, StopIteration, RecursionError, JsonRejected) as err:
                raise _Unusual from err  # includes a member longer than the buffer
            if key in seen or key in _NOT_QUERIES:
                raise _Unusual
            seen.add(key)
            first = False
            yield key, value


def _stream_0x_object(path: Path) -> Run | None:
    """A 0.x ``{query_id: [results]}`` file read member by member, so that the parsed
    document (several times the file's size) is never held whole, nor the file's text:
    the run that :func:`read_0x_document` builds from the whole document, or ``None`` for
    anything else or anything unusual (read whole then, errors worded there)."""
    records = []
    try:
        for query_id, items in _members(path):
            where = f"query {query_id!r}"
            records.append(RetrievalRecord(query_id, "", _results_0x(items, where, path, None)))
    except (_Unusual, UnicodeDecodeError):
        return None
    except RunError:
        return None  # a bad result: worded by the whole-document reader, as before
    return Run(header_0x(path, "JSON object"), records, path, [], FORMAT_0X_JSON)
