"""A one-file corpus whose texts stay in the file: :func:`open_corpus_file`, :class:`LazyCorpus`.

The driver of a sharded run needs every document's id and hash (the fingerprint, the gold
checks' "is this document there") but the text of only the documents it looks at (a gold
anchor's). :func:`open_corpus_file` streams a JSONL or Parquet corpus once, keeping per
document its id, hash, length and where its row starts, and reads a document again from the
file when its text is asked for: a few hundred bytes a document in memory instead of its
text. The documents are those :func:`~spanchor_core.corpus.load_corpus_file` reads — same
canonical text, hashes and fingerprint — and a row whose hash changed since the file was
opened is a :class:`~spanchor_core.errors.CorpusError` (the file was rewritten under us).
"""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spanchor_core._io import jsonl_lines, loads_strict
from spanchor_core.corpus.model import Corpus, Document
from spanchor_core.corpus.sources import CORPUS_FILE_SUFFIXES, FieldMap, _document, _rows
from spanchor_core.errors import CorpusError

__all__ = ["LazyCorpus", "fingerprint_of", "open_corpus_file"]

_KEEP = 32  # documents kept decoded (the gold anchors of one query usually share a few)

_Entry = tuple[str, int, int, int]
"""``(sha256, length, where, line)``: JSONL: byte offset of the row's line (after the
previous one) and its line number; Parquet: the row number (``line`` 0)."""


class _LazyDocuments(Mapping[str, Document]):
    """Documents by id, read from the file on access (a few kept decoded)."""

    def __init__(self, path: Path, fields: FieldMap, entries: dict[str, _Entry]) -> None:
        self.path = path
        self.fields = fields
        self.entries = {key: entries[key] for key in sorted(entries)}
        self._recent: OrderedDict[str, Document] = OrderedDict()
        self._groups: tuple[list[int], Any] | None = None  # Parquet: row-group starts, reader
        self._group: tuple[int, list[dict[str, Any]]] | None = None
        self.reads = 0  # rows read back (for tests and measurements)
        self.read_ids: set[str] = set()

    def __getitem__(self, document_id: str) -> Document:
        kept = self._recent.get(document_id)
        if kept is not None:
            self._recent.move_to_end(document_id)
            return kept
        sha, _, where, line = self.entries[document_id]
        try:
            doc: Document | None = self._read(where, line)
        except (CorpusError, OSError):  # the row is no longer there, or not whole
            doc = None
        self.reads += 1
        self.read_ids.add(document_id)
        if doc is None or doc.id != document_id or doc.sha256 != sha:
            raise CorpusError(
                f"document {document_id!r} changed since the corpus was opened",
                path=self.path,
                line=line or None,
                hint="do not rewrite a corpus file while it is being evaluated",
            )
        self._recent[document_id] = doc
        if len(self._recent) > _KEEP:
            self._recent.popitem(last=False)
        return doc

    def _read(self, where: int, line: int) -> Document:
        if self.path.suffix.lower() == ".jsonl":
            with self.path.open("rb") as handle:
                for found in jsonl_lines(
                    handle, self.path, error=CorpusError, offset=where, number=line
                ):
                    row = loads_strict(found.text, path=self.path, line=line, error=CorpusError)
                    return _document(row, self.fields, self.path, "", found.number)
            raise CorpusError("the corpus file got shorter", path=self.path, line=line)
        return self._parquet_row(where)

    def _parquet_row(self, row: int) -> Document:
        import pyarrow.parquet as pq  # type: ignore[import-untyped]  # opened before: installed

        if self._groups is None:
            reader = pq.ParquetFile(self.path)
            starts = [0]
            for i in range(reader.metadata.num_row_groups):
                starts.append(starts[-1] + reader.metadata.row_group(i).num_rows)
            self._groups = (starts, reader)
        starts, reader = self._groups
        group = next(i for i in range(len(starts) - 1) if starts[i] <= row < starts[i + 1])
        if self._group is None or self._group[0] != group:
            names = set(reader.schema_arrow.names)
            columns = [c for c in (self.fields.id, self.fields.text, self.fields.title) if c]
            table = reader.read_row_group(group, columns=[c for c in columns if c in names])
            self._group = (group, table.to_pylist())
        data = self._group[1][row - starts[group]]
        return _document(data, self.fields, self.path, f"row {row + 1}: ", None)

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, document_id: object) -> bool:
        return document_id in self.entries


@dataclass(frozen=True, slots=True, eq=False)
class LazyCorpus(Corpus):
    """A :class:`Corpus` whose texts are read from its file when asked for (module doc)."""

    def __post_init__(self) -> None:
        documents = self._documents
        if not isinstance(documents, _LazyDocuments):  # pragma: no cover - built by open only
            raise TypeError("LazyCorpus is built by open_corpus_file")
        object.__setattr__(
            self, "fingerprint", fingerprint_of((d, e[0]) for d, e in documents.entries.items())
        )

    @property
    def total_chars(self) -> int:
        return sum(e[1] for e in self._lazy.entries.values())

    @property
    def _lazy(self) -> _LazyDocuments:
        documents = self._documents
        assert isinstance(documents, _LazyDocuments)
        return documents

    def length(self, document_id: str) -> int:
        """The length of one document's canonical text, without reading it."""
        return self._lazy.entries[document_id][1]

    @property
    def reads(self) -> int:
        """How many times a document was read back from the file so far."""
        return self._lazy.reads

    @property
    def read_ids(self) -> frozenset[str]:
        """The documents read back from the file so far."""
        return frozenset(self._lazy.read_ids)


def fingerprint_of(pairs: Iterable[tuple[str, str]]) -> str:
    """:attr:`Corpus.fingerprint` of documents given as sorted ``(id, sha256)`` pairs."""
    digest = hashlib.sha256()
    for doc_id, sha in pairs:
        digest.update(doc_id.encode("utf-8"))
        digest.update(b"\0")
        digest.update(sha.encode("ascii"))
        digest.update(b"\n")
    return digest.hexdigest()


def open_corpus_file(
    path: str | os.PathLike[str],
    fields: FieldMap = FieldMap(),  # noqa: B008 - frozen, as in load_corpus_file
) -> LazyCorpus:
    """A JSONL or Parquet corpus with its texts left in the file (see the module docstring).

    The same checks as :func:`~spanchor_core.corpus.load_corpus_file` (bad rows, two rows
    with one id, no document) while the file is streamed once."""
    base = Path(path)
    if base.suffix.lower() not in CORPUS_FILE_SUFFIXES:
        raise CorpusError(
            "not a corpus file", path=base, hint="give a .jsonl or .parquet file or a directory"
        )
    entries: dict[str, _Entry] = {}
    rows: Iterator[tuple[Document, int, int, int | None]]
    if base.suffix.lower() == ".jsonl" and base.is_file():
        rows = _jsonl_entries(base, fields)
    else:
        rows = ((doc, row, 0, None) for row, (doc, _) in enumerate(_rows(base, fields, None)))
    for doc, where, number, line in rows:
        if doc.id in entries:
            raise CorpusError(
                f"a second document with the id {doc.id!r}",
                path=base,
                line=line,
                hint="give every document its own id",
            )
        entries[doc.id] = (doc.sha256, len(doc.text), where, number)
    if not entries:
        raise CorpusError("the corpus file holds no document", path=base)
    return LazyCorpus(_LazyDocuments(base, fields, entries), base)


def _jsonl_entries(path: Path, fields: FieldMap) -> Iterator[tuple[Document, int, int, int | None]]:
    """Each row's document, the byte offset its line is read from, and its line number."""
    try:
        handle = path.open("rb")
    except OSError as err:
        raise CorpusError(f"cannot read the corpus: {err.strerror or err}", path=path) from None
    with handle:
        previous = 0
        for line in jsonl_lines(handle, path, error=CorpusError, what="document"):
            row = loads_strict(line.text, path=path, line=line.number, error=CorpusError)
            yield _document(row, fields, path, "", line.number), previous, line.number, line.number
            previous = line.end
