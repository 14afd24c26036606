"""Reading run files: :func:`read_run` (a whole run) and :class:`RunStream` (record by record).

Both decide how to read a file in one place, :func:`_layout`, from its first non-blank line and
never from its name: a line with ``kind`` is our format (the header, then one record a line); a
``{query_id, question, retrieved}`` record is spanchor 0.x JSONL; anything else is one JSON
document (0.x ``{query_id: [results]}`` or a list), read whole — except that a
:class:`RunStream` reads a 0.x ``{query_id: [results]}`` object one member at a time
(:func:`~spanchor_core.runs.legacy.iter_0x_object`), so its first line, however long, is
never read whole either. Lines come from the strict
reading layer (:mod:`spanchor_core._io`): split on ``\\n`` only, blank ones skipped, a leading
byte-order mark dropped, ``\\r`` before ``\\n`` tolerated, at most
:data:`~spanchor_core._io.MAX_LINE_BYTES` each. A torn last line (the writer died mid-line, even
inside a multi-byte character) is skipped with one ``path:line`` warning in
:attr:`Run.warnings`; anything else wrong is a :class:`~spanchor_core.errors.RunError` at
``path:line``, the first in file order.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final, TypeVar

import orjson

from spanchor_core._io import (
    MAX_LINE_BYTES,
    TORN,
    JsonlLine,
    jsonl_lines,
    loads_strict,
    open_for_reading,
)
from spanchor_core.errors import RunError
from spanchor_core.runs.file_models import RunHeader
from spanchor_core.runs.legacy import (
    header_0x,
    iter_0x_fields,
    iter_0x_object,
    iter_0x_part,
    looks_like_0x_record,
    object_cuts,
    read_0x_document,
    read_0x_record_line,
    streams_as_0x_object,
)
from spanchor_core.runs.lines import _record_fast, fields_fast, read_header_line, read_record_line
from spanchor_core.runs.model import (
    FORMAT_0X_JSON,
    FORMAT_0X_JSONL,
    FORMAT_OURS,
    RecordFields,
    RetrievalRecord,
    Run,
)

__all__ = ["RunStream", "iter_run", "read_run"]

_Read = TypeVar("_Read", RetrievalRecord, RecordFields)
_LineReader = Callable[[JsonlLine, Path, list[str]], RetrievalRecord | None]
_HINT: Final = "run files are UTF-8 JSONL"


@dataclass(frozen=True, slots=True)
class _Layout:
    """How a run file is read, as decided from its first non-blank line.

    ``read_line`` reads each record line from byte ``offset`` (line ``number``) on; a file that
    is a single JSON document has been read whole into ``run`` instead, or is a 0.x object
    to be read member by member (``members``, for a :class:`RunStream`).
    """

    header: RunHeader
    source_format: str
    read_line: _LineReader | None = None
    offset: int = 0
    number: int = 1
    run: Run | None = None
    members: bool = False


def _lines(handle: BinaryIO, path: Path, offset: int = 0, number: int = 1) -> Iterator[JsonlLine]:
    return jsonl_lines(
        handle, path, error=RunError, offset=offset, number=number, hint=_HINT, what="the line"
    )


_BUFFER: Final = 1 << 20
"""Bytes read at a time: a run line is often longer than the default 8 KiB (ten chunks of
text), and a line longer than the buffer is read in pieces and joined."""


def _open(path: Path) -> BinaryIO:
    return open_for_reading(path, error=RunError, what="run file", buffering=_BUFFER)


_STREAM_FROM: Final = 1 << 20
"""A first line at least this long (no ``\n`` in the file's first bytes) is a document on one
line: a :class:`RunStream` then asks whether it is a 0.x object before reading the line."""


def _whole(path: Path, data: Any = None, stream: bool = False) -> _Layout:
    if data is None and stream and streams_as_0x_object(path):
        return _Layout(header_0x(path, "JSON object"), FORMAT_0X_JSON, members=True)
    run = read_0x_document(path) if data is None else read_0x_document(path, data)
    return _Layout(run.header, run.source_format, run=run)


def _layout(handle: BinaryIO, path: Path, stream: bool = False) -> _Layout:
    """The one format dispatch of run files, shared by :func:`read_run` and :class:`RunStream`
    (``stream``: a 0.x object is left to be read member by member)."""
    if stream:
        head = handle.read(_STREAM_FROM)
        handle.seek(0)
        if len(head) == _STREAM_FROM and b"\n" not in head and streams_as_0x_object(path):
            return _Layout(header_0x(path, "JSON object"), FORMAT_0X_JSON, members=True)
        del head
    lines = _lines(handle, path)
    try:
        first = next(lines, None)
    except RunError:
        if handle.tell() > MAX_LINE_BYTES:  # no JSONL: a 0.x document written on one line
            return _whole(path, stream=stream)
        raise
    if first is None:
        raise RunError(
            "empty file",
            path=path,
            hint="expected a spanchor run file (JSONL with a header line) or spanchor 0.x results",
        )
    obj = loads_strict(
        first.text, path=path, line=first.number, error=RunError, allow_nan=True, torn=True
    )
    if obj is TORN:  # not one JSON value on its own line
        if first.last and first.text.startswith('{"kind"'):
            raise RunError(
                "the header line is incomplete (the writer was interrupted)",
                path=path,
                line=first.number,
            )
        return _whole(path, stream=stream)
    if isinstance(obj, dict) and "kind" in obj:
        header = read_header_line(first.text, path, first.number)
        return _Layout(header, FORMAT_OURS, _read_record_line_fast, first.end, first.number + 1)
    if looks_like_0x_record(obj):
        return _Layout(header_0x(path, "JSONL"), FORMAT_0X_JSONL, read_0x_record_line)
    alone = next(lines, None) is None
    if isinstance(obj, dict) and not alone:
        # JSONL, but its first line is neither our header nor a 0.x results record.
        raise RunError(
            "this looks like a gold set, not retrieval results"
            if "anchors" in obj
            else "the first line is neither a run header (no 'kind') nor a spanchor 0.x "
            "results record (no 'retrieved')",
            path=path,
            line=first.number,
        )
    if alone and isinstance(obj, dict | list):
        del first, lines  # the document on one line, parsed already: not parsed again
        return _whole(path, obj)
    return _whole(path, stream=stream)


# Where orjson and the strict reader could disagree, the fast path below steps aside: a key
# followed by white space before its colon, or a string holding an escaped quote before a
# colon (in either case the ``":`` count is not the key count).
_SPACED_KEY: Final = re.compile(r'"\s+:')
_BIG: Final = float(2**63)


def _keys(value: Any) -> int:
    """Members of every object in ``value``, nested ones included; -1 if a float is huge.

    orjson turns integers beyond 64 bits into floats, where the strict reader keeps them
    ``int``: a float that large sends the line to the strict reader, whatever its literal.
    """
    count = 0
    stack = [value]
    while stack:
        item = stack.pop()
        values = item.values() if type(item) is dict else item
        if type(item) is dict:
            count += len(item)
        for v in values:
            kind = type(v)
            if kind is dict or kind is list:
                stack.append(v)
            elif kind is float and not -_BIG < v < _BIG:
                return -1
    return count


def _read_record_line_fast(
    line: JsonlLine, path: Path, warnings: list[str]
) -> RetrievalRecord | None:
    """:func:`read_record_line`, parsing well-formed lines with orjson first.

    orjson refuses what the strict reader refuses (bad syntax, ``NaN``, numbers beyond a
    float, lone surrogates) except a key twice in one object, which it keeps silently, and an
    integer beyond 64 bits, which it turns into a float: so a line is taken from orjson only
    when it is byte for byte what orjson writes for the value parsed (what our writers
    produce), or else when its ``":`` count equals the members parsed (every key of a line
    :data:`_SPACED_KEY` does not match ends in exactly ``":``) and no float is huge. Anything
    else — a bad line, a torn one, a second header, a record the plain checks decline — goes to
    :func:`read_record_line`, which gives the values or the error it always gave.
    """
    obj = _from_orjson(line.text)
    if obj is not None:
        record = _record_fast(obj, line.number)
        if record is not None:
            return record
    return read_record_line(line, path, warnings)


def _from_orjson(text: str) -> dict[str, Any] | None:
    """The line's object as orjson parses it, when that is what the strict reader would give
    (see :func:`_read_record_line_fast`); ``None`` sends the line the strict way."""
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if type(obj) is not dict or "kind" in obj:
        return None
    # A line that is exactly what orjson writes for what it parsed has no repeated key (it
    # would be written once) and no integer turned float (it would be written as a float):
    # the lines our writers produce, checked in one C call instead of a walk over the values.
    if orjson.dumps(obj) == text.encode("utf-8"):
        return obj
    if '\\":' in text or _SPACED_KEY.search(text) is not None:
        return None
    if _keys(obj) == text.count('":'):
        return obj
    return None


def _records(
    handle: BinaryIO, path: Path, layout: _Layout, warnings: list[str]
) -> Iterator[RetrievalRecord]:
    read_line = layout.read_line
    if read_line is None:
        return
    for line in _lines(handle, path, layout.offset, layout.number):
        record = read_line(line, path, warnings)
        if record is not None:
            yield record


def _read_fields_fast(line: JsonlLine, path: Path, warnings: list[str]) -> RecordFields | None:
    """:func:`_read_record_line_fast` for :meth:`RunStream.fields`: the same lines taken from
    orjson (the same checks, in :func:`_from_orjson`), the rest read by
    :func:`read_record_line` and converted."""
    obj = _from_orjson(line.text)
    if obj is not None:
        fields = fields_fast(obj, line.number)
        if fields is not None:
            return fields
    record = read_record_line(line, path, warnings)
    return None if record is None else RecordFields.of(record)


def read_run(path: str | os.PathLike[str]) -> Run:
    """Read a run file, or spanchor 0.x results in any of their shapes (see the module doc).

    Dispatches on content, never on the file extension: a first line with ``kind`` is our
    format (the ``kind``/``schema_version`` pair picks the reader), a first line holding a
    ``{query_id, question, retrieved}`` record is 0.x JSONL, anything else is read as one JSON
    document (0.x ``{query_id: [results]}`` or a list). The file is read a line at a time.
    """
    file = Path(path)
    with _open(file) as handle:
        layout = _layout(handle, file)
        if layout.run is not None:
            return layout.run
        warnings: list[str] = []
        records = list(_records(handle, file, layout, warnings))
    return Run(layout.header, records, file, warnings, layout.source_format)


class RunStream:
    """A run file read one record at a time, so that a large run is never held whole.

    Constructing one reads only up to the header line, so :attr:`header` (and
    :attr:`source_format`) are there at once, and a file that is missing, not UTF-8 up to its
    header or has a bad header raises :class:`~spanchor_core.errors.RunError` right away,
    exactly as :func:`read_run` does. Iterating yields the records in file order, each line
    read as :func:`read_run` reads it (the same code: same errors with ``path:line``, same
    torn-last-line rule); the records read equal ``read_run(path).records``. Errors in later
    lines are raised when iteration reaches them, the first in file order. :meth:`fields`
    reads the same lines as scoring needs them (:class:`~spanchor_core.runs.model.RecordFields`).

    Our format, spanchor 0.x JSONL and 0.x ``{query_id: [results]}`` objects are streamed
    (an object one member at a time: the records, values and errors of :func:`read_run`,
    errors raised when reading reaches them). Other 0.x single-document files (a JSON list)
    are read whole when the stream is opened.

    :attr:`warnings` (torn last line) and :attr:`records_read` are complete once the records
    have been iterated. Iterating again reads the file again and starts both afresh.
    :attr:`bytes_read` says how far into the file (of :attr:`bytes_total` bytes, its size when
    the stream was opened) reading has come, for a progress bar: the whole file for a
    single-document file, read when the stream was opened.
    """

    __slots__ = (
        "_keys",
        "_layout",
        "bytes_read",
        "bytes_total",
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
        self._keys: set[str] = set()  # a 0.x object's query ids, read so far in parts
        with _open(self.path) as handle:
            self._layout = _layout(handle, self.path, stream=True)
            self.bytes_total = os.fstat(handle.fileno()).st_size
        self.bytes_read = self._start()
        self.header = self._layout.header
        self.source_format = self._layout.source_format

    def _start(self) -> int:
        """Where reading the records starts, in bytes (all of it read for a whole document)."""
        return self.bytes_total if self._layout.run is not None else self._layout.offset

    def __iter__(self) -> Iterator[RetrievalRecord]:
        return self._records()

    def _records(self) -> Iterator[RetrievalRecord]:
        self.records_read = 0
        self.warnings = []
        self.bytes_read = self._start()
        if self._layout.members:
            yield from self._members(iter_0x_object)
            return
        whole = self._layout.run
        if whole is not None:
            self.warnings = list(whole.warnings)
            for record in whole.records:
                self.records_read += 1
                yield record
            return
        read_line = self._layout.read_line
        if read_line is None:  # pragma: no cover - a layout has a line reader or a run
            return
        with _open(self.path) as handle:
            for line in _lines(handle, self.path, self._layout.offset, self._layout.number):
                self.bytes_read = line.end
                found = read_line(line, self.path, self.warnings)
                if found is not None:
                    self.records_read += 1
                    yield found

    def _members(
        self, reader: Callable[[Path, Callable[[], Run], list[int]], Iterator[_Read]]
    ) -> Iterator[_Read]:
        """A 0.x object's records (or fields), one member at a time (see ``legacy``)."""
        self.records_read = 0
        self.warnings = []
        read = [0]
        for found in reader(self.path, functools.partial(read_run, self.path), read):
            self.bytes_read = read[0]
            self.records_read += 1
            yield found
        self.bytes_read = read[0]

    def fields(self) -> Iterator[RecordFields]:
        """The records as scoring reads them, in file order: what iterating gives, each as
        :meth:`RecordFields.of <spanchor_core.runs.model.RecordFields.of>` of the record (the
        same lines, values and errors), without building an object per result."""
        if self._layout.members:
            yield from self._members(iter_0x_fields)
            return
        if self._layout.read_line is not _read_record_line_fast:
            for record in self._records():
                yield RecordFields.of(record)
            return
        self.records_read = 0
        self.warnings = []
        self.bytes_read = self._start()
        with _open(self.path) as handle:
            for line in _lines(handle, self.path, self._layout.offset, self._layout.number):
                self.bytes_read = line.end
                fields = _read_fields_fast(line, self.path, self.warnings)
                if fields is not None:
                    self.records_read += 1
                    yield fields

    def record_ranges(self, parts: int) -> list[tuple[int, int]]:
        """The records cut into up to ``parts`` byte ranges of about the same size, in file
        order: what :meth:`part_fields` reads a part of the run from (to read the parts on
        several processes). Our one-record-a-line format is cut at line boundaries; a 0.x
        ``{query_id: [results]}`` object at candidate member boundaries
        (:func:`~spanchor_core.runs.legacy.object_cuts`), which reading the part before a
        cut proves or refuses. Empty when the file cannot be read in parts (0.x JSONL or a
        0.x list, a document read whole) or gives fewer than two."""
        if parts < 2:
            return []
        first, total = self._layout.offset, self.bytes_total
        if self._layout.members:
            cuts = [0, *object_cuts(self.path, parts, total), total]
            return list(itertools.pairwise(cuts)) if len(cuts) > 2 else []
        if self._layout.read_line is not _read_record_line_fast:
            return []
        cuts = [first]
        with _open(self.path) as handle:
            for part in range(1, parts):
                cut = _line_start(handle, first + (total - first) * part // parts)
                if cuts[-1] < cut < total:
                    cuts.append(cut)
        cuts.append(total)
        return list(itertools.pairwise(cuts)) if len(cuts) > 2 else []

    def part_fields(self, start: int, stop: int, alone: bool = False) -> Iterator[RecordFields]:
        """:meth:`fields` of the records between byte ``start`` and ``stop`` (a range of
        :meth:`record_ranges`): the same records, values and errors (``path:line`` counted
        from the start of the file), adding to :attr:`records_read` and :attr:`warnings`. The
        last part (``stop`` the file's size when opened) is read to the end of the file, as
        :meth:`fields` reads it, should the file have grown since.

        A 0.x object's parts are read in file order, the first first (its cuts are proved
        so): a part whose cut does not hold, or with anything unusual (a query id of an
        earlier part, see :func:`~spanchor_core.runs.legacy.iter_0x_part`), is read on with
        the rest of the file, what :meth:`fields` gives after the :attr:`records_read`
        records before, and leaves :attr:`bytes_read` past ``stop``: every later part is
        read then. ``alone`` (a process that has not read the parts before) raises
        :class:`~spanchor_core.runs.legacy.PartRefused` there instead."""
        if self._layout.members:
            yield from self._object_part(start, stop, alone)
            return
        number = self._layout.number
        if start > self._layout.offset:
            number += _newlines(self.path, self._layout.offset, start)
        last = stop >= self.bytes_total
        with _open(self.path) as handle:
            for line in _lines(handle, self.path, start, number):
                if line.end > stop and not last:  # the first line of the next part
                    return
                self.bytes_read = line.end
                fields = _read_fields_fast(line, self.path, self.warnings)
                if fields is not None:
                    self.records_read += 1
                    yield fields

    def _object_part(self, start: int, stop: int, alone: bool) -> Iterator[RecordFields]:
        if alone or not start:
            self._keys = set()
        read = [start]
        part = (start, None if stop >= self.bytes_total else stop)
        whole = functools.partial(read_run, self.path)
        done = self.records_read
        for fields in iter_0x_part(self.path, whole, part, self._keys, done, read, alone):
            self.bytes_read = read[0]
            self.records_read += 1
            yield fields
        self.bytes_read = read[0]

    def part_keys(self) -> frozenset[str] | None:
        """The query ids of the 0.x object part :meth:`part_fields` read last, for the process
        that read the parts before (:meth:`take_part`); ``None`` for any other format."""
        return frozenset(self._keys) if self._layout.members else None

    def take_part(self, keys: frozenset[str] | None) -> bool:
        """Whether a part read by another process (its :meth:`part_keys`) follows the parts
        read so far: for a 0.x object, none of its query ids met before (a repeated id makes
        the whole file one error, worded by one process: :meth:`part_fields` reads such a
        part here). The ids are then counted as read."""
        if keys is None or not self._layout.members:
            return True
        if not self._keys.isdisjoint(keys):
            return False
        self._keys.update(keys)
        return True

    def __repr__(self) -> str:
        return f"RunStream({str(self.path)!r}, {self.source_format})"


def _line_start(handle: BinaryIO, offset: int) -> int:
    """Where the first line starting at or after byte ``offset`` starts (the file's size when
    none does)."""
    handle.seek(max(offset - 1, 0))
    at = handle.tell()
    while True:
        chunk = handle.read(_BUFFER)
        if not chunk:
            return at
        found = chunk.find(b"\n")
        if found >= 0:
            return at + found + 1
        at += len(chunk)


def _newlines(path: Path, start: int, stop: int) -> int:
    """How many ``\\n`` the bytes of ``path`` from ``start`` to ``stop`` hold: lines up to a
    part's start, for its line numbers."""
    count = 0
    with _open(path) as handle:
        handle.seek(start)
        left = stop - start
        while left > 0:
            chunk = handle.read(min(left, _BUFFER * 8))
            if not chunk:
                break
            count += chunk.count(b"\n")
            left -= len(chunk)
    return count


def iter_run(path: str | os.PathLike[str]) -> RunStream:
    """Open a run file for reading record by record: ``for record in iter_run(path): ...``.

    The stream's ``header`` is read at once; see :class:`RunStream`. Use it instead of
    :func:`read_run` when the run may be large and each record can be handled and dropped.
    """
    return RunStream(path)
