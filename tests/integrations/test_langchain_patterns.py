"""The RAG patterns LangChain's own docs teach, recorded by the two-line handler: each question
gives exactly one faithful ``context`` line (the documents the model saw, in order, with
scores), plus ``retrieval`` lines where a retriever ran; every line says where it came from.

LangGraph two-step RAG (``similarity_search`` in a node), agentic RAG (a content-and-artifact
tool behind ``ToolNode``), the scores how-to (``@chain`` returning Documents with
``metadata["score"]``), conversational retrieval with a rewritten question (LangGraph, and the
LCEL history-aware form), hybrid ``RunnableParallel`` + merge and ``with_fallbacks``.
"""

from __future__ import annotations

import operator
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_text_splitters")
pytest.importorskip("langgraph")

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import (
    Runnable,
    RunnableLambda,
    RunnableParallel,
    RunnablePassthrough,
    chain,
)
from langchain_core.tools import tool
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode

from spanchor_core import GoldSet, RetrievalRecord, Run, evaluate, read_run
from spanchor_langchain import ScoredVectorStoreRetriever, SpanchorCallbackHandler
from tests.integrations.test_langchain_helpers import (
    FailingRetriever,
    HashedBagOfWords,
    garden_corpus,
    garden_gold,
    split_documents,
    vector_store,
)

CORPUS = garden_corpus()
GOLD = garden_gold(CORPUS)
STORE = vector_store(CORPUS)
COARSE = InMemoryVectorStore(HashedBagOfWords(dimensions=16))  # other rankings, for hybrid
COARSE.add_documents(split_documents(CORPUS))
QUESTIONS = [query.question for query in GOLD.values()]


def texts(documents: Sequence[Any]) -> list[str]:
    return [(d[0] if isinstance(d, tuple) else d).page_content for d in documents]


def contexts(run: Run) -> dict[str, RetrievalRecord]:
    """The one context line per question; fails on a second one."""
    found: dict[str, RetrievalRecord] = {}
    for record in run.records:
        if record.stage == "context":
            assert record.query_id not in found, f"two context lines for {record.query_id}"
            found[str(record.query_id)] = record
    return found


def check_provenance(run: Run) -> None:
    for record in run.records:
        assert record.stage in ("retrieval", "context")
        assert record.source
        assert record.trace_id
        assert record.run_id
        assert record.sequence is not None
        uuid.UUID(record.trace_id)
    # Lines of one trace share one question and one query id.
    by_trace: dict[str, set[tuple[str | None, str]]] = {}
    for record in run.records:
        by_trace.setdefault(str(record.trace_id), set()).add((record.query_id, record.query))
    assert all(len(pairs) == 1 for pairs in by_trace.values())


def record_batch(app: Runnable[Any, Any], inputs: list[Any], path: Path) -> Run:
    """The way users write it: a handler built per call, on one path."""
    for item in inputs:
        app.invoke(item, config={"callbacks": [SpanchorCallbackHandler(path, gold=GOLD)]})
    run = read_run(path)
    assert run.warnings == []
    check_provenance(run)
    return run


# -- LangGraph "Build a RAG app": retrieve node with similarity_search ---------------------------


class RagState(TypedDict, total=False):
    question: str
    context: list[Document]
    answer: str


def rag_graph() -> Any:
    def retrieve(state: RagState) -> dict[str, Any]:
        return {"context": STORE.similarity_search(state["question"], k=3)}

    def generate(state: RagState) -> dict[str, Any]:
        return {"answer": " ".join(d.page_content[:10] for d in state["context"])}

    builder = StateGraph(RagState).add_sequence([retrieve, generate])
    builder.add_edge(START, "retrieve")
    return builder.compile()


def test_langgraph_two_step_rag_records_the_retrieve_nodes_documents(tmp_path: Path) -> None:
    run = record_batch(rag_graph(), [{"question": q} for q in QUESTIONS], tmp_path / "run.jsonl")
    found = contexts(run)
    assert len(run.records) == len(QUESTIONS) == len(found)
    for query in GOLD.values():
        record = found[query.query_id]
        assert record.query == query.question
        assert [r.text for r in record.results] == texts(
            STORE.similarity_search(query.question, k=3)
        )
        assert record.source == "retrieve"
        assert record.metadata["langgraph_node"] == "retrieve"
        assert record.metadata["output_key"] == "context"
        assert record.parent_run_id == record.trace_id  # the node's parent is the graph
    assert evaluate(CORPUS, GOLD, run).mean("recall@3") > 0.5


# -- agentic RAG: a content-and-artifact tool behind ToolNode -----------------------------------


@tool(response_format="content_and_artifact")
def retrieve_context(query: str) -> tuple[str, list[Document]]:
    """Retrieve information related to a query."""
    documents = STORE.similarity_search(query, k=2)
    return "\n\n".join(d.page_content for d in documents), documents


class AgentState(TypedDict):
    messages: Annotated[list[AnyMessage], operator.add]


def rewrite(question: str) -> str:
    """What a model would send as the tool query: the question's keywords."""
    stop = {"how", "what", "when", "should", "i", "do", "the", "a", "of", "to", "be", "with"}
    return " ".join(w for w in question.rstrip("?").lower().split() if w not in stop)


def agent_graph(calls: int = 1) -> Any:
    """An agent loop without a model: the 'model' node asks for ``calls`` tool calls, then
    answers from the tool messages (what create_agent / create_react_agent do)."""

    def model(state: AgentState) -> dict[str, Any]:
        turn = max(i for i, m in enumerate(state["messages"]) if isinstance(m, HumanMessage))
        question = state["messages"][turn]
        asked = sum(1 for m in state["messages"][turn:] if isinstance(m, AIMessage))
        if asked < calls:
            query = rewrite(str(question.content))
            call = {"name": "retrieve_context", "args": {"query": query}, "id": f"c{asked}"}
            return {"messages": [AIMessage(content="", tool_calls=[call])]}
        return {"messages": [AIMessage(content="answer")]}

    def route(state: AgentState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    builder = StateGraph(AgentState)
    builder.add_node("model", model)
    builder.add_node("tools", ToolNode([retrieve_context]))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", route, ["tools", END])
    builder.add_edge("tools", "model")
    return builder.compile()


def test_agentic_rag_records_the_tool_artifact_under_the_users_question(tmp_path: Path) -> None:
    inputs = [{"messages": [HumanMessage(q)]} for q in QUESTIONS]
    run = record_batch(agent_graph(), inputs, tmp_path / "run.jsonl")
    found = contexts(run)
    assert len(run.records) == len(found) == len(QUESTIONS)
    for query in GOLD.values():
        record = found[query.query_id]
        assert record.query == query.question  # the question, not the tool's rewritten query
        assert record.metadata["retriever_query"] == rewrite(query.question)
        assert record.source == "retrieve_context"
        assert [r.text for r in record.results] == texts(
            STORE.similarity_search(rewrite(query.question), k=2)
        )


def test_two_tool_calls_are_two_context_lines_of_one_trace(tmp_path: Path) -> None:
    run = record_batch(
        agent_graph(calls=2), [{"messages": [HumanMessage(QUESTIONS[0])]}], tmp_path / "run.jsonl"
    )
    # The same query twice returns the same documents: one list, one line.
    assert len(run.records) == 1
    assert run.records[0].query_id == "q1"


# -- the scores how-to: @chain returning Documents with metadata["score"] ------------------------


@chain
def scored_retriever(query: str) -> list[Document]:
    documents, scores = zip(*STORE.similarity_search_with_score(query, k=3), strict=True)
    for document, score in zip(documents, scores, strict=True):
        document.metadata["score"] = score
    return list(documents)


@chain
def pair_retriever(query: str) -> list[tuple[Document, float]]:
    return STORE.similarity_search_with_score(query, k=3)


@pytest.mark.parametrize("app", [scored_retriever, pair_retriever], ids=["metadata", "pairs"])
def test_scores_how_to_keeps_every_score(tmp_path: Path, app: Runnable[str, Any]) -> None:
    run = record_batch(app, QUESTIONS, tmp_path / "run.jsonl")
    found = contexts(run)
    assert len(run.records) == len(found) == len(QUESTIONS)
    for query in GOLD.values():
        pairs = STORE.similarity_search_with_score(query.question, k=3)
        record = found[query.query_id]
        assert [r.text for r in record.results] == [d.page_content for d, _ in pairs]
        assert [r.score for r in record.results] == pytest.approx([s for _, s in pairs])
        assert record.source == app.get_name()


# -- conversational retrieval with a rewritten question ------------------------------------------


def test_conversational_rag_records_the_follow_up_with_its_rewritten_query(
    tmp_path: Path,
) -> None:
    history: list[Any] = [
        HumanMessage("Hello, I keep a garden."),
        AIMessage("Nice. What would you like to know?"),
    ]
    inputs = [{"messages": [*history, HumanMessage(q)]} for q in QUESTIONS]
    run = record_batch(agent_graph(), inputs, tmp_path / "run.jsonl")
    found = contexts(run)
    assert sorted(found) == sorted(GOLD)
    assert all(r.query == GOLD[qid].question for qid, r in found.items())


def test_history_aware_lcel_chain_records_the_retrieval_under_the_question(
    tmp_path: Path,
) -> None:
    retriever = ScoredVectorStoreRetriever(vectorstore=STORE, search_kwargs={"k": 3})
    condense: Runnable[dict[str, Any], str] = RunnableLambda(lambda x: rewrite(x["question"]))
    retrieve_documents = (condense | retriever).with_config(run_name="retrieve_documents")
    answer: Runnable[dict[str, Any], str] = RunnableLambda(lambda x: str(len(x["context"])))
    app = RunnableParallel(context=retrieve_documents, question=lambda x: x["question"]) | answer
    inputs = [{"question": q, "chat_history": ["earlier turn"]} for q in QUESTIONS]
    run = record_batch(app, inputs, tmp_path / "run.jsonl")
    # The step outputs are the retriever's own list handed on: the retrieval line is the one
    # line, and evaluation takes it as the context.
    assert [r.stage for r in run.records] == ["retrieval"] * len(QUESTIONS)
    for record in run.records:
        assert record.query == GOLD[str(record.query_id)].question
        assert record.metadata["retriever_query"] == rewrite(record.query)
        assert record.metadata["ls_retriever_name"] == "scoredvectorstore"
        assert all(r.score is not None for r in record.results)


# -- hybrid RunnableParallel + merge, and with_fallbacks: identical across repeated runs ----------


def interleave(branches: dict[str, list[Document]]) -> list[Document]:
    merged: list[Document] = []
    seen: set[str] = set()
    for rank in range(max(len(v) for v in branches.values())):
        for name in sorted(branches):
            if rank < len(branches[name]) and branches[name][rank].page_content not in seen:
                seen.add(branches[name][rank].page_content)
                merged.append(branches[name][rank])
    return merged


def hybrid() -> Runnable[str, list[Document]]:
    dense = ScoredVectorStoreRetriever(vectorstore=STORE, search_kwargs={"k": 2})
    wide = ScoredVectorStoreRetriever(vectorstore=COARSE, search_kwargs={"k": 3})
    branches = RunnableParallel(
        dense=dense.with_config(run_name="dense"), wide=wide.with_config(run_name="wide")
    )
    return branches | RunnableLambda(interleave, name="merge")


def fallback() -> Runnable[str, list[Document]]:
    primary = FailingRetriever(error=ConnectionError("down"), trigger="").with_config(
        run_name="primary"
    )
    backup = ScoredVectorStoreRetriever(vectorstore=STORE, search_kwargs={"k": 3})
    return primary.with_fallbacks([backup.with_config(run_name="backup")])


@pytest.mark.parametrize("make", [hybrid, fallback], ids=["hybrid", "fallback"])
def test_several_retrievals_per_question_evaluate_identically_across_runs(
    tmp_path: Path, make: Any
) -> None:
    app = make()
    evaluations = []
    for attempt in range(3):
        path = tmp_path / f"run{attempt}.jsonl"
        handler = SpanchorCallbackHandler(path, gold=GOLD)
        app.batch(QUESTIONS, config={"callbacks": [handler], "max_concurrency": 4})
        handler.close()
        run = read_run(path)
        check_provenance(run)
        evaluations.append({qid: dict(s) for qid, s in evaluate(CORPUS, GOLD, run).items()})
        sources = sorted({(r.stage, r.source) for r in run.records})
        if make is hybrid:
            assert sources == [("context", "merge"), ("retrieval", "dense"), ("retrieval", "wide")]
            assert len(contexts(run)) == len(QUESTIONS)
        else:  # the failed primary is an error line; the backup's list is the one that counts
            assert sources == [("retrieval", "backup"), ("retrieval", "primary")]
            assert sum(r.error is not None for r in run.records) == len(QUESTIONS)
    assert evaluations[0] == evaluations[1] == evaluations[2]


def test_hybrid_context_line_is_the_merged_list(tmp_path: Path) -> None:
    run = record_batch(hybrid(), QUESTIONS, tmp_path / "run.jsonl")
    found = contexts(run)
    assert len(found) == len(QUESTIONS)
    for record in found.values():
        dense = STORE.similarity_search(record.query, k=2)
        wide = COARSE.similarity_search(record.query, k=3)
        assert [r.text for r in record.results] == texts(interleave({"dense": dense, "wide": wide}))
        assert record.sequence is not None
        retrievals = [
            r for r in run.records if r.trace_id == record.trace_id and r.stage == "retrieval"
        ]
        assert len(retrievals) == 2
        assert all(r.sequence is not None and r.sequence < record.sequence for r in retrievals)


# -- per-call handlers on one path keep every line -----------------------------------------------


def test_per_call_handlers_on_one_path_keep_every_line(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "candidate.jsonl"
    graph = rag_graph()
    for _ in range(20):
        for q in QUESTIONS[:1]:
            graph.invoke({"question": q}, config={"callbacks": [SpanchorCallbackHandler(path)]})
    run = read_run(path)
    assert len(run.records) == 20
    assert len({r.trace_id for r in run.records}) == 20  # twenty traces: repeats, not duplicates


def test_gold_set_hand_check_of_one_trace(tmp_path: Path) -> None:
    """One question through the graph, line by line."""
    graph = rag_graph()
    path = tmp_path / "one.jsonl"
    handler = SpanchorCallbackHandler(path)
    graph.invoke({"question": QUESTIONS[2]}, config={"callbacks": [handler], "metadata": {
        "spanchor_query_id": "q3"}})  # fmt: skip
    handler.close()
    (record,) = read_run(path).records
    assert (record.query_id, record.stage, record.source, record.sequence) == (
        "q3",
        "context",
        "retrieve",
        3,  # graph 0, retrieve 1, generate 2: numbered after every run of the trace
    )
    gold = GoldSet([GOLD["q3"]])
    assert evaluate(CORPUS, gold, read_run(path))["q3"]["hit@3"] == 1.0


# -- LCEL state built with RunnablePassthrough.assign: retrieve, rerank, format ------------------


def test_assign_chain_records_the_reranked_list_not_the_state_it_hands_on(tmp_path: Path) -> None:
    # The "return sources" shape of LangChain's how-tos: each ``assign`` adds a key to a dict
    # that keeps the earlier ones, so after the rerank the state holds both the retrieved list
    # and the reranked one. The step after the rerank hands both on unchanged; it chose
    # neither, and must not supersede the reranked list the prompt was built from.
    prompts: list[str] = []

    def rerank(state: dict[str, Any]) -> list[Document]:
        return sorted(state["docs"], key=lambda d: len(d.page_content))[:2]

    def prompt(state: dict[str, Any]) -> str:
        prompts.append("\n\n".join(d.page_content for d in state["top"]))
        return prompts[-1]

    retriever = STORE.as_retriever(search_kwargs={"k": 4})
    app = (
        RunnablePassthrough.assign(docs=operator.itemgetter("question") | retriever)
        | RunnablePassthrough.assign(top=RunnableLambda(rerank).with_config(run_name="rerank"))
        | RunnablePassthrough.assign(answer=RunnableLambda(prompt))
    )
    run = record_batch(app, [{"question": q} for q in QUESTIONS], tmp_path / "run.jsonl")
    found = contexts(run)
    assert len(found) == len(QUESTIONS)
    for question, shown in zip(QUESTIONS, prompts, strict=True):
        record = next(r for r in found.values() if r.query == question)
        assert record.source == "rerank"
        assert "\n\n".join(str(r.text) for r in record.results) == shown
        assert len(record.results) == 2


def test_a_chain_given_document_score_pairs_records_them_without_a_failure(
    tmp_path: Path,
) -> None:
    # A rerank step run on its own, fed what ``similarity_search_with_score`` returns: its input
    # is a list ending in a ``(Document, score)`` pair, which the question finder read as a
    # ``(role, content)`` message and tested for a role by hashing the Document (TypeError:
    # the handler counted a failure and the step's documents went unrecorded).
    pairs = STORE.similarity_search_with_score(QUESTIONS[0], k=3)

    def reverse(found: list[tuple[Document, float]]) -> list[Document]:
        return [doc for doc, _ in reversed(found)]

    rerank = RunnableLambda(reverse).with_config(run_name="rerank")
    handler = SpanchorCallbackHandler(tmp_path / "run.jsonl", gold=GOLD)
    shown = rerank.invoke(pairs, config={"callbacks": [handler]})
    handler.close()
    assert handler.failures == 0
    (record,) = read_run(tmp_path / "run.jsonl").records
    assert record.source == "rerank"
    assert [r.text for r in record.results] == [d.page_content for d in shown]
