"""The locator's building blocks on their own: folding, the minimizer index, the normalised map."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.corpus import Corpus
from spanchor_core.locate.documents import BLOCK_CHARS, CorpusTexts
from spanchor_core.locate.hashing import SENTINEL, KgramHasher, minimizer_mask
from spanchor_core.locate.index import (
    IndexBuilder,
    MinimizerIndex,
    _cut_at_boundaries,
    _padded_minimizers,
    index_documents,
)
from spanchor_core.locate.normalised_view import CHECKPOINT, build_normalised_view
from spanchor_core.locate.text import code_points, fold, normalise, normalise_with_positions

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
    whole.feed(code_points(text), starts=[])
    pieces = IndexBuilder(hasher, 4, len(text))
    bounds = [0, *sorted(min(c, len(text)) for c in cuts), len(text)]
    for lo, hi in itertools.pairwise(bounds):
        pieces.feed(code_points(text[lo:hi]), starts=[])
    assert np.array_equal(whole.finish().packed, pieces.finish().packed)


_doc = st.text(alphabet=st.sampled_from("abcAB \nİé"), max_size=40)


def _entries(index: MinimizerIndex) -> list[tuple[int, int]]:
    """``(hash part, position)`` of every entry."""
    low = (1 << index.pos_bits) - 1
    return sorted((int(v) >> index.pos_bits, int(v) & low) for v in index.packed)


def _alone(text: str, start: int, hasher: KgramHasher, window: int, pos_bits: int) -> set[Any]:
    """The entries one document would have on its own, between ``window - 1`` never-minimal
    k-grams on each side (so its edges are sampled like its middle), moved to ``start``."""
    if len(text) < hasher.k:
        return set()
    h = hasher.kgrams(code_points(text))
    pad = np.full(window - 1, SENTINEL, dtype=np.uint64)
    mask = minimizer_mask(np.concatenate([pad, h, pad]), window)[window - 1 : window - 1 + len(h)]
    return {(int(h[p]) >> pos_bits, p + start) for p in np.flatnonzero(mask).tolist()}


@settings(deadline=None, max_examples=300)
@given(
    docs=st.lists(_doc, min_size=1, max_size=8),
    cuts=st.lists(st.integers(0, 320), max_size=5),
)
def test_each_document_indexes_exactly_what_it_would_alone(
    docs: list[str], cuts: list[int]
) -> None:
    # no k-gram and no window across a document boundary, however the blocks are cut: the
    # index is the union of the documents' own minimizers (empty and short documents too),
    # their first and last k-grams as densely sampled as the rest
    hasher, window = KgramHasher(4), 3
    documents = CorpusTexts(Corpus.from_texts({f"d{i}": t for i, t in enumerate(docs)}))
    text = "".join(documents.texts)
    builder = IndexBuilder(hasher, window, len(text))
    bounds = [0, *sorted(min(c, len(text)) for c in cuts), len(text)]
    for lo, hi in itertools.pairwise(bounds):
        inside = documents.starts[(documents.starts >= lo) & (documents.starts < hi)]
        builder.feed(code_points(text[lo:hi]), starts=inside)
    index = builder.finish()
    expected: set[Any] = set()
    for t, s in zip(documents.texts, documents.starts.tolist(), strict=True):
        expected |= _alone(t, s, hasher, window, index.pos_bits)
    assert set(_entries(index)) == expected
    assert len(_entries(index)) == len(expected)
    whole = index_documents(documents, hasher, window)
    assert np.array_equal(whole.packed, index.packed)


@settings(deadline=None, max_examples=200)
@given(
    docs=st.lists(st.text(alphabet=st.sampled_from("ab c"), max_size=30), min_size=1, max_size=30),
    cuts=st.lists(st.integers(0, 600), max_size=5),
    shape=st.sampled_from([(3, 6), (4, 9), (2, 2), (5, 4)]),
)
def test_many_small_documents_index_what_each_would_alone_with_windows_wider_than_kgrams(
    docs: list[str], cuts: list[int], shape: tuple[int, int]
) -> None:
    # a window wider than a k-gram pads every boundary with inserted never-minimal k-grams
    # (the tiny-documents case, a boundary every few dozen characters): still each
    # document's own entries, however the blocks are cut
    k, window = shape
    hasher = KgramHasher(k)
    documents = CorpusTexts(Corpus.from_texts({f"d{i:02}": t for i, t in enumerate(docs)}))
    text = "".join(documents.texts)
    builder = IndexBuilder(hasher, window, len(text))
    bounds = [0, *sorted(min(c, len(text)) for c in cuts), len(text)]
    for lo, hi in itertools.pairwise(bounds):
        inside = documents.starts[(documents.starts >= lo) & (documents.starts < hi)]
        builder.feed(code_points(text[lo:hi]), starts=inside)
    index = builder.finish()
    expected: set[Any] = set()
    for t, s in zip(documents.texts, documents.starts.tolist(), strict=True):
        expected |= _alone(t, s, hasher, window, index.pos_bits)
    assert sorted(_entries(index)) == sorted(expected)
    assert np.array_equal(index_documents(documents, hasher, window).packed, index.packed)


_hashes = st.lists(st.integers(0, 2**64 - 1) | st.just(int(SENTINEL)), max_size=80).map(
    lambda values: np.array(values, dtype=np.uint64)
)


@settings(deadline=None, max_examples=300)
@given(h=_hashes, data=st.data(), w=st.integers(2, 9))
def test_padded_minimizers_equal_minimizers_of_the_array_with_np_insert(
    h: Any, data: st.DataObject, w: int
) -> None:
    # the padding written in place picks what the two np.insert calls it replaced picked:
    # the padded array's minimizers, at the positions of the original hashes (a padded array
    # holds a full window: the builder pads a block's edges by w - 1, its hashes span a window)
    at = np.array(
        data.draw(st.lists(st.integers(0, len(h)), min_size=max(1, w - len(h)))), dtype=np.int64
    )
    real = np.insert(np.ones(len(h), dtype=np.bool_), at, False)
    expected = np.flatnonzero(minimizer_mask(np.insert(h, at, SENTINEL), w)[real])
    assert np.array_equal(_padded_minimizers(h, at, w), expected)


@given(h=_hashes, data=st.data(), k=st.integers(1, 6))
def test_cut_at_boundaries_blanks_exactly_the_kgrams_that_cross_one(
    h: Any, data: st.DataObject, k: int
) -> None:
    bounds = data.draw(st.lists(st.integers(1, max(1, len(h) + k - 2)), max_size=6).map(sorted))
    bounds = [b for b in bounds if 0 < b < len(h) + k - 1]
    cut = h.copy()
    _cut_at_boundaries(cut, np.array(bounds, dtype=np.int64), k)
    for i in range(len(h)):
        crosses = any(i < b < i + k for b in bounds)
        assert cut[i] == (SENTINEL if crosses else h[i])


@settings(deadline=None)
@given(
    docs=st.lists(
        st.text(alphabet=st.sampled_from("ab\u00e9\U0001f600"), max_size=12), max_size=12
    ),
    chars=st.integers(1, 40),
)
def test_blocks_cut_the_documents_laid_end_to_end(docs: list[str], chars: int) -> None:
    documents = CorpusTexts(Corpus.from_texts({f"d{i:02}": t for i, t in enumerate(docs)}))
    text = "".join(documents.texts)
    got = list(documents.blocks(chars))
    assert got == [(o, text[o : o + chars]) for o in range(0, len(text), chars)]


def test_a_text_that_picks_more_than_the_reserved_entries_grows_the_index() -> None:
    # a period-2 text ties every window: half of its positions are minimizers, far more than
    # the 2 / (window + 1) reserved up front, so the entries outgrow their array several times
    text = "ab" * 6_000 + "the end of a repetitive document, then prose" * 3
    hasher, window = KgramHasher(5), 8
    documents = CorpusTexts(Corpus.from_texts({"rep": text, "z": "short tail document text"}))
    index = index_documents(documents, hasher, window)
    expected: set[Any] = set()
    for t, s in zip(documents.texts, documents.starts.tolist(), strict=True):
        expected |= _alone(t, s, hasher, window, index.pos_bits)
    assert len(index.packed) == len(expected) > len(text) // 3
    assert set(_entries(index)) == expected
    assert bool(np.all(index.packed[:-1] <= index.packed[1:]))


def _restricted(index: MinimizerIndex, starts: Any, lengths: Any, keep: list[int]) -> set[Any]:
    """The entries of documents ``keep``, as ``(hash part, document, local position)``."""
    out = set()
    for hashed, pos in _entries(index):
        doc = int(np.searchsorted(starts, pos, side="right")) - 1
        while lengths[doc] == 0:  # an empty document shares its start with the next one
            doc += 1
        if doc in keep:
            out.add((hashed, doc, pos - int(starts[doc])))
    return out


@settings(deadline=None, max_examples=200)
@given(docs=st.lists(_doc, min_size=2, max_size=8), data=st.data())
def test_a_shard_index_is_the_whole_index_restricted_to_its_documents(
    docs: list[str], data: st.DataObject
) -> None:
    # the premise of sharded == one process: exact index and normalised view alike
    hasher, window = KgramHasher(4), 3
    texts = {f"d{i}": t for i, t in enumerate(docs)}
    part = data.draw(st.sets(st.sampled_from(sorted(texts)), min_size=1))
    whole = CorpusTexts(Corpus.from_texts(texts))
    shard = CorpusTexts(Corpus.from_texts({d: texts[d] for d in part}))
    numbers = [whole.number[d] for d in shard.ids]  # shard document n is whole document numbers[n]
    pairs = [
        (index_documents(whole, hasher, window), whole.starts, whole.lengths),
        (index_documents(shard, hasher, window), shard.starts, shard.lengths),
    ]
    views = [build_normalised_view(c, hasher, window) for c in (whole, shard)]
    pairs += [(v.index, v.starts, v.lengths) for v in views]
    for (full, f_starts, f_len), (sub, s_starts, s_len) in (pairs[:2], pairs[2:]):
        mine = {
            (h, numbers[d], p)
            for h, d, p in _restricted(sub, s_starts, s_len, list(range(len(numbers))))
        }
        assert _restricted(full, f_starts, f_len, numbers) == mine


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


_ascii = st.text(alphabet=st.sampled_from("abAB \n\t\r\x0b\x0c\x1c\x1f\x00~-"), max_size=300)


@settings(deadline=None)
@given(docs=st.lists(_ascii, min_size=1, max_size=6))
def test_ascii_documents_map_back_like_any_others(docs: list[str]) -> None:
    # ASCII blocks are folded and tested as bytes: the same characters kept, the same map
    corpus = Corpus.from_texts({f"d{i}": text for i, text in enumerate(docs)})
    documents = CorpusTexts(corpus)
    view = build_normalised_view(documents, KgramHasher(5), 4)
    for d, source in enumerate(documents.texts):
        norm, positions = normalise_with_positions(source)
        assert int(view.lengths[d]) == len(norm)
        got = [view.to_canonical(source, d, local) for local in range(len(norm))]
        assert got == positions.tolist()


def test_documents_longer_than_a_block_keep_every_checkpoint() -> None:
    # blocks of one document's characters take a strided slice of the kept offsets; the
    # checkpoints must continue across blocks, documents and a non-ASCII block alike
    rng = np.random.default_rng(3)
    words = ["alpha", "Beta", "\tgamma", "  ", "\n\n", "DELTA", "é", "x"]

    def text(n: int) -> str:
        return "".join(words[i] + " " for i in rng.integers(0, len(words), n))

    texts = {"long": text(9_000), "mid": text(2_500), "one": "a", "tiny": " \n ", "z": text(7_000)}
    texts["ascii"] = text(8_000).replace("é", "e")
    documents = CorpusTexts(Corpus.from_texts(texts))
    assert documents.total > 3 * BLOCK_CHARS
    view = build_normalised_view(documents, KgramHasher(8), 6)
    for d, source in enumerate(documents.texts):
        norm, positions = normalise_with_positions(source)
        assert int(view.lengths[d]) == len(norm)
        got = [view.to_canonical(source, d, local) for local in range(0, len(norm), 5)]
        assert got == positions[::5].tolist()
