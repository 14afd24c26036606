"""The recorder shared by every integration: append retrievals to a run file as they happen.

See :class:`RunRecorder` for its guarantees: one header, one ``write`` per record, never an
exception into the caller's retrieval unless asked for.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import weakref
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, Literal
from uuid import UUID

from pydantic import ValidationError

from spanchor_core import _io
from spanchor_core._io import describe_validation_error, loads_strict
from spanchor_core.errors import InputError, RecorderError, RunError
from spanchor_core.runs.file_models import RetrieverInfo, RunHeader
from spanchor_core.runs.lines import header_from_object
from spanchor_core.runs.model import RetrievedResult, Stage
from spanchor_core.runs.query_ids import GoldLookup, lookup_query_id
from spanchor_core.runs.write import header_line, record_line

__all__ = ["RecorderTarget", "RunRecorder", "given_arguments", "open_recorder_of"]

_log = logging.getLogger(__name__)

_OPEN_FLAGS = os.O_RDWR | os.O_CREAT | os.O_APPEND | getattr(os, "O_BINARY", 0)
_READ_BLOCK = 65536
# How a torn header of ours starts (the writer puts "kind" first): only such a file, with no
# complete line at all, is emptied and started again; anything else is someone else's file.
_OUR_HEADER_START = b'{"kind":"spanchor.run"'

_fcntl: ModuleType | None
try:
    import fcntl as _fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, one process per file
    _fcntl = None


_LOCK_EX: int = 0 if _fcntl is None else _fcntl.LOCK_EX
_LOCK_UN: int = 0 if _fcntl is None else _fcntl.LOCK_UN


def _lock(fd: int) -> None:
    """Take the file's exclusive advisory lock (waits for other processes to let go)."""
    if _fcntl is not None:
        _fcntl.flock(fd, _fcntl.LOCK_EX)


def _unlock(fd: int) -> None:
    if _fcntl is not None:
        _fcntl.flock(fd, _fcntl.LOCK_UN)


def _first_line(fd: int, size: int) -> bytes:
    """The file's first line, newline included if it has one (at most one line limit long)."""
    chunks: list[bytes] = []
    offset = 0
    while offset < size and offset <= _io.MAX_LINE_BYTES:
        chunk = os.pread(fd, min(_READ_BLOCK, size - offset), offset)
        if not chunk:
            break
        found = chunk.find(b"\n")
        if found >= 0:
            chunks.append(chunk[: found + 1])
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _last_newline_end(fd: int, size: int) -> int:
    """The offset just after the file's last newline (0 when it has none)."""
    end = size
    while end > 0:
        start = max(0, end - _READ_BLOCK)
        found = os.pread(fd, end - start, start).rfind(b"\n")
        if found >= 0:
            return start + found + 1
        end = start
    return 0


def _prepare_append(fd: int, path: Path) -> RunHeader | None:
    """Make an existing file ready for appending; its header, or ``None`` if it needs one.

    Runs under the exclusive lock, so no other recorder is writing meanwhile: a last line
    without newline is then a torn write of a writer that died, never one still under way,
    and cutting it off (so that our first line does not glue onto it) loses nothing live.
    The header is checked before anything is cut: a file that is not a run is left untouched.
    """
    size = os.fstat(fd).st_size
    if size == 0:
        return None
    first = _first_line(fd, size)
    if not first.endswith(b"\n"):  # no complete line: a header torn at creation?
        compact = first.replace(b" ", b"")
        if _OUR_HEADER_START.startswith(compact) or compact.startswith(_OUR_HEADER_START):
            os.ftruncate(fd, 0)
            _log.warning("%s: dropped an incomplete header line before appending", path)
            return None
        raise RecorderError(f"{path}: cannot append, not a spanchor run file (no complete line)")
    try:
        text = first.decode("utf-8")
        text = text[1:] if text.startswith("\ufeff") else text
        obj = loads_strict(text, path=path, line=1, error=RunError, invalid="invalid JSON")
        header = header_from_object(obj, path, 1)
    except (UnicodeDecodeError, RunError) as exc:
        detail = exc.message if isinstance(exc, RunError) else "not UTF-8"
        raise RecorderError(f"{path}: cannot append, not a spanchor run file: {detail}") from None
    if os.pread(fd, 1, size - 1) != b"\n":
        os.ftruncate(fd, _last_newline_end(fd, size))
        _log.warning("%s: dropped an incomplete last line before appending", path)
    return header


class RunRecorder:
    """Append retrievals to a run file as they happen; shared by every integration.

    * One header line when the file is created (mode ``"w"``, or ``"a"`` on a missing or empty
      file); appending to an existing run file checks its header and writes none.
    * One ``write`` system call per record on an ``O_APPEND`` descriptor, no user-space buffer:
      a crash (even SIGKILL) loses at most the line being written, and :func:`read_run` skips
      such a torn line. (Durability against power loss would need fsync; we do not pay for it.)
    * Any number of processes may record into one file (``mode="a"``, as pytest-xdist workers
      or several app workers do): each write holds the file's exclusive advisory lock
      (``fcntl.flock``, where the platform has it), and so does opening, so exactly one of
      several processes creating a missing file writes the header and a torn tail is cut off
      only while no other process is writing. A record over the line limit
      (:data:`~spanchor_core._io.MAX_LINE_BYTES`, 64 MiB encoded) is refused as a failure.
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
      so the appended lines stay readable. Appending to anything else raises RecorderError and
      leaves the file as it was. ``mode="w"`` empties the file (under the lock) and starts it.
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
            raise InputError(f"mode must be 'w' or 'a', got {mode!r}")
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
            self._fd = os.open(self.path, _OPEN_FLAGS, 0o666)
        except OSError as exc:
            raise RecorderError(
                f"{self.path}: cannot open run file: {exc.strerror or exc}"
            ) from exc
        self._finalizer = weakref.finalize(self, _close_quietly, self._fd)
        self.header = header
        try:
            self._open_file(mode)
        except BaseException as exc:
            self.close()
            if isinstance(exc, OSError):
                raise RecorderError(
                    f"{self.path}: cannot prepare run file: {exc.strerror or exc}"
                ) from exc
            raise

    def _open_file(self, mode: str) -> None:
        """Truncate or check the file and write the header if it needs one, all under the
        exclusive lock: of several processes creating one file at once exactly one writes
        the header, and a torn tail is repaired only while nobody else writes."""
        fd = self._fd
        _lock(fd)
        try:
            if mode == "w":
                os.ftruncate(fd, 0)
                existing = None
            else:
                existing = _prepare_append(fd, self.path)
            if existing is not None:
                self.header = existing
            else:
                self._write(header_line(self.header))
        finally:
            _unlock(fd)

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
        trace_id: str | UUID | None = None,
        run_id: str | UUID | None = None,
        parent_run_id: str | UUID | None = None,
        sequence: int | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Append one retrieval. Results are written in the order given.

        ``results`` may mix :class:`RetrievedResult` and plain dicts (see
        :func:`result_from_mapping`; a dict without a rank gets its position). The provenance
        keywords are those of :class:`RetrievalRecord`; absent ones are not written. The run
        ids may be ``uuid.UUID`` objects (written as their canonical text, as ``str`` gives).
        """
        try:
            matched = True
            if query_id is None and self._gold is not None and isinstance(query, str):
                query_id = lookup_query_id(self._gold, query)
                matched = query_id is not None
            line = record_line(
                query_id, query, results, latency_ms, error,
                source, stage, trace_id, run_id, parent_run_id, sequence, metadata,
            )  # fmt: skip
            lock = self._lock  # acquire/release: half the cost of "with" on this path
            lock.acquire()
            try:
                fd = self._fd
                if fd < 0:
                    raise RecorderError(f"{self.path}: recorder is closed")
                if _fcntl is not None:
                    _fcntl.flock(fd, _LOCK_EX)
                try:
                    written = os.write(fd, line)
                    if written != len(line):  # the OS wrote part of it: write the rest
                        self._write_rest(line, written)
                finally:
                    if _fcntl is not None:
                        _fcntl.flock(fd, _LOCK_UN)
                self._records += 1
                if not matched:
                    self._unmatched += 1
            finally:
                lock.release()
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
        trace_id: str | UUID | None = None,
        run_id: str | UUID | None = None,
        parent_run_id: str | UUID | None = None,
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
        """Append ``data`` in one ``write`` (more only if the OS writes part of it); the
        caller holds the file lock, so a failed write can be cut off without touching
        another process's line."""
        self._write_rest(data, os.write(self._fd, data))

    def _write_rest(self, data: bytes, written: int) -> None:
        """Finish a write of which the first ``written`` bytes are out (the usual case: all
        of them, in the one ``write`` of :meth:`record`)."""
        try:
            if written == len(data):
                return
            view = memoryview(data)
            while written < len(view):
                written += os.write(self._fd, view[written:])
        except OSError:
            if written:
                # Half a line would corrupt the next one: cut it off (we hold both locks).
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


RecorderTarget = str | os.PathLike[str] | RunRecorder
"""Where an integration records: a run-file path (it opens, and closes, the file) or an open
:class:`RunRecorder` (the caller's: shared, never closed by the integration)."""


def given_arguments(**values: object) -> list[str]:
    """The names of the arguments that were given (are not ``None``), in order: what cannot
    be applied to an object that already exists."""
    return [name for name, value in values.items() if value is not None]


def open_recorder_of(target: RecorderTarget, **header: object) -> RunRecorder | Path:
    """``target`` itself when it is an open recorder (the caller does not own it), else the
    path for the caller to open with ``header``, the recorder's header arguments.

    An open recorder already wrote its header: header arguments given with it would be
    silently lost, so they raise :class:`~spanchor_core.errors.InputError` instead.
    """
    if not isinstance(target, RunRecorder):
        return Path(target)
    given = given_arguments(**header)
    if given:
        raise InputError(
            "an open RunRecorder already has its header and gold set; pass "
            f"{', '.join(given)} when creating it, or pass a path instead"
        )
    return target


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
