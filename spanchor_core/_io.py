"""File plumbing shared by every reader and writer: atomic writes and strict JSON parsing.

Every file spanchor writes goes through :func:`atomic_write`, so an interrupted write never
leaves a half-written gold set, evaluation or report behind, and a rewritten file keeps its
permissions. Whole-file JSON documents (evaluations, comparisons) are parsed by
:func:`loads_strict`, so malformed input of any kind (bad syntax, ``NaN``, duplicate keys,
absurdly deep nesting, integers too long to convert) becomes the caller's
:class:`~spanchor_core.errors.InputError` with a file and line, never a stray ``ValueError`` or
``RecursionError``; the line-by-line readers of gold sets and runs catch the same kinds.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from spanchor_core.errors import InputError

__all__ = ["atomic_write", "describe_validation_error", "loads_strict"]


def _default_mode() -> int:
    """What ``open()`` would give a new file under the current umask (mkstemp gives 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write(
    path: str | os.PathLike[str],
    content: str | bytes | Iterable[str],
    *,
    error: type[InputError] = InputError,
    what: str = "file",
) -> None:
    """Write ``content`` to ``path`` all or nothing: a temporary file in the same directory,
    flushed and fsynced, then renamed over the target (and the directory fsynced).

    ``content`` may be an iterable of text pieces, written one by one so that a large file
    is never held in memory whole. A file being replaced keeps its mode; a new one gets the
    mode ``open()`` would give it. Failures raise ``error`` naming the path.
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = target.stat().st_mode & 0o777 if target.exists() else _default_mode()
        handle, temp_name = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".tmp", dir=target.parent
        )
    except OSError as err:
        raise error(f"cannot write {what}: {err.strerror or err}", path=target) from None
    temp = Path(temp_name)
    try:
        with os.fdopen(handle, "wb") as out:
            if isinstance(content, bytes):
                out.write(content)
            elif isinstance(content, str):
                out.write(content.encode("utf-8"))
            else:
                for piece in content:
                    out.write(piece.encode("utf-8"))
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException as err:
        with contextlib.suppress(OSError):
            temp.unlink()
        if isinstance(err, OSError):
            raise error(f"cannot write {what}: {err.strerror or err}", path=target) from None
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable where the OS allows
        directory = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


class _Rejected(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _no_constant(name: str) -> Any:
    raise _Rejected(f"{name} is not a JSON number; write null or a finite number")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise _Rejected(f"the key {key!r} appears twice in one object")
        data[key] = value
    return data


def loads_strict(
    text: str,
    *,
    path: str | os.PathLike[str] | None,
    line: int | None = None,
    error: type[InputError] = InputError,
    what: str = "JSON",
    hint: str | None = None,
) -> Any:
    """Parse JSON, refusing ``NaN``/``Infinity`` and duplicate keys, raising ``error``.

    ``line`` is the 1-based line of a JSONL record; for a whole-file document the line of a
    syntax error is taken from the parser.
    """
    try:
        return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique)
    except _Rejected as err:
        raise error(err.message, path=path, line=line, hint=hint) from None
    except json.JSONDecodeError as err:
        where = line if line is not None else err.lineno
        raise error(
            f"not valid {what}: {err.msg} (column {err.colno})", path=path, line=where, hint=hint
        ) from None
    except RecursionError:
        raise error(
            f"not valid {what}: nested too deeply", path=path, line=line, hint=hint
        ) from None
    except ValueError as err:  # e.g. an integer literal longer than Python converts
        raise error(f"not valid {what}: {err}", path=path, line=line, hint=hint) from None


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
