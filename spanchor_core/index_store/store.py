"""The persistent corpus index: the locator's indexes as memory-mapped ``.npy`` files.

A corpus is indexed once per key — (corpus fingerprint, library version, ``kgram``,
``window``, store format) — and every later run, worker process or Ray worker maps the same
files with ``numpy.load(mmap_mode="r")``: the pages are shared between processes and read on
demand, so a second evaluation of an unchanged corpus builds nothing. A changed document
changes the fingerprint and so the key: stale entries are never read, only left for
``spanchor index clear``.

Safe under concurrent readers and writers: an entry is built under an exclusive ``flock`` on
``<key>.lock`` (a second builder waits, then finds the entry), written into a temporary
directory beside it and published with one ``os.replace``, so a reader sees a whole entry or
none. An entry that cannot be read (truncated by hand, another format) is rebuilt.

Where: ``cache_dir`` if given, else ``$SPANCHOR_INDEX_CACHE``, else
``$XDG_CACHE_HOME/spanchor/index`` (``~/.cache/spanchor/index``). The pipeline (``evaluate``,
``gate``, the pytest plugin) uses the cache for corpora of at least :data:`CACHE_MIN_CHARS`
characters — a smaller one indexes faster than its entry is read — unless
``SPANCHOR_INDEX_CACHE=off``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import mmap
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np

from spanchor_core._version import __version__
from spanchor_core.corpus import Corpus
from spanchor_core.errors import InputError
from spanchor_core.index_store.short import SHORT_PREFIX, ShortEntry
from spanchor_core.locate import Locator
from spanchor_core.locate.index import MinimizerIndex
from spanchor_core.locate.normalised_view import NormalisedView

__all__ = [
    "CACHE_ENV",
    "CACHE_MIN_CHARS",
    "IndexEntry",
    "cache_dir",
    "clear_cache",
    "entry_key",
    "index_entries",
    "load_indexes",
    "persistent_locator",
    "pipeline_locator",
    "release_index_pages",
    "store_indexes",
]

CACHE_ENV: Final = "SPANCHOR_INDEX_CACHE"
"""Environment variable naming the cache directory."""
STORE_FORMAT: Final = 2
"""Bumped whenever the files of an entry change meaning (2: no minimizer window crosses a
document boundary; entries of format 1 are never read)."""
CACHE_MIN_CHARS: Final = 1_000_000
"""The pipeline caches the index of corpora from this size on (:func:`pipeline_locator`)."""
_META: Final = "meta.json"
_NORMALISED_ARRAYS: Final = ("starts", "lengths", "checkpoint_base", "checkpoints")


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One stored index, as :func:`index_entries` lists it."""

    key: str
    path: Path
    fingerprint: str
    version: str
    kgram: int
    window: int
    documents: int
    chars: int
    nbytes: int
    build_seconds: float


def cache_dir(chosen: str | os.PathLike[str] | None = None) -> Path:
    """The cache directory: ``chosen``, else ``$SPANCHOR_INDEX_CACHE``, else the XDG cache."""
    if chosen is not None:
        return Path(chosen)
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "spanchor" / "index"


def entry_key(fingerprint: str, kgram: int, window: int) -> str:
    """The name of the entry for a corpus fingerprint and index parameters (this version)."""
    raw = f"{STORE_FORMAT}\0{__version__}\0{fingerprint}\0{kgram}\0{window}"
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _save(directory: Path, name: str, array: np.ndarray[Any, Any]) -> None:
    with (directory / f"{name}.npy").open("wb") as out:
        np.save(out, np.ascontiguousarray(array), allow_pickle=False)
        out.flush()
        os.fsync(out.fileno())


def _load(directory: Path, name: str) -> Any:
    return np.load(directory / f"{name}.npy", mmap_mode="r", allow_pickle=False)


def store_indexes(locator: Locator, root: Path, *, build_seconds: float = 0.0) -> Path:
    """Publish the locator's built indexes under ``root`` (atomically); returns the entry."""
    exact, normalised = locator.built_indexes()
    if exact is None:
        raise InputError("the locator has no index to store", hint="call build_index() first")
    corpus = locator.corpus
    key = entry_key(corpus.fingerprint, locator.kgram, locator.window)
    final = root / key
    root.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=root))
    try:
        _save(temp, "exact", exact.packed)
        nbytes = exact.nbytes
        if normalised is not None:
            _save(temp, "normalised", normalised.index.packed)
            for name in _NORMALISED_ARRAYS:
                _save(temp, f"normalised.{name}", getattr(normalised, name))
            nbytes = normalised.nbytes + exact.nbytes
        meta = {
            "kind": "spanchor.index",
            "schema_version": STORE_FORMAT,
            "version": __version__,
            "fingerprint": corpus.fingerprint,
            "kgram": locator.kgram,
            "window": locator.window,
            "documents": len(corpus),
            "chars": corpus.total_chars,
            "pos_bits": exact.pos_bits,
            "normalised_pos_bits": None if normalised is None else normalised.index.pos_bits,
            "nbytes": nbytes,
            "build_seconds": round(build_seconds, 3),
        }
        (temp / _META).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        if final.exists():  # an older entry with the same key: replace it whole
            shutil.rmtree(final)
        os.replace(temp, final)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    return final


def _read_meta(directory: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads((directory / _META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("kind") != "spanchor.index":
        return None
    return meta


def load_indexes(
    corpus: Corpus, root: Path, *, kgram: int, window: int
) -> tuple[MinimizerIndex, NormalisedView | None] | None:
    """The stored indexes of ``corpus``, memory-mapped; None when there is no usable entry."""
    directory = root / entry_key(corpus.fingerprint, kgram, window)
    meta = _read_meta(directory)
    if (
        meta is None
        or meta.get("fingerprint") != corpus.fingerprint
        or meta.get("schema_version") != STORE_FORMAT
    ):
        return None
    try:
        exact = MinimizerIndex(_load(directory, "exact"), int(meta["pos_bits"]))
        normalised = None
        if meta.get("normalised_pos_bits") is not None:
            index = MinimizerIndex(_load(directory, "normalised"), int(meta["normalised_pos_bits"]))
            arrays = [_load(directory, f"normalised.{name}") for name in _NORMALISED_ARRAYS]
            normalised = NormalisedView(index, *arrays)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return exact, normalised


def persistent_locator(
    corpus: Corpus,
    cache: str | os.PathLike[str] | None = None,
    **settings: Any,
) -> Locator:
    """A :class:`Locator` over ``corpus`` whose indexes come from the cache, built there first
    when missing (both the exact index and the normalised view, under the entry's lock).

    ``settings`` are the :class:`Locator` parameters. A cache that cannot be written is not an
    error: the locator then keeps the indexes it built in memory.
    """
    locator = Locator(corpus, **settings)
    root = cache_dir(cache)
    key = entry_key(corpus.fingerprint, locator.kgram, locator.window)
    # the short-text indexes, should a run need them, are kept in the entry too
    locator.keep_short_indexes(ShortEntry(root / key, corpus.total_chars))
    found = load_indexes(corpus, root, kgram=locator.kgram, window=locator.window)
    if found is None:
        try:
            root.mkdir(parents=True, exist_ok=True)
            with _locked(root / f"{key}.lock"):
                found = load_indexes(corpus, root, kgram=locator.kgram, window=locator.window)
                if found is None:
                    began = time.perf_counter()
                    locator.build_index(normalised=True)
                    store_indexes(locator, root, build_seconds=time.perf_counter() - began)
                    return locator
        except OSError:
            if locator.built_indexes()[0] is None:
                locator.build_index(normalised=True)
            return locator
    locator.use_indexes(*found)
    return locator


def _mapped(array: object) -> mmap.mmap | None:
    """The read-only file mapping ``array`` lives in (``numpy.load(mmap_mode="r")``), if any."""
    if not isinstance(array, np.memmap) or array.mode != "r":
        return None
    mapping = getattr(array, "_mmap", None)
    return mapping if isinstance(mapping, mmap.mmap) else None


def release_index_pages(locator: Locator) -> int:
    """Drop from this process's resident set the pages of ``locator``'s memory-mapped indexes
    (those of this cache); how many mappings were told. Why: mapping a large run touches most
    of the index (38 MiB at 50 MB of corpus), and those pages stay counted in the process's
    resident memory until the locator is gone, through scoring and, in a run read in parts,
    while this process takes the other part's answer in — where ``spanchor evaluate`` peaked.

    Nothing changes for the locator: the files are mapped read-only, so ``MADV_DONTNEED`` only
    unmaps the pages here; a later lookup faults them in again from the page cache (a gate's
    second side, a part this process reads after all). Indexes built in memory are left alone,
    and so is everything where ``madvise`` is missing (not Linux or macOS)."""
    advice = getattr(mmap, "MADV_DONTNEED", None)
    exact, normalised = locator.built_indexes()
    if advice is None or exact is None:
        return 0
    arrays: list[object] = [exact.packed]
    if normalised is not None:
        arrays.append(normalised.index.packed)
        arrays.extend(getattr(normalised, name) for name in _NORMALISED_ARRAYS)
    told = 0
    seen: set[int] = set()
    for array in arrays:
        mapping = _mapped(array)
        if mapping is None or id(mapping) in seen:
            continue
        seen.add(id(mapping))
        try:
            mapping.madvise(advice)
        except (OSError, ValueError):  # closed, or refused: the pages simply stay
            continue
        told += 1
    return told


def pipeline_locator(corpus: Corpus) -> Locator | None:
    """The locator the pipeline scores with: cached (:func:`persistent_locator`) for a corpus
    of :data:`CACHE_MIN_CHARS` or more unless ``$SPANCHOR_INDEX_CACHE`` is ``off``; else None
    (the scorer builds one in memory)."""
    if os.environ.get(CACHE_ENV, "").lower() in {"off", "0", "no", "false"}:
        return None
    if corpus.total_chars < CACHE_MIN_CHARS:
        return None
    return persistent_locator(corpus)


def index_entries(cache: str | os.PathLike[str] | None = None) -> list[IndexEntry]:
    """The entries of the cache directory, by key."""
    root = cache_dir(cache)
    entries: list[IndexEntry] = []
    if not root.is_dir():
        return entries
    for directory in sorted(root.iterdir()):
        meta = _read_meta(directory) if directory.is_dir() else None
        if meta is None or directory.name.startswith("."):
            continue
        entries.append(
            IndexEntry(
                key=directory.name,
                path=directory,
                fingerprint=str(meta.get("fingerprint")),
                version=str(meta.get("version")),
                kgram=int(meta.get("kgram", 0)),
                window=int(meta.get("window", 0)),
                documents=int(meta.get("documents", 0)),
                chars=int(meta.get("chars", 0)),
                nbytes=int(meta.get("nbytes", 0)) + _short_nbytes(directory),
                build_seconds=float(meta.get("build_seconds", 0.0)),
            )
        )
    return entries


def _short_nbytes(directory: Path) -> int:
    """Bytes of the short-text indexes kept in the entry (:mod:`.short`), counted with it."""
    total = 0
    for path in directory.glob(f"{SHORT_PREFIX}*"):
        with contextlib.suppress(OSError):
            total += path.stat().st_size
    return total


def clear_cache(
    cache: str | os.PathLike[str] | None = None, *, keep: str | None = None
) -> list[Path]:
    """Remove every entry (and lock and left-over temporary directory) but ``keep``'s key."""
    root = cache_dir(cache)
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    for path in sorted(root.iterdir()):
        if keep is not None and path.name.startswith(keep):
            continue
        if path.is_dir() and (path.name.startswith(".") or _read_meta(path) is not None):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        elif path.suffix == ".lock":
            with contextlib.suppress(OSError):
                path.unlink()
    return removed
