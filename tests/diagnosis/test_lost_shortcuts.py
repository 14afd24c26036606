"""``lost_evidence`` against the plain definition, by characters: its shortcuts (a baseline
with nothing in a gold document, a candidate that kept every baseline span there) must give
what the full interval algebra gives."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.diagnosis import lost_evidence
from spanchor_core.evaluate import LocatedResult, QueryEvaluation, QueryStatus
from spanchor_core.spans import DocSpan

DOCS = ("a", "b", "c")
spans = st.builds(
    lambda doc, start, length: DocSpan(doc, start, start + length),
    st.sampled_from(DOCS),
    st.integers(0, 40),
    st.integers(-2, 15),
)
ranked = st.lists(st.one_of(st.none(), spans), max_size=6)


def _query(
    items: list[DocSpan | None], gold: list[DocSpan], status: QueryStatus
) -> QueryEvaluation:
    results = tuple(
        LocatedResult(rank, "unmapped", None, None, None, 0.0)
        if item is None
        else LocatedResult(rank, "exact", item.document_id, item.start, item.end, 1.0)
        for rank, item in enumerate(items, start=1)
    )
    return QueryEvaluation("q", {}, status=status, gold=tuple(gold), results=results)


def _chars(pieces: list[DocSpan]) -> set[tuple[str, int]]:
    return {(p.document_id, i) for p in pieces for i in range(p.start, p.end)}


def _covered(query: QueryEvaluation, k: int) -> set[tuple[str, int]]:
    if query.status is not QueryStatus.SCORED:
        return set()
    return _chars([s for r in query.results if r.rank <= k and (s := r.span) is not None])


@settings(max_examples=400, deadline=None)
@given(
    gold=st.lists(spans, min_size=0, max_size=3),
    before=ranked,
    after=ranked,
    k=st.integers(1, 6),
    kept=st.booleans(),
    failed=st.booleans(),
)
def test_lost_evidence_is_the_gold_the_baseline_covered_and_the_candidate_does_not(
    gold: list[DocSpan],
    before: list[DocSpan | None],
    after: list[DocSpan | None],
    k: int,
    kept: bool,
    failed: bool,
) -> None:
    if kept:  # the candidate keeps the baseline's results, reordered, plus its own
        after = list(reversed(before)) + after
    status = QueryStatus.ERROR if failed else QueryStatus.SCORED
    base = _query(before, gold, QueryStatus.SCORED)
    cand = _query(after, gold, status)
    lost = lost_evidence(base, cand, k)
    expected = (_chars(gold) & _covered(base, k)) - _covered(cand, k)
    assert _chars(lost) == expected
    # maximal pieces in document then offset order, none empty and none touching another
    assert lost == sorted(lost)
    assert all(p.end > p.start for p in lost)
    assert all(a.document_id != b.document_id or a.end < b.start for a, b in pairwise(lost))
