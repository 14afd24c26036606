"""Deterministic JSON encoding of run-file lines: no NaN, never failing on odd metadata.

One function, :func:`encode_line`, turns a line's JSON object into its bytes: compact
separators, keys in the order given, UTF-8 text unescaped, non-finite floats as ``null``,
values JSON cannot hold converted (never dropped: dates to ISO strings, enums to their value,
sets to sorted lists, numpy values to numbers and lists, anything else to ``str(value)``), and
text with lone surrogates written with ``\\u`` escapes for that line only, so it stays valid
UTF-8 and reads back unchanged. The same value always gives the same bytes.

Lines are encoded with orjson when it is installed (recording is dominated by encoding) and
with the stdlib otherwise, or when orjson refuses a value (lone surrogates, non-string keys,
integers beyond 64 bits, cycles, nesting past 254 levels). Both paths give the same JSON
value; only the spelling of some floats differs (``0.00001`` against ``1e-05``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import enum
import json
import math
import os
from collections.abc import Mapping
from types import ModuleType
from typing import Any

_orjson: ModuleType | None
try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency; the stdlib path stays complete
    _orjson = None

__all__ = ["dumps", "encode_line", "json_native"]


def _json_default(value: Any) -> Any:
    """Turn what JSON cannot hold into what it can, the same way every time."""
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple):  # named tuples reach here from orjson; the stdlib lists them
        return list(value)
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


_SEPARATORS = (",", ":")
_ENCODER = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, default=_json_default, separators=_SEPARATORS
)
_ASCII_ENCODER = json.JSONEncoder(
    ensure_ascii=True, allow_nan=False, default=_json_default, separators=_SEPARATORS
)
# Dataclasses and dates go through _json_default as on the stdlib path (orjson has its own).
_ORJSON_OPTIONS = (
    0
    if _orjson is None
    else _orjson.OPT_PASSTHROUGH_DATACLASS
    | _orjson.OPT_PASSTHROUGH_DATETIME
    | _orjson.OPT_APPEND_NEWLINE
)
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
    """``value`` as compact JSON text, by the stdlib (see the module doc for what is converted)."""
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
    if _orjson is not None:
        try:
            line: bytes = _orjson.dumps(value, default=_json_default, option=_ORJSON_OPTIONS)
        except TypeError:  # orjson.JSONEncodeError: a value only the stdlib path converts
            pass
        else:
            return line
    text = dumps(value)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates: escape this line so it stays valid UTF-8 and reads back the same.
        return (_ASCII_ENCODER.encode(json.loads(text)) + "\n").encode("ascii")
