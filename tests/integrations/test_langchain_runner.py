"""run_gold_set / arun_gold_set (ids, header, order, k, errors, progress) and the
LangSmith-shaped span_recall_evaluator (offline, with plain objects)."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_text_splitters")

from langchain_core.documents import Document
from langchain_core.load import dumpd
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda

from spanchor_core import (
    InputError,
    RetrievalRecord,
    Run,
    RunHeader,
    evaluate,
    read_run,
)
from spanchor_langchain import (
    arun_gold_set,
    documents_to_results,
    run_gold_set,
    span_recall_evaluator,
)
from tests.integrations.test_langchain_helpers import (
    FailingRetriever,
    garden_corpus,
    garden_gold,
    vector_store,
)

# -- run_gold_set -------------------------------------------------------------------------------


def test_run_gold_set_records_every_query_in_gold_order_with_provenance(tmp_path: Path) -> None:
    corpus = garden_corpus()
    gold = garden_gold(corpus)
    retriever = vector_store(corpus).as_retriever(search_kwargs={"k": 4})
    run = run_gold_set(
        retriever, gold, tmp_path / "run.jsonl", corpus=corpus, k=2, concurrency=8, progress=False
    )
    assert [r.query_id for r in run.records] == list(gold)
    assert [r.query for r in run.records] == [q.question for q in gold.values()]
    assert all(len(r.results) == 2 for r in run.records)
    assert run.warnings == []
    header = run.header
    assert header.corpus_fingerprint == corpus.fingerprint
    assert header.gold_sha256 == gold.sha256
    assert header.retriever.description == "langchain:VectorStoreRetriever"
    assert header.retriever.parameters["max_results"] == 2
    assert "k" not in header.retriever.parameters  # the retriever's own k is in search_kwargs
    assert header.retriever.parameters["concurrency"] == 8
    assert header.retriever.parameters["search_kwargs"] == {"k": 4}
    # The file on disk is in gold order too (lines were written in completion order).
    on_disk = read_run(tmp_path / "run.jsonl")
    assert [r.query_id for r in on_disk.records] == list(gold)
    assert evaluate(corpus, gold, on_disk).mean("recall@3") > 0.5


def test_run_gold_set_passes_config_and_keeps_going_after_errors(tmp_path: Path) -> None:
    gold = garden_gold()
    error = ConnectionError("index unavailable")
    retriever = FailingRetriever(error=error, trigger="bread")
    seen: list[dict[str, Any]] = []

    def spy_on(query: str, config: RunnableConfig) -> str:
        seen.append(dict(config.get("metadata") or {}))
        return query

    spy: Runnable[str, list[Document]] = RunnableLambda(spy_on) | retriever
    run = run_gold_set(
        spy,
        gold,
        tmp_path / "run.jsonl",
        progress=False,
        config={"metadata": {"experiment": "e1"}, "tags": ["nightly"]},
    )
    assert {m["experiment"] for m in seen} == {"e1"}
    assert sorted(m["spanchor_query_id"] for m in seen) == sorted(gold)
    failed = [r.query_id for r in run.records if r.error is not None]
    assert failed == ["q3", "q4"]  # the bread questions
    assert len(run.records) == len(gold)
    (warning,) = run.warnings
    assert warning.startswith("2 of 8 retrievals raised")
    assert "q3: ConnectionError" in warning


def test_arun_gold_set_matches_run_gold_set(tmp_path: Path) -> None:
    gold = garden_gold()
    retriever = vector_store().as_retriever()
    sync = run_gold_set(retriever, gold, tmp_path / "sync.jsonl", progress=False)
    run = asyncio.run(
        arun_gold_set(retriever, gold, tmp_path / "async.jsonl", concurrency=3, progress=False)
    )
    assert [(r.query_id, r.results) for r in run.records] == [
        (r.query_id, r.results) for r in sync.records
    ]


def test_progress_bar_only_on_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gold = garden_gold()
    retriever = vector_store().as_retriever()

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    run_gold_set(retriever, gold, tmp_path / "a.jsonl")
    assert pipe.getvalue() == ""
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    run_gold_set(retriever, gold, tmp_path / "b.jsonl")
    assert "spanchor: retrieving" in terminal.getvalue()
    terminal_off = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal_off)
    run_gold_set(retriever, gold, tmp_path / "c.jsonl", progress=False)
    assert terminal_off.getvalue() == ""


def test_run_gold_set_rejects_bad_settings(tmp_path: Path) -> None:
    retriever = vector_store().as_retriever()
    with pytest.raises(ValueError, match="concurrency"):
        run_gold_set(retriever, garden_gold(), tmp_path / "r.jsonl", concurrency=0)
    with pytest.raises(ValueError, match="k must"):
        run_gold_set(retriever, garden_gold(), tmp_path / "r.jsonl", k=0)


# -- span_recall_evaluator ----------------------------------------------------------------------


@dataclass
class FakeRun:
    outputs: Any
    inputs: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class FakeExample:
    inputs: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None


def expected_recall(documents: list[Document], query_id: str, k: int = 5) -> float:
    corpus = garden_corpus()
    gold = garden_gold(corpus)
    query = gold[query_id]
    record = RetrievalRecord(query_id, query.question, tuple(documents_to_results(documents)))
    evaluation = evaluate(corpus, gold, Run(header=RunHeader(), records=[record]), k=[k])
    return evaluation[query_id][f"recall@{k}"]


def test_evaluator_scores_like_spanchor_evaluate() -> None:
    corpus = garden_corpus()
    gold = garden_gold(corpus)
    store = vector_store(corpus)
    evaluator = span_recall_evaluator(corpus, gold, k=1)
    for query in gold.values():
        documents = store.similarity_search(query.question, k=3)
        result = evaluator(
            FakeRun(outputs={"documents": documents}),
            FakeExample(outputs={"spanchor_query_id": query.query_id}),
        )
        assert result["key"] == "span_recall@1"
        assert result["score"] == expected_recall(documents, query.query_id, k=1)
        assert result["extra"]["query_id"] == query.query_id
        assert set(result) <= {"key", "score", "comment", "extra"}


def test_evaluator_hand_computed_partial_recall() -> None:
    corpus = garden_corpus()
    gold = garden_gold(corpus)
    anchor = gold["q3"].anchors[0]  # "around 250 degrees", 18 characters
    evidence = corpus.text(anchor.document_id)[anchor.start : anchor.end]
    half = Document(page_content=evidence[:9])  # "around 25": 9 of 18 characters
    evaluator = span_recall_evaluator(corpus, gold, k=5)
    result = evaluator({"outputs": [half]}, {"outputs": {"query_id": "q3"}})
    assert result["score"] == 0.5
    hit = span_recall_evaluator(corpus, gold, k=5, metric="hit")
    assert hit({"outputs": [half]}, {"outputs": {"query_id": "q3"}})["score"] == 1.0


def test_evaluator_finds_the_gold_query_by_metadata_or_question_text() -> None:
    corpus = garden_corpus()
    gold = garden_gold(corpus)
    store = vector_store(corpus)
    evaluator = span_recall_evaluator(corpus, gold)
    question = gold["q5"].question
    documents = store.similarity_search(question, k=5)
    want = expected_recall(documents, "q5")
    by_metadata = FakeExample(metadata={"spanchor_query_id": "q5"})
    by_example_text = FakeExample(inputs={"question": question})
    by_run_text = FakeRun(outputs=documents, inputs={"input": question})
    assert evaluator(FakeRun(outputs=documents), by_metadata)["score"] == want
    assert evaluator(FakeRun(outputs={"output": documents}), by_example_text)["score"] == want
    assert evaluator(by_run_text, None)["score"] == want
    serialised = {"documents": [dumpd(document) for document in documents]}
    assert evaluator(FakeRun(outputs=serialised), by_metadata)["score"] == want
    plain_dicts = {"context": [{"page_content": d.page_content} for d in documents]}
    assert evaluator(FakeRun(outputs=plain_dicts), by_metadata)["score"] == want


def test_evaluator_says_why_it_cannot_score() -> None:
    evaluator = span_recall_evaluator(garden_corpus(), garden_gold())
    unknown = evaluator(FakeRun(outputs=[]), FakeExample(outputs={"query_id": "nope"}))
    assert unknown["score"] is None
    assert "'nope' is not in the gold set" in unknown["comment"]
    no_query = evaluator(FakeRun(outputs=[]), FakeExample(inputs={"question": "unrelated"}))
    assert no_query["score"] is None
    assert "no gold query" in no_query["comment"]
    no_documents = evaluator(FakeRun(outputs={"answer": "text"}), {"outputs": {"query_id": "q1"}})
    assert no_documents["score"] is None
    assert "holds no documents" in no_documents["comment"]
    empty = evaluator(FakeRun(outputs=[]), {"outputs": {"query_id": "q1"}})
    assert empty["score"] == 0.0


def test_evaluator_rejects_unknown_metrics_and_bad_k() -> None:
    with pytest.raises(InputError, match="unknown metric"):
        span_recall_evaluator(garden_corpus(), garden_gold(), metric="accuracy")
    with pytest.raises(ValueError, match="k must"):
        span_recall_evaluator(garden_corpus(), garden_gold(), k=0)


def test_evaluator_signature_is_what_langsmith_accepts() -> None:
    import inspect

    evaluator = span_recall_evaluator(garden_corpus(), garden_gold())
    assert list(inspect.signature(evaluator).parameters) == ["run", "example"]
    json.dumps(evaluator(FakeRun(outputs=[]), {"outputs": {"query_id": "q1"}}))


def test_evaluator_through_langsmith_offline() -> None:
    langsmith_evaluator = pytest.importorskip("langsmith.evaluation.evaluator")
    schemas = pytest.importorskip("langsmith.schemas")
    import datetime as dt
    import uuid

    corpus = garden_corpus()
    gold = garden_gold(corpus)
    documents = vector_store(corpus).similarity_search(gold["q7"].question, k=5)
    run = schemas.Run(
        id=uuid.uuid4(),
        name="retriever",
        start_time=dt.datetime.now(dt.UTC),
        run_type="retriever",
        inputs={"question": gold["q7"].question},
        outputs={"documents": documents},
        trace_id=uuid.uuid4(),
    )
    example = schemas.Example(
        id=uuid.uuid4(),
        dataset_id=uuid.uuid4(),
        inputs={"question": gold["q7"].question},
        outputs={"spanchor_query_id": "q7"},
    )
    wrapped = langsmith_evaluator.run_evaluator(span_recall_evaluator(corpus, gold))
    result = wrapped.evaluate_run(run, example)
    assert result.key == "span_recall@5"
    assert result.score == expected_recall(documents, "q7")
