"""The short-text indexes kept in a cache entry (``index_store/short``): added once a cached
locator builds them, mapped instead of built by the next, the same answers either way, and
anything unusable in the entry built again rather than trusted."""

from __future__ import annotations

import importlib
import json
import random
from pathlib import Path

import numpy as np
import pytest

from spanchor_core.corpus import Corpus
from spanchor_core.errors import InputError
from spanchor_core.index_store import clear_cache, entry_key, index_entries, persistent_locator
from spanchor_core.index_store.short import ShortEntry
from spanchor_core.locate import LocateRequest, Locator
from spanchor_core.locate.sampled import SampledIndex
from spanchor_core.locate.scan import KeptShortIndex

short = importlib.import_module("spanchor_core.index_store.short")

_RNG = random.Random(3)
_WORDS = [
    "".join(_RNG.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(_RNG.randint(2, 9)))
    for _ in range(300)
]
CORPUS = Corpus.from_texts(
    {f"d{i}": " ".join(_RNG.choice(_WORDS) for _ in range(2_000)) + "." for i in range(3)}
)


def _short_requests() -> list[LocateRequest]:
    """300 texts of 20-50 characters (too short for the minimizer index), from the corpus, a
    few case-changed (the normalised stage) and a few absent."""
    rng = random.Random(5)
    requests = []
    for n in range(300):
        doc = CORPUS[f"d{n % 3}"].text
        size = rng.randint(20, 50)
        at = rng.randrange(len(doc) - size)
        text = doc[at : at + size]
        if n % 10 == 0:
            text = text.upper()
        elif n % 10 == 1:
            text = "qx " * (size // 3)
        requests.append(LocateRequest(text))
    return requests


def _entry(root: Path) -> Path:
    locator = Locator(CORPUS)
    return root / entry_key(CORPUS.fingerprint, locator.kgram, locator.window)


def _builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the sampled indexes built from the text (not taken from a store)."""
    built: list[int] = []
    init = SampledIndex.__init__

    def counted(self: SampledIndex, *args: object) -> None:
        built.append(1)
        init(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(SampledIndex, "__init__", counted)
    return built


def test_a_cached_locator_keeps_them_and_the_next_one_maps_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    requests = _short_requests()
    expected = Locator(CORPUS).locate_many(requests)
    built = _builds(monkeypatch)
    first = persistent_locator(CORPUS, tmp_path)
    assert first.locate_many(requests) == expected
    assert len(built) == 2  # the canonical text's and the normalised stream's
    names = sorted(p.name for p in _entry(tmp_path).iterdir() if p.name.startswith("short."))
    assert names == [
        "short.exact.json",
        "short.exact.low",
        "short.exact.u64",
        "short.normalised.json",
        "short.normalised.u64",
    ]
    second = persistent_locator(CORPUS, tmp_path)
    assert second.short_indexes_kept()
    assert second.locate_many(requests) == expected
    assert len(built) == 2  # nothing built again
    kept = ShortEntry(_entry(tmp_path), CORPUS.total_chars).load(normalised=False)
    assert kept is not None
    assert kept.low is not None
    assert isinstance(kept.table.base, np.memmap)  # mapped, not read into memory


def test_the_kept_tables_are_the_built_ones(tmp_path: Path) -> None:
    persistent_locator(CORPUS, tmp_path).build_short_index(normalised=True)
    kept = ShortEntry(_entry(tmp_path), CORPUS.total_chars).load(normalised=True)
    fresh = Locator(CORPUS).build_short_index(normalised=True)
    assert kept is not None
    assert kept.low is None
    assert np.array_equal(kept.table, fresh.index.packed)
    assert kept.pos_bits == fresh.pos_bits


@pytest.mark.parametrize(
    "damage",
    ["truncated table", "missing json", "other step", "other corpus size", "not json"],
)
def test_an_unusable_kept_index_is_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    requests = _short_requests()
    expected = Locator(CORPUS).locate_many(requests)
    persistent_locator(CORPUS, tmp_path).build_short_index(normalised=False)
    entry = _entry(tmp_path)
    meta_path = entry / "short.exact.json"
    meta = json.loads(meta_path.read_text("utf-8"))
    if damage == "truncated table":
        with (entry / "short.exact.u64").open("r+b") as table:
            table.truncate(8 * (meta["entries"] - 1))
    elif damage == "missing json":
        meta_path.unlink()
    elif damage == "not json":
        meta_path.write_text("{", "utf-8")
    else:
        meta["step" if damage == "other step" else "chars"] += 1
        meta_path.write_text(json.dumps(meta), "utf-8")
    assert ShortEntry(entry, CORPUS.total_chars).load(normalised=False) is None
    built = _builds(monkeypatch)
    again = persistent_locator(CORPUS, tmp_path)
    assert again.locate_many(requests) == expected
    assert len(built) == 2  # the damaged one rebuilt (and the normalised one, never kept)
    assert ShortEntry(entry, CORPUS.total_chars).load(normalised=False) is not None


def test_a_cache_that_cannot_be_written_keeps_nothing_and_says_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    requests = _short_requests()
    expected = Locator(CORPUS).locate_many(requests)
    persistent_locator(CORPUS, tmp_path)

    def full_disk(path: Path, *_: object, **__: object) -> None:
        raise InputError("cannot write file: No space left on device", path=path)

    monkeypatch.setattr(short, "atomic_write", full_disk)
    assert persistent_locator(CORPUS, tmp_path).locate_many(requests) == expected
    assert not [p for p in _entry(tmp_path).iterdir() if p.name.startswith("short.")]


def test_saving_into_an_entry_that_is_gone_does_nothing(tmp_path: Path) -> None:
    table = np.arange(4, dtype=np.uint64)
    ShortEntry(tmp_path / "gone", 10).save(KeptShortIndex(table, 32, None), normalised=True)
    assert not (tmp_path / "gone").exists()


def test_clearing_the_cache_removes_them_with_the_entry(tmp_path: Path) -> None:
    persistent_locator(CORPUS, tmp_path)
    (listed,) = index_entries(tmp_path)
    persistent_locator(CORPUS, tmp_path).build_short_index(normalised=False)
    kept = sum(p.stat().st_size for p in _entry(tmp_path).glob("short.*"))
    assert kept > 8 * CORPUS.total_chars // 6  # the table and the low bytes
    (with_short,) = index_entries(tmp_path)
    assert with_short.nbytes == listed.nbytes + kept  # `spanchor index list` counts them
    clear_cache(tmp_path)
    assert not _entry(tmp_path).exists()
