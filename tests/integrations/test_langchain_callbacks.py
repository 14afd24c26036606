"""SpanchorCallbackHandler and record_retrievals: every retriever run of a chain, once, joined
by run id, thread- and async-safe, and never breaking the chain."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import uuid
from pathlib import Path
from typing import Any, Literal

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_text_splitters")

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda

from spanchor_core import Evaluation, ExitCode, RunRecorder, compare, evaluate, read_run
from spanchor_langchain import (
    ScoredVectorStoreRetriever,
    SpanchorCallbackHandler,
    active_handler,
    record_retrievals,
)
from spanchor_langchain._handler_state import HandlerState
from tests.integrations.test_langchain_helpers import (
    FailingRetriever,
    SlowRetriever,
    garden_corpus,
    garden_gold,
    vector_store,
)

QUESTIONS = [query.question for query in garden_gold().values()]


def rag_chain(retriever: Runnable[str, list[Document]]) -> Runnable[dict[str, str], str]:
    """A small RAG-shaped chain: pick the question, retrieve, 'answer' from the context."""
    pick: Runnable[dict[str, str], str] = RunnableLambda(lambda x: x["question"])
    answer: Runnable[list[Document], str] = RunnableLambda(
        lambda docs: " | ".join(d.page_content[:20] for d in docs)
    )
    return pick | retriever | answer


class OuterRetriever(BaseRetriever):
    """Wraps an inner retriever the way compression/ensemble retrievers do; optionally through
    a chain, so the inner retriever's parent is a chain run, not the outer retriever run."""

    inner: BaseRetriever
    through_chain: bool = False

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        config: RunnableConfig = {"callbacks": run_manager.get_child()}
        if self.through_chain:
            rewrite: Runnable[str, str] = RunnableLambda(lambda q: q.lower())
            documents = (rewrite | self.inner).invoke(query, config)
        else:
            documents = self.inner.invoke(query, config)
        return [
            Document(page_content=d.page_content, metadata={"reranked": True})
            for d in documents[:1]
        ]


def test_a_chain_records_its_retriever_with_the_query_id_from_metadata(tmp_path: Path) -> None:
    store = vector_store()
    retriever = ScoredVectorStoreRetriever(vectorstore=store, search_kwargs={"k": 2})
    handler = SpanchorCallbackHandler(tmp_path / "run.jsonl")
    answer = rag_chain(retriever).invoke(
        {"question": QUESTIONS[0]},
        config={"callbacks": [handler], "metadata": {"spanchor_query_id": "q1"}},
    )
    assert answer == rag_chain(retriever).invoke({"question": QUESTIONS[0]})
    assert handler.records == 1
    assert handler.failures == 0
    assert handler.pending == 0
    run = read_run(tmp_path / "run.jsonl")
    (record,) = run.records
    assert record.query_id == "q1"
    assert record.query == QUESTIONS[0]
    expected = store.similarity_search_with_score(QUESTIONS[0], k=2)
    assert [(r.text, r.score) for r in record.results] == [(d.page_content, s) for d, s in expected]
    assert record.latency_ms is not None
    assert record.latency_ms > 0
    assert run.header.retriever.description == "langchain:callbacks"
    assert run.header.retriever.parameters["nested"] == "outermost"


def test_serialized_none_and_direct_event_calls(tmp_path: Path) -> None:
    handler = SpanchorCallbackHandler(tmp_path / "run.jsonl")
    run_id = uuid.uuid4()
    handler.on_retriever_start(None, "q?", run_id=run_id, metadata={"spanchor_query_id": "x"})
    handler.on_retriever_end([Document(page_content="a")], run_id=run_id)
    handler.on_retriever_end([Document(page_content="b")], run_id=uuid.uuid4())  # never started
    assert handler.failures == 0
    (record,) = read_run(tmp_path / "run.jsonl").records
    assert (record.query_id, record.query, record.results[0].text) == ("x", "q?", "a")


def test_a_failing_retriever_is_an_error_line_and_its_exception_reaches_the_caller(
    tmp_path: Path,
) -> None:
    error = TimeoutError("vector db timed out")
    handler = SpanchorCallbackHandler(tmp_path / "run.jsonl")
    chain = rag_chain(FailingRetriever(error=error))
    with pytest.raises(TimeoutError) as caught:
        chain.invoke({"question": "fail now"}, config={"callbacks": [handler]})
    assert caught.value is error
    (record,) = read_run(tmp_path / "run.jsonl").records
    assert record.error == "TimeoutError: vector db timed out"
    assert record.results == ()
    assert handler.pending == 0


@pytest.mark.parametrize(
    ("nested", "through_chain", "expected"),
    [
        ("outermost", False, [("outer", 1)]),
        ("outermost", True, [("outer", 1)]),
        ("innermost", False, [("inner", 3)]),
        ("innermost", True, [("inner", 3)]),
        ("all", False, [("inner", 3), ("outer", 1)]),
    ],
)
def test_nested_retrievers_are_recorded_once_by_policy(
    tmp_path: Path, nested: Any, through_chain: bool, expected: list[tuple[str, int]]
) -> None:
    inner = vector_store().as_retriever(search_kwargs={"k": 3})
    outer = OuterRetriever(inner=inner, through_chain=through_chain)
    handler = SpanchorCallbackHandler(tmp_path / "run.jsonl", nested=nested)
    rag_chain(outer).invoke({"question": QUESTIONS[2]}, config={"callbacks": [handler]})
    records = read_run(tmp_path / "run.jsonl").records
    kinds = [
        (
            "outer" if r.results and r.results[0].metadata.get("reranked") else "inner",
            len(r.results),
        )
        for r in records
    ]
    assert kinds == expected
    assert handler.pending == 0
    assert handler._state.enclosing == {}, "no run is remembered after the chain ends"


def test_batch_of_200_with_max_concurrency_8_records_exactly_200_lines(tmp_path: Path) -> None:
    questions = [f"{QUESTIONS[i % 8]} #{i}" for i in range(200)]
    chain = rag_chain(vector_store().as_retriever())
    handler = SpanchorCallbackHandler(tmp_path / "run.jsonl")
    configs: list[RunnableConfig] = [
        {"callbacks": [handler], "metadata": {"spanchor_query_id": f"id{i}"}, "max_concurrency": 8}
        for i in range(200)
    ]
    answers = chain.batch([{"question": q} for q in questions], configs)
    assert answers == chain.batch([{"question": q} for q in questions])
    run = read_run(tmp_path / "run.jsonl")
    assert run.warnings == []
    assert {r.query_id: r.query for r in run.records} == {
        f"id{i}": q for i, q in enumerate(questions)
    }
    assert len(run.records) == 200
    assert handler.failures == 0
    assert handler.pending == 0


def test_abatch_of_200_records_exactly_200_lines(tmp_path: Path) -> None:
    questions = [f"{QUESTIONS[i % 8]} #{i}" for i in range(200)]
    outer = OuterRetriever(inner=vector_store().as_retriever(), through_chain=True)
    chain = rag_chain(outer)
    handler = SpanchorCallbackHandler(tmp_path / "run.jsonl")
    answers = asyncio.run(
        chain.abatch(
            [{"question": q} for q in questions],
            config={"callbacks": [handler], "max_concurrency": 8},
        )
    )
    assert answers == chain.batch([{"question": q} for q in questions])
    records = read_run(tmp_path / "run.jsonl").records
    assert sorted(r.query for r in records) == sorted(questions)
    assert all(r.results[0].metadata.get("reranked") for r in records), "outermost only"
    assert handler.failures == 0
    assert handler.pending == 0


def test_a_failing_recorder_never_breaks_the_chain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chain = rag_chain(vector_store().as_retriever())
    handler = SpanchorCallbackHandler(tmp_path / "run.jsonl")

    def explode(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("recorder bug")

    monkeypatch.setattr(RunRecorder, "record", explode)
    inputs = [{"question": q} for q in QUESTIONS]
    assert chain.batch(inputs, config={"callbacks": [handler]}) == chain.batch(inputs)
    assert handler.failures == len(QUESTIONS)
    assert handler.raise_error is False


def test_a_failing_handler_method_never_breaks_the_chain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chain = rag_chain(vector_store().as_retriever())
    handler = SpanchorCallbackHandler(tmp_path / "run.jsonl")

    def explode(self: HandlerState, *args: Any) -> None:
        raise ValueError("bad bookkeeping")

    monkeypatch.setattr(HandlerState, "start_retrieval", explode)
    assert chain.invoke({"question": QUESTIONS[0]}, config={"callbacks": [handler]})
    assert asyncio.run(chain.ainvoke({"question": QUESTIONS[0]}, config={"callbacks": [handler]}))
    # Per call the retriever start fails; the end of a run whose start was lost writes nothing
    # and does not fail.
    assert handler.failures == 2
    assert handler.records == 0


def test_query_ids_from_gold_text(tmp_path: Path) -> None:
    gold = garden_gold()
    chain = rag_chain(vector_store().as_retriever())
    handler = SpanchorCallbackHandler(tmp_path / "run.jsonl", gold=gold)
    chain.batch([{"question": q} for q in QUESTIONS], config={"callbacks": [handler]})
    records = read_run(tmp_path / "run.jsonl").records
    assert sorted(str(r.query_id) for r in records) == sorted(gold)


def test_bad_nested_policy_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="nested"):
        SpanchorCallbackHandler(tmp_path / "run.jsonl", nested="middle")  # type: ignore[arg-type]


# -- record_retrievals --------------------------------------------------------------------------


def test_record_retrievals_records_everything_in_scope_and_stops_on_exit(tmp_path: Path) -> None:
    chain = rag_chain(vector_store().as_retriever())
    assert active_handler() is None
    with record_retrievals(tmp_path / "run.jsonl") as recorder:
        assert active_handler() is recorder
        chain.invoke({"question": QUESTIONS[0]})
        chain.batch([{"question": q} for q in QUESTIONS[1:4]], config={"max_concurrency": 2})
        asyncio.run(chain.ainvoke({"question": QUESTIONS[4]}))
        vector_store().as_retriever().invoke(QUESTIONS[5])  # a bare retriever call too
    assert active_handler() is None
    assert recorder.recorder.closed
    chain.invoke({"question": QUESTIONS[6]})  # after the block: not recorded
    records = read_run(tmp_path / "run.jsonl").records
    assert sorted(r.query for r in records) == sorted(QUESTIONS[:6])
    assert recorder.failures == 0


def test_record_retrievals_reaches_async_tasks_and_foreign_threads(tmp_path: Path) -> None:
    retriever = vector_store().as_retriever()

    async def main() -> None:
        await asyncio.gather(*(retriever.ainvoke(q) for q in QUESTIONS[:3]))

    with record_retrievals(tmp_path / "run.jsonl") as recorder:
        asyncio.run(main())
        foreign = threading.Thread(target=retriever.invoke, args=("plain thread",))
        foreign.start()
        foreign.join()
        context = contextvars.copy_context()
        copied = threading.Thread(target=context.run, args=(retriever.invoke, "copied context"))
        copied.start()
        copied.join()
    queries = sorted(r.query for r in read_run(tmp_path / "run.jsonl").records)
    # The plain thread does not carry the block's context; it is recorded all the same while
    # this is the only block open, and counted.
    assert queries == sorted([*QUESTIONS[:3], "copied context", "plain thread"])
    assert recorder.foreign_runs == 1


def test_nested_blocks_record_into_the_innermost_and_no_line_twice(tmp_path: Path) -> None:
    retriever = vector_store().as_retriever()
    with record_retrievals(tmp_path / "outer.jsonl") as outer:
        retriever.invoke(QUESTIONS[0])
        with record_retrievals(tmp_path / "inner.jsonl"):
            retriever.invoke(QUESTIONS[1])
        # The active handler passed by hand as well: LangChain adds it once.
        retriever.invoke(QUESTIONS[2], config={"callbacks": [outer]})
    assert [r.query for r in read_run(tmp_path / "outer.jsonl").records] == [
        QUESTIONS[0],
        QUESTIONS[2],
    ]
    assert [r.query for r in read_run(tmp_path / "inner.jsonl").records] == [QUESTIONS[1]]


def test_record_retrievals_with_a_handler_leaves_it_open(tmp_path: Path) -> None:
    handler = SpanchorCallbackHandler(tmp_path / "run.jsonl")
    with record_retrievals(handler) as active:
        assert active is handler
        vector_store().as_retriever().invoke(QUESTIONS[0])
    assert not handler.recorder.closed
    handler.close()
    assert handler.records == 1


def test_record_retrievals_refuses_settings_for_an_existing_handler(tmp_path: Path) -> None:
    handler = SpanchorCallbackHandler(tmp_path / "run.jsonl")
    with pytest.raises(ValueError, match="gold"), record_retrievals(handler, gold=garden_gold()):
        pass
    assert active_handler() is None
    handler.close()


# -- cancelled retrievals: LangChain reports neither end nor error --------------------------------


def test_a_cancelled_retrieval_in_a_chain_is_an_error_line_when_the_chain_fails(
    tmp_path: Path,
) -> None:
    handler = SpanchorCallbackHandler(tmp_path / "run.jsonl")
    chain = rag_chain(SlowRetriever())
    config: RunnableConfig = {"callbacks": [handler], "metadata": {"spanchor_query_id": "q1"}}

    async def main() -> None:
        await asyncio.wait_for(chain.ainvoke({"question": "slow"}, config), 0.5)

    with pytest.raises(TimeoutError):
        asyncio.run(main())
    # The chain reported the cancellation: its pending retrieval is written at once.
    assert (handler.pending, handler.records, handler.failures) == (0, 1, 0)
    assert (handler._state.parents, handler._state.enclosing) == ({}, {})
    handler.close()
    [record] = read_run(tmp_path / "run.jsonl").records
    assert record.query_id == "q1"
    assert record.error == "CancelledError: the retrieval was cancelled (no end event)"
    assert record.results == ()


def test_a_cancelled_top_level_retrieval_is_written_on_close(tmp_path: Path) -> None:
    handler = SpanchorCallbackHandler(tmp_path / "run.jsonl")

    async def main() -> None:
        await asyncio.wait_for(SlowRetriever().ainvoke("slow", {"callbacks": [handler]}), 0.5)

    with pytest.raises(TimeoutError):
        asyncio.run(main())
    assert handler.pending == 1, "nothing ends a retrieval that is its own top-level run"
    handler.close()
    assert handler.pending == 0
    [record] = read_run(tmp_path / "run.jsonl").records
    assert record.error == "no end event: the handler was closed before the retrieval ended"


class AsyncOuterRetriever(BaseRetriever):
    """An async retriever that calls ``inner`` through a chain (a retriever nested two deep)."""

    inner: BaseRetriever

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        raise NotImplementedError("async only")

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        rewrite: Runnable[str, str] = RunnableLambda(lambda q: q.lower())
        return await (rewrite | self.inner).ainvoke(query, {"callbacks": run_manager.get_child()})


def test_pending_retrievals_of_a_finished_chain_do_not_accumulate(tmp_path: Path) -> None:
    """Many cancelled chains, one handler: nothing stays pending, one line each."""
    handler = SpanchorCallbackHandler(tmp_path / "run.jsonl", nested="all")
    chain = rag_chain(AsyncOuterRetriever(inner=SlowRetriever()))

    async def one(i: int) -> None:
        config: RunnableConfig = {
            "callbacks": [handler],
            "metadata": {"spanchor_query_id": f"q{i}"},
        }
        await chain.ainvoke({"question": f"slow {i}"}, config)

    async def main() -> None:
        tasks = [asyncio.ensure_future(one(i)) for i in range(20)]
        # cancel once every outer and inner retrieval has started (no wall-clock guess: a
        # loaded machine may take longer than any fixed timeout to start them)
        for _ in range(3000):
            if handler.pending == 40:
                break
            await asyncio.sleep(0.01)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(main())
    assert handler.pending == 0
    assert handler._state.parents == {}
    handler.close()
    records = read_run(tmp_path / "run.jsonl").records
    assert len(records) == 40, "outer and inner run of each of the 20 chains (nested='all')"
    assert sorted({str(r.query_id) for r in records}) == sorted(f"q{i}" for i in range(20))
    assert all(r.error is not None and r.error.startswith("CancelledError") for r in records)


def test_a_run_file_the_handler_appended_to_twice_is_never_a_pass(tmp_path: Path) -> None:
    """The handler appends by default, as LangChain's ``FileCallbackHandler`` does: recording
    today's chain (k=1) into yesterday's file (k=2) leaves both recordings in it, each question
    asked in two traces. Against a baseline recorded once, the comparison is refused (exit 3)
    instead of averaging a day of another configuration into the candidate's scores; the same
    chain recorded twice (a re-run) asks alike and only warns."""
    corpus = garden_corpus()
    gold = garden_gold(corpus)
    store = vector_store(corpus)

    def record(path: Path, k: int, *, mode: Literal["w", "a"] = "a") -> Evaluation:
        retriever = ScoredVectorStoreRetriever(vectorstore=store, search_kwargs={"k": k})
        with SpanchorCallbackHandler(path, corpus=corpus, mode=mode) as handler:
            for qid, query in gold.items():
                rag_chain(retriever).invoke(
                    {"question": query.question},
                    config={"callbacks": [handler], "metadata": {"spanchor_query_id": qid}},
                )
        return evaluate(corpus, gold, read_run(path), k=[2])

    baseline = record(tmp_path / "baseline.jsonl", 2)
    record(tmp_path / "candidate.jsonl", 2)  # yesterday's recording, left where it was
    appended = record(tmp_path / "candidate.jsonl", 1)  # today's, appended to it
    assert len(read_run(tmp_path / "candidate.jsonl").records) == 2 * len(gold)
    assert appended.repeated == tuple(gold)
    comparison = compare(baseline, appended)
    assert comparison.exit_code == ExitCode.UNTRUSTED
    (finding,) = [f for f in comparison.findings if f.code == "unmatched_askings"]
    assert finding.query_ids
    assert set(finding.query_ids) == set(appended.divergent or ())
    # they are exactly the questions today's chain alone scores otherwise than yesterday's
    alone = record(tmp_path / "today.jsonl", 1, mode="w")
    changed = {qid for qid in gold if dict(alone[qid]) != dict(baseline[qid])}
    assert changed == set(finding.query_ids)
    # the same chain recorded again into the file: askings agree, a warning, a PASS
    record(tmp_path / "rerun.jsonl", 2)
    rerun = record(tmp_path / "rerun.jsonl", 2)
    assert rerun.repeated == tuple(gold)
    assert rerun.divergent == ()
    comparison = compare(baseline, rerun)
    assert comparison.exit_code == ExitCode.PASS
    assert any(f.code == "repeated_queries" for f in comparison.findings)
