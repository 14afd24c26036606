"""Deterministic JSON encoding of run-file lines: no NaN, never failing on odd metadata.

One function, :func:`encode_line`, turns a line's JSON object into its bytes: keys in the order
given, ``ensure_ascii=False``, non-finite floats as ``null``, values JSON cannot hold converted
(never dropped), and text with lone surrogates written with ``\\u`` escapes for that line only,
so it stays valid UTF-8 and reads back unchanged. The same value always gives the same bytes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import os
from collections.abc import Mapping
from typing import Any

__all__ = ["dumps", "encode_line", "json_native"]


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


def dumps(value: Any) -> str:
    """``value`` as compact-enough JSON text (see the module doc for what is converted)."""
    try:
        return _ENCODER.encode(value)
    except (ValueError, TypeError, RecursionError):
        # NaN somewhere, a non-string key, a cycle: rare, so the fast path stays plain.
        return _ENCODER.encode(_sanitize(value))


def json_native(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` rebuilt from plain JSON types, converted as a line would be written."""
    native: dict[str, Any] = json.loads(dumps(value))
    return native


def encode_line(value: Any) -> bytes:
    """One JSONL line as UTF-8 bytes, newline included."""
    text = dumps(value)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates: escape this line so it stays valid UTF-8 and reads back the same.
        return (_ASCII_ENCODER.encode(json.loads(text)) + "\n").encode("ascii")
