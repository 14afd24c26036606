"""Documents and corpora in memory: :class:`Document`, :class:`Corpus`, and the rules for ids.

Document ids: the path of the file relative to the corpus root, in POSIX form, without its
last suffix — ``guide/install.md`` is ``guide/install``. For files directly under the root
this is the file name without suffix, which is what spanchor 0.x uses, so 0.x gold sets
resolve against the same directory unchanged. An id never points outside the corpus.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import cast

from spanchor_core.corpus.canonical import canonicalize, sha256_text
from spanchor_core.errors import CorpusError
from spanchor_core.spans import DocSpan

__all__ = ["Corpus", "Document", "document_id_for"]


@dataclass(frozen=True, slots=True)
class Document:
    """One canonical document. ``path`` is where it was read from, if from a file."""

    id: str
    text: str
    sha256: str
    path: Path | None = None

    @classmethod
    def from_text(cls, document_id: str, text: str, path: Path | None = None) -> Document:
        """Canonicalise ``text`` and hash it; a non-string id or text is a :class:`CorpusError`."""
        if not isinstance(document_id, str):
            raise CorpusError(f"a document id must be a string, got {document_id!r}")
        if not isinstance(text, str):
            raise CorpusError(
                f"document {document_id!r}: text must be a string, got {type(text).__name__}",
                hint="decode bytes to str first",
            )
        canonical = canonicalize(text)
        try:
            digest = sha256_text(canonical)
        except UnicodeEncodeError as err:  # only in-memory text can hold one: files are decoded
            code = ord(err.object[err.start])
            raise CorpusError(
                f"document {document_id!r} holds a lone surrogate U+{code:04X} "
                f"at character {err.start}, which UTF-8 cannot hold",
                path=path,
                hint="pass text decoded from UTF-8",
            ) from None
        return cls(document_id, canonical, digest, path)

    def __len__(self) -> int:
        return len(self.text)


class FoundAt(str):
    """A document's path as :func:`~spanchor_core.corpus.load_corpus` found it, kept as text:
    :attr:`Document.path` makes it a :class:`~pathlib.Path` the first time it is read (one
    ``Path`` costs about 7 us, a second of a 100,000-file corpus, and most are never read)."""

    __slots__ = ()


def _install_lazy_path() -> None:
    """Put a property over the ``path`` slot of :class:`Document` that turns a stored
    :class:`FoundAt` into the ``Path`` it names (kept), so the field reads, compares, hashes,
    pickles and prints as a ``Path`` as before; any other value is stored and read as given."""
    slot = Document.__dict__["path"]

    def get(self: Document) -> Path | None:
        value = slot.__get__(self, Document)
        if type(value) is FoundAt:
            value = Path(value)
            slot.__set__(self, value)  # the frozen instance's own field, as __init__ sets it
        return cast("Path | None", value)

    def set_(self: Document, value: Path | None) -> None:  # reached by __init__ only
        slot.__set__(self, value)

    # not an assignment: type checkers keep seeing the field ``path: Path | None``
    setattr(Document, "path", property(get, set_, doc="Where the document was read from."))  # noqa: B010


_install_lazy_path()


def found_at(path: str) -> Path:
    """``path`` as the value of :attr:`Document.path` that becomes ``Path(path)`` when read."""
    return cast(Path, FoundAt(path))


def document_id_for(relative: PurePosixPath) -> str:
    """The document id of a file at ``relative`` under the corpus root (see module doc)."""
    return str(relative.with_suffix("")) if relative.suffix else str(relative)


def _check_document_id(document_id: str) -> None:
    if not isinstance(document_id, str):
        raise CorpusError(f"a document id must be a string, got {document_id!r}")
    if not document_id.isascii():
        try:
            document_id.encode("utf-8")
        except UnicodeEncodeError:
            raise CorpusError(
                f"document id {document_id!r} holds a lone surrogate, which UTF-8 cannot hold",
                hint="use an id UTF-8 can hold",
            ) from None
    parts = PurePosixPath(document_id).parts
    if not document_id or document_id.startswith("/") or ".." in parts or "\\" in document_id:
        raise CorpusError(
            f"document id {document_id!r} points outside the corpus",
            hint="use a path relative to the corpus root without '..'",
        )


@dataclass(frozen=True, slots=True, eq=False)
class Corpus(Mapping[str, Document]):
    """Canonical documents by id, iterated in sorted id order.

    Sorted order makes everything derived from a corpus (fingerprints, tie-breaking between
    equal matches) independent of the order the documents were loaded in.
    """

    _documents: Mapping[str, Document]
    root: Path | None = None
    fingerprint: str = field(init=False)

    def __post_init__(self) -> None:
        ordered = {key: self._documents[key] for key in sorted(self._documents)}
        object.__setattr__(self, "_documents", ordered)
        digest = hashlib.sha256()
        for doc in ordered.values():
            digest.update(doc.id.encode("utf-8"))
            digest.update(b"\0")
            digest.update(doc.sha256.encode("ascii"))
            digest.update(b"\n")
        object.__setattr__(self, "fingerprint", digest.hexdigest())

    @classmethod
    def from_texts(cls, texts: Mapping[str, str]) -> Corpus:
        """Build a corpus from in-memory ``{document_id: text}``; texts are canonicalised."""
        docs: dict[str, Document] = {}
        for document_id, text in texts.items():
            _check_document_id(document_id)
            docs[document_id] = Document.from_text(document_id, text)
        return cls(docs)

    @classmethod
    def from_documents(cls, documents: Iterable[Document], root: Path | None = None) -> Corpus:
        docs: dict[str, Document] = {}
        for doc in documents:
            if doc.id in docs:
                raise CorpusError(f"two documents share the id {doc.id!r}")
            docs[doc.id] = doc
        return cls(docs, root)

    def __getitem__(self, document_id: str) -> Document:
        return self._documents[document_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._documents)

    def __len__(self) -> int:
        return len(self._documents)

    def __repr__(self) -> str:
        return f"Corpus({len(self)} documents, {self.total_chars} chars, {self.fingerprint[:12]})"

    @property
    def total_chars(self) -> int:
        return sum(len(doc.text) for doc in self._documents.values())

    def text(self, document_id: str) -> str:
        """Canonical text of one document."""
        return self._documents[document_id].text

    def find_all(self, text: str, document_id: str | None = None) -> list[DocSpan]:
        """Every occurrence of ``text`` (canonicalised first), in document id then offset order.

        A direct scan, linear in the corpus: right for one lookup, such as authoring an
        anchor. Mapping many retrieved chunks goes through :class:`spanchor_core.Locator`,
        which indexes the corpus once.
        """
        needle = canonicalize(text)
        if not needle:
            return []
        ids: Sequence[str] = list(self) if document_id is None else [document_id]
        found: list[DocSpan] = []
        for doc_id in ids:
            haystack = self._documents[doc_id].text
            pos = haystack.find(needle)
            while pos != -1:
                found.append(DocSpan(doc_id, pos, pos + len(needle)))
                pos = haystack.find(needle, pos + 1)
        return found
