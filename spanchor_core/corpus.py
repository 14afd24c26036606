"""Canonical source documents: loading, canonical text, hashes and the corpus fingerprint.

Canonical text is the only coordinate system spanchor uses: Unicode NFC, with ``\\r\\n`` and
lone ``\\r`` turned into ``\\n`` and nothing else changed. A leading byte-order mark in a file
is an encoding artefact, not text, and is dropped when the file is read.

Document ids: the path of the file relative to the corpus root, in POSIX form, without its
last suffix — ``guide/install.md`` is ``guide/install``. For files directly under the root
this is the file name without suffix, which is what spanchor 0.x uses, so 0.x gold sets
resolve against the same directory unchanged. Two files that would share an id
(``a.md`` and ``a.txt``) are an error, never a silent overwrite.
"""

from __future__ import annotations

import hashlib
import os
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from spanchor_core.errors import CorpusError
from spanchor_core.spans import DocSpan

__all__ = [
    "DEFAULT_GLOBS",
    "Corpus",
    "Document",
    "canonicalize",
    "document_id_for",
    "load_corpus",
    "sha256_text",
]

DEFAULT_GLOBS: tuple[str, ...] = ("*.txt", "*.md")


def canonicalize(text: str) -> str:
    """Return the canonical form of ``text``: newlines unified to ``\\n``, then NFC."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    return text


def sha256_text(text: str) -> str:
    """Hex sha256 of the UTF-8 bytes of ``text`` (callers pass canonical text)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Document:
    """One canonical document. ``path`` is where it was read from, if from a file."""

    id: str
    text: str
    sha256: str
    path: Path | None = None

    @classmethod
    def from_text(cls, document_id: str, text: str, path: Path | None = None) -> Document:
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


def document_id_for(relative: PurePosixPath) -> str:
    """The document id of a file at ``relative`` under the corpus root (see module doc)."""
    return str(relative.with_suffix("")) if relative.suffix else str(relative)


def _check_document_id(document_id: str) -> None:
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


def _is_hidden(relative: PurePosixPath) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as err:
        raise CorpusError(f"cannot read document: {err.strerror or err}", path=path) from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CorpusError(
            f"not valid UTF-8 at byte {err.start}",
            path=path,
            hint="convert the file to UTF-8 (e.g. iconv -t UTF-8)",
        ) from None


def _utf8_name(relative: PurePosixPath) -> bool:
    """Whether a name read from the file system (undecodable bytes become lone surrogates,
    ``os.fsdecode``'s surrogateescape) is text UTF-8 can hold, as a document id must be."""
    text = str(relative)
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _glob(root: Path, pattern: str) -> list[Path]:
    """``root.rglob(pattern)`` with a bad pattern or an unreadable tree as a CorpusError."""
    try:
        return list(root.rglob(pattern))
    except (ValueError, RecursionError) as err:  # "Invalid pattern", a pattern nested too deep
        message = str(err) if isinstance(err, ValueError) else "nested too deeply"
        raise CorpusError(
            f"glob {pattern[:80]!r} cannot be used: {message}",
            path=root,
            hint="use a file pattern such as '*.md'",
        ) from None
    except OSError as err:
        raise CorpusError(f"cannot list documents: {err.strerror or err}", path=root) from None


def _iter_files(root: Path, globs: Sequence[str]) -> Iterator[tuple[Path, PurePosixPath]]:
    real_root = root.resolve()
    seen: set[PurePosixPath] = set()
    for pattern in globs:
        if pattern.startswith("/") or ".." in PurePosixPath(pattern).parts:
            raise CorpusError(f"glob {pattern!r} reaches outside the corpus root")
        for path in sorted(_glob(root, pattern)):
            relative = PurePosixPath(path.relative_to(root).as_posix())
            if relative in seen or _is_hidden(relative) or not path.is_file():
                continue
            if not _utf8_name(relative):
                raise CorpusError(
                    "file name is not valid UTF-8",
                    path=path,
                    hint="rename the file (document ids are UTF-8 text)",
                )
            if not path.resolve().is_relative_to(real_root):
                raise CorpusError(
                    "symbolic link leads outside the corpus root",
                    path=path,
                    hint="copy the document into the corpus or remove the link",
                )
            seen.add(relative)
            yield path, relative


def load_corpus(root: str | os.PathLike[str], globs: Sequence[str] = DEFAULT_GLOBS) -> Corpus:
    """Load every matching file under ``root`` (recursively, hidden files skipped).

    ``globs`` are matched against file names at any depth (``rglob``). Raises
    :class:`CorpusError` for a missing root, a file that is not UTF-8 (naming the byte
    offset), two files with the same id, a link out of the root, or an empty corpus.
    """
    base = Path(root)
    try:
        base.stat()
    except FileNotFoundError:
        raise CorpusError("corpus directory does not exist", path=base) from None
    except (OSError, ValueError) as err:  # a name too long, a NUL byte, a link loop, no access
        message = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise CorpusError(f"cannot open the corpus directory: {message}", path=base) from None
    if not base.is_dir():
        raise CorpusError("corpus path is not a directory", path=base)
    documents: dict[str, Document] = {}
    sources: dict[str, Path] = {}
    for path, relative in _iter_files(base, globs):
        document_id = document_id_for(relative)
        if document_id in documents:
            raise CorpusError(
                f"{sources[document_id].name} and {path.name} would both get the "
                f"document id {document_id!r}",
                path=path,
                hint="rename one of them or narrow --glob",
            )
        documents[document_id] = Document.from_text(document_id, _read_text(path), path)
        sources[document_id] = path
    if not documents:
        raise CorpusError(
            f"no documents matching {', '.join(globs)}", path=base, hint="check the path or globs"
        )
    return Corpus(documents, base)
