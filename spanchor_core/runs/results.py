"""Results as plain mappings: field aliases, lenient numbers, framework offset hints.

:func:`result_from_mapping` is how a dict from a user's script, a framework or a spanchor 0.x
file becomes a :class:`~spanchor_core.runs.RetrievedResult`; the recorder, ``write_run`` and the
0.x reader share it and the type coercions below, so every entrance checks results alike.
LangChain and LlamaIndex offsets in a result's metadata (``start_index``, ``start_char_idx``,
``end_char_idx``) stay in metadata and are surfaced as ``start``/``end`` when the result has text
and no explicit offsets: the locator verifies every offset against the text before trusting it,
so a wrong hint costs nothing while a right one saves a search. Framework document identifiers
(``source``, ``ref_doc_id`` inside metadata) are paths or UUIDs, not corpus ids, so they stay in
metadata and are never used as ``document_id``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Mapping
from typing import Any

from spanchor_core.runs.model import RetrievedResult

__all__ = [
    "finite_float",
    "lenient_float",
    "optional_int",
    "optional_str",
    "payload_from_mapping",
    "pick",
    "result_from_mapping",
    "sorted_by_rank",
    "strict_int",
]


def strict_int(value: Any, name: str) -> int:
    if type(value) is int:
        return value
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got a boolean")
    try:
        return operator.index(value)  # numpy integers
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None


def optional_int(value: Any, name: str) -> int | None:
    return None if value is None else strict_int(value, name)


def finite_float(value: Any, name: str) -> float | None:
    """A float, or None when absent or non-finite (see the module doc on NaN)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got a boolean")
    if isinstance(value, str):
        raise TypeError(f"{name} must be a number, got a string")
    try:
        number = float(value)
    except OverflowError:  # an integer beyond any float: as unknown as infinity
        return None
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}") from None
    return number if math.isfinite(number) else None


def optional_str(value: Any, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{name} must be a string, got {type(value).__name__}")


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


def pick(data: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
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
    return strict_int(value, name)


def lenient_float(value: Any, name: str) -> float | None:
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise TypeError(f"{name} must be a number, got {value!r}") from None
    return finite_float(value, name)


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
    return RetrievedResult(**payload_from_mapping(data, rank))


def payload_from_mapping(data: Mapping[str, Any], rank: int | None) -> dict[str, Any]:
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
        document_id = str(strict_int(document_id, document_key))
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
        "score": lenient_float(score, score_key),
        "document_id": document_id,
        "start": final_start,
        "end": final_end,
        "metadata": metadata,
    }


def sorted_by_rank(results: Iterable[RetrievedResult]) -> tuple[RetrievedResult, ...]:
    return tuple(sorted(results, key=operator.attrgetter("rank")))
