"""Loading a corpus from a directory of UTF-8 files: :func:`load_corpus`.

Files are matched by glob at any depth, hidden files skipped; a leading byte-order mark is
dropped by :func:`~spanchor_core.corpus.canonicalize`, the one place that rule lives. Two files
that would share an id (``a.md`` and ``a.txt``) are an error, never a silent overwrite, and so
is a link that leads out of the root.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath

from spanchor_core.corpus.model import Corpus, Document, document_id_for
from spanchor_core.corpus.sources import is_corpus_file, load_corpus_file
from spanchor_core.errors import CorpusError

__all__ = ["DEFAULT_GLOBS", "load_corpus"]

DEFAULT_GLOBS: tuple[str, ...] = ("*.txt", "*.md")


def _is_hidden(parts: tuple[str, ...]) -> bool:
    return any(part.startswith(".") for part in parts)


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as err:
        raise CorpusError(f"cannot read document: {err.strerror or err}", path=path) from None
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
    depth = len(root.parts)
    seen: set[tuple[str, ...]] = set()  # relative parts: cheaper to hash than paths
    for pattern in globs:
        parts = PurePosixPath(pattern).parts
        if pattern.startswith("/") or ".." in parts:
            raise CorpusError(f"glob {pattern!r} reaches outside the corpus root")
        # rglob never descends into a linked directory, so with a one-part pattern only the
        # file itself can be a link: every other file resolves inside the root (one lstat)
        one_part = len(parts) == 1
        for path in sorted(_glob(root, pattern), key=_sort_key):
            key = path.parts[depth:]
            if key in seen or _is_hidden(key):
                continue
            is_file, is_link = _file_kind(path, one_part)
            if not is_file:
                continue
            relative = PurePosixPath(*key)
            if not _utf8_name(relative):
                raise CorpusError(
                    "file name is not valid UTF-8",
                    path=path,
                    hint="rename the file (document ids are UTF-8 text)",
                )
            if is_link and not path.resolve().is_relative_to(real_root):
                raise CorpusError(
                    "symbolic link leads outside the corpus root",
                    path=path,
                    hint="copy the document into the corpus or remove the link",
                )
            seen.add(key)
            yield path, relative


def _sort_key(path: Path) -> tuple[str, ...]:
    """The order of ``sorted(paths)`` (``Path`` compares its parts), without ``Path.__lt__``."""
    return path.parts


def _file_kind(path: Path, one_part: bool) -> tuple[bool, bool]:
    """``path.is_file()``, and whether the path may lead outside the root (a link, or any
    path of a many-part pattern, whose directories may be links): one ``lstat`` per file."""
    if not one_part:
        return path.is_file(), True
    try:
        mode = os.lstat(path).st_mode
    except (OSError, ValueError):
        return path.is_file(), True  # the same answer or the same error as before
    if stat.S_ISLNK(mode):
        return path.is_file(), True
    return stat.S_ISREG(mode), False


def load_corpus(root: str | os.PathLike[str], globs: Sequence[str] = DEFAULT_GLOBS) -> Corpus:
    """Load every matching file under ``root`` (recursively, hidden files skipped).

    ``globs`` are matched against file names at any depth (``rglob``). Raises
    :class:`CorpusError` for a missing root, a file that is not UTF-8 (naming the byte
    offset), two files with the same id, a link out of the root, or an empty corpus.
    A ``.jsonl`` or ``.parquet`` path is read as a one-file corpus in the BEIR layout
    (:func:`~spanchor_core.corpus.sources.load_corpus_file`; ``globs`` do not apply).
    """
    base = Path(root)
    if is_corpus_file(base) and not base.is_dir():
        return load_corpus_file(base)
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
