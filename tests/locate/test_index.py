"""The locator's building blocks on their own: folding, the minimizer index, the normalised map."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.corpus import Corpus
from spanchor_core.locate.documents import CorpusTexts
from spanchor_core.locate.hashing import KgramHasher
from spanchor_core.locate.index import IndexBuilder
from spanchor_core.locate.normalised_view import CHECKPOINT, build_normalised_view
from spanchor_core.locate.text import code_points, fold, normalise

_text = st.text(alphabet=st.sampled_from("abcAB \n\tİςΣé"), max_size=300)


@given(text=_text, a=st.integers(0, 300), b=st.integers(0, 300))
def test_folding_a_slice_equals_slicing_the_folded_text(text: str, a: int, b: int) -> None:
    assert len(fold(text)) == len(text)
    assert fold(text[a:b]) == fold(text)[a:b]


@settings(deadline=None)
@given(text=_text, cuts=st.lists(st.integers(0, 300), max_size=6))
def test_index_does_not_depend_on_where_the_text_is_cut_into_blocks(
    text: str, cuts: list[int]
) -> None:
    hasher = KgramHasher(5)
    whole = IndexBuilder(hasher, 4, len(text))
    whole.feed(code_points(text))
    pieces = IndexBuilder(hasher, 4, len(text))
    bounds = [0, *sorted(min(c, len(text)) for c in cuts), len(text)]
    for lo, hi in itertools.pairwise(bounds):
        pieces.feed(code_points(text[lo:hi]))
    assert np.array_equal(whole.finish().packed, pieces.finish().packed)


@settings(deadline=None)
@given(docs=st.lists(_text, min_size=1, max_size=4))
def test_normalised_offsets_map_back_to_the_same_characters(docs: list[str]) -> None:
    corpus = Corpus.from_texts({f"d{i}": text for i, text in enumerate(docs)})
    documents = CorpusTexts(corpus)
    view = build_normalised_view(documents, KgramHasher(5), 4)
    for d, source in enumerate(documents.texts):
        norm = normalise(source)
        assert int(view.lengths[d]) == len(norm)
        for local, char in enumerate(norm):
            assert fold(source[view.to_canonical(source, d, local)]) == char


def test_to_normalised_inverts_to_canonical_down_to_a_checkpoint() -> None:
    texts = {"a": "Some  TEXT\n\nwith   spaces " * 40, "b": "x y " * 100}
    documents = CorpusTexts(Corpus.from_texts(texts))
    view = build_normalised_view(documents, KgramHasher(8), 4)
    for d, source in enumerate(documents.texts):
        for k in range(0, int(view.lengths[d]), 7):
            back = view.to_normalised(d, view.to_canonical(source, d, k))
            assert back <= k < back + CHECKPOINT
