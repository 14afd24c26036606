"""Never silently nothing, strict end to end, zero-code activation, explicit record(), shared
files across processes, and run_gold_set driving whole apps (graphs, agents, dict chains)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, TypedDict

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_text_splitters")

from langchain_core.documents import Document
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableLambda

from spanchor_core import RecorderError, RunRecorder, read_run
from spanchor_langchain import (
    RecordingWarning,
    SpanchorCallbackHandler,
    record,
    record_retrievals,
    recorded,
    run_gold_set,
)
from tests.integrations.test_langchain_helpers import garden_corpus, garden_gold, vector_store

CORPUS = garden_corpus()
GOLD = garden_gold(CORPUS)
STORE = vector_store(CORPUS)
QUESTIONS = [query.question for query in GOLD.values()]
ROOT = Path(__file__).resolve().parents[2]


def formats_text(question: str) -> str:
    """The pattern that records nothing: documents fetched and turned into text in one step."""
    return "\n".join(d.page_content for d in STORE.similarity_search(question, k=2))


# -- never silently nothing ---------------------------------------------------------------------


def test_a_handler_that_saw_runs_but_recorded_nothing_warns_once_at_close(tmp_path: Path) -> None:
    app = RunnableLambda(formats_text)
    handler = SpanchorCallbackHandler(tmp_path / "run.jsonl")
    app.batch(QUESTIONS, config={"callbacks": [handler]})
    with pytest.warns(RecordingWarning, match=r"saw 8 LangChain runs but recorded nothing"):
        handler.close()
    handler.close()  # once


def test_strict_raises_into_the_chain_and_at_close(tmp_path: Path) -> None:
    app = RunnableLambda(formats_text)
    handler = SpanchorCallbackHandler(tmp_path / "run.jsonl", strict=True)
    app.invoke(QUESTIONS[0], config={"callbacks": [handler]})
    with pytest.raises(RecorderError, match="recorded nothing"):
        handler.close()
    # A line that cannot be written reaches the chain (LangChain re-raises: raise_error).
    recorder = RunRecorder(tmp_path / "closed.jsonl")
    recorder.close()
    strict = SpanchorCallbackHandler(recorder, strict=True)
    with pytest.raises(RecorderError, match="closed"):
        STORE.as_retriever().invoke(QUESTIONS[0], config={"callbacks": [strict]})


def test_record_retrievals_with_several_blocks_counts_foreign_threads(tmp_path: Path) -> None:
    import threading

    retriever = STORE.as_retriever()

    def run_blocks() -> None:
        with record_retrievals(tmp_path / "a.jsonl"), record_retrievals(tmp_path / "b.jsonl"):
            # Started without any block's context while two are open: cannot be attributed.
            thread = threading.Thread(target=retriever.invoke, args=(QUESTIONS[0],))
            thread.start()
            thread.join()
            retriever.invoke(QUESTIONS[1])

    with pytest.warns(RecordingWarning, match="1 retriever runs started outside") as seen:
        run_blocks()
    assert len(seen) == 2  # each open block says so
    assert [r.query for r in read_run(tmp_path / "b.jsonl").records] == [QUESTIONS[1]]
    assert read_run(tmp_path / "a.jsonl").records == []


# -- explicit record() and @recorded ------------------------------------------------------------


class RagState(TypedDict, total=False):
    question: str
    answer: str


def test_record_inside_a_node_is_the_traces_context_and_outside_a_line_of_its_own(
    tmp_path: Path,
) -> None:
    langgraph = pytest.importorskip("langgraph.graph")

    @recorded(source="search")
    def search(question: str) -> list[Document]:
        return STORE.similarity_search(question, k=2)

    def answer(state: RagState) -> dict[str, Any]:
        return {"answer": " ".join(d.page_content for d in search(state["question"]))}

    builder = langgraph.StateGraph(RagState)
    builder.add_node("answer", answer)
    builder.add_edge(langgraph.START, "answer")
    graph = builder.compile()
    path = tmp_path / "run.jsonl"
    graph.invoke({"question": QUESTIONS[0]}, config={"callbacks": [SpanchorCallbackHandler(path)]})
    with record_retrievals(tmp_path / "scope.jsonl") as handler:
        assert record(STORE.similarity_search(QUESTIONS[1], k=2), query=QUESTIONS[1]) == 1
        assert record([Document(page_content="x")]) == 0  # no query outside a run: not taken
    assert handler.written == 1
    (inside,) = read_run(path).records
    assert (inside.stage, inside.source, inside.query) == ("context", "search", QUESTIONS[0])
    assert [r.text for r in inside.results] == [
        d.page_content for d in STORE.similarity_search(QUESTIONS[0], k=2)
    ]
    (outside,) = read_run(tmp_path / "scope.jsonl").records
    assert (outside.stage, outside.query) == ("context", QUESTIONS[1])
    assert record([Document(page_content="x")], query="q") == 0  # nothing active: 0


# -- zero-code activation and several processes on one file -------------------------------------


def test_env_var_records_a_whole_process_into_one_file_shared_by_two_processes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs" / "env.jsonl"
    script = textwrap.dedent(
        """
        import sys
        import spanchor_langchain  # registers the hook; nothing else in the app changes
        from tests.integrations.test_langchain_helpers import garden_gold, vector_store
        retriever = vector_store().as_retriever()
        chain = (lambda q: q) | retriever
        for query in garden_gold().values():
            chain.invoke(query.question)
        """
    )
    env = {
        **os.environ,
        "SPANCHOR_RUN_FILE": str(path),
        "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'integrations'}",
    }
    processes = [
        subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=env) for _ in range(2)
    ]
    assert [p.wait(timeout=120) for p in processes] == [0, 0]
    run = read_run(path)
    assert run.warnings == []
    assert len(run.records) == 2 * len(GOLD)
    assert run.header.retriever.description == "langchain:env"
    assert len({r.trace_id for r in run.records}) == 2 * len(GOLD)


def test_env_var_off_records_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPANCHOR_RUN_FILE", "0")
    STORE.as_retriever().invoke(QUESTIONS[0])
    assert not (tmp_path / "0").exists()
    assert not Path("0").exists()


# -- run_gold_set drives a whole app --------------------------------------------------------------


def test_run_gold_set_drives_a_langgraph_graph_with_an_input_mapper(tmp_path: Path) -> None:
    langgraph = pytest.importorskip("langgraph.graph")

    class State(TypedDict, total=False):
        question: str
        context: list[Document]
        answer: str

    def retrieve(state: State) -> dict[str, Any]:
        return {"context": STORE.similarity_search(state["question"], k=3)}

    builder = langgraph.StateGraph(State)
    builder.add_node("retrieve", retrieve)
    builder.add_edge(langgraph.START, "retrieve")
    run = run_gold_set(
        builder.compile(),
        GOLD,
        tmp_path / "graph.jsonl",
        input_mapper=lambda q: {"question": q.question},
        corpus=CORPUS,
        progress=False,
    )
    assert [r.query_id for r in run.records] == list(GOLD)
    assert {r.stage for r in run.records} == {"context"}
    assert run.header.retriever.description == "langchain:LangGraph"
    assert "k" not in run.header.retriever.parameters


def test_run_gold_set_drives_an_agent_and_keeps_the_retrievers_k(tmp_path: Path) -> None:
    retriever = STORE.as_retriever(search_kwargs={"k": 2})
    agent_like = RunnableLambda(lambda x: x["messages"][-1].content) | retriever
    run = run_gold_set(
        agent_like,
        GOLD,
        tmp_path / "agent.jsonl",
        input_mapper=lambda q: {"messages": [HumanMessage(q.question)]},
        progress=False,
    )
    assert [(r.query_id, r.stage, r.source) for r in run.records] == [
        (qid, "retrieval", "VectorStoreRetriever") for qid in GOLD
    ]
    assert all(len(r.results) == 2 for r in run.records)
    direct = run_gold_set(retriever, GOLD, tmp_path / "direct.jsonl", progress=False)
    assert direct.header.retriever.parameters["search_kwargs"] == {"k": 2}
    assert "k" not in direct.header.retriever.parameters  # never k: None over the retriever's


def test_run_gold_set_writes_an_error_line_when_the_app_fails_before_retrieving(
    tmp_path: Path,
) -> None:
    def flaky(question: str) -> list[Document]:
        if "bread" in question:
            raise ConnectionError("down")
        return STORE.similarity_search(question, k=2)

    run = run_gold_set(RunnableLambda(flaky), GOLD, tmp_path / "flaky.jsonl", progress=False)
    assert [r.query_id for r in run.records] == list(GOLD)
    assert [r.query_id for r in run.records if r.error] == ["q3", "q4"]
    assert run.warnings[0].startswith("2 of 8 retrievals raised")
