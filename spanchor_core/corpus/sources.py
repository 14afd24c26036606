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
the whole corpus. pyarrow is imported only when a Parquet file is read.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spanchor_core._io import jsonl_lines, loads_strict
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


def _jsonl_rows(path: Path, fields: FieldMap) -> Iterator[tuple[Document, int | None]]:
    try:
        handle = path.open("rb")
    except OSError as err:
        raise CorpusError(f"cannot read the corpus: {err.strerror or err}", path=path) from None
    with handle:
        for line in jsonl_lines(handle, path, error=CorpusError, what="document"):
            row = loads_strict(line.text, path=path, line=line.number, error=CorpusError)
            yield _document(row, fields, path, "", line.number), line.number


def _parquet_rows(path: Path, fields: FieldMap) -> Iterator[tuple[Document, int | None]]:
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
        for row in batch.to_pylist():
            row_number += 1
            yield _document(row, fields, path, f"row {row_number}: ", None), None


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
    rows = _jsonl_rows(path, fields) if suffix == ".jsonl" else _parquet_rows(path, fields)
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
