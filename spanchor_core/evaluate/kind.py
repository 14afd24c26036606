"""Whether a file holds an evaluation (ours or spanchor 0.x's) or something else (a run), told
by its parsed ``kind``, never by text found somewhere in its bytes.

Read from the first line whenever it is a JSON value of its own (every JSONL file: runs, 0.x
results lines), so that a large run is not read twice; a 0.x results object (one line of
hundreds of megabytes, or indented) from its first member; only another document is parsed
whole. The readers of each kind report what is wrong with a broken file.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Generator
from pathlib import Path
from typing import Any, Final, cast

import orjson

from spanchor_core._kind import leading_kind
from spanchor_core.errors import InputError
from spanchor_core.evaluate.model import EVALUATION_KIND
from spanchor_core.runs import RetrievalRecord, Run
from spanchor_core.runs.legacy import iter_0x_object

__all__ = ["holds_evaluation"]


class _Parsed(dict[str, Any]):
    """A JSON object that keeps every value its ``kind`` had: a repeated key is for the reader
    of that kind to report, not a reason to send the file to another reader."""

    kinds: tuple[Any, ...] = ()


def _parsed_object(pairs: list[tuple[str, Any]]) -> _Parsed:
    parsed = _Parsed(pairs)
    parsed.kinds = tuple(value for key, value in pairs if key == "kind")
    return parsed


def _parse_leniently(text: str) -> Any:
    """The JSON value of ``text``, accepting what the strict readers reject (numbers of any
    length, NaN, repeated keys) so that the right reader gets to say what is wrong.

    Raises ``ValueError`` or ``RecursionError`` when ``text`` is not one JSON value.
    """
    return json.loads(
        text,
        parse_int=str,
        parse_float=str,
        parse_constant=str,
        object_pairs_hook=_parsed_object,
    )


def _is_evaluation(value: Any) -> bool:
    """An object whose ``kind`` says evaluation, or a spanchor 0.x one (``per_query_metrics``)."""
    if not isinstance(value, dict):
        return False
    kinds = value.kinds if isinstance(value, _Parsed) else (value.get("kind"),)
    return EVALUATION_KIND in kinds or "per_query_metrics" in value


_BOM = b"\xef\xbb\xbf"


def _told_by_orjson(raw: bytes) -> bool | None:
    """What :func:`_is_evaluation` says of ``raw``'s lenient parse, from orjson's (C, about ten
    times faster), or ``None`` when only the lenient parse can tell.

    orjson refuses some of what the lenient parse accepts (NaN, huge numbers): then ``None``.
    It keeps the last of repeated keys, which only matters for a repeated top-level ``kind``:
    no ``kind`` left means there was none; a ``kind`` that is not an evaluation's is trusted
    only when the text cannot hold a second one (one ``"kind"`` and no ``\\u`` escape).
    """
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if _is_evaluation(document):
        return True
    if type(document) is not dict or "kind" not in document:
        return False
    if b"\\u" not in raw and raw.count(b'"kind"') <= 1:
        return False
    return None


_LONG: Final = 1 << 20
"""A first line longer than this (a one-line 0.x results object) is not parsed whole first."""


class _NotResults(Exception):
    """The run reader's member parser left the file to its whole-document reader."""


def _whole() -> Run:
    raise _NotResults


def _starts_as_0x_results(file: Path) -> bool:
    """Whether the file's first member, parsed by the run reader's member parser (from its
    first megabytes, nothing after that member), is ``query_id: [results]`` whose results each
    carry a text or a document id: how every 0.x results object starts, and no evaluation
    (ours puts ``kind`` first; 0.x's fields have fixed names, and a ``queries`` list of
    ``{query_id, anchors}`` entries has neither)."""
    # a generator (its file is closed with it, not left to the collector)
    records = cast(Generator[RetrievalRecord, None, None], iter_0x_object(file, _whole))
    try:
        first = next(records, None)
    except (_NotResults, InputError):
        return False
    finally:
        records.close()
    return (
        first is not None
        and bool(first.results)
        and all(r.text is not None or r.document_id is not None for r in first.results)
    )


def holds_evaluation(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` holds an evaluation (ours or 0.x); anything else is for the run reader.

    Decided by the parsed ``kind``, never by extension or by text found somewhere in the file,
    and from the first line whenever it is a JSON value of its own (every JSONL file: our runs,
    0.x results lines), so that a large run is not read twice. A multi-line document, or a
    first line of more than a megabyte, whose first member parses as a 0.x query's results
    (``{query_id: [results], ...}``, by the run reader's own member parser: see
    :func:`_starts_as_0x_results`) is a run, and the run reader says what else may be wrong
    with it. Anything else is parsed whole.
    An object whose ``kind`` is ``spanchor.evaluation``, or that has 0.x's
    ``per_query_metrics``, is an evaluation (even when broken: then the evaluation reader says
    what is wrong); anything else is a run.
    """
    file = Path(path)
    try:
        with file.open("rb") as handle:
            first = b""
            for raw in iter(functools.partial(handle.readline, _LONG), b""):
                if raw.strip():
                    first = raw
                    break
            long = len(first) == _LONG and not first.endswith(b"\n")
            if long and _starts_as_0x_results(file):
                return False  # a one-line 0.x results object: not parsed here at all
            if long:
                first += handle.readline()
    except FileNotFoundError:
        raise InputError("file does not exist", path=file) from None
    except OSError as err:
        raise InputError(f"cannot read file: {err.strerror or err}", path=file) from None
    try:
        return _is_evaluation(_parse_leniently(first.decode("utf-8-sig")))
    except (ValueError, RecursionError):
        pass  # not a JSON value on its own: look at the whole document
    try:
        with file.open("rb") as handle:
            head = handle.read(65536).decode("utf-8-sig", errors="ignore")
    except OSError as err:
        raise InputError(f"cannot read file: {err.strerror or err}", path=file) from None
    if leading_kind(head) == EVALUATION_KIND:
        # The top object's first key says it (our writer puts ``kind`` first): no need to
        # parse a file of hundreds of megabytes whole just to read one string.
        return True
    if _starts_as_0x_results(file):
        return False  # an indented 0.x results object: its first member says it
    try:
        raw = file.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read file: {err}", path=file) from None
    known = _told_by_orjson(raw[3:] if raw.startswith(_BOM) else raw)
    if known is not None:
        return known
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(f"cannot read file: {err}", path=file) from None
    del raw
    try:
        document = _parse_leniently(text)
    except (ValueError, RecursionError):
        return bool(leading_kind(text) == EVALUATION_KIND)
    return _is_evaluation(document)
