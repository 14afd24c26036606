"""Oracle recall: exact optimum checked against brute force; the chunking/ranking split."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spanchor_core.diagnosis.oracle import (
    MetricSplit,
    QuerySplit,
    oracle_recall,
    oracle_recalls,
    split_change,
)
from spanchor_core.errors import InputError
from spanchor_core.spans import DocSpan, Span, group_by_document, intersection_length, union_spans

DOCS = ("a", "b")


def brute_force(gold: list[DocSpan], chunks: dict[str, list[Span]], k: int) -> int:
    """Gold characters covered by the best choice of at most k chunks, by enumeration."""
    union = group_by_document(gold)
    every = [(doc, span) for doc, spans in chunks.items() for span in spans]
    best = 0
    for size in range(min(k, len(every)) + 1):
        for picked in itertools.combinations(every, size):
            covered = 0
            for doc, spans in union.items():
                mine = union_spans(span for d, span in picked if d == doc)
                covered += intersection_length(spans, mine)
            best = max(best, covered)
    return best


spans = st.tuples(st.integers(0, 40), st.integers(1, 12)).map(lambda p: (p[0], p[0] + p[1]))
doc_spans = st.tuples(st.sampled_from(DOCS), spans).map(lambda p: DocSpan(p[0], *p[1]))


@given(
    gold=st.lists(doc_spans, min_size=1, max_size=4),
    chunk_list=st.lists(doc_spans, max_size=8),
    k=st.integers(1, 4),
)
def test_oracle_equals_brute_force(gold: list[DocSpan], chunk_list: list[DocSpan], k: int) -> None:
    chunks: dict[str, list[Span]] = {}
    for chunk in chunk_list:
        chunks.setdefault(chunk.document_id, []).append((chunk.start, chunk.end))
    found = oracle_recall(gold, chunks, k)
    assert found.covered == brute_force(gold, chunks, k)
    # the chosen chunks are real chunks, at most k of them, and really cover that much
    assert len(found.chunks) <= k
    assert all((c.start, c.end) in chunks[c.document_id] for c in found.chunks)
    union = group_by_document(gold)
    mine = group_by_document(found.chunks)
    assert found.covered == sum(intersection_length(union[doc], mine.get(doc, [])) for doc in union)


@given(gold=st.lists(doc_spans, min_size=1, max_size=3), chunk_list=st.lists(doc_spans, max_size=8))
def test_oracle_grows_with_k_and_reaches_full_coverage_of_what_chunks_cover(
    gold: list[DocSpan], chunk_list: list[DocSpan]
) -> None:
    chunks: dict[str, list[Span]] = {}
    for chunk in chunk_list:
        chunks.setdefault(chunk.document_id, []).append((chunk.start, chunk.end))
    values = oracle_recalls(gold, chunks, [1, 2, 3, 50])
    covered = [values[k].covered for k in (1, 2, 3, 50)]
    assert covered == sorted(covered)
    union = group_by_document(gold)
    everything = sum(intersection_length(union[d], union_spans(chunks.get(d, []))) for d in union)
    assert values[50].covered == everything


def test_worked_example_union_semantics_and_choice() -> None:
    # gold a[10:30]; chunks [0:20] (10 gold), [15:25] (inside the union of the others),
    # [20:40] (10 gold), b[0:5] elsewhere: the best two chunks cover all 20 gold characters.
    gold = [DocSpan("a", 10, 30)]
    chunks = {"a": [(0, 20), (15, 25), (20, 40)], "b": [(0, 5)]}
    found = oracle_recalls(gold, chunks, [1, 2])
    assert found[1].recall == 0.5
    assert found[2].recall == 1.0
    assert found[2].chunks == (DocSpan("a", 0, 20), DocSpan("a", 20, 40))
    assert found[2].to_json()["chunks"] == [["a", 0, 20], ["a", 20, 40]]


def test_two_documents_share_the_budget() -> None:
    gold = [DocSpan("a", 0, 10), DocSpan("b", 0, 4)]
    chunks = {"a": [(0, 5), (5, 10)], "b": [(0, 4)]}
    found = oracle_recalls(gold, chunks, [1, 2, 3])
    assert [found[k].covered for k in (1, 2, 3)] == [5, 10, 14]


def test_no_chunks_gives_zero_and_empty_gold_is_refused() -> None:
    assert oracle_recall([DocSpan("a", 0, 3)], {}, 5).recall == 0.0
    with pytest.raises(InputError):
        oracle_recall([], {"a": [(0, 3)]}, 5)
    with pytest.raises(InputError):
        oracle_recall([DocSpan("a", 0, 3)], {}, 0)


def test_split_change_adds_up_and_reads_as_one_line() -> None:
    split = split_change(
        {"q1": 1.0, "q2": 1.0},
        {"q1": 0.8, "q2": 1.0},
        {"q1": 1.0, "q2": 0.9},
        {"q1": 0.6, "q2": 0.8},
        metric="recall@5",
    )
    assert isinstance(split, MetricSplit)
    assert split.queries[0] == QuerySplit("q1", 1.0, 0.6, 1.0, 0.8)
    assert math.isclose(split.delta, -0.25)
    assert math.isclose(split.chunking, -0.1)
    assert math.isclose(split.ranking, -0.15)
    assert math.isclose(split.chunking + split.ranking, split.delta)
    assert split.line() == "recall@5 -0.25: -0.10 chunking (oracle 1.00 → 0.90), -0.15 ranking"
    assert split.to_json()["n"] == 2


def test_split_change_needs_an_oracle_for_every_compared_query() -> None:
    with pytest.raises(InputError, match="no candidate oracle value: q2"):
        split_change({"q1": 1, "q2": 1}, {"q1": 1}, {"q1": 1, "q2": 1}, {"q1": 1, "q2": 1})
    with pytest.raises(InputError, match="finite"):
        split_change({"q1": 1}, {"q1": 1}, {"q1": math.nan}, {"q1": 1})
    assert split_change({}, {}, {}, {}).line() == "recall: no queries to split"


def test_the_depth_note_counts_the_scored_list_not_every_record() -> None:
    """A LlamaIndex query engine records a retrieval of 8 and a context of 4 in one trace; the
    context is scored, so the run holds 4 results per query: below recall@5's K the split says
    so (counting both records' 8 results, it said "at most 8" at K=10 and nothing at K=5)."""
    from spanchor_core.corpus import Corpus
    from spanchor_core.diagnosis.oracle import chunking_split
    from spanchor_core.evaluate import evaluate
    from spanchor_core.gold import Anchor, GoldQuery, GoldSet
    from spanchor_core.runs import RetrievalRecord, RetrievedResult, Run, RunHeader

    text = "".join(f"Sentence number {i:02d} of the one document. " for i in range(40))
    corpus = Corpus.from_texts({"doc": text})
    step = len("Sentence number 00 of the one document. ")
    gold = GoldSet([GoldQuery("q1", "where?", (Anchor.from_span(corpus, "doc", 0, step),))])

    def results(count: int) -> tuple[RetrievedResult, ...]:
        return tuple(
            RetrievedResult(rank=r + 1, text=text[(r + 1) * step : (r + 2) * step].strip())
            for r in range(count)
        )

    run = Run(
        RunHeader(),
        [
            RetrievalRecord("q1", "where?", results(8), trace_id="t", stage="retrieval"),
            RetrievalRecord("q1", "where?", results(4), trace_id="t", stage="context"),
        ],
    )
    evaluation = evaluate(corpus, gold, run, k=(1, 5, 10))
    assert len(evaluation["q1"].results) == 4  # the context line is what was scored
    chunks = {"doc": [(i * step, (i + 1) * step) for i in range(40)]}
    assert chunking_split(evaluation, evaluation, chunks, chunks, k=5).depth == 4
    assert chunking_split(evaluation, evaluation, chunks, chunks, k=10).depth == 4
    assert chunking_split(evaluation, evaluation, chunks, chunks, k=1).depth is None
