"""The short-text indexes of a corpus, kept in its entry of the persistent index cache.

A result text too short for the minimizer index is found through a sampled k-gram index of
the canonical text and one of its normalised stream (:mod:`spanchor_core.locate.sampled`),
about a second each to build for 50 MB and 8 bytes per 6 characters each, plus the probes'
low bytes (one per character). Only runs of short chunks need them, so they are not part of
an entry when it is made: a locator the cache gives out (:func:`~spanchor_core.index_store.
persistent_locator`) builds them on first need, as any locator does, and then adds them to
its entry (:class:`ShortEntry`), so the next run of short chunks on the same corpus maps them
instead of building them (the pages shared between processes, like the entry's other files).

Each kept index is a few files beside the entry's own: ``short.exact.u64`` (the sorted table,
raw little-endian words), ``short.exact.low`` (the low bytes) and ``short.exact.json`` (what
they were built with and how long they are), the same for ``short.normalised``. Each is
written atomically (:func:`~spanchor_core._io.atomic_write`), the ``.json`` last: a reader
that finds it finds whole files beside it, and two processes adding the same index write the
same bytes. Anything unusable (missing, of another length, another layout or version of the
sampling) reads as no index, which is then built again; a cache that cannot be written keeps
nothing and says nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from spanchor_core._io import atomic_write
from spanchor_core.errors import InputError
from spanchor_core.locate.sampled import SAMPLE_K, STEP
from spanchor_core.locate.scan import KeptShortIndex

__all__ = ["SHORT_PREFIX", "ShortEntry"]

SHORT_PREFIX: Final = "short."
"""The names of an entry's files that hold its short-text indexes start so."""
_KIND: Final = "spanchor.short-index"
_LAYOUT: Final = 1


class ShortEntry:
    """The short-text indexes kept in one cache entry's directory, for the scanner of a
    locator over the corpus of that entry (:class:`~spanchor_core.locate.scan.
    ShortIndexStore`)."""

    def __init__(self, directory: Path, chars: int) -> None:
        self.directory = directory
        self.chars = chars  # the corpus's characters: an index of another text is not read

    def _name(self, normalised: bool) -> str:
        return f"{SHORT_PREFIX}{'normalised' if normalised else 'exact'}"

    def load(self, *, normalised: bool) -> KeptShortIndex | None:
        """The kept index, its files memory-mapped; ``None`` when there is none usable."""
        name = self._name(normalised)
        try:
            meta = json.loads((self.directory / f"{name}.json").read_text(encoding="utf-8"))
            if not isinstance(meta, dict) or meta.get("kind") != _KIND:
                return None
            expected = {"layout": _LAYOUT, "sample_k": SAMPLE_K, "step": STEP, "chars": self.chars}
            if any(meta.get(key) != value for key, value in expected.items()):
                return None
            entries, pos_bits, low_length = meta["entries"], meta["pos_bits"], meta["low"]
            if not all(type(v) is int for v in (entries, pos_bits)) or not (
                low_length is None or type(low_length) is int
            ):
                return None
            table = _mapped(self.directory / f"{name}.u64", np.dtype("<u8"), entries)
            low = None
            if low_length is not None:
                low = _mapped(self.directory / f"{name}.low", np.dtype(np.uint8), low_length)
        except (OSError, ValueError, KeyError):
            return None
        if table is None or (low_length is not None and low is None):
            return None
        return KeptShortIndex(table, pos_bits, low)

    def save(self, kept: KeptShortIndex, *, normalised: bool) -> None:
        """Add ``kept`` to the entry (nothing when the entry is gone or cannot be written)."""
        if not self.directory.is_dir():
            return
        name = self._name(normalised)
        meta: dict[str, Any] = {
            "kind": _KIND,
            "layout": _LAYOUT,
            "sample_k": SAMPLE_K,
            "step": STEP,
            "chars": self.chars,
            "pos_bits": kept.pos_bits,
            "entries": len(kept.table),
            "low": None if kept.low is None else len(kept.low),
        }
        try:
            table = np.ascontiguousarray(kept.table, dtype="<u8")
            atomic_write(self.directory / f"{name}.u64", table.data.cast("B"))
            if kept.low is not None:
                low = np.ascontiguousarray(kept.low, dtype=np.uint8)
                atomic_write(self.directory / f"{name}.low", low.data.cast("B"))
            atomic_write(self.directory / f"{name}.json", json.dumps(meta, indent=2) + "\n")
        except InputError:  # the cache cannot be written: the index stays in memory
            return


def _mapped(path: Path, dtype: np.dtype[Any], length: int) -> npt.NDArray[Any] | None:
    """The ``length`` items of ``dtype`` in ``path``, memory-mapped read-only, as a plain ndarray
    (a ``np.memmap`` pays Python-level hooks on every read); ``None`` when the file is of
    another size."""
    if path.stat().st_size != length * dtype.itemsize:
        return None
    if length == 0:
        return np.zeros(0, dtype=dtype)
    return np.asarray(np.memmap(path, dtype=dtype, mode="r", shape=(length,)))
