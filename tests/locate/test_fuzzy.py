"""Locator, fuzzy stage: altered text placed by alignment, or unmapped below the threshold."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.corpus import Corpus
from spanchor_core.locate import Locator, MatchStatus
from spanchor_core.spans import DocSpan
from tests.locate.texts import (
    DOC_A,
    DOC_C,
    UNIQUE,
    UNIQUE_AT,
    near,
    prose,
)

# ---------------------------------------------------------------- fuzzy


def test_prepended_metadata_header_is_fuzzy(locator: Locator) -> None:
    loc = locator.locate("title: Report\nfile_path: a.md\n\n" + UNIQUE)
    assert loc.status is MatchStatus.FUZZY
    assert near(loc, "a", UNIQUE_AT, UNIQUE_AT + len(UNIQUE))
    assert 0.8 <= loc.confidence < 1.0


def test_stripped_markdown_markup_is_fuzzy(locator: Locator) -> None:
    end = DOC_C.index("\n\n", 20)
    plain = DOC_C[:end].replace("# ", "").replace("**", "")
    loc = locator.locate(plain)
    assert loc.status is MatchStatus.FUZZY
    assert near(loc, "c", 0, end)
    assert loc.confidence < 1.0


def test_dropped_sentence_periods_and_collapsed_whitespace_are_fuzzy(locator: Locator) -> None:
    region = DOC_A[UNIQUE_AT : UNIQUE_AT + len(UNIQUE) + 60]
    altered = " ".join(region.split()).replace(".", "")
    loc = locator.locate(altered)
    assert loc.status is MatchStatus.FUZZY
    assert near(loc, "a", UNIQUE_AT, UNIQUE_AT + len(region))
    assert loc.confidence < 1.0


def test_single_trailing_period_dropped_is_still_exact_text(locator: Locator) -> None:
    # The rest of the text is a substring, so it maps exactly onto what it contains.
    assert UNIQUE.endswith(".")
    loc = locator.locate(UNIQUE[:-1])
    assert (loc.status, loc.span) == (
        MatchStatus.EXACT,
        DocSpan("a", UNIQUE_AT, UNIQUE_AT + len(UNIQUE) - 1),
    )


def test_trailing_period_dropped_with_header_is_fuzzy(locator: Locator) -> None:
    loc = locator.locate("source: a\n\n" + UNIQUE[:-1])
    assert loc.status is MatchStatus.FUZZY
    assert near(loc, "a", UNIQUE_AT, UNIQUE_AT + len(UNIQUE))
    assert loc.confidence < 1.0


def test_long_altered_text_is_aligned_at_both_ends() -> None:
    doc = prose(50, 6000)
    corpus = Corpus.from_texts({"long": doc, "other": prose(51, 300)})
    start = doc.index(" ", 1000) + 1
    end = doc.index(".", 50_000) + 1
    altered = "title: long\n\n" + " ".join(doc[start:end].split()).replace(". ", " ")
    loc = Locator(corpus).locate(altered)
    assert loc.status is MatchStatus.FUZZY
    assert near(loc, "long", start, end)
    assert 0.9 < loc.confidence < 1.0


def test_fuzzy_below_threshold_is_unmapped_with_reason(corpus: Corpus) -> None:
    strict = Locator(corpus, fuzzy_threshold=0.999)
    loc = strict.locate("title: Report\n\n" + UNIQUE)
    assert loc.status is MatchStatus.UNMAPPED
    assert loc.reason is not None
    assert "below the threshold" in loc.reason


def test_short_altered_text_uses_the_fuzzy_scan(locator: Locator) -> None:
    text = "xq " + UNIQUE[5:45]
    assert len(text) < locator.min_indexed_length
    loc = locator.locate(text)
    assert loc.status is MatchStatus.FUZZY
    assert near(loc, "a", UNIQUE_AT + 5, UNIQUE_AT + 45, slack=4)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(-50, 400)),
        max_size=60,
    )
)
def test_clusters_of_one_text_match_the_batched_grouping(
    votes: list[tuple[int, int, int]],
) -> None:
    # the driver of a sharded search groups a text's votes in Python (clusters_of); it must
    # give the clusters the batched numpy grouping gives each text of one process
    from spanchor_core.locate.fuzzy import _add_clusters, clusters_of

    batched: list[list[tuple[int, int, int, int]]] = [[] for _ in range(4)]
    if votes:
        rows, docs, diagonals = np.array(votes, dtype=np.int64).T
        _add_clusters(batched, 0, rows, docs, diagonals)
    for row in range(4):
        mine = [(d, dg) for r, d, dg in votes if r == row]
        assert clusters_of(mine) == batched[row]


@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(-50, 400)),
        min_size=1,
        max_size=60,
    ),
    st.sampled_from([1, 1 << 52]),
)
def test_votes_are_ordered_as_lexsort_orders_them(
    votes: list[tuple[int, int, int]], scale: int
) -> None:
    # packed into one key while it fits in 62 bits (scale 1), np.lexsort mostly beyond (1 << 52)
    from spanchor_core.locate.fuzzy import _vote_order

    rows, docs, diagonals = np.array(votes, dtype=np.int64).T
    diagonals = diagonals * scale
    order = _vote_order(rows, docs, diagonals)
    expected = np.lexsort((diagonals, docs, rows))
    for a in (rows, docs, diagonals):
        assert a[order].tolist() == a[expected].tolist()


class _View:
    """What choosing regions reads of a normalised view: lengths, and a to_normalised that
    is any fixed function (here a shift rounded down to 32), counting its calls."""

    def __init__(self) -> None:
        self.lengths = np.array([900, 700, 800, 1000], dtype=np.int64)
        self.asked = 0

    def to_normalised(self, doc: int, canonical: int) -> int:
        self.asked += 1
        return max(0, (canonical - 3 * doc) // 32 * 32)


def _reference_regions(
    job: object, clusters: list[tuple[int, int, int, int]], view: _View, max_candidates: int
) -> list[tuple[int, int, int]]:
    """The fuzzy stage's choice of regions as session 12 made it: the claims always asked
    once the votes left a cluster out, their clusters added after the voted ones."""
    from spanchor_core.locate.fuzzy import _SPARSE_VOTES, _claimed

    n = len(job.norm)  # type: ignore[attr-defined]
    if len(clusters) == 1:
        doc, lo, hi, _ = clusters[0]
        lo, hi = max(0, lo), min(int(view.lengths[doc]), hi + n)
        return [(doc, lo, hi)] if hi > lo else []
    best = max(c[3] for c in clusters)
    keep = sorted(
        (i for i, c in enumerate(clusters) if 2 * c[3] >= best),
        key=lambda i: (-clusters[i][3], i),
    )
    chosen = keep[: 2 if best <= _SPARSE_VOTES else max_candidates]
    if (job.doc is not None or job.prefer) and len(chosen) < len(clusters):  # type: ignore[attr-defined]
        chosen.extend(_claimed(job, clusters, view))  # type: ignore[arg-type]
    regions = []
    for i in dict.fromkeys(chosen):
        doc, lo, hi, _ = clusters[i]
        lo, hi = max(0, lo), min(int(view.lengths[doc]), hi + n)
        if hi > lo:
            regions.append((doc, lo, hi))
    return regions


@settings(max_examples=400, deadline=None)
@given(
    clusters=st.lists(
        st.tuples(st.integers(0, 3), st.integers(-40, 900), st.integers(0, 60), st.integers(1, 9)),
        min_size=1,
        max_size=8,
    ),
    doc=st.none() | st.integers(0, 3),
    hint=st.none() | st.integers(0, 1000),
    prefer=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 900), st.integers(1, 200)), max_size=3
    ),
    max_candidates=st.sampled_from([1, 2, 50]),
)
def test_regions_skip_only_claims_that_cannot_add_a_cluster(
    clusters: list[tuple[int, int, int, int]],
    doc: int | None,
    hint: int | None,
    prefer: list[tuple[int, int, int]],
    max_candidates: int,
) -> None:
    # _regions asks for the claimed offsets only when a claim could name a cluster the votes
    # left out; the regions are those of the reference, which always asked
    from spanchor_core.locate.context import SearchContext
    from spanchor_core.locate.fuzzy import _regions
    from spanchor_core.locate.resolve import Pending
    from spanchor_core.locate.settings import LocatorSettings

    clusters = sorted((d, lo, lo + width, votes) for d, lo, width, votes in clusters)
    job = Pending(
        0,
        "t",
        doc,
        None if doc is None else f"d{doc}",
        hint if doc is not None else None,
        None,
        tuple((d, s, s + w) for d, s, w in prefer),
        "x" * 120,
    )
    ctx = SearchContext(
        Corpus.from_texts({"d0": "abc " * 10}), LocatorSettings(max_candidates=max_candidates)
    )
    view, reference_view = _View(), _View()
    expected = _reference_regions(job, clusters, reference_view, max_candidates)
    assert _regions(ctx, job, clusters, view) == expected
    assert view.asked <= reference_view.asked
