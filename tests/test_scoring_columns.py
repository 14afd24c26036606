"""Scoring with the vectorised metrics gives what scoring query by query gave: the whole
:class:`Evaluation` of a run (errors, missing queries, repeated records, traces, every
grouping rule) equals the one scored with :func:`~spanchor_core.metrics.score_ranked` per
ranked list, the metric values bit for bit."""

from __future__ import annotations

import gc
import random
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.corpus import Corpus
from spanchor_core.evaluate import Evaluation, evaluate, scoring
from spanchor_core.evaluate.collect import SpanColumns
from spanchor_core.evaluate.scored_columns import ResultColumns
from spanchor_core.gold import Anchor, GoldQuery, GoldSet
from spanchor_core.locate import Location, MatchStatus
from spanchor_core.metrics import DEFAULT_METRICS, MetricPlan, metric_plan, score_ranked
from spanchor_core.metrics.batch import RankedColumns
from spanchor_core.runs import RetrievalRecord, RetrievedResult, Run, RunHeader
from spanchor_core.spans import DocSpan

TEXTS = {
    "a": "The quick brown fox jumps over the lazy dog. " * 6,
    "b": "Pack my box with five dozen liquor jugs, then stop now. " * 5,
    "c": "How vexingly quick daft zebras jump over fences! " * 7,
}
CORPUS = Corpus.from_texts(TEXTS)
RULES = ("auto", "first", "union", "stage:context", "source:dense")


def _one_by_one(
    golds: Sequence[Sequence[DocSpan]],
    ranked: RankedColumns,
    codes: Mapping[str, int],
    plan: MetricPlan,
    overlap: float,
) -> npt.NDArray[np.float64]:
    """The reference: every list scored by the walk."""
    names = {code: doc for doc, code in codes.items()}
    offsets = ranked.offsets.tolist()
    rows = []
    for q, gold in enumerate(golds):
        spans = [
            None
            if ranked.documents[i] < 0
            else DocSpan(
                names[int(ranked.documents[i])], int(ranked.starts[i]), int(ranked.ends[i])
            )
            for i in range(offsets[q], offsets[q + 1])
        ]
        rows.append(list(score_ranked(gold, spans, plan, overlap).values()))
    return np.array(rows, dtype=np.float64).reshape(len(golds), len(plan))


def _run(seed: int, n_queries: int) -> tuple[GoldSet, Run]:
    rng = random.Random(seed)
    docs = sorted(TEXTS)
    queries = []
    for q in range(n_queries):
        anchors = []
        for _ in range(rng.randint(1, 3)):
            doc = rng.choice(docs)
            start = rng.randrange(0, len(TEXTS[doc]) - 40)
            anchors.append(Anchor.from_span(CORPUS, doc, start, start + rng.randint(5, 40)))
        queries.append(GoldQuery(f"q{q}", f"question {q}?", tuple(anchors)))
    gold = GoldSet(queries)
    records = []
    for q in range(n_queries):
        for r in range(rng.choice((0, 1, 1, 1, 2, 3))):
            results = []
            for rank in range(1, rng.randint(0, 14) + 1):
                doc = rng.choice(docs)
                start = rng.randrange(0, len(TEXTS[doc]) - 60)
                end = start + rng.randint(1, 60)
                kind = rng.random()
                if kind < 0.15:
                    results.append(RetrievedResult(rank, f"nothing like it {rng.random()}"))
                elif kind < 0.3:
                    results.append(RetrievedResult(rank, None, None, doc, start, end))
                else:
                    results.append(RetrievedResult(rank, TEXTS[doc][start:end]))
            records.append(
                RetrievalRecord(
                    query_id=f"q{q}" if rng.random() < 0.95 else f"x{q}",
                    query=f"question {q}?",
                    results=tuple(results),
                    error="timeout" if rng.random() < 0.05 else None,
                    source=rng.choice((None, "dense", "sparse")),
                    stage=rng.choice((None, "retrieval", "context")),
                    trace_id=rng.choice((None, f"t{q}", f"t{q}-{r}")),
                )
            )
    return gold, Run(RunHeader(), records)


def _same(a: Evaluation, b: Evaluation) -> None:
    assert list(a) == list(b)
    for qid in a:
        x, y = a[qid], b[qid]
        assert list(x.metrics) == list(y.metrics)
        assert [repr(v) for v in x.metrics.values()] == [repr(v) for v in y.metrics.values()], qid
        assert (x.status, x.gold, x.results, x.mapping, x.error, x.traces) == (
            y.status,
            y.gold,
            y.results,
            y.mapping,
            y.error,
            y.traces,
        )
    assert a.mapping == b.mapping
    assert (a.missing_in_run, a.errors, a.duplicates, a.not_in_gold) == (
        b.missing_in_run,
        b.errors,
        b.duplicates,
        b.not_in_gold,
    )


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(RULES), st.sampled_from([(1, 3, 5), (2, 20)]))
def test_vectorised_scoring_equals_scoring_list_by_list(
    seed: int, rule: str, k: tuple[int, ...]
) -> None:
    gold, run = _run(seed, 12)
    fast = evaluate(CORPUS, gold, run, group=rule, k=k)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scoring, "score_columns", _one_by_one)
        slow = evaluate(CORPUS, gold, run, group=rule, k=k)
    _same(fast, slow)


def test_a_larger_run_in_one_evaluation() -> None:
    gold, run = _run(7, 300)
    fast = evaluate(CORPUS, gold, run)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scoring, "score_columns", _one_by_one)
        slow = evaluate(CORPUS, gold, run)
    _same(fast, slow)
    # the oddities occurred
    assert fast.missing_in_run
    assert fast.errors
    assert fast.repeated


def test_the_collector_is_paused_while_scoring_and_restored_after() -> None:
    gold, run = _run(3, 5)
    seen: list[bool] = []

    def progress(phase: str, done: int, total: int) -> None:
        seen.append(gc.isenabled())

    assert gc.isenabled()
    evaluate(CORPUS, gold, run, progress=progress)
    assert gc.isenabled()
    assert seen
    assert not any(seen)
    gc.disable()
    try:
        evaluate(CORPUS, gold, run)
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()


_SPAN = st.one_of(
    st.none(),
    st.builds(
        lambda doc, start, size: DocSpan(doc, start, start + size),
        st.sampled_from(["a", "b"]),
        st.integers(0, 200),
        st.integers(1, 60),
    ),
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(_SPAN, max_size=6), min_size=1, max_size=8),
    st.integers(0, 5),
)
def test_lists_read_in_place_score_as_lists_gathered(
    lists: list[list[DocSpan | None]], extra: int
) -> None:
    # in mapping order (read from the columns in place) and the same lists appended after
    # ``extra`` spans of other lists (gathered): the same values row by row
    plan = metric_plan((1, 3), DEFAULT_METRICS)
    gold = (DocSpan("a", 10, 90),)
    in_place = scoring._Lists(SpanColumns())
    shifted = scoring._Lists(SpanColumns())
    shifted.spans.add([DocSpan("b", 0, 5)] * extra)
    for spans in lists:
        in_place.add(gold, in_place.spans.add(spans), len(spans))
        shifted.add(gold, shifted.spans.add(spans), len(spans))
    expected = np.array([list(score_ranked(gold, spans, plan, 0.0).values()) for spans in lists])
    for table in (in_place, shifted):
        assert np.array_equal(table.score(plan, 0.0), expected)


_STATUSES = list(MatchStatus)
_location = st.builds(
    Location,
    st.sampled_from(_STATUSES),
    st.sampled_from([None, "a", "b", "unmapped", "exact", ""]),
    st.one_of(st.none(), st.integers(0, 500)),
    st.one_of(st.none(), st.integers(0, 500)),
    st.floats(0, 1),
    st.just(()),
    st.sampled_from([None, "gold", "a"]),
    st.booleans(),
    st.sampled_from([None, "why"]),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(_location, max_size=12), max_size=4))
def test_spans_read_off_the_result_columns_are_each_results_span(
    batches: list[list[Location]],
) -> None:
    """The collector's spans of a mapped batch, read off the result columns with numpy, are
    each result's own ``LocatedResult.span`` appended one by one: the same document codes
    (given in the order met, across batches), offsets and no-span entries, and the results
    without a span are those listed."""
    results, fast, slow = ResultColumns(), SpanColumns(), SpanColumns()
    for locations in batches:
        statuses = [str(location.status.value) for location in locations]
        at = results.add_located(list(range(1, len(locations) + 1)), statuses, locations)
        unmapped = fast.add_columns(results, at)
        spans = [r.span for r in results.results(at, len(locations))]
        slow.add(spans)
        assert unmapped == [index for index, span in enumerate(spans) if span is None]
    assert fast.codes == slow.codes
    assert list(fast.codes) == list(slow.codes)
    assert fast.documents == slow.documents
    assert fast.starts == slow.starts
    assert fast.ends == slow.ends
