"""The one strict reading layer, and the atomic writer: every spanchor file passes here.

Reading: :func:`open_for_reading` (an ``OSError`` becomes the caller's error naming the file),
:func:`jsonl_lines` (a JSONL file as numbered, UTF-8-decoded lines: byte-order mark dropped,
lines split on ``\\n`` only, a final line torn inside a multi-byte character marked rather than
fatal), :func:`loads_strict` (JSON with duplicate keys, ``NaN``/``Infinity``, numbers too large
for a float, absurd nesting and integers too long to convert all rejected as the caller's
:class:`~spanchor_core.errors.InputError` with ``path:line``) and
:func:`describe_validation_error` (the one way a pydantic error is worded). Writing:
:func:`atomic_write`, so an interrupted write never leaves half a file behind and a rewritten
file keeps its permissions; it refuses targets that are not regular files
(:func:`check_output_target`) and removes temporary files killed writers left behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import socket
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Final, NamedTuple

from pydantic import ValidationError

from spanchor_core.errors import InputError

__all__ = [
    "BOM",
    "LENIENT_DECODER",
    "TORN",
    "JsonRejected",
    "JsonlLine",
    "atomic_write",
    "check_output_target",
    "describe_validation_error",
    "jsonl_lines",
    "loads_strict",
    "open_for_reading",
    "read_text",
    "remove_stale_temp_files",
]


def _default_mode() -> int:
    """What ``open()`` would give a new file under the current umask (mkstemp gives 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def check_output_target(
    path: str | os.PathLike[str], *, error: type[InputError] = InputError, what: str = "file"
) -> None:
    """Refuse an output path that is not a regular file or a new name.

    A symbolic link is refused rather than replaced by a regular file (which would silently
    cut the link) or written through (an atomic rename cannot keep it); a directory, a FIFO, a
    device or a socket cannot be replaced by a file either. Raises ``error`` naming the path.
    """
    target = Path(path)
    try:
        info = target.lstat()
    except FileNotFoundError:
        return
    except OSError as err:
        raise error(f"cannot write {what}: {err.strerror or err}", path=target) from None
    mode = info.st_mode
    if stat.S_ISREG(mode):
        return
    if stat.S_ISLNK(mode):
        problem, hint = "is a symbolic link", "give the path of the file it points to"
    elif stat.S_ISDIR(mode):
        problem, hint = "is a directory", "give a file name"
    elif stat.S_ISFIFO(mode):
        problem, hint = "is a FIFO (named pipe)", "write to a regular file"
    elif stat.S_ISSOCK(mode):
        problem, hint = "is a socket", "write to a regular file"
    else:
        problem, hint = "is a device", "write to a regular file"
    raise error(
        f"cannot write {what} here: the path {problem}, not a regular file", path=target, hint=hint
    )


# Temporary files are named ``.<target>.<host>-<pid>-<random>.spanchor.tmp``: a later write into
# the same directory recognises those a killed writer left behind and removes them.
_TEMP_SUFFIX: Final = ".spanchor.tmp"
_TEMP_NAME: Final = re.compile(r"^\..*\.([0-9a-f]{8})-([0-9]+)-[^.]+\.spanchor\.tmp$")
_FOREIGN_TEMP_AGE: Final = 24 * 3600.0
"""Seconds after which a temporary file of another host (a container sharing the directory,
whose processes this one cannot see) counts as abandoned."""


_SWEPT: set[str] = set()


def _host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # exists but is not ours, or cannot be asked: leave its file alone
    return True


def remove_stale_temp_files(directory: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files that interrupted :func:`atomic_write` calls left in
    ``directory``; return those removed.

    A temporary file is stale when the process that created it is gone (same host), or, for
    one made on another host, when it has not changed for a day. Anything else is left alone,
    and failures to list or remove are ignored: this is housekeeping, never an error.
    """
    removed: list[Path] = []
    host, now = _host_tag(), time.time()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.endswith(_TEMP_SUFFIX):
            continue
        found = _TEMP_NAME.match(entry.name)
        if found is None:
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            if found.group(1) == host:
                stale = not _pid_alive(int(found.group(2)))
            else:
                stale = now - entry.stat(follow_symlinks=False).st_mtime > _FOREIGN_TEMP_AGE
            if stale:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except (OSError, ValueError):
            continue
    return removed


def atomic_write(
    path: str | os.PathLike[str],
    content: str | bytes | memoryview | Iterable[str],
    *,
    error: type[InputError] = InputError,
    what: str = "file",
    durable: bool = True,
) -> None:
    """Write ``content`` to ``path`` all or nothing: a temporary file in the same directory,
    flushed and fsynced, then renamed over the target (and the directory fsynced).

    ``content`` may be an iterable of text pieces, written one by one so that a large file
    is never held in memory whole. A file being replaced keeps its mode; a new one gets the
    mode ``open()`` would give it. A target that is a symbolic link, a directory, a FIFO or a
    device is refused (:func:`check_output_target`). Temporary files left by killed writers
    in the directory are removed by the first write into it (:func:`remove_stale_temp_files`);
    an interrupted write removes its own. Failures raise ``error`` naming the path.

    ``durable=False`` skips the fsyncs: still all or nothing when the writer is killed, but a
    power cut may lose the write — for many small files that can be written again (imported
    documents), where an fsync each would cost far more than the writing.
    """
    target = Path(path)
    check_output_target(target, error=error, what=what)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        folder = os.path.abspath(target.parent)
        if folder not in _SWEPT:  # once per directory and process: thousands of documents
            _SWEPT.add(folder)  # written into one directory do not list it thousands of times
            remove_stale_temp_files(folder)
        mode = target.stat().st_mode & 0o777 if target.exists() else _default_mode()
        handle, temp_name = tempfile.mkstemp(
            prefix=f".{target.name[:80]}.{_host_tag()}-{os.getpid()}-",
            suffix=_TEMP_SUFFIX,
            dir=target.parent,
        )
    except OSError as err:
        raise error(f"cannot write {what}: {err.strerror or err}", path=target) from None
    temp = Path(temp_name)
    try:
        with os.fdopen(handle, "wb") as out:
            if isinstance(content, bytes | memoryview):  # a memoryview: an array's own bytes
                out.write(content)
            elif isinstance(content, str):
                out.write(content.encode("utf-8"))
            else:
                for piece in content:
                    out.write(piece.encode("utf-8"))
            out.flush()
            if durable:
                os.fsync(out.fileno())
        os.chmod(temp, mode)
        check_output_target(target, error=error, what=what)  # not swapped for a link meanwhile
        os.replace(temp, target)
    except BaseException as err:
        with contextlib.suppress(OSError):
            temp.unlink()
        if isinstance(err, OSError):
            raise error(f"cannot write {what}: {err.strerror or err}", path=target) from None
        raise
    if not durable:
        return
    with contextlib.suppress(OSError):  # make the rename itself durable where the OS allows
        directory = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


# --------------------------------------------------------------------------------------------
# Opening and splitting
# --------------------------------------------------------------------------------------------


def open_for_reading(
    path: Path, *, error: type[InputError] = InputError, what: str = "file", buffering: int = -1
) -> BinaryIO:
    """``path`` opened for binary reading; an ``OSError`` becomes ``error`` naming the file.

    ``buffering`` is :func:`open`'s: a reader of long lines asks for a buffer longer than them
    (a line longer than the buffer is read piece by piece and joined)."""
    try:
        handle = path.open("rb", buffering=buffering)
    except FileNotFoundError:
        raise error(f"{what} does not exist", path=path, hint="check the path") from None
    except IsADirectoryError:
        raise error(f"is a directory, not a {what}", path=path) from None
    except PermissionError:
        raise error(f"cannot read {what}: permission denied", path=path) from None
    except OSError as err:
        raise error(f"cannot read {what}: {err.strerror or err}", path=path) from None
    if path.is_dir():  # some platforms open directories without complaint
        handle.close()
        raise error(f"is a directory, not a {what}", path=path)
    return handle


_BOM: Final = b"\xef\xbb\xbf"
BOM: Final = _BOM
"""The UTF-8 byte-order mark, dropped at the start of every file read."""


def read_text(
    path: Path,
    *,
    error: type[InputError] = InputError,
    what: str = "file",
    hint: str = "save the file as UTF-8",
) -> str:
    """The whole of ``path`` as text, a leading byte-order mark dropped.

    Bytes that are not UTF-8 raise ``error`` naming the line and the byte offset.
    """
    with open_for_reading(path, error=error, what=what) as handle:
        try:
            raw = handle.read()
        except OSError as err:
            raise error(f"cannot read {what}: {err.strerror or err}", path=path) from None
    start = 3 if raw.startswith(_BOM) else 0
    try:
        return str(memoryview(raw)[start:], "utf-8")
    except UnicodeDecodeError as err:
        offset = start + err.start
        line = raw.count(b"\n", 0, offset) + 1
        raise error(
            f"not UTF-8 (invalid byte at offset {offset})", path=path, line=line, hint=hint
        ) from None


class JsonlLine(NamedTuple):
    """One non-blank line of a JSONL file.

    ``text`` is the decoded line without surrounding white space. ``last`` is true for a final
    line with no newline after it: the only line a crashed writer can have torn, and then
    possibly inside a multi-byte character, whose bytes are left out of ``text`` (what remains
    is incomplete JSON, which the reader skips as a torn line). ``end`` is the byte offset just
    after the line.
    """

    number: int
    text: str
    last: bool
    end: int


MAX_LINE_BYTES: int = 64 * 1024 * 1024
"""The longest JSONL line spanchor reads or writes (64 MiB): a record over it is refused
with a clear error rather than read at several times its size in memory."""


def jsonl_lines(
    handle: BinaryIO,
    path: Path,
    *,
    error: type[InputError] = InputError,
    offset: int = 0,
    number: int = 1,
    hint: str = "save the file as UTF-8",
    what: str = "line",
    max_bytes: int | None = None,
) -> Iterator[JsonlLine]:
    """The non-blank lines of ``handle`` from byte ``offset`` (which is line ``number``) on.

    Lines are split on ``\\n`` only (a ``\\u2028`` inside text is no line break); ``\\r``
    before it is white space. A byte-order mark at the start of the file is dropped. Bytes
    that are not UTF-8 raise ``error`` at ``path:line`` with their offset in the file, except
    an incomplete character at the very end of a torn last line (see :class:`JsonlLine`). A
    line longer than ``max_bytes`` (default :data:`MAX_LINE_BYTES`) raises ``error`` before it
    is read whole.
    """
    if max_bytes is None:
        max_bytes = MAX_LINE_BYTES
    handle.seek(offset)
    while True:
        raw = handle.readline(max_bytes + 1)
        if not raw:
            return
        start = offset
        offset += len(raw)
        last = not raw.endswith(b"\n")
        if last and len(raw) > max_bytes:
            raise error(
                f"{what} is longer than {max_bytes // (1024 * 1024)} MiB, the most spanchor "
                "reads in one line",
                path=path,
                line=number,
                hint="split huge texts before recording them",
            )
        skip = 3 if start == 0 and raw.startswith(_BOM) else 0
        stop = len(raw) - (0 if last else 1)
        try:
            text = str(memoryview(raw)[skip:stop], "utf-8")
        except UnicodeDecodeError as err:
            if not (last and err.reason == "unexpected end of data" and err.end == stop - skip):
                raise error(
                    f"not UTF-8 (invalid byte at offset {start + skip + err.start})",
                    path=path,
                    line=number,
                    hint=hint,
                ) from None
            text = str(memoryview(raw)[skip : skip + err.start], "utf-8")  # torn mid-character
        del raw  # a huge line is not kept alive beside its text
        if text and (text[0].isspace() or text[-1].isspace()):
            text = text.strip()
        if text:
            yield JsonlLine(number, text, last, offset)
        number += 1


# --------------------------------------------------------------------------------------------
# Strict JSON
# --------------------------------------------------------------------------------------------


class _Rejected(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _no_constant(name: str) -> Any:
    raise _Rejected(f"{name} is not valid JSON: write null or a finite number")


def _finite_float(text: str) -> float:
    # Called for float literals only (a few per record), so cheaper than scanning the text.
    number = float(text)
    if math.isfinite(number):
        return number
    shown = text if len(text) <= 20 else f"{text[:17]}..."
    raise _Rejected(f"the number {shown} is too large for a float; write null or a finite number")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Rejected(f"the key {key!r} appears twice in one object")
            seen.add(key)
    return data


_LONE_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _has_lone_surrogate(value: Any) -> bool:
    # Only reached when the raw text holds a surrogate escape: rare, so a plain walk will do.
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


_STRICT: Final = json.JSONDecoder(
    object_pairs_hook=_unique, parse_constant=_no_constant, parse_float=_finite_float
)
_LENIENT: Final = json.JSONDecoder(object_pairs_hook=_unique)
"""The decoders of :func:`loads_strict`, made once: ``json.loads`` with hooks builds a new
decoder and scanner per call, a third of the cost of parsing a short line."""
LENIENT_DECODER: Final = _LENIENT
""":func:`loads_strict`'s decoder with ``allow_nan`` (duplicate keys refused by raising
:class:`JsonRejected`), for readers that parse a large document one member at a time."""
JsonRejected = _Rejected


class _Torn:
    def __repr__(self) -> str:
        return "TORN"


TORN: Final = _Torn()
"""What :func:`loads_strict` returns for a torn last line (see its ``torn`` argument)."""


def loads_strict(
    text: str,
    *,
    path: str | os.PathLike[str] | None,
    line: int | None = None,
    error: type[InputError] = InputError,
    what: str = "JSON",
    hint: str | None = None,
    invalid: str | None = None,
    allow_nan: bool = False,
    text_only: bool = False,
    torn: bool = False,
) -> Any:
    """Parse JSON strictly, raising ``error`` at ``path:line`` for anything it refuses.

    Refused always: bad syntax, a key twice in one object, nesting too deep for the parser,
    an integer literal too long to convert. Refused unless ``allow_nan`` (spanchor 0.x files
    are read leniently): ``NaN``/``Infinity`` and numbers beyond a float (``1e400``).
    ``text_only`` also refuses a lone surrogate escape (``"\\ud800"``), which no UTF-8 file can
    hold, for formats whose text must be writable again. ``torn`` (a last line with no newline
    after it) turns a syntax error into the :data:`TORN` marker instead of an error.

    ``line`` is the 1-based line of a JSONL record; for a whole-file document the line of a
    syntax error is taken from the parser. ``invalid`` words a syntax error's start (default
    ``"not valid <what>"``).
    """
    try:
        if type(text) is str and not text.startswith("\ufeff"):
            data = (_LENIENT if allow_nan else _STRICT).decode(text)
        elif allow_nan:  # what json.loads does first: words a byte-order mark, decodes bytes
            data = json.loads(text, object_pairs_hook=_unique)
        else:
            data = json.loads(
                text,
                object_pairs_hook=_unique,
                parse_constant=_no_constant,
                parse_float=_finite_float,
            )
    except _Rejected as err:
        raise error(err.message, path=path, line=line, hint=hint) from None
    except json.JSONDecodeError as err:
        if torn:
            return TORN
        where = line if line is not None else err.lineno
        raise error(
            f"{invalid or f'not valid {what}'}: {err.msg} (column {err.colno})",
            path=path,
            line=where,
            hint=hint,
        ) from None
    except RecursionError:
        raise error(
            f"{invalid or f'not valid {what}'}: nested too deeply", path=path, line=line, hint=hint
        ) from None
    except ValueError as err:  # e.g. an integer literal longer than Python converts
        raise error(
            f"{invalid or f'not valid {what}'}: {err}", path=path, line=line, hint=hint
        ) from None
    if text_only and _LONE_SURROGATE_ESCAPE.search(text) and _has_lone_surrogate(data):
        raise error(
            "a lone surrogate escape (such as \\ud800) is not a character",
            path=path,
            line=line,
            hint=hint or "remove it or write the character it was meant to be",
        )
    return data


def describe_validation_error(error: ValidationError) -> str:
    """The first problem pydantic found, as one readable clause: which field, what is wrong.

    Used by every file reader so that a missing or mistyped field reads the same in a gold
    set, a run, an evaluation or a comparison.
    """
    first = error.errors()[0]
    where = ""
    for part in first["loc"]:
        where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
    message = first["msg"]
    if first["type"] == "missing":
        message = "missing"
    elif first["type"] == "extra_forbidden":
        message = "is not a field of this format"
    else:
        shown = repr(first["input"])
        shown = shown if len(shown) <= 60 else f"{shown[:57]}..."
        message = f"{message[:1].lower()}{message[1:]}, got {shown}"
    more = len(error.errors()) - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"field {where!r}: {message}{suffix}" if where else f"{message}{suffix}"
