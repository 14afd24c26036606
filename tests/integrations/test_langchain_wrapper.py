"""RecordingRetriever: transparent under invoke/ainvoke/batch/abatch, records every call, never
breaks the retrieval; ScoredVectorStoreRetriever and the document translation."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_text_splitters")

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda

from spanchor_core import MatchStatus, RecorderError, RunRecorder, evaluate, read_run
from spanchor_langchain import (
    RecordingRetriever,
    ScoredVectorStoreRetriever,
    documents_to_results,
    source_to_document_id,
)
from tests.integrations.test_langchain_helpers import (
    CollectingHandler,
    FailingRetriever,
    SlowRetriever,
    garden_corpus,
    garden_gold,
    vector_store,
)

QUESTIONS = [query.question for query in garden_gold().values()]
REPO = Path(__file__).resolve().parents[2]


def many_questions(n: int) -> list[str]:
    return [f"{QUESTIONS[i % len(QUESTIONS)]} (variant {i})" for i in range(n)]


# -- transparency -------------------------------------------------------------------------------


def test_invoke_returns_the_wrapped_output_and_records_one_line(tmp_path: Path) -> None:
    bare = vector_store().as_retriever(search_kwargs={"k": 3})
    with RecordingRetriever(bare, tmp_path / "run.jsonl") as wrapped:
        assert isinstance(wrapped, BaseRetriever)
        got = wrapped.invoke(QUESTIONS[0])
    assert got == bare.invoke(QUESTIONS[0])
    run = read_run(tmp_path / "run.jsonl")
    assert run.header.retriever.description == "langchain:VectorStoreRetriever"
    assert run.header.retriever.parameters["search_kwargs"] == {"k": 3}
    (record,) = run.records
    assert record.query == QUESTIONS[0]
    assert [r.text for r in record.results] == [d.page_content for d in got]
    assert [r.rank for r in record.results] == [1, 2, 3]
    assert [r.start for r in record.results] == [d.metadata["start_index"] for d in got]
    assert record.results[0].metadata == got[0].metadata
    assert record.latency_ms is not None
    assert record.latency_ms > 0
    assert record.error is None


def test_the_output_object_itself_is_returned(tmp_path: Path) -> None:
    documents = [Document(page_content="x")]
    inner: Runnable[str, list[Document]] = RunnableLambda(lambda _query: documents)
    with RecordingRetriever(inner, tmp_path / "run.jsonl") as wrapped:
        assert wrapped.invoke("q") is documents
        assert asyncio.run(wrapped.ainvoke("q")) is documents


def test_ainvoke_batch_abatch_give_the_same_outputs_as_the_bare_retriever(tmp_path: Path) -> None:
    bare = vector_store().as_retriever(search_kwargs={"k": 2})
    wrapped = RecordingRetriever(bare, tmp_path / "run.jsonl")
    assert asyncio.run(wrapped.ainvoke(QUESTIONS[1])) == bare.invoke(QUESTIONS[1])
    assert wrapped.batch(QUESTIONS) == bare.batch(QUESTIONS)
    assert asyncio.run(wrapped.abatch(QUESTIONS)) == asyncio.run(bare.abatch(QUESTIONS))
    wrapped.close()
    records = read_run(tmp_path / "run.jsonl").records
    assert len(records) == 1 + 2 * len(QUESTIONS)
    assert sorted(r.query for r in records[1:]) == sorted(QUESTIONS * 2)


def test_a_binding_is_wrapped_and_config_reaches_the_inner_runnable(tmp_path: Path) -> None:
    seen: list[RunnableConfig] = []

    def retrieve(query: str, config: RunnableConfig) -> list[Document]:
        seen.append(config)
        return [Document(page_content=query.upper())]

    binding = RunnableLambda(retrieve).with_config(tags=["bound"])
    assert not isinstance(binding, BaseRetriever)
    handler = CollectingHandler()
    with RecordingRetriever(binding, tmp_path / "run.jsonl") as wrapped:
        out = wrapped.invoke(
            "hello",
            config={
                "tags": ["caller"],
                "metadata": {"spanchor_query_id": "q7", "team": "search"},
                "configurable": {"flavour": "x"},
                "callbacks": [handler],
                "run_name": "my-retrieval",
            },
        )
    assert out == [Document(page_content="HELLO")]
    config = seen[0]
    assert {"caller", "bound"} <= set(config["tags"])
    assert config["metadata"]["team"] == "search"
    assert config["configurable"]["flavour"] == "x"
    (record,) = read_run(tmp_path / "run.jsonl").records
    assert record.query_id == "q7"


def test_callbacks_see_the_inner_retriever_run_once(tmp_path: Path) -> None:
    bare = vector_store().as_retriever(tags=["store"])
    handler = CollectingHandler()
    with RecordingRetriever(bare, tmp_path / "run.jsonl") as wrapped:
        wrapped.invoke(QUESTIONS[2], config={"callbacks": [handler], "tags": ["mine"]})
    assert len(handler.starts) == 1, "the wrapper starts no run of its own"
    assert {"store", "mine"} <= set(handler.starts[0]["tags"])
    assert handler.starts[0]["name"] == "VectorStoreRetriever"


def test_query_id_comes_from_an_enclosing_chain_config(tmp_path: Path) -> None:
    with RecordingRetriever(vector_store().as_retriever(), tmp_path / "run.jsonl") as wrapped:
        chain = RunnableLambda(lambda x: x["question"]) | wrapped
        chain.invoke({"question": QUESTIONS[0]}, config={"metadata": {"spanchor_query_id": "q1"}})
        # A retriever called by hand inside a lambda gets the parent's config via the context.
        inner_call: Runnable[str, list[Document]] = RunnableLambda(lambda q: wrapped.invoke(q))
        inner_call.invoke(QUESTIONS[1], config={"metadata": {"spanchor_query_id": "q2"}})
    assert [r.query_id for r in read_run(tmp_path / "run.jsonl").records] == ["q1", "q2"]


def test_query_ids_from_gold_text_when_metadata_has_none(tmp_path: Path) -> None:
    gold = garden_gold()
    with RecordingRetriever(vector_store().as_retriever(), tmp_path / "r.jsonl", gold=gold) as w:
        w.batch(QUESTIONS[:3])
        w.invoke("not a gold question")
    records = read_run(tmp_path / "r.jsonl").records
    assert sorted(str(r.query_id) for r in records) == ["None", "q1", "q2", "q3"]
    assert w.recorder.unmatched == 1
    assert read_run(tmp_path / "r.jsonl").header.gold_sha256 == gold.sha256


# -- errors -------------------------------------------------------------------------------------


def test_exceptions_propagate_unchanged_and_are_recorded(tmp_path: Path) -> None:
    error = KeyError("index offline")
    with RecordingRetriever(FailingRetriever(error=error), tmp_path / "run.jsonl") as wrapped:
        with pytest.raises(KeyError) as caught:
            wrapped.invoke("please fail")
        assert caught.value is error
        with pytest.raises(KeyError) as caught_async:
            asyncio.run(wrapped.ainvoke("fail again"))
        assert caught_async.value is error
        outputs: list[Any] = wrapped.batch(["ok", "fail 3"], return_exceptions=True)
        assert outputs[1] is error
        assert outputs[0] == [Document(page_content="about ok", metadata={"score": 1.0})]
        with pytest.raises(KeyError):
            wrapped.batch(["ok", "fail 4"])
    records = read_run(tmp_path / "run.jsonl").records
    errors = [r for r in records if r.error is not None]
    assert len(errors) == 4
    assert {r.error for r in errors} == {"KeyError: 'index offline'"}
    assert all(r.results == () for r in errors)


def test_a_cancelled_ainvoke_is_an_error_line_and_the_cancellation_propagates(
    tmp_path: Path,
) -> None:
    async def main(wrapped: RecordingRetriever) -> None:
        await asyncio.wait_for(
            wrapped.ainvoke("slow", {"metadata": {"spanchor_query_id": "q9"}}), 0.05
        )

    with RecordingRetriever(SlowRetriever(), tmp_path / "run.jsonl") as wrapped:
        with pytest.raises(TimeoutError):  # wait_for's own error: the cancellation went through
            asyncio.run(main(wrapped))
        assert wrapped.records == 1
    [record] = read_run(tmp_path / "run.jsonl").records
    assert (record.query_id, record.query, record.error) == ("q9", "slow", "CancelledError")
    assert record.results == ()


def test_a_failing_recorder_never_reaches_the_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = vector_store().as_retriever()
    wrapped = RecordingRetriever(bare, tmp_path / "run.jsonl")

    def explode(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(RunRecorder, "record", explode)
    assert wrapped.invoke(QUESTIONS[0]) == bare.invoke(QUESTIONS[0])
    assert asyncio.run(wrapped.ainvoke(QUESTIONS[1])) == bare.invoke(QUESTIONS[1])
    assert wrapped.batch(QUESTIONS) == bare.batch(QUESTIONS)
    assert wrapped.failures == 2 + len(QUESTIONS)


def test_unreadable_outputs_are_counted_not_raised(tmp_path: Path) -> None:
    odd: Any = [object()]
    inner: Runnable[str, list[Document]] = RunnableLambda(lambda _q: odd)
    with RecordingRetriever(inner, tmp_path / "run.jsonl") as wrapped:
        assert wrapped.invoke("q") is odd
        assert wrapped.failures == 1
        assert wrapped.records == 0


def test_a_strict_recorder_fails_fast_and_a_lenient_one_never_raises(tmp_path: Path) -> None:
    # strict=True is honoured end to end: the caller gets the RecorderError (CI fails at once).
    recorder = RunRecorder(tmp_path / "run.jsonl", strict=True)
    recorder.close()
    wrapped = RecordingRetriever(RunnableLambda(lambda q: [Document(page_content=q)]), recorder)
    with pytest.raises(RecorderError, match="closed"):
        wrapped.invoke("q")
    assert wrapped.failures == 1
    assert isinstance(recorder.last_error, RecorderError)
    lenient = RunRecorder(tmp_path / "lenient.jsonl")
    lenient.close()
    wrapped = RecordingRetriever(RunnableLambda(lambda q: [Document(page_content=q)]), lenient)
    assert wrapped.invoke("q") == [Document(page_content="q")]
    assert wrapped.failures == 1

    def unreadable(query: str) -> list[Document]:
        return [object()]  # type: ignore[list-item]

    strict_path = RecordingRetriever(
        RunnableLambda(unreadable), tmp_path / "strict.jsonl", strict=True
    )
    with pytest.raises(RecorderError, match="not a Document"):
        strict_path.invoke("q")


def test_header_arguments_with_an_open_recorder_are_refused(tmp_path: Path) -> None:
    with RunRecorder(tmp_path / "run.jsonl") as recorder, pytest.raises(ValueError, match="gold"):
        RecordingRetriever(vector_store().as_retriever(), recorder, gold=garden_gold())


def test_a_shared_recorder_collects_several_wrappers_and_stays_open(tmp_path: Path) -> None:
    store = vector_store()
    with RunRecorder(tmp_path / "run.jsonl", retriever="both") as recorder:
        first = RecordingRetriever(store.as_retriever(search_kwargs={"k": 1}), recorder)
        second = RecordingRetriever(store.as_retriever(search_kwargs={"k": 2}), recorder)
        first.invoke(QUESTIONS[0])
        second.invoke(QUESTIONS[0])
        first.close()
        assert not recorder.closed
    run = read_run(tmp_path / "run.jsonl")
    assert run.header.retriever.description == "both"
    assert [len(r.results) for r in run.records] == [1, 2]


def test_append_mode_keeps_earlier_lines(tmp_path: Path) -> None:
    bare = vector_store().as_retriever()
    with RecordingRetriever(bare, tmp_path / "run.jsonl") as wrapped:
        wrapped.invoke(QUESTIONS[0])
    with RecordingRetriever(bare, tmp_path / "run.jsonl", mode="a") as wrapped:
        wrapped.invoke(QUESTIONS[1])
    assert [r.query for r in read_run(tmp_path / "run.jsonl").records] == QUESTIONS[:2]


# -- concurrency --------------------------------------------------------------------------------


def test_batch_of_200_with_max_concurrency_8_records_exactly_200_lines(tmp_path: Path) -> None:
    questions = many_questions(200)
    bare = vector_store().as_retriever()
    with RecordingRetriever(bare, tmp_path / "run.jsonl") as wrapped:
        outputs = wrapped.batch(questions, config={"max_concurrency": 8})
    assert outputs == bare.batch(questions)
    run = read_run(tmp_path / "run.jsonl")
    assert run.warnings == []
    assert sorted(r.query for r in run.records) == sorted(questions)
    assert (tmp_path / "run.jsonl").read_text(encoding="utf-8").count("\n") == 201


def test_abatch_of_200_records_exactly_200_lines(tmp_path: Path) -> None:
    questions = many_questions(200)
    configs: list[RunnableConfig] = [
        {"metadata": {"spanchor_query_id": f"id{i}"}, "max_concurrency": 8}
        for i in range(len(questions))
    ]
    bare = vector_store().as_retriever()
    with RecordingRetriever(bare, tmp_path / "run.jsonl") as wrapped:
        outputs = asyncio.run(wrapped.abatch(questions, configs))
    assert outputs == bare.batch(questions)
    records = read_run(tmp_path / "run.jsonl").records
    assert len(records) == 200
    assert {r.query_id: r.query for r in records} == {f"id{i}": q for i, q in enumerate(questions)}


def test_a_process_killed_mid_run_leaves_a_readable_run_file(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(REPO)!r})
        from langchain_core.documents import Document
        from langchain_core.runnables import RunnableLambda
        from spanchor_langchain import RecordingRetriever

        text = "x" * 800
        inner = RunnableLambda(lambda q: [Document(page_content=text + q)] * 5)
        wrapped = RecordingRetriever(inner, {str(path)!r})
        i = 0
        while True:
            wrapped.invoke(f"query {{i}}")
            i += 1
            if i == 50:
                print("ready", flush=True)
        """
    )
    with subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, cwd=REPO, env=dict(os.environ)
    ) as process:
        try:
            assert process.stdout is not None
            assert process.stdout.readline().strip() == b"ready"
            time.sleep(0.05)
            process.send_signal(signal.SIGKILL)
        finally:
            process.kill()
            process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    run = read_run(path)
    assert len(run.records) >= 50
    assert len(run.warnings) <= 1  # at most the line being written when the signal came
    assert [r.query for r in run.records] == [f"query {i}" for i in range(len(run.records))]


# -- scores, offsets, document ids --------------------------------------------------------------


def test_scored_vector_store_retriever_keeps_the_store_scores(tmp_path: Path) -> None:
    store = vector_store()
    scored = ScoredVectorStoreRetriever(vectorstore=store, search_kwargs={"k": 3})
    expected = store.similarity_search_with_score(QUESTIONS[0], k=3)
    documents = scored.invoke(QUESTIONS[0])
    assert [d.page_content for d in documents] == [d.page_content for d, _ in expected]
    assert [d.metadata["score"] for d in documents] == [s for _, s in expected]
    assert "score" not in expected[0][0].metadata, "the store's documents are not modified"
    assert asyncio.run(scored.ainvoke(QUESTIONS[0])) == documents
    with RecordingRetriever(scored, tmp_path / "run.jsonl") as wrapped:
        wrapped.invoke(QUESTIONS[0])
    (record,) = read_run(tmp_path / "run.jsonl").records
    assert [r.score for r in record.results] == [s for _, s in expected]
    first, last = record.results[0].score, record.results[-1].score
    assert first is not None
    assert last is not None
    assert first > last


def test_scored_retriever_from_an_existing_vector_store_retriever() -> None:
    store = vector_store()
    plain = store.as_retriever(search_kwargs={"k": 2}, tags=["t"])
    scored = ScoredVectorStoreRetriever.from_retriever(plain)
    assert scored.search_kwargs == {"k": 2}
    assert scored.tags == ["t"]
    assert [d.page_content for d in scored.invoke(QUESTIONS[3])] == [
        d.page_content for d in plain.invoke(QUESTIONS[3])
    ]
    with pytest.raises(ValueError, match="mmr"):
        ScoredVectorStoreRetriever.from_retriever(store.as_retriever(search_type="mmr"))


def test_documents_to_results_reads_scores_offsets_and_ids() -> None:
    documents = [
        Document(page_content="abc", metadata={"score": 0.5, "start_index": 4, "source": "a"}),
        Document(page_content="de", metadata={"relevance_score": 2, "start_index": -1}),
        Document(page_content="f", metadata={"score": "high", "relevance_score": True}),
    ]
    results = documents_to_results(documents, document_id="source")
    assert [(r.rank, r.text, r.score, r.document_id, r.start, r.end) for r in results] == [
        (1, "abc", 0.5, "a", 4, 7),
        (2, "de", 2.0, None, None, None),  # -1 is LangChain's "not found", not an offset
        (3, "f", None, None, None, None),  # strings and booleans are not scores
    ]
    assert results[0].metadata is not documents[0].metadata  # a copy, not an alias
    serialised = [
        {"page_content": "abc", "metadata": {"score": 1.5}},
        {"lc": 1, "type": "constructor", "kwargs": {"page_content": "x", "metadata": {}}},
        {"text": "plain", "score": 3},
        "just text",
    ]
    assert [(r.text, r.score) for r in documents_to_results(serialised, max_results=3)] == [
        ("abc", 1.5),
        ("x", None),
        ("plain", 3.0),
    ]
    with pytest.raises(TypeError, match="result 1"):
        documents_to_results([42])


def test_source_to_document_id_follows_the_corpus_id_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "docs"
    (root / "guides").mkdir(parents=True)
    outside = tmp_path / "elsewhere.md"
    (root / "escape.md").symlink_to(outside)
    monkeypatch.chdir(tmp_path)
    rule = source_to_document_id("docs")

    def doc_id(source: Any) -> str | None:
        return rule(Document(page_content="x", metadata={"source": source}))

    assert doc_id("docs/guides/install.md") == "guides/install"
    assert doc_id(str(root / "intro.txt")) == "intro"
    assert doc_id(root / "guides" / "a.b.md") == "guides/a.b"
    assert doc_id("docs/../elsewhere.md") is None
    assert doc_id(str(outside)) is None
    assert doc_id("docs/escape.md") is None  # a symlink out of the root
    assert doc_id("https://example.com/docs/a.md") is None
    assert doc_id(None) is None
    assert doc_id("docs") is None


def test_splitter_offsets_become_verified_spans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = garden_corpus()
    gold = garden_gold(corpus)
    store = vector_store(corpus)
    config: RunnableConfig = {"metadata": {"spanchor_query_id": "q1"}}
    # The splitter's sources are "docs/<id>.md", relative to where the loader ran.
    monkeypatch.chdir(tmp_path)
    rule = source_to_document_id("docs")
    with RecordingRetriever(store.as_retriever(), "hinted.jsonl", document_id=rule) as wrapped:
        wrapped.invoke(QUESTIONS[0], config)
    with RecordingRetriever(store.as_retriever(), "plain.jsonl", corpus=corpus) as wrapped:
        wrapped.invoke(QUESTIONS[0], config)
    hinted_run = read_run("hinted.jsonl")
    assert [r.document_id for r in hinted_run.records[0].results] == [
        d.metadata["corpus_id"] for d in store.as_retriever().invoke(QUESTIONS[0])
    ]
    hinted = evaluate(corpus, gold, hinted_run)
    assert {r.status for r in hinted["q1"].results} == {MatchStatus.VERIFIED.value}
    plain_run = read_run("plain.jsonl")
    assert plain_run.header.corpus_fingerprint == corpus.fingerprint
    plain = evaluate(corpus, gold, plain_run)
    assert MatchStatus.VERIFIED.value not in {r.status for r in plain["q1"].results}
    assert dict(hinted["q1"]) == dict(plain["q1"])
    assert hinted["q1"]["recall@1"] == 1.0


def test_max_results_keeps_the_top_of_each_retrieval(tmp_path: Path) -> None:
    bare = vector_store().as_retriever(search_kwargs={"k": 4})
    with RecordingRetriever(bare, tmp_path / "run.jsonl", max_results=2) as wrapped:
        assert len(wrapped.invoke(QUESTIONS[0])) == 4
    (record,) = read_run(tmp_path / "run.jsonl").records
    assert len(record.results) == 2
    with pytest.raises(ValueError, match="max_results"):
        RecordingRetriever(bare, tmp_path / "other.jsonl", max_results=0)


def test_recording_after_close_counts_failures_and_retrieval_still_works(tmp_path: Path) -> None:
    bare = vector_store().as_retriever()
    wrapped = RecordingRetriever(bare, tmp_path / "run.jsonl")
    wrapped.close()
    assert wrapped.invoke(QUESTIONS[0]) == bare.invoke(QUESTIONS[0])
    assert wrapped.failures == 1
