"""LangSmith: evaluators that find the retrieval inside a whole app's run tree, several metrics
in the multi-result form, a summary evaluator, and gold sets as example dicts — run offline
through ``langsmith.evaluate(..., upload_results=False)`` with a client that never retries."""

from __future__ import annotations

import datetime as dt
import time
import uuid
import warnings
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_text_splitters")

from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from spanchor_core import RetrievalRecord, Run, RunHeader, evaluate
from spanchor_langchain import (
    documents_to_results,
    langsmith_examples,
    span_evaluator,
    span_recall_evaluator,
    span_summary_evaluator,
)
from tests.integrations.test_langchain_helpers import garden_corpus, garden_gold, vector_store

CORPUS = garden_corpus()
GOLD = garden_gold(CORPUS)
STORE = vector_store(CORPUS)


def expected(documents: list[Document], query_id: str, name: str) -> float:
    query = GOLD[query_id]
    record = RetrievalRecord(query_id, query.question, tuple(documents_to_results(documents)))
    evaluation = evaluate(CORPUS, GOLD, Run(header=RunHeader(), records=[record]), k=[5])
    return float(evaluation[query_id][name])


def tree(documents: list[Document], question: str) -> dict[str, Any]:
    """A whole-chain run as LangSmith hands it over: the retriever is a child run."""
    retriever = {"run_type": "retriever", "name": "VectorStoreRetriever",
                 "outputs": {"documents": documents}, "child_runs": []}  # fmt: skip
    step = {"run_type": "chain", "name": "RunnableSequence", "outputs": {"output": "x"},
            "child_runs": [retriever]}  # fmt: skip
    return {"run_type": "chain", "inputs": {"question": question},
            "outputs": {"answer": "text"}, "child_runs": [step]}  # fmt: skip


def test_span_evaluator_walks_child_runs_and_returns_several_metrics() -> None:
    evaluator = span_evaluator(CORPUS, GOLD, k=5)
    for query in GOLD.values():
        documents = STORE.similarity_search(query.question, k=5)
        result = evaluator(tree(documents, query.question), {"outputs": {}})
        keys = [r["key"] for r in result["results"]]
        assert keys == ["span_recall@5", "span_precision@5", "span_hit@5", "span_mrr@5"]
        for item in result["results"]:
            assert item["score"] == expected(documents, query.query_id, item["key"][5:])


def test_a_graph_node_output_is_found_when_no_retriever_ran() -> None:
    documents = STORE.similarity_search(GOLD["q2"].question, k=3)
    node = {"run_type": "chain", "name": "retrieve", "outputs": {"context": documents}}
    run = {"inputs": {"question": GOLD["q2"].question}, "outputs": {"answer": "a"},
           "child_runs": [node]}  # fmt: skip
    result = span_recall_evaluator(CORPUS, GOLD)(run, None)
    assert result["score"] == expected(documents, "q2", "recall@5")


def test_retriever_name_picks_one_retriever_and_unscored_runs_say_why() -> None:
    evaluator = span_evaluator(CORPUS, GOLD, k=[1, 5], metrics=["hit"], retriever_name="bm25")
    documents = STORE.similarity_search(GOLD["q1"].question, k=5)
    result = evaluator(tree(documents, GOLD["q1"].question), None)
    assert [r["key"] for r in result["results"]] == ["span_hit@1", "span_hit@5"]
    assert all(r["score"] is None for r in result["results"])
    assert "holds no documents" in result["results"][0]["comment"]


def test_summary_evaluator_means_and_coverage() -> None:
    summary = span_summary_evaluator(CORPUS, GOLD, k=5, metrics=["recall"])
    runs, examples = [], []
    for query in GOLD.values():
        runs.append(tree(STORE.similarity_search(query.question, k=5), query.question))
        examples.append({"outputs": {"spanchor_query_id": query.query_id}})
    runs.append({"outputs": {"answer": "no documents"}})
    examples.append({"outputs": {"spanchor_query_id": "q1"}})
    result = summary(runs, examples)
    means = {r["key"]: r["score"] for r in result["results"]}
    per_query = [
        expected(STORE.similarity_search(q.question, k=5), q.query_id, "recall@5")
        for q in GOLD.values()
    ]
    assert means["mean_span_recall@5"] == pytest.approx(sum(per_query) / len(per_query))
    assert means["span_coverage"] == pytest.approx(8 / 9)


def test_langsmith_examples_are_offline_dicts_the_evaluators_read() -> None:
    examples = langsmith_examples(GOLD, split="regression")
    assert len(examples) == len(GOLD)
    first = examples[0]
    assert first["inputs"] == {"question": GOLD["q1"].question}
    assert first["outputs"] == {"spanchor_query_id": "q1"}
    assert first["metadata"]["dataset_split"] == ["regression"]
    mapped = langsmith_examples(GOLD, input_mapper=lambda q: {"messages": [q.question]})
    assert mapped[0]["inputs"] == {"messages": [GOLD["q1"].question]}


def test_through_langsmith_evaluate_offline_with_a_whole_chain_target() -> None:
    langsmith = pytest.importorskip("langsmith")
    schemas = pytest.importorskip("langsmith.schemas")
    from urllib3.util.retry import Retry

    retriever = STORE.as_retriever(search_kwargs={"k": 5})
    app = (
        RunnableLambda(lambda x: x["question"])
        | retriever
        | RunnableLambda(lambda docs: {"answer": docs[0].page_content})
    )
    now = dt.datetime.now(dt.UTC)
    data = [
        schemas.Example(id=uuid.uuid4(), dataset_id=uuid.uuid4(), created_at=now, **example)
        for example in langsmith_examples(GOLD)
    ]
    client = langsmith.Client(
        api_key="offline",
        api_url="http://127.0.0.1:9",
        retry_config=Retry(total=0),
        auto_batch_tracing=False,
    )
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # langsmith's beta notice for upload_results=False
        results = langsmith.evaluate(
            app,
            data=data,
            evaluators=[span_evaluator(CORPUS, GOLD)],
            summary_evaluators=[span_summary_evaluator(CORPUS, GOLD)],
            upload_results=False,
            client=client,
        )
        rows = list(results)
    assert time.perf_counter() - started < 60  # no connection retries
    assert len(rows) == len(GOLD)
    for row in rows:
        scores = {r.key: r.score for r in row["evaluation_results"]["results"]}
        qid = row["example"].outputs["spanchor_query_id"]
        documents = retriever.invoke(GOLD[qid].question)
        assert scores["span_recall@5"] == expected(documents, qid, "recall@5")
    summary = {r.key: r.score for r in results._summary_results["results"]}
    assert summary["span_coverage"] == 1.0
    assert summary["mean_span_recall@5"] is not None
