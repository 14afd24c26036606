"""Corpora kept in one file: JSONL and Parquet in the BEIR layout, read as a stream.

BEIR keeps a corpus as ``corpus.jsonl``, one object per document with ``_id``, ``title`` and
``text``; Parquet exports of the same data keep the same columns. :class:`FieldMap` names the
fields when a corpus uses others. Each row becomes one :class:`~spanchor_core.corpus.Document`,
canonicalised by the same :func:`~spanchor_core.corpus.canonicalize` as a file of a directory,
so a document has the same text, hash and offsets wherever it was read from.

**The title.** A non-empty title is part of the document: its text is ``title + "\\n\\n" +
text`` (a blank line, the paragraph break every chunker splits on), so a retriever that indexed
the title with the body finds its chunks in the document. An empty or missing title adds
nothing, and ``FieldMap(title=None)`` leaves titles out. Offsets count from the start of that
joined text.

Rows are read one at a time (Parquet: one record batch at a time); ``shard=(i, n)`` keeps only
the documents of shard ``i`` of ``n`` (:func:`shard_of`), so a worker holds its shard and never
the whole corpus. A row of another shard is passed over by its id alone — a JSONL line that
opens with its id is neither decoded nor parsed, a Parquet row's text is never converted — so
that each of ``n`` shards does not canonicalise and hash the whole corpus (98 MB: 0.76 s CPU
per shard of 4 before, 0.34 s after); the driver's reading of the whole file still checks
every row. pyarrow is imported only when a Parquet file is read.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from spanchor_core._io import BOM, MAX_LINE_BYTES, JsonlLine, jsonl_lines, loads_strict
from spanchor_core.corpus.model import Corpus, Document
from spanchor_core.corpus.model import _check_document_id as check_document_id
from spanchor_core.errors import CorpusError

__all__ = [
    "CORPUS_FILE_SUFFIXES",
    "FieldMap",
    "is_corpus_file",
    "iter_corpus_file",
    "load_corpus_file",
    "shard_of",
]

CORPUS_FILE_SUFFIXES: frozenset[str] = frozenset({".jsonl", ".parquet"})
"""File suffixes read as one-file corpora instead of a directory."""

TITLE_SEPARATOR = "\n\n"
"""Between a non-empty title and the text of its document."""


@dataclass(frozen=True, slots=True)
class FieldMap:
    """Which field of a row holds the id, the text and the title (None: no title)."""

    id: str = "_id"
    text: str = "text"
    title: str | None = "title"


def is_corpus_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a JSONL or Parquet corpus (by suffix; the path need not exist)."""
    return Path(path).suffix.lower() in CORPUS_FILE_SUFFIXES


def shard_of(document_id: str, shards: int) -> int:
    """The shard (``0 .. shards-1``) a document belongs to: a stable hash of its id.

    The same in every process and on every run, independent of the order of the rows.
    """
    if shards <= 1:
        return 0
    digest = hashlib.blake2b(document_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


def _document(row: Any, fields: FieldMap, path: Path, where: str, line: int | None) -> Document:
    if not isinstance(row, dict):
        raise CorpusError(
            f"{where}is not an object", path=path, line=line, hint="write one JSON object a line"
        )
    raw_id = row.get(fields.id)
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
        found = "missing" if raw_id is None else f"not a string: {raw_id!r}"[:80]
        raise CorpusError(
            f"{where}document id field {fields.id!r} is {found}",
            path=path,
            line=line,
            hint="give every document an id, or name the id field (FieldMap(id=...))",
        )
    document_id = str(raw_id)
    text = row.get(fields.text)
    if not isinstance(text, str):
        found = "missing" if text is None else f"a {type(text).__name__}, not a string"
        raise CorpusError(
            f"{where}text field {fields.text!r} of document {document_id!r} is {found}",
            path=path,
            line=line,
            hint="give every document its text, or name the text field (FieldMap(text=...))",
        )
    title = row.get(fields.title) if fields.title is not None else None
    if title is not None and not isinstance(title, str):
        raise CorpusError(
            f"{where}title field {fields.title!r} of document {document_id!r} is not a string",
            path=path,
            line=line,
            hint="make titles strings, or leave them out (FieldMap(title=None))",
        )
    try:
        check_document_id(document_id)
    except CorpusError as err:
        raise CorpusError(f"{where}{err.message}", path=path, line=line, hint=err.hint) from None
    if title:
        text = title + TITLE_SEPARATOR + text
    return Document.from_text(document_id, text, path)


def _jsonl_rows(
    path: Path, fields: FieldMap, shard: tuple[int, int] | None = None
) -> Iterator[tuple[Document, int | None]]:
    try:
        handle = path.open("rb")
    except OSError as err:
        raise CorpusError(f"cannot read the corpus: {err.strerror or err}", path=path) from None
    with handle:
        lines = (
            jsonl_lines(handle, path, error=CorpusError, what="document")
            if shard is None or shard[1] <= 1
            else _shard_lines(handle, path, fields, shard)
        )
        for line in lines:
            row = loads_strict(line.text, path=path, line=line.number, error=CorpusError)
            yield _document(row, fields, path, "", line.number), line.number


_PLAIN_FIELD = re.compile(r"[A-Za-z0-9_.\- ]+")
"""An id field name written as itself inside a JSON key (no escape can spell it otherwise)."""


def _shard_lines(
    handle: BinaryIO, path: Path, fields: FieldMap, shard: tuple[int, int]
) -> Iterator[JsonlLine]:
    """:func:`~spanchor_core._io.jsonl_lines` for one shard: a line that opens with its id
    (``{"_id": "..."`` with no escape in the id, as BEIR files are written) whose document is
    in another shard is passed over undecoded and unparsed — most of a shard's reading of a
    large corpus; every other line is read by the strict rules, as without a shard.

    Rows of other shards are thus checked only as far as their id: the driver's own reading
    of the whole file checks them, and the shards' fingerprints together must be the
    corpus's (:meth:`~spanchor_core.distributed.RayLocator.catalog`)."""
    mine, shards = shard
    opening = None
    if _PLAIN_FIELD.fullmatch(fields.id):
        key = re.escape(fields.id.encode("ascii"))
        opening = re.compile(
            rb'[ \t\r]*\{[ \t\r]*"' + key + rb'"[ \t\r]*:[ \t\r]*"([^"\\\x00-\x1f]*)"'
        )
    offset, number = 0, 1
    while True:
        raw = handle.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        found = None
        if opening is not None and raw.endswith(b"\n"):
            found = opening.match(raw, 3 if offset == 0 and raw.startswith(BOM) else 0)
        if found is not None:
            try:
                document_id = found.group(1).decode("utf-8")
            except UnicodeDecodeError:
                document_id = None  # the strict reading words it
            if document_id is not None and shard_of(document_id, shards) != mine:
                offset += len(raw)
                number += 1
                continue
        # this line by the strict rules (a blank one yields nothing; a long one raises)
        strict = jsonl_lines(
            handle, path, error=CorpusError, what="document", offset=offset, number=number
        )
        line = next(strict, None)
        if line is not None and line.number == number:
            yield line
        del strict
        offset += len(raw)
        number += 1
        handle.seek(offset)


def _parquet_rows(
    path: Path, fields: FieldMap, shard: tuple[int, int] | None = None
) -> Iterator[tuple[Document, int | None]]:
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped]  # optional, and heavy: only when needed
    except ImportError:
        raise CorpusError(
            "reading a Parquet corpus needs pyarrow",
            path=path,
            hint="pip install 'spanchor[parquet]'",
        ) from None
    try:
        reader = pq.ParquetFile(path)
    except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
        raise CorpusError(f"not a readable Parquet file: {err}"[:300], path=path) from None
    names = set(reader.schema_arrow.names)
    for needed in (fields.id, fields.text):
        if needed not in names:
            raise CorpusError(
                f"no column {needed!r} (columns: {', '.join(sorted(names))[:200]})",
                path=path,
                hint="name the id and text columns (FieldMap(id=..., text=...))",
            )
    columns = [fields.id, fields.text]
    if fields.title is not None and fields.title in names:
        columns.append(fields.title)
    row_number = 0
    for batch in reader.iter_batches(batch_size=1024, columns=columns):
        numbers: Sequence[int] = range(row_number + 1, row_number + 1 + batch.num_rows)
        row_number += batch.num_rows
        if shard is not None and shard[1] > 1:
            # rows of other shards by their id alone: their texts are never converted
            ids = batch.column(fields.id).to_pylist()
            kept = [j for j, value in enumerate(ids) if not _elsewhere(value, shard)]
            if len(kept) < len(ids):
                batch = batch.take(kept)
                numbers = [numbers[j] for j in kept]
        for number, row in zip(numbers, batch.to_pylist(), strict=True):
            yield _document(row, fields, path, f"row {number}: ", None), None


def _elsewhere(value: object, shard: tuple[int, int]) -> bool:
    """Whether a row whose id field holds ``value`` surely belongs to another shard (an id
    that is no string or int is kept, for the strict reading to word)."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return False
    return shard_of(str(value), shard[1]) != shard[0]


def _rows(
    path: Path, fields: FieldMap, shard: tuple[int, int] | None
) -> Iterator[tuple[Document, int | None]]:
    suffix = path.suffix.lower()
    if suffix not in CORPUS_FILE_SUFFIXES:
        raise CorpusError(
            "not a corpus file", path=path, hint="give a .jsonl or .parquet file or a directory"
        )
    if not path.is_file():
        raise CorpusError("corpus file does not exist", path=path)
    rows = (
        _jsonl_rows(path, fields, shard)
        if suffix == ".jsonl"
        else _parquet_rows(path, fields, shard)
    )
    for doc, line in rows:
        if shard is None or shard_of(doc.id, shard[1]) == shard[0]:
            yield doc, line


def iter_corpus_file(
    path: str | os.PathLike[str],
    fields: FieldMap = FieldMap(),
    *,
    shard: tuple[int, int] | None = None,
) -> Iterator[Document]:
    """The documents of a JSONL or Parquet corpus, in file order, one at a time.

    ``shard=(i, n)`` yields only the documents :func:`shard_of` puts in shard ``i``. Bad rows
    raise :class:`CorpusError` at ``path:line`` (Parquet: ``row N``).
    """
    for doc, _ in _rows(Path(path), fields, shard):
        yield doc


def load_corpus_file(
    path: str | os.PathLike[str],
    fields: FieldMap = FieldMap(),
    *,
    shard: tuple[int, int] | None = None,
) -> Corpus:
    """A JSONL or Parquet corpus in memory (or one shard of it, see :func:`iter_corpus_file`).

    Two rows with one id are a :class:`CorpusError`, never a silent overwrite; so is a file
    without a document. The fingerprint is that of the same documents read from anywhere
    (a shard has the fingerprint of its own documents).
    """
    base = Path(path)
    documents: dict[str, Document] = {}
    for doc, line in _rows(base, fields, shard):
        if doc.id in documents:
            raise CorpusError(
                f"a second document with the id {doc.id!r}",
                path=base,
                line=line,
                hint="give every document its own id",
            )
        documents[doc.id] = doc
    if not documents and shard is None:
        raise CorpusError("the corpus file holds no document", path=base)
    return Corpus(documents, base)
