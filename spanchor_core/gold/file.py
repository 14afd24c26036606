"""Gold set files: the header line, the query lines, reading (ours and 0.x) and writing.

A gold set is a JSONL file, one query per line, after a header line that says what the file
is::

    {"kind": "spanchor.gold", "schema_version": 1, "spanchor_version": "0.5.0"}
    {"query_id": "q1", "question": "What is RAG?", "anchors": [{"document_id": "intro",
     "start": 0, "end": 142, "hash": "d683b9..."}], "tags": ["smoke"]}

``hash`` is the sha256 hex of the anchor's canonical text (:func:`spanchor_core.sha256_text`).
spanchor 0.x gold files are read as they are (:mod:`spanchor_core.gold.legacy`). ``tags`` and
``metadata`` are written only when not empty.

Reading goes through the strict reading layer (:mod:`spanchor_core._io`) and is strict about
*shape*: a line that is not JSON (duplicate keys, ``NaN``, ``1e400``, a lone surrogate escape
included), a missing or mistyped field, an unknown ``kind`` or ``schema_version`` raise
:class:`~spanchor_core.errors.GoldError` at once (``path:line: what; what to do``). It is
lenient about *meaning*: duplicate query ids, empty or inverted spans, queries without anchors
and empty questions are kept for :func:`~spanchor_core.gold.validate_gold` to report together.
:attr:`GoldSet.entries` holds every query line in file order; the mapping view keeps the first
query of each id. A plain query line (what :func:`write_gold` writes) is parsed by orjson when
that provably gives what the strict reader gives (:func:`_fast_query`); every other line, and
every error, is the strict reader's.
"""

from __future__ import annotations

import gc
import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from spanchor_core import _io
from spanchor_core._io import (
    atomic_write,
    describe_validation_error,
    jsonl_lines,
    loads_strict,
    open_for_reading,
)
from spanchor_core._version import __version__
from spanchor_core.errors import GoldError
from spanchor_core.gold.legacy import read_legacy_query
from spanchor_core.gold.model import (
    GOLD_KIND,
    GOLD_SCHEMA_VERSION,
    Anchor,
    GoldQuery,
    GoldSet,
    made_anchor,
    made_query,
    query_to_json,
)

__all__ = [
    "GoldAnchorLine",
    "GoldHeader",
    "GoldQueryLine",
    "gold_json_schemas",
    "read_gold",
    "write_gold",
]

_SHA256_HEX: Final = r"^[0-9a-f]{64}$"


class GoldHeader(BaseModel):
    """First line of a gold set file: what it is and who wrote it."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    kind: Literal["spanchor.gold"] = GOLD_KIND
    schema_version: Literal[1] = GOLD_SCHEMA_VERSION
    spanchor_version: str | None = None
    description: str | None = None
    corpus_fingerprint: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class GoldAnchorLine(BaseModel):
    """An anchor as written in a gold line."""

    # built when first validated: lines are checked without it unless unusual
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, defer_build=True)

    document_id: str
    start: int
    end: int
    hash: str = Field(pattern=_SHA256_HEX, description="sha256 hex of the canonical span text")


class GoldQueryLine(BaseModel):
    """One query line of a gold set file (every line after the header)."""

    # built when first validated: lines are checked without it unless unusual
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, defer_build=True)

    query_id: str
    question: str
    anchors: list[GoldAnchorLine]
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


def gold_json_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schemas of the gold file's header line and query line, by name."""
    return {
        "gold-header": GoldHeader.model_json_schema(),
        "gold-query": GoldQueryLine.model_json_schema(),
    }


def _parse_line(text: str, path: Path, line: int) -> dict[str, Any]:
    data = loads_strict(
        text,
        path=path,
        line=line,
        error=GoldError,
        hint="each line must be one complete JSON object",
        text_only=True,
    )
    if not isinstance(data, dict):
        raise GoldError(
            f"expected a JSON object, found {type(data).__name__}",
            path=path,
            line=line,
            hint="each line must be one JSON object",
        )
    return data


def _read_header(data: dict[str, Any], path: Path, line: int) -> GoldHeader:
    kind = data.get("kind")
    if kind != GOLD_KIND:
        raise GoldError(
            f"this is a {kind!r} file, not a gold set",
            path=path,
            line=line,
            hint=f"pass a file whose header line has kind {GOLD_KIND!r}",
        )
    version = data.get("schema_version")
    if version != GOLD_SCHEMA_VERSION or isinstance(version, bool):
        raise GoldError(
            f"unsupported gold schema_version {version!r} (this spanchor reads "
            f"{GOLD_SCHEMA_VERSION})",
            path=path,
            line=line,
            hint="upgrade spanchor to read newer gold sets",
        )
    try:
        return GoldHeader.model_validate(data)
    except ValidationError as err:
        raise GoldError(
            f"bad header: {describe_validation_error(err)}",
            path=path,
            line=line,
            hint="fix the header line",
        ) from None


_QUERY_FIELDS: Final = frozenset(GoldQueryLine.model_fields)
_SHA256: Final = re.compile(r"[0-9a-f]{64}")
_ABSENT: Final = ()


def _plain_query(data: dict[str, Any], line: int) -> GoldQuery | None:
    """The query of a line that plainly has the shape of :class:`GoldQueryLine` (exact types,
    no other keys), without the model: ``None`` for anything else, which the model then
    accepts or words as an error. Everything taken here the model takes to the same values."""
    if not data.keys() <= _QUERY_FIELDS:
        return None
    get = data.get
    query_id, question, anchors = get("query_id"), get("question"), get("anchors")
    tags, metadata = get("tags", _ABSENT), get("metadata", _ABSENT)
    if not (
        type(query_id) is str
        and type(question) is str
        and type(anchors) is list
        and (tags is _ABSENT or (type(tags) is list and all(type(tag) is str for tag in tags)))
        and (metadata is _ABSENT or type(metadata) is dict)
    ):
        return None
    built = []
    try:
        for anchor in anchors:
            if type(anchor) is not dict or len(anchor) != 4:
                return None
            document_id, start, end = anchor["document_id"], anchor["start"], anchor["end"]
            digest = anchor["hash"]
            if not (
                type(document_id) is str
                and type(start) is int
                and type(end) is int
                and type(digest) is str
                and _SHA256.fullmatch(digest)
            ):
                return None
            built.append(made_anchor(document_id, start, end, digest))
    except KeyError:  # an anchor of four keys, not these four
        return None
    return made_query(
        query_id,
        question,
        tuple(built),
        tuple(tags),
        {} if metadata is _ABSENT else dict(metadata),
        line,
    )


def _read_query(data: dict[str, Any], path: Path, line: int) -> GoldQuery:
    plain = None if "kind" in data else _plain_query(data, line)
    if plain is not None:
        return plain
    if "kind" in data:
        raise GoldError(
            f"unexpected {data['kind']!r} header in the middle of a gold set",
            path=path,
            line=line,
            hint="a gold set has one header, on its first line; do not concatenate files",
        )
    try:
        model = GoldQueryLine.model_validate(data)
    except ValidationError as err:
        raise GoldError(
            describe_validation_error(err),
            path=path,
            line=line,
            hint="fix the line or regenerate the gold set",
        ) from None
    return GoldQuery(
        model.query_id,
        model.question,
        tuple(Anchor(a.document_id, a.start, a.end, a.hash) for a in model.anchors),
        tuple(model.tags),
        dict(model.metadata),
        line,
    )


# A key followed by white space before its colon: then the ``":`` count is not the key count.
_SPACED_KEY: Final = re.compile(r'"\s+:')


def _fast_query(text: str, line: int) -> GoldQuery | None:
    """The query of a plain line (:func:`_plain_query`) parsed by orjson, when that is provably
    what the strict reader gives; ``None`` sends the line the strict way, which then gives the
    query or words the error it always did.

    orjson refuses what the strict reader refuses (bad syntax, ``NaN``, numbers beyond a
    float, lone surrogates, a byte-order mark) except a key twice in one object, which it keeps
    once, and an integer beyond 64 bits, which it turns into a float (a plain line holds no
    float: offsets must be ``int``). A plain line without metadata holds no object but itself
    and its anchors (four keys each): ``keys`` keys as parsed, fewer than the line has if one
    came twice. Each key the line has is followed by one colon, and by ``":`` unless white
    space comes between (:data:`_SPACED_KEY`); any other colon, or ``":``, is inside a string.
    So ``keys`` colons, or ``keys`` times ``":`` and no spaced key, prove that no key came
    twice. Metadata (any JSON) always goes the strict way.
    """
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if type(data) is not dict or "kind" in data or data.get("metadata"):
        return None
    query = _plain_query(data, line)
    if query is None:
        return None
    keys = len(data) + 4 * len(query.anchors)
    if text.count(":") == keys or (text.count('":') == keys and _SPACED_KEY.search(text) is None):
        return query
    return None


def _lines(handle: BinaryIO, path: Path) -> Iterator[tuple[int, str]]:
    """``(number, text)`` of the file's non-blank lines, as :func:`~spanchor_core._io.
    jsonl_lines` gives them: split at once from the whole file when it is UTF-8 and no longer
    than one line may be (then no line is too long and every line decodes), else from
    ``jsonl_lines`` itself, which words what is wrong at the line where it is."""
    limit = _io.MAX_LINE_BYTES
    raw = handle.read(limit + 1)
    if len(raw) <= limit:
        try:
            whole = raw.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            del raw
            if whole.startswith("\ufeff"):
                whole = whole[1:]
            for number, text in enumerate(whole.split("\n"), 1):
                text = text.strip()
                if text:
                    yield number, text
            return
    del raw
    for item in jsonl_lines(handle, path, error=GoldError, hint="save the gold set as UTF-8"):
        yield item.number, item.text


def read_gold(path: str | os.PathLike[str]) -> GoldSet:
    """Read a gold set: ours (header line first) or a spanchor 0.x gold file.

    The format is decided by the first non-blank line, never by the file name: a header
    with ``kind`` means ours, a query line with a 0.x ``schema_version`` means 0.x. A file
    with no non-blank lines is an empty gold set. Blank lines are skipped everywhere.
    Raises :class:`GoldError` naming path and line for anything it cannot read; see the
    module docs for what is left to :func:`validate_gold`.
    """
    source = Path(path)
    with open_for_reading(source, error=GoldError, what="gold set file") as handle:
        lines = _lines(handle, source)
        first = next(lines, None)
        if first is None:
            return GoldSet(path=source)
        number, text = first
        data = _parse_line(text, source, number)
        if "kind" in data:
            header = _read_header(data, source, number)
            collecting = gc.isenabled()
            gc.disable()  # tens of thousands of new objects, none cyclic: no collection passes
            try:
                queries = [
                    _fast_query(text, n) or _read_query(_parse_line(text, source, n), source, n)
                    for n, text in lines
                ]
            finally:
                if collecting:
                    gc.enable()
            return GoldSet(
                queries,
                path=source,
                description=header.description,
                corpus_fingerprint=header.corpus_fingerprint,
                metadata=header.metadata,
                file_format=f"{GOLD_KIND}/{GOLD_SCHEMA_VERSION}",
            )
        if isinstance(data.get("schema_version"), str):
            queries = [read_legacy_query(data, source, number)]
            queries.extend(
                read_legacy_query(_parse_line(text, source, n), source, n) for n, text in lines
            )
            return GoldSet(queries, path=source, file_format="spanchor-0.x")
    raise GoldError(
        "not a spanchor gold set: the first line has no 'kind'",
        path=source,
        line=number,
        hint=f"start the file with a header line such as "
        f'{{"kind": "{GOLD_KIND}", "schema_version": {GOLD_SCHEMA_VERSION}}}',
    )


def write_gold(gold: GoldSet | Iterable[GoldQuery], path: str | os.PathLike[str]) -> None:
    """Write ``gold`` as a gold set file, atomically.

    The file is written next to its destination, flushed and fsynced, then renamed over
    it, so a reader sees the old file or the new one, never half of one. Every query line
    is checked against the line model first: a gold set that could not be read back is
    not written. Output is deterministic (entries in order, keys in a fixed order).
    """
    target = Path(path)
    gold_set = gold if isinstance(gold, GoldSet) else GoldSet(gold)
    header: dict[str, Any] = {
        "kind": GOLD_KIND,
        "schema_version": GOLD_SCHEMA_VERSION,
        "spanchor_version": __version__,
    }
    if gold_set.description is not None:
        header["description"] = gold_set.description
    if gold_set.corpus_fingerprint is not None:
        header["corpus_fingerprint"] = gold_set.corpus_fingerprint
    if gold_set.metadata:
        header["metadata"] = dict(gold_set.metadata)
    try:
        GoldHeader.model_validate(header)
        chunks = [_encoded(header)]
    except (ValidationError, ValueError, TypeError) as err:
        raise GoldError(f"cannot write the header: {_detail(err)}", path=target) from None
    for index, query in enumerate(gold_set.entries):
        line = query_to_json(query)
        try:
            GoldQueryLine.model_validate(line)
            chunks.append(_encoded(line))
        except (ValidationError, ValueError, TypeError) as err:
            raise GoldError(
                f"cannot write query {query.query_id!r} (entry {index}): {_detail(err)}",
                path=target,
                hint="metadata must be JSON; anchor hashes must be sha256 hex",
            ) from None
    atomic_write(target, b"".join(chunks), error=GoldError, what="gold set")


def _encoded(line: dict[str, Any]) -> bytes:
    # UTF-8 cannot hold a lone surrogate: refused here, as the reader refuses its escape
    return (json.dumps(line, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def _detail(err: Exception) -> str:
    if isinstance(err, ValidationError):
        return describe_validation_error(err)
    if isinstance(err, UnicodeEncodeError):
        return f"a lone surrogate ({err.object[err.start]!r}) is not a character"
    return str(err)
