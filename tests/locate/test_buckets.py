""":class:`~spanchor_core.locate.buckets.Buckets` answers as ``np.searchsorted`` and as
:meth:`MinimizerIndex.lookup` do, on tables with long runs of one hash and on absent keys; and
the k-grams the sampled index hashes alone are hashed as when every k-gram is."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from spanchor_core.locate.buckets import Buckets
from spanchor_core.locate.hashing import KgramHasher
from spanchor_core.locate.index import MinimizerIndex

_POS_BITS = 32


def _table(rng: np.random.Generator, size: int) -> npt.NDArray[np.uint64]:
    """Packed entries ``hash | position``: random hashes, a few repeated many times (frequent
    k-grams), hashes near both ends of the range."""
    hashes = rng.integers(0, 2**64 - 1, size, dtype=np.uint64, endpoint=True)
    hashes[: size // 3] = rng.choice(hashes[size // 3 : size // 3 + 5], size // 3)
    edges = np.array([0, 2**64 - 1, 2**63], dtype=np.uint64)[:size]
    hashes[: len(edges)] = edges
    low = np.uint64((1 << _POS_BITS) - 1)
    positions = rng.permutation(size).astype(np.uint64)
    table = (hashes & ~low) | positions
    table.sort()
    return table


@pytest.mark.parametrize(("seed", "size"), [(0, 1), (1, 7), (2, 1000), (3, 50_000)])
def test_buckets_answer_as_a_binary_search_does(seed: int, size: int) -> None:
    rng = np.random.default_rng(seed)
    table = _table(rng, size)
    present = table[rng.integers(0, size, 500)]
    absent = rng.integers(0, 2**64 - 1, 500, dtype=np.uint64, endpoint=True)
    edges = np.array([0, 1, 2**64 - 1, 2**63, 2**63 - 1], dtype=np.uint64)
    keys = np.concatenate([present, present ^ np.uint64(1), absent, edges])
    buckets = Buckets(table)
    for side in ("left", "right"):
        expected = np.searchsorted(table, keys, side=side)
        assert np.array_equal(buckets.search(keys, right=side == "right"), expected)
    first, count = buckets.lookup(keys, _POS_BITS)
    want_first, want_count = MinimizerIndex(table, _POS_BITS).lookup(keys)
    assert np.array_equal(first, want_first)
    assert np.array_equal(count, want_count)
    assert count.max() >= (size // 3 // 5 if size >= 1000 else 1)  # the long runs were reached


def test_an_empty_table_finds_nothing() -> None:
    table = np.zeros(0, dtype=np.uint64)
    keys = np.array([0, 5, 2**64 - 1], dtype=np.uint64)
    first, count = Buckets(table).lookup(keys, _POS_BITS)
    assert first.tolist() == [0, 0, 0]
    assert count.tolist() == [0, 0, 0]


@pytest.mark.parametrize("size", [0, 5, 11, 12, 13, 17, 18, 100, 1001])
@pytest.mark.parametrize("step", [1, 6, 7])
def test_every_steps_kgram_hashes_as_all_of_them_do(size: int, step: int) -> None:
    rng = np.random.default_rng(size * 10 + step)
    codes = rng.integers(0, 0x10FFFF, size, dtype=np.uint32)
    hasher = KgramHasher(12)
    whole = hasher.kgrams(codes) if size >= 12 else np.zeros(0, dtype=np.uint64)
    for first in range(step):
        assert np.array_equal(hasher.kgrams_every(codes, first, step), whole[first::step])
