"""Loading a corpus from a directory of UTF-8 files: :func:`load_corpus`.

Files are matched by glob at any depth, hidden files skipped; a leading byte-order mark is
dropped by :func:`~spanchor_core.corpus.canonicalize`, the one place that rule lives. Two files
that would share an id (``a.md`` and ``a.txt``) are an error, never a silent overwrite, and so
is a link that leads out of the root.
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import Final

from spanchor_core.corpus.canonical import canonicalize
from spanchor_core.corpus.model import Corpus, Document, document_id_for, found_at
from spanchor_core.corpus.sources import is_corpus_file, load_corpus_file
from spanchor_core.errors import CorpusError

__all__ = ["DEFAULT_GLOBS", "load_corpus"]

DEFAULT_GLOBS: tuple[str, ...] = ("*.txt", "*.md")
_READ_FLAGS: Final = os.O_RDONLY | getattr(os, "O_BINARY", 0)
_READ_BLOCK: Final = 1 << 20
_FIRST_READ: Final = 1 << 16  # most documents fit; a larger one is sized by fstat
_READV: Final = getattr(os, "readv", None)  # POSIX: read into a buffer kept across files


def _is_hidden(parts: tuple[str, ...]) -> bool:
    return any(part.startswith(".") for part in parts)


def _read_bytes(path: str | Path, buffer: bytearray) -> bytes | memoryview:
    """The bytes of the file at ``path``, read to its end: a view of ``buffer`` (good until
    the next read into it) when the file fits, else bytes.

    Through ``os.open``/``os.readv`` into the caller's buffer rather than a buffered file
    object, and without an ``fstat`` to size the read: one read holds a whole small file, and
    a second, empty one says it ended (four system calls, no bytes object: a 64 KiB one per
    file, cut to size, left the heap 40 MB larger for 100,000 small files). A larger file is
    sized by ``fstat`` and read on; one that grows meanwhile is read to its end.
    """
    try:
        fd = os.open(path, _READ_FLAGS)
        try:
            if _READV is not None:
                size = _READV(fd, [buffer])
                first: bytes | bytearray = buffer
            else:  # pragma: no cover - Windows
                first = os.read(fd, len(buffer))
                size = len(first)
            if size == len(buffer):
                more = os.read(fd, max(os.fstat(fd).st_size - size, 0) + 1)
            else:
                more = os.read(fd, _READ_BLOCK) if size else b""
            if not more:
                return memoryview(first)[:size]
            chunks = [bytes(first[:size]), more]
            while more:
                more = os.read(fd, _READ_BLOCK)
                chunks.append(more)
            return b"".join(chunks)
        finally:
            os.close(fd)
    except OSError as err:
        raise CorpusError(f"cannot read document: {err.strerror or err}", path=path) from None


def _decode(data: bytes | memoryview, path: str | Path) -> str:
    try:
        return str(data, "utf-8")
    except UnicodeDecodeError as err:
        raise CorpusError(
            f"not valid UTF-8 at byte {err.start}",
            path=path,
            hint="convert the file to UTF-8 (e.g. iconv -t UTF-8)",
        ) from None


def _load_document(document_id: str, path: str | Path, buffer: bytearray) -> Document:
    """:meth:`Document.from_text` of the file's text, hashing the bytes read when the text is
    canonical already (the usual case): they are its UTF-8 encoding, so no second copy. A
    path found as text stays text until :attr:`Document.path` is read (``found_at``)."""
    data = _read_bytes(path, buffer)
    text = _decode(data, path)
    canonical = canonicalize(text)
    where = found_at(path) if isinstance(path, str) else path
    if canonical is text:  # nothing to change: the digest of the bytes is the text's
        return Document(document_id, text, hashlib.sha256(data).hexdigest(), where)
    return Document.from_text(document_id, canonical, where)


def _utf8_name(text: str) -> bool:
    """Whether a name read from the file system (undecodable bytes become lone surrogates,
    ``os.fsdecode``'s surrogateescape) is text UTF-8 can hold, as a document id must be."""
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


_IGNORED_ERRNOS: Final = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)


def _name_pattern(pattern: str) -> Callable[[str], object] | None:
    """A matcher of file names for a one-part wildcard pattern (``*.md``) on a POSIX system,
    where ``rglob`` compares names case-sensitively; None: leave the pattern to ``rglob``."""
    if os.name != "posix" or "/" in pattern or "**" in pattern or not pattern:
        return None
    if not any(c in pattern for c in "*?["):
        return None
    if pattern.startswith("*") and not any(c in pattern[1:] for c in "*?["):
        return _suffix_matcher(pattern[1:])  # "*.md": any name with that ending
    return re.compile(fnmatch.translate(pattern)).fullmatch


def _suffix_matcher(suffix: str) -> Callable[[str], object]:
    def match(name: str) -> bool:
        return name.endswith(suffix)

    return match


_OTHER: Final = 0
_REGULAR: Final = 1
_LINK: Final = 2
_Entry = tuple[tuple[str, ...], str, int]
"""The relative parts of one entry of the tree, its path, and what it is (``_REGULAR``,
``_LINK`` or ``_OTHER``, from the directory listing: no ``lstat`` per file where the file
system gives the entry's type)."""


def _listing(directory: str, root: Path) -> list[os.DirEntry[str]]:
    """The entries of ``directory`` sorted by name (none if it may not be read)."""
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=_entry_name)
    except PermissionError:
        return []
    except OSError as err:
        raise CorpusError(f"cannot list documents: {err.strerror or err}", path=root) from None


def _entry_name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _scan_tree(root: Path) -> list[_Entry | None]:
    """What ``root.rglob(pattern)`` of a one-part pattern chooses from, as (relative parts,
    path), by ``os.scandir``, sorted: every entry in every directory reached without
    following a link, hidden ones left out (hidden directories are not entered: nothing under
    them is loaded). An unreadable directory is skipped, as ``rglob`` skips it. A ``None``
    first keeps an empty tree from being walked twice.

    Depth first, each directory's entries sorted by name and a directory's contents right
    after it: the order of the sorted relative parts, without sorting 100,000 tuples."""
    found: list[_Entry | None] = [None]
    stack: list[tuple[tuple[str, ...], Iterator[os.DirEntry[str]]]] = [
        ((), iter(_listing(os.fspath(root), root)))
    ]
    while stack:
        parts, entries = stack[-1]
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            key = (*parts, name)
            try:
                if entry.is_symlink():
                    kind, is_dir = _LINK, False
                elif entry.is_file(follow_symlinks=False):
                    kind, is_dir = _REGULAR, False
                else:
                    kind, is_dir = _OTHER, entry.is_dir(follow_symlinks=False)
            except OSError as err:
                if err.errno not in _IGNORED_ERRNOS:
                    raise CorpusError(
                        f"cannot list documents: {err.strerror or err}", path=root
                    ) from None
                kind, is_dir = _OTHER, False
            found.append((key, entry.path, kind))
            if is_dir:  # its entries next, then the rest of this directory's
                stack.append((key, iter(_listing(entry.path, root))))
                break
        else:
            stack.pop()
    return found


def _candidates(
    root: Path, pattern: str, depth: int, one_part: bool, tree: list[_Entry | None]
) -> Iterator[tuple[tuple[str, ...], Path | str, int | None]]:
    """The relative parts, path and kind (None: not known yet) of every file ``pattern``
    names, in sorted order; ``tree`` keeps the one walk of the tree the one-part patterns
    share."""
    match = _name_pattern(pattern) if one_part else None
    if match is not None:
        if not tree:
            tree.extend(_scan_tree(root))
        for entry in tree:
            if entry is not None and match(entry[0][-1]):
                yield entry
        return
    for path in sorted(_glob(root, pattern), key=_sort_key):
        yield path.parts[depth:], path, None


def _document_id(key: tuple[str, ...]) -> str:
    """:func:`document_id_for` of the relative path ``key``, without a path object for the
    plain names (``a/b.md``, ``README``)."""
    name = key[-1]
    dot = name.rfind(".")
    if dot == -1:
        return "/".join(key)
    if 0 < dot < len(name) - 1:
        return "/".join((*key[:-1], name[:dot]))
    return document_id_for(PurePosixPath(*key))


def _iter_files(root: Path, globs: Sequence[str]) -> Iterator[tuple[str | Path, str]]:
    """Every file to load, as its path as found and its document id, in load order."""
    real_root = root.resolve()
    depth = len(root.parts)
    seen: set[tuple[str, ...]] = set()  # relative parts: cheaper to hash than paths
    tree: list[_Entry | None] = []
    for pattern in globs:
        parts = PurePosixPath(pattern).parts
        if pattern.startswith("/") or ".." in parts:
            raise CorpusError(f"glob {pattern!r} reaches outside the corpus root")
        # rglob never descends into a linked directory, so with a one-part pattern only the
        # file itself can be a link: every other file resolves inside the root (one lstat)
        one_part = len(parts) == 1
        for key, where, kind in _candidates(root, pattern, depth, one_part, tree):
            if key in seen:
                continue
            if kind == _REGULAR:  # from the walk: a regular file, not hidden, inside the root
                if not _utf8_name("/".join(key)):
                    raise _not_utf8(where)
                seen.add(key)
                yield where, _document_id(key)
                continue
            if kind == _OTHER or _is_hidden(key):
                continue
            if kind == _LINK:
                is_file, is_link = Path(where).is_file(), True
            else:
                is_file, is_link = _file_kind(where, one_part)
            path = where if isinstance(where, Path) else Path(where)
            if not is_file:
                continue
            if not _utf8_name("/".join(key)):
                raise _not_utf8(path)
            if is_link and not path.resolve().is_relative_to(real_root):
                raise CorpusError(
                    "symbolic link leads outside the corpus root",
                    path=path,
                    hint="copy the document into the corpus or remove the link",
                )
            seen.add(key)
            yield path, _document_id(key)


def _not_utf8(path: str | os.PathLike[str]) -> CorpusError:
    """The error for a file whose name is not UTF-8 (the check itself stays inline: it runs
    once per file of a 100,000-file corpus)."""
    return CorpusError(
        "file name is not valid UTF-8",
        path=path,
        hint="rename the file (document ids are UTF-8 text)",
    )


def _sort_key(path: Path) -> tuple[str, ...]:
    """The order of ``sorted(paths)`` (``Path`` compares its parts), without ``Path.__lt__``."""
    return path.parts


def _file_kind(path: Path | str, one_part: bool) -> tuple[bool, bool]:
    """``path.is_file()``, and whether the path may lead outside the root (a link, or any
    path of a many-part pattern, whose directories may be links): one ``lstat`` per file."""
    if not one_part:
        return Path(path).is_file(), True
    try:
        mode = os.lstat(path).st_mode
    except (OSError, ValueError):
        return Path(path).is_file(), True  # the same answer or the same error as before
    if stat.S_ISLNK(mode):
        return Path(path).is_file(), True
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
    buffer = bytearray(_FIRST_READ)
    for path, document_id in _iter_files(base, globs):
        if document_id in documents:
            first = documents[document_id].path
            raise CorpusError(
                f"{first.name if first else '?'} and {Path(path).name} would both get the "
                f"document id {document_id!r}",
                path=path,
                hint="rename one of them or narrow --glob",
            )
        documents[document_id] = _load_document(document_id, path, buffer)
    if not documents:
        raise CorpusError(
            f"no documents matching {', '.join(globs)}", path=base, hint="check the path or globs"
        )
    return Corpus(documents, base)
