"""The chunk inventory file (``kind: spanchor.chunks``): JSONL, a header line, one chunk a line.

::

    {"kind": "spanchor.chunks", "schema_version": 1, "spanchor_version": "...",
     "created_at": "2026-01-01T00:00:00.000Z", "description": "...", "parameters": {...},
     "corpus_fingerprint": "..." | null, "tags": {...}}
    {"chunk_id": "c1" | null, "text": "..." | null, "document_id": null, "start": null,
     "end": null, "metadata": {}}

Chunks are stored as the index holds them (offsets are hints), not as mapped: mapping is
:func:`~spanchor_core.diagnosis.inventory.map_inventory`'s job, at load time. Reading is
strict: every problem is a :class:`~spanchor_core.diagnosis.inventory.ChunkInventoryError`
with ``path:line``. Files are written whole with :func:`~spanchor_core._io.atomic_write`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from spanchor_core._io import atomic_write, describe_validation_error, loads_strict
from spanchor_core._version import __version__
from spanchor_core.corpus import Corpus
from spanchor_core.diagnosis.inventory import (
    Chunk,
    ChunkInventory,
    ChunkInventoryError,
    MissingChunkInventory,
    check_chunk,
    map_inventory,
)
from spanchor_core.locate import Locator
from spanchor_core.runs.file_models import check_timestamp, utc_now

__all__ = [
    "CHUNKS_KIND",
    "CHUNKS_SCHEMA_VERSION",
    "INVENTORY_TAG",
    "ChunkFile",
    "ChunkLine",
    "ChunksHeader",
    "chunk_file_schemas",
    "inventory_path",
    "load_inventory",
    "read_chunks",
    "write_chunks",
]

CHUNKS_KIND: Final = "spanchor.chunks"
CHUNKS_SCHEMA_VERSION: Final = 1

INVENTORY_TAG: Final = "spanchor.chunks"
"""Run header tag naming the chunk inventory of the run's index: a path, relative to the run
file's folder unless absolute (``RunRecorder(..., tags={INVENTORY_TAG: "chunks/w200.jsonl"})``).
The gate then splits each recall@K change into its chunking and ranking parts."""


class ChunksHeader(BaseModel):
    """The first line of a chunk inventory file: what index the chunks are from."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    kind: Literal["spanchor.chunks"] = CHUNKS_KIND
    schema_version: Literal[1] = CHUNKS_SCHEMA_VERSION
    spanchor_version: str = Field(default_factory=lambda: __version__)
    created_at: str = Field(default_factory=utc_now)
    description: str = ""
    """The chunker or index, in words (``"400-char windows, overlap 200"``)."""
    parameters: dict[str, Any] = Field(default_factory=dict)
    corpus_fingerprint: str | None = None
    tags: dict[str, Any] = Field(default_factory=dict)

    @field_validator("created_at", mode="after")
    @classmethod
    def _iso_8601_with_zone(cls, value: str) -> str:
        return check_timestamp(value)


class ChunkLine(BaseModel):
    """One chunk line (every line after the header)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    chunk_id: str | None = None
    text: str | None
    document_id: str | None = None
    start: int | None = Field(default=None, ge=0)
    end: int | None = Field(default=None, ge=0)
    metadata: dict[str, Any] = Field(default_factory=dict)


def chunk_file_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schemas of the two line types, keyed by file name (for the schema generator)."""
    return {
        "spanchor.chunks.header.schema.json": ChunksHeader.model_json_schema(),
        "spanchor.chunks.chunk.schema.json": ChunkLine.model_json_schema(),
    }


@dataclass(frozen=True, slots=True)
class ChunkFile:
    """A chunk inventory file as read: its header and its chunks in file order."""

    header: ChunksHeader
    chunks: tuple[Chunk, ...]
    path: Path | None = None


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))


def _lines(header: ChunksHeader, chunks: Iterable[Chunk]) -> Iterator[str]:
    yield _dumps(header.model_dump(mode="json")) + "\n"
    for chunk in chunks:
        line = {
            "chunk_id": chunk.chunk_id,
            "text": chunk.text,
            "document_id": chunk.document_id,
            "start": chunk.start,
            "end": chunk.end,
            "metadata": dict(chunk.metadata),
        }
        yield _dumps(line) + "\n"  # allow_nan=False: NaN metadata is refused, not nulled


def write_chunks(
    chunks: Iterable[Chunk] | ChunkInventory,
    path: str | os.PathLike[str],
    *,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    corpus_fingerprint: str | None = None,
    tags: Mapping[str, Any] | None = None,
    created_at: str | None = None,
) -> None:
    """Write a chunk inventory file atomically (all or nothing).

    An :class:`ChunkInventory` gives its chunks, and its description, parameters and corpus
    fingerprint unless they are passed. Metadata must be JSON data (no NaN).
    """
    if isinstance(chunks, ChunkInventory):
        inventory = chunks
        items: list[Chunk] = [item.chunk for item in inventory]
        description = inventory.description if description is None else description
        parameters = inventory.parameters if parameters is None else parameters
        corpus_fingerprint = corpus_fingerprint or inventory.corpus_fingerprint
    else:
        items = [check_chunk(chunk) for chunk in chunks]
    try:
        header = ChunksHeader(
            description=description or "",
            parameters=json.loads(_dumps(dict(parameters or {}))),
            corpus_fingerprint=corpus_fingerprint,
            tags=json.loads(_dumps(dict(tags or {}))),
            created_at=created_at or utc_now(),
        )
        text = "".join(_lines(header, items))
    except ValidationError as err:
        raise ChunkInventoryError(describe_validation_error(err), path=path) from None
    except (TypeError, ValueError) as err:  # metadata that JSON cannot hold
        raise ChunkInventoryError(f"cannot write chunk metadata: {err}", path=path) from None
    atomic_write(path, text, error=ChunkInventoryError, what="chunk inventory")


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise ChunkInventoryError(f"cannot read: {err.strerror or err}", path=path) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ChunkInventoryError(
            f"not UTF-8 (byte {err.start})", path=path, line=raw.count(b"\n", 0, err.start) + 1
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


def _header(obj: Any, path: Path, line: int) -> ChunksHeader:
    if not isinstance(obj, dict):
        raise ChunkInventoryError(
            f"expected a JSON object, got {type(obj).__name__}", path=path, line=line
        )
    kind = obj.get("kind")
    if kind != CHUNKS_KIND:
        what = f"kind {kind!r}" if kind is not None else "no 'kind'"
        raise ChunkInventoryError(
            f"not a chunk inventory ({what}); expected kind {CHUNKS_KIND!r}",
            path=path,
            line=line,
            hint="write one with spanchor_core.diagnosis.write_chunks",
        )
    if obj.get("schema_version") != CHUNKS_SCHEMA_VERSION:
        raise ChunkInventoryError(
            f"unsupported schema_version {obj.get('schema_version')!r}; this spanchor reads "
            f"{CHUNKS_SCHEMA_VERSION}",
            path=path,
            line=line,
        )
    try:
        return ChunksHeader.model_validate(obj)
    except ValidationError as err:
        raise ChunkInventoryError(describe_validation_error(err), path=path, line=line) from None


def _chunk(obj: Any, path: Path, line: int) -> Chunk:
    if not isinstance(obj, dict):
        raise ChunkInventoryError(
            f"expected a JSON object, got {type(obj).__name__}", path=path, line=line
        )
    try:
        model = ChunkLine.model_validate(obj)
    except ValidationError as err:
        raise ChunkInventoryError(describe_validation_error(err), path=path, line=line) from None
    chunk = Chunk(
        model.text, model.document_id, model.start, model.end, model.chunk_id, model.metadata
    )
    try:
        return check_chunk(chunk)
    except ChunkInventoryError as err:
        raise ChunkInventoryError(err.message, path=path, line=line, hint=err.hint) from None


def read_chunks(path: str | os.PathLike[str]) -> ChunkFile:
    """Read a chunk inventory file strictly: header first, one chunk a line, blank lines skipped.

    Raises :class:`ChunkInventoryError` with ``path:line`` for an unreadable or non-UTF-8 file,
    bad JSON (``NaN``, duplicate keys included), a missing or foreign header, unknown or
    mistyped fields, impossible offsets and chunk ids that repeat.
    """
    file = Path(path)
    header: ChunksHeader | None = None
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    for number, text in enumerate(_read_text(file).split("\n"), start=1):
        if not text.strip():
            continue
        obj = loads_strict(text, path=file, line=number, error=ChunkInventoryError)
        if header is None:
            header = _header(obj, file, number)
            continue
        chunk = _chunk(obj, file, number)
        if chunk.chunk_id is not None:
            first = seen.setdefault(chunk.chunk_id, number)
            if first != number:
                raise ChunkInventoryError(
                    f"chunk id {chunk.chunk_id!r} already appears on line {first}",
                    path=file,
                    line=number,
                )
        chunks.append(chunk)
    if header is None:
        raise ChunkInventoryError(
            "empty file", path=file, hint="expected a spanchor.chunks header line, then chunks"
        )
    return ChunkFile(header, tuple(chunks), file)


def load_inventory(
    path: str | os.PathLike[str], corpus: Corpus, *, locator: Locator | None = None
) -> ChunkInventory:
    """Read a chunk inventory file and map its chunks onto ``corpus``.

    A file that records another corpus fingerprint is refused: its offsets and texts were
    taken from other documents.
    """
    found = read_chunks(path)
    recorded = found.header.corpus_fingerprint
    if recorded is not None and recorded != corpus.fingerprint:
        raise ChunkInventoryError(
            f"the chunks were taken from another corpus (fingerprint {recorded[:12]}…, these "
            f"documents are {corpus.fingerprint[:12]}…)",
            path=found.path,
            line=1,
            hint="rebuild the inventory from the index over these documents",
        )
    return map_inventory(
        corpus,
        found.chunks,
        locator=locator,
        description=found.header.description,
        parameters=found.header.parameters,
    )


def inventory_path(
    run_header: Mapping[str, Any] | None, source: str | os.PathLike[str]
) -> Path | None:
    """The chunk inventory a run header points to (tag :data:`INVENTORY_TAG`), or ``None``.

    A relative path is taken relative to the folder of ``source``, the run (or evaluation)
    file the header was read from. A tag that is not a non-empty string is an error, and so is
    a path that does not exist: the user asked for an inventory.
    """
    if not run_header:
        return None
    tags = run_header.get("tags")
    if not isinstance(tags, Mapping) or INVENTORY_TAG not in tags:
        return None
    value = tags[INVENTORY_TAG]
    if not isinstance(value, str) or not value:
        raise ChunkInventoryError(
            f"run header tag {INVENTORY_TAG!r} must be a path, got {value!r}",
            path=source,
            line=1,
        )
    target = Path(value)
    if not target.is_absolute():
        target = Path(source).parent / target
    if not target.is_file():
        raise MissingChunkInventory(
            f"the run header points to the chunk inventory {value!r}, which does not exist "
            f"({target})",
            path=source,
            line=1,
            hint=f"write it (diagnosis.write_chunks) or drop the {INVENTORY_TAG!r} tag",
        )
    return target
