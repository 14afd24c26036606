"""spanchor 0.x results, read as they are, in each shape 0.x users have.

A JSON object ``{query_id: [result, ...]}`` (what the 0.x CLI read), JSONL lines ``{query_id,
question, retrieved: [...]}`` (its example data), and JSON lists of such records or of bare
result dicts. Result dicts may use 0.x's field aliases (see
:func:`~spanchor_core.runs.result_from_mapping`). 0.x files are read leniently where 0.x was:
``NaN``/``Infinity`` scores (and numbers beyond a float) become ``None``; duplicate keys are
refused as in every spanchor file. The header is synthesised from the file's modification time,
so two reads of one file are identical.

A ``{query_id: [results]}`` file is parsed member by member (:func:`_members`), never whole:
:func:`read_0x_document` builds the run from the members, and :func:`iter_0x_object` hands
them to a :class:`~spanchor_core.runs.RunStream` one record at a time, so that scoring a large
0.x file holds neither its text, nor its parsed document, nor its run.
"""

from __future__ import annotations

import codecs
import datetime as dt
import itertools
import json
import json.decoder
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, Final, TypeVar

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
    RecordFields,
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

__all__ = [
    "PartRefused",
    "header_0x",
    "iter_0x_fields",
    "iter_0x_object",
    "iter_0x_part",
    "looks_like_0x_record",
    "object_cuts",
    "read_0x_document",
    "read_0x_record_line",
    "streams_as_0x_object",
]

_INVALID: Final = "invalid JSON"
_T = TypeVar("_T")

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
_RECORD_KEYS: Final = frozenset(_ID_KEYS + _QUESTION_KEYS + _RESULTS_KEYS)
"""Query ids a streamed object leaves to the whole reader: on one line, an object with such
keys may read as a 0.x JSONL record (:func:`looks_like_0x_record`), and only the whole
reader tells."""
_SPACE: Final = " \t\n\r"


class _Unusual(Exception):
    """Something :func:`_stream_0x_object` leaves to the whole-document reader to word."""


def _members(
    path: Path,
    refused: frozenset[str] = _NOT_QUERIES,
    read: list[int] | None = None,
    part: tuple[int, int | None] | None = None,
    seen: set[str] | None = None,
) -> Iterator[tuple[str, Any]]:
    """The members of a JSON object file, ``(key, parsed value)`` one at a time, the file read
    a megabyte at a time. Parsed as :func:`loads_strict` parses 0.x files (``allow_nan``,
    duplicate keys refused, nested ones included); raises :class:`_Unusual` at anything it
    would refuse, at a key in ``refused``, or at a file that is not an object, so that the
    caller reads the file whole instead and the error is worded exactly as before.
    ``read[0]``, when given, follows the bytes read from the file so far.

    ``part`` ``(start, stop)`` reads only the members between two cuts of
    :func:`object_cuts`: from the file's start (``start`` 0) or from a cut (the ``,`` of the
    next member follows), up to the cut ``stop`` (``None``: on to the closing ``}`` and the
    end of the file). It ends without error only where the parse of the bytes read ends
    exactly after a member's value at ``stop``, so a cut that is not a member boundary of the
    whole object (inside a string, inside a nested value) raises :class:`_Unusual`. ``seen``
    holds the keys met before (added to as members are read): a key met again is unusual.
    """
    decode = codecs.getincrementaldecoder("utf-8")().decode
    # the decoder's own scanner and string reader (set by json, not in its type stubs)
    scan: Callable[[str, int], tuple[Any, int]] = getattr(LENIENT_DECODER, "scan_once")  # noqa: B009
    scanstring: Callable[[str, int, bool], tuple[str, int]] = getattr(json.decoder, "scanstring")  # noqa: B009
    start, stop = (0, None) if part is None else part
    left = -1 if stop is None else stop - start  # bytes of the part still to read (-1: all)

    def more(handle: BinaryIO) -> bytes:
        nonlocal left
        if left < 0:
            return handle.read(_CHUNK)
        raw = handle.read(min(_CHUNK, left))
        left = left - len(raw) if raw else 0  # a file cut short: ends early, checked below
        return raw

    with open_for_reading(path, error=RunError, what="run file") as handle:
        if start:
            handle.seek(start)
        raw = more(handle)
        done = not raw or left == 0
        buffer = decode(raw[3:] if raw.startswith(BOM) and not start else raw, final=done)
        if read is not None:
            read[0] = start + len(raw)
        at = len(buffer) - len(buffer.lstrip(_SPACE))
        first = not start
        if first:
            if buffer[at : at + 1] != "{":
                raise _Unusual
            at += 1
        if seen is None:
            seen = set()
        count = 0
        value: Any = None
        while True:
            # a member needs at least its key, colon and value in the buffer: top it up first
            while not done and len(buffer) - at < _CHUNK:
                raw = more(handle)
                done = not raw or left == 0
                buffer = buffer[at:] + decode(raw, final=done)
                at = 0
                if read is not None:
                    read[0] += len(raw)
            while at < len(buffer) and buffer[at] in _SPACE:
                at += 1
            if stop is not None and at == len(buffer) and done:
                if count and type(value) is list and handle.tell() == stop:
                    return  # the part's end, right after a member's list: a member boundary
                raise _Unusual
            if buffer.startswith("}", at):
                if buffer[at + 1 :].strip(_SPACE) or not done or stop is not None:
                    raise _Unusual  # something after the object, or a part that closes it
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
            if key in seen or key in refused:
                raise _Unusual
            seen.add(key)
            first = False
            count += 1
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


_STREAMED: Final = _NOT_QUERIES | _RECORD_KEYS


def streams_as_0x_object(path: Path) -> bool:
    """Whether ``path`` starts as a 0.x ``{query_id: [results]}`` object: its first member
    (read from the file's first megabyte) is a query id that is no record field, with a
    results list that reads. Such a file can be read by :func:`iter_0x_object`; an empty
    object, or anything else, is for the whole-document reader to read or to word."""
    try:
        for query_id, items in _members(path, _STREAMED):
            _results_0x(items, f"query {query_id!r}", path, None)
            return True
    except (_Unusual, UnicodeDecodeError, RunError):
        return False
    return False


def iter_0x_object(
    path: Path, whole: Callable[[], Run], read: list[int] | None = None
) -> Iterator[RetrievalRecord]:
    """The records of a 0.x ``{query_id: [results]}`` file, one member parsed at a time:
    those of ``read_0x_document(path)``, in order, holding one query's results at a time.

    At anything the member reader leaves to the whole-document reader (a bad result, a
    repeated key, trailing text, a query id that is a record field), ``whole()`` reads the file
    as it always was, raising its error as worded there, or giving a run whose records not
    yet yielded follow. ``read[0]`` follows the bytes read, for a progress bar.
    """
    return _iter_object(path, whole, read, _record_of, _same)


def iter_0x_fields(
    path: Path, whole: Callable[[], Run], read: list[int] | None = None
) -> Iterator[RecordFields]:
    """:func:`iter_0x_object` as scoring reads it: each record as
    :meth:`RecordFields.of <spanchor_core.runs.model.RecordFields.of>` gives it, without a
    :class:`RetrievedResult` per result where the results hold only plain fields."""
    return _iter_object(path, whole, read, _fields_of, RecordFields.of)


def _iter_object(
    path: Path,
    whole: Callable[[], Run],
    read: list[int] | None,
    build: Callable[[str, Any, Path], _T],
    convert: Callable[[RetrievalRecord], _T],
) -> Iterator[_T]:
    count = 0
    try:
        for query_id, items in _members(path, _STREAMED, read):
            built = build(query_id, items, path)
            del items
            count += 1
            yield built
        return
    except (_Unusual, UnicodeDecodeError, RunError):
        pass  # read whole below: its error, worded as before, or its records
    run = whole()
    if run.source_format != FORMAT_0X_JSON and count:
        # on one line, an object whose query ids include record fields is a 0.x JSONL record
        raise RunError(
            "this file starts as spanchor 0.x results {query_id: [results]}, but its first "
            "line also reads as one 0.x results record (record fields among its keys)",
            path=path,
            line=1,
            hint="write one record per line, or the JSON object with an indent",
        )
    if read is not None:
        read[0] = path.stat().st_size
    for record in run.records[count:]:
        yield convert(record)


class PartRefused(Exception):
    """A part of a 0.x object that a process reading it alone may not answer for (see
    :func:`iter_0x_part`): the process that read the parts before reads it instead."""


_CUT: Final = re.compile(rb'\][ \t\n\r]*,[ \t\n\r]*"')
"""Where a member of a ``{query_id: [results]}`` object may end and the next begin: a ``]``,
then the ``,`` and the ``"`` of the next key (JSON white space between). Also found inside
strings and nested values: a candidate only, proved or refused by reading up to it."""
_CUT_WINDOW: Final = 4 << 20
"""Bytes searched for a candidate cut from each place aimed at."""


def object_cuts(path: Path, parts: int, size: int) -> list[int]:
    """Candidate cuts of a 0.x ``{query_id: [results]}`` file of ``size`` bytes into up to
    ``parts`` parts of about the same size, in file order: byte offsets just after a ``]``
    that :data:`_CUT` finds at or after each ``size * i / parts``. None for a file starting
    with a byte-order mark (read by one process, as it always was).

    Candidates only: the text around a cut is not parsed here, and a cut may fall inside a
    string or a nested value. :func:`iter_0x_part` proves each one, reading the part before
    it, or refuses it."""
    cuts: list[int] = []
    with open_for_reading(path, error=RunError, what="run file") as handle:
        if handle.read(len(BOM)) == BOM:
            return []
        for part in range(1, parts):
            aim = size * part // parts
            handle.seek(aim)
            found = _CUT.search(handle.read(_CUT_WINDOW))
            if found is not None:
                cut = aim + found.start() + 1
                if (not cuts or cuts[-1] < cut) and cut < size:
                    cuts.append(cut)
    return cuts


def iter_0x_part(
    path: Path,
    whole: Callable[[], Run],
    part: tuple[int, int | None],
    seen: set[str],
    done: int,
    read: list[int] | None = None,
    alone: bool = False,
) -> Iterator[RecordFields]:
    """:func:`iter_0x_fields` of the members between two cuts of :func:`object_cuts`
    (``part``: ``(start, stop)``, ``start`` 0 for the first part, ``stop`` ``None`` for the
    last), ``seen`` the keys of the parts before (this part's are added).

    The part is answered for only when reading it ends exactly at a member boundary at
    ``stop`` (or at the object's end), with none of its keys met before and nothing the
    member reader leaves to the whole reader; its records are then those of
    :func:`iter_0x_fields` from record ``done`` on. At anything else a process reading the
    part ``alone`` (a forked child) raises :class:`PartRefused`; the process that read the
    ``done`` records before (its own parts and its children's, in file order) goes on with
    :func:`iter_0x_fields` itself, the whole file from record ``done`` plus those yielded
    here on, to the end of the file: what one process reading the file gives, its records
    and its errors. ``read[0]`` then passes ``stop``."""
    count = 0
    try:
        for query_id, items in _members(path, _STREAMED, read, part, seen):
            built = _fields_of(query_id, items, path)
            del items
            count += 1
            yield built
        return
    except (_Unusual, UnicodeDecodeError, RunError):
        if alone:
            raise PartRefused from None
    yield from itertools.islice(iter_0x_fields(path, whole, read), done + count, None)


def _same(record: RetrievalRecord) -> RetrievalRecord:
    return record


def _record_of(query_id: str, items: Any, path: Path) -> RetrievalRecord:
    return RetrievalRecord(query_id, "", _results_0x(items, f"query {query_id!r}", path, None))


# The plain result fields of 0.x files: with only these, of these types, a result's fields are
# what result_from_mapping would make of them (rank: its position, so the list is in order).
_PLAIN: Final = frozenset({"text", "score", "doc_id", "document_id", "start", "end"})


def _fields_of(query_id: str, items: Any, path: Path) -> RecordFields:
    """``RecordFields.of(_record_of(query_id, items, path))``, built directly when every
    result is plain (:data:`_PLAIN` keys; text and document id strings, offsets integers, a
    numeric score; not both document keys); else through the record, checks and all."""
    if type(items) is list:
        results = []
        for item in items:
            if type(item) is not dict or not _PLAIN.issuperset(item):
                break
            text = item.get("text")
            score = item.get("score")
            start = item.get("start")
            end = item.get("end")
            document_id = item.get("document_id")
            if document_id is None:
                document_id = item.get("doc_id")
            elif "doc_id" in item:
                break
            if (
                (text is not None and type(text) is not str)
                or (score is not None and type(score) is not float and type(score) is not int)
                or (document_id is not None and type(document_id) is not str)
                or (start is not None and type(start) is not int)
                or (end is not None and type(end) is not int)
            ):
                break
            results.append((text, document_id, start, end))
        else:
            return RecordFields(query_id, "", None, None, None, None, None, None, results)
    return RecordFields.of(_record_of(query_id, items, path))
