"""Query-side minimizers: a batch of padded rows gives each text the minimizers it has alone."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.locate.candidates import MinimizerSearch
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
