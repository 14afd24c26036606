"""Recording what the synthesizer saw: stages, traces and worker threads, with real engines.

Real LlamaIndex objects only, offline: ``SimpleDirectoryReader`` over the quickstart docs,
``SentenceSplitter``, BM25, ``RetrieverQueryEngine`` / ``SubQuestionQueryEngine`` with
``MockLLM``, and postprocessors that are deliberately bad.
"""

from __future__ import annotations

import asyncio
import warnings
from collections import Counter, defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("llama_index.retrievers.bm25")

from llama_index.core import SimpleDirectoryReader
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine, SubQuestionQueryEngine
from llama_index.core.question_gen.types import BaseQuestionGenerator, SubQuestion
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from llama_index.core.tools import QueryEngineTool, ToolMetadata

from spanchor_core import (
    Corpus,
    Evaluation,
    GoldSet,
    RetrievalRecord,
    Run,
    load_corpus,
    read_gold,
    read_run,
    write_gold,
    write_run,
)
from spanchor_core import evaluate as core_evaluate
from spanchor_core.cli import main as cli_main
from spanchor_llamaindex import record_retrievals, tag_query
from tests.integrations.test_llamaindex import llamaindex_sync_api  # noqa: F401  # a fixture

bm25 = pytest.importorskip("llama_index.retrievers.bm25")

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "examples" / "quickstart" / "docs"
GOLD = ROOT / "examples" / "quickstart" / "gold.jsonl"

dispatcher = get_dispatcher(__name__)


@cache
def quickstart() -> tuple[Corpus, GoldSet, tuple[BaseNode, ...]]:
    documents = SimpleDirectoryReader(str(DOCS)).load_data()
    nodes = SentenceSplitter(chunk_size=128, chunk_overlap=0).get_nodes_from_documents(documents)
    return load_corpus(DOCS), read_gold(GOLD), tuple(nodes)


def retriever(k: int = 5) -> BaseRetriever:
    nodes = quickstart()[2]
    found: BaseRetriever = bm25.BM25Retriever.from_defaults(nodes=list(nodes), similarity_top_k=k)
    return found


class KeepTheWorst(BaseNodePostprocessor):
    """A deliberately bad postprocessor: reverses the ranking and keeps one node."""

    keep: int = 1

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        return list(reversed(nodes))[: self.keep]


class WorstFirstReranker(BaseNodePostprocessor):
    """A reranker (it announces itself with ReRank events, as LlamaIndex's rerankers do)."""

    top_n: int = 5

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        dispatcher.event(
            ReRankStartEvent(query=query_bundle, nodes=nodes, top_n=self.top_n, model_name="worst")
        )
        ranked = list(reversed(nodes))[: self.top_n]
        dispatcher.event(ReRankEndEvent(nodes=ranked))
        return ranked


def engine(*postprocessors: BaseNodePostprocessor, streaming: bool = False) -> RetrieverQueryEngine:
    return RetrieverQueryEngine.from_args(
        retriever(), llm=MockLLM(), node_postprocessors=list(postprocessors), streaming=streaming
    )


def record(path: Path, query_engine: Any, queries: Sequence[tuple[str, str]]) -> Run:
    corpus, gold, _ = quickstart()
    with record_retrievals(path, corpus=corpus, gold=gold):
        for query_id, question in queries:
            with tag_query(query_id):
                query_engine.query(question)
    return read_run(path)


def all_queries() -> list[tuple[str, str]]:
    return [(q.query_id, q.question) for q in quickstart()[1].values()]


def stage(run: Run, name: str) -> Run:
    """The run's lines of one stage (what the core's grouping will pick per trace)."""
    return Run(run.header, [r for r in run.records if r.stage == name], run.path)


def evaluate(run: Run, query_ids: Sequence[str] | None = None) -> Evaluation:
    corpus, gold, _ = quickstart()
    if query_ids is not None:
        gold = GoldSet(gold[q] for q in query_ids)
    return core_evaluate(corpus, gold, run, k=[1, 5])


def texts(record: RetrievalRecord) -> list[str | None]:
    return [r.text for r in record.results]


# -- stages ----------------------------------------------------------------------------------


def test_a_query_engine_records_retrieval_rerank_and_context_in_one_trace(tmp_path: Path) -> None:
    query_engine = engine(WorstFirstReranker(top_n=3))
    questions = all_queries()[:5]
    run = record(tmp_path / "run.jsonl", query_engine, questions)
    assert run.warnings == []
    by_trace: dict[str | None, list[RetrievalRecord]] = defaultdict(list)
    for line in run.records:
        by_trace[line.trace_id].append(line)
    assert len(by_trace) == 5, "one trace per question"
    for (query_id, question), lines in zip(questions, by_trace.values(), strict=True):
        assert [r.stage for r in lines] == ["retrieval", "postprocessed", "context"]
        assert [r.sequence for r in lines] == [0, 1, 2]
        assert [r.source for r in lines] == [
            "BM25Retriever",
            "WorstFirstReranker",
            "RetrieverQueryEngine",
        ]
        assert {(r.query_id, r.query) for r in lines} == {(query_id, question)}
        assert all(
            r.trace_id and r.trace_id.startswith("RetrieverQueryEngine.query-") for r in lines
        )
        retrieval, reranked, context = lines
        assert retrieval.parent_run_id
        assert context.parent_run_id
        assert context.run_id
        assert texts(reranked) == list(reversed(texts(retrieval)))[:3]
        assert texts(context) == texts(reranked), "the context is what the reranker kept"
    # The same engine's response carries exactly the recorded context.
    response = query_engine.query(questions[0][1])
    assert [n.node.get_content() for n in response.source_nodes] == texts(by_trace_first(run))


def by_trace_first(run: Run) -> RetrievalRecord:
    return next(r for r in run.records if r.stage == "context")


def test_a_worse_postprocessor_changes_the_evaluation_and_fails_the_gate(tmp_path: Path) -> None:
    questions = all_queries()
    baseline = record(tmp_path / "baseline.jsonl", engine(), questions)
    candidate = record(tmp_path / "candidate.jsonl", engine(KeepTheWorst()), questions)
    assert Counter(r.stage for r in candidate.records) == {
        "retrieval": len(questions),
        "context": len(questions),
    }
    # What the retriever returned did not change: a recording of raw retrievals only would
    # pass this change (the 0.890 -> 0.890).
    raw_before, raw_after = (
        evaluate(stage(baseline, "retrieval")),
        evaluate(stage(candidate, "retrieval")),
    )
    assert raw_before.mean("recall@5") == raw_after.mean("recall@5")
    # What the synthesizer got did.
    before, after = evaluate(stage(baseline, "context")), evaluate(stage(candidate, "context"))
    assert before.mean("recall@5") == raw_before.mean("recall@5"), "no postprocessor: same nodes"
    assert after.mean("recall@5") < before.mean("recall@5") - 0.3
    assert before.mapping.unmapped_rate == after.mapping.unmapped_rate == 0.0
    assert before.missing_in_run == after.missing_in_run == ()
    assert before.duplicates == after.duplicates == ()
    # The gate on the recorded context lines fails; on the raw retrievals it would pass.
    gold = quickstart()[1]
    write_gold(gold, tmp_path / "gold.jsonl")
    for name in ("context", "retrieval"):
        write_run(stage(baseline, name), tmp_path / f"base.{name}.jsonl")
        write_run(stage(candidate, name), tmp_path / f"cand.{name}.jsonl")
    argv = ["gate", "--docs", str(DOCS), "--gold", str(tmp_path / "gold.jsonl"), "--quiet"]
    context_gate = [*argv, "--baseline", str(tmp_path / "base.context.jsonl")]
    context_gate += ["--candidate", str(tmp_path / "cand.context.jsonl")]
    raw_gate = [*argv, "--baseline", str(tmp_path / "base.retrieval.jsonl")]
    raw_gate += ["--candidate", str(tmp_path / "cand.retrieval.jsonl")]
    assert cli_main(context_gate) == 1
    assert cli_main(raw_gate) == 0


def test_a_streaming_response_records_its_source_nodes(tmp_path: Path) -> None:
    query_engine = engine(KeepTheWorst(keep=2), streaming=True)
    query_id, question = all_queries()[0]
    corpus, gold, _ = quickstart()
    path = tmp_path / "run.jsonl"
    with record_retrievals(path, corpus=corpus, gold=gold), tag_query(query_id):
        response = query_engine.query(question)
        assert not hasattr(response, "response"), "a StreamingResponse"
        for _ in response.response_gen:  # type: ignore[union-attr]
            pass
    context = [r for r in read_run(path).records if r.stage == "context"]
    assert len(context) == 1
    assert texts(context[0]) == [n.node.get_content() for n in response.source_nodes]
    assert len(context[0].results) == 2


# -- sub-questions: one trace per user question ------------------------------------------------


class TwoSubQuestions(BaseQuestionGenerator):
    """Deterministic, offline: asks the question itself and its first half, of one tool."""

    def _get_prompts(self) -> dict[str, Any]:
        return {}

    def _update_prompts(self, prompts: Any) -> None:
        return None

    def generate(self, tools: Sequence[ToolMetadata], query: QueryBundle) -> list[SubQuestion]:
        words = query.query_str.split()
        first_half = " ".join(words[: max(1, len(words) // 2)])
        return [
            SubQuestion(sub_question=query.query_str, tool_name=tools[0].name),
            SubQuestion(sub_question=first_half, tool_name=tools[0].name),
        ]

    async def agenerate(
        self, tools: Sequence[ToolMetadata], query: QueryBundle
    ) -> list[SubQuestion]:
        return self.generate(tools, query)


def sub_question_engine(use_async: bool) -> SubQuestionQueryEngine:
    tool = QueryEngineTool(engine(), ToolMetadata(name="manuals", description="appliance manuals"))
    return SubQuestionQueryEngine.from_defaults(
        [tool], question_gen=TwoSubQuestions(), llm=MockLLM(), use_async=use_async, verbose=False
    )


def shape(run: Run) -> list[tuple[Any, ...]]:
    """What a run says apart from ids and timings, in a canonical order."""
    return sorted(
        (
            r.query_id,
            r.query,
            r.stage,
            r.source,
            r.sequence,
            r.metadata.get("retrieval_query"),
            tuple(texts(r)),
        )
        for r in run.records
    )


@pytest.mark.parametrize("use_async", [False, True])
@pytest.mark.usefixtures("llamaindex_sync_api")
def test_sub_questions_share_one_trace_per_user_question(tmp_path: Path, use_async: bool) -> None:
    questions = all_queries()[:8]
    run = record(tmp_path / "run.jsonl", sub_question_engine(use_async), questions)
    assert all(
        r.trace_id and r.source and r.stage and r.sequence is not None for r in run.records
    ), "every line says where it came from"
    by_trace: dict[str | None, list[RetrievalRecord]] = defaultdict(list)
    for line in run.records:
        by_trace[line.trace_id].append(line)
    assert len(by_trace) == len(questions), "one trace per user question"
    for (query_id, question), lines in zip(questions, by_trace.values(), strict=True):
        assert {(r.query_id, r.query) for r in lines} == {(query_id, question)}
        assert Counter(r.stage for r in lines) == {"retrieval": 2, "context": 3}
        assert sorted(r.sequence or 0 for r in lines) == list(range(5))
        sub_questions = {r.metadata.get("retrieval_query") for r in lines if r.stage == "retrieval"}
        assert len(sub_questions - {None}) == 1, "the half question is not the user's question"
        final = max((r for r in lines if r.stage == "context"), key=lambda r: r.sequence or 0)
        assert final.metadata == {"synthetic_nodes": 2}, "the sub-answer nodes are left out"
        assert [r.rank for r in final.results] == list(range(1, len(final.results) + 1))
        retrieved = [t for r in lines if r.stage == "retrieval" for t in texts(r)]
        assert texts(final) == retrieved, "the final context is every sub-question's sources"
    again = record(tmp_path / "again.jsonl", sub_question_engine(use_async), questions)
    assert shape(again) == shape(run), "repeated runs record the same lines"
    ids = [q for q, _ in questions]
    first, second = evaluate(stage(run, "context"), ids), evaluate(stage(again, "context"), ids)
    assert first.missing_in_run == ()
    assert first.mapping.unmapped_rate == 0.0
    assert {q: dict(first[q]) for q, _ in questions} == {q: dict(second[q]) for q, _ in questions}


@pytest.mark.usefixtures("llamaindex_sync_api")
def test_gating_a_sub_question_engine_says_its_contexts_were_merged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A plain query engine against a SubQuestionQueryEngine over the same retriever, gated
    on every gold question: the candidate's three context lines per question (two sub-engine
    contexts and the final one) are interleaved, which the gate says, naming both sources and
    the rule that scores one of them; ``--group source:SubQuestionQueryEngine`` on a baseline
    without that source kept nothing of it and is untrusted, not a PASS of 55 improvements."""
    questions = all_queries()
    plain = record(tmp_path / "plain.jsonl", engine(), questions)
    sub = record(tmp_path / "sub.jsonl", sub_question_engine(False), questions)
    write_gold(quickstart()[1], tmp_path / "gold.jsonl")
    argv = ["gate", "--docs", str(DOCS), "--gold", str(tmp_path / "gold.jsonl")]
    argv += ["--baseline", str(plain.path), "--candidate", str(sub.path)]
    code = cli_main(argv)
    out = capsys.readouterr()
    lines = (out.out + out.err).splitlines()
    warning = next(line for line in lines if "merged into one list" in line)
    assert warning.startswith(f"warning: the candidate run scores {len(questions)} queries")
    assert "(from RetrieverQueryEngine, SubQuestionQueryEngine)" in warning
    assert "if one of these context lists is what your app gave the model" in warning
    assert code == 0  # same retriever: the interleave loses nothing here
    assert cli_main([*argv, "--group", "source:SubQuestionQueryEngine"]) == 3
    out = capsys.readouterr()
    assert "the baseline run cannot be trusted: the grouping rule" in out.out + out.err


# -- worker threads inside the block -------------------------------------------------------------


def test_thread_pools_and_executors_inside_the_block_are_recorded(tmp_path: Path) -> None:
    corpus, gold, _ = quickstart()
    bm25_retriever = retriever()
    questions = [q.question for q in gold.values()][:50]
    path = tmp_path / "run.jsonl"

    async def in_executor() -> None:
        loop = asyncio.get_running_loop()
        await asyncio.gather(
            *(loop.run_in_executor(None, bm25_retriever.retrieve, q) for q in questions)
        )

    with record_retrievals(path, corpus=corpus, gold=gold) as handler:
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(bm25_retriever.retrieve, questions))
            list(pool.map(lambda q: engine().query(q), questions))
        asyncio.run(in_executor())
    run = read_run(path)
    assert handler.unattributed == 0
    assert handler.adopted == 150
    assert Counter(r.stage for r in run.records) == {"retrieval": 150, "context": 50}
    ids = Counter(r.query_id for r in run.records)
    assert ids == {q.query_id: 4 for q in list(gold.values())[:50]}, "ids from the gold set"


def test_blocks_side_by_side_report_what_they_cannot_attribute(tmp_path: Path) -> None:
    import threading

    bm25_retriever = retriever()
    inside = threading.Barrier(2, timeout=10)
    done = threading.Barrier(2, timeout=10)

    def block(name: str) -> None:
        with record_retrievals(tmp_path / f"{name}.jsonl"):
            inside.wait()
            if name == "a":
                with ThreadPoolExecutor(max_workers=2) as pool:
                    list(pool.map(bm25_retriever.retrieve, ["kettle", "toaster", "fridge"]))
            bm25_retriever.retrieve(f"own {name}")
            done.wait()

    # warnings.catch_warnings is process-wide state: catch once, here, not in each thread
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        threads = [threading.Thread(target=block, args=(n,)) for n in "ab"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    messages = [str(w.message) for w in seen if "LlamaIndex retrieval(s)" in str(w.message)]
    for name in "ab":
        assert [r.query for r in read_run(tmp_path / f"{name}.jsonl").records] == [f"own {name}"]
    assert len(messages) == 2  # one per block
    for message in messages:
        assert "3 LlamaIndex retrieval(s) ran in threads outside" in message
        assert "NOT recorded" in message


def test_a_block_that_records_nothing_says_so(tmp_path: Path) -> None:
    with (
        pytest.warns(RuntimeWarning, match="recorded nothing"),
        record_retrievals(tmp_path / "run.jsonl"),
    ):
        pass
