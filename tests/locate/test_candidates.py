"""Query-side minimizers: a batch of padded rows gives each text the minimizers it has alone."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.locate.candidates import MinimizerSearch, _minimizers
from spanchor_core.locate.hashing import KgramHasher, minimizer_mask
from spanchor_core.locate.settings import LocatorSettings
from spanchor_core.locate.text import code_points

_SETTINGS = LocatorSettings(kgram=4, window=3)


def _alone(text: str, hasher: KgramHasher, window: int) -> list[tuple[int, int]]:
    """``(offset, hash)`` of every full-window minimizer of ``text`` hashed on its own."""
    if len(text) < hasher.k + window - 1:
        return []
    h = hasher.kgrams(code_points(text))
    offs = np.flatnonzero(minimizer_mask(h, window)).tolist()
    return [(o, int(h[o])) for o in offs]


@settings(max_examples=200, deadline=None)
@given(
    # the stages ask only for texts holding a full window (``min_indexed_length``)
    texts=st.lists(
        st.text(alphabet=st.sampled_from("abcé İ\n"), min_size=6, max_size=40), max_size=12
    ),
    limit=st.none() | st.integers(6, 30),
)
def test_batched_minimizers_equal_each_text_alone(texts: list[str], limit: int | None) -> None:
    hasher = KgramHasher(_SETTINGS.kgram)
    search = MinimizerSearch(hasher, _SETTINGS)
    found: list[list[tuple[int, int]]] = [[] for _ in texts]
    for lo_row, rows, offs, keys in search.batched_minimizers(texts, limit):
        assert rows.dtype == offs.dtype == np.int64
        for row, off, key in zip(rows.tolist(), offs.tolist(), keys.tolist(), strict=True):
            found[lo_row + row].append((off, key))
    cut = [t if limit is None else t[:limit] for t in texts]
    assert found == [_alone(t, hasher, _SETTINGS.window) for t in cut]


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(
        # few distinct values: ties everywhere; 0 and SENTINEL are never chosen
        st.lists(st.sampled_from([0, 1, 2, 3, 7, 2**64 - 1]), min_size=0, max_size=30),
        min_size=1,
        max_size=6,
    ),
    window=st.integers(1, 6),
    extra=st.integers(0, 3),
)
def test_flat_minimizers_equal_each_row_alone(
    rows: list[list[int]], window: int, extra: int
) -> None:
    # rows of k-gram hashes (all but the last padded with junk up to ``width``, as hashing
    # the rows end to end leaves them), each with its own number of full windows
    width = max(len(r) for r in rows) + extra
    junk = [5, 0, 1]
    flat: list[int] = []
    for i, row in enumerate(rows):
        flat += row
        if i < len(rows) - 1:
            flat += [junk[j % 3] for j in range(width - len(row))]
    h = np.array(flat, dtype=np.uint64)
    windows = [len(r) - window + 1 for r in rows]
    expected: list[int] = []
    for i, row in enumerate(rows):
        if len(row) >= window:
            mask = minimizer_mask(np.array(row, dtype=np.uint64), window)
            expected += (i * width + np.flatnonzero(mask)).tolist()
    assert _minimizers(h, width, window, windows).tolist() == expected
