"""RouterQueryEngine, single and multi selection: what each chosen engine synthesised is
recorded under the router's trace, and repeated runs group and evaluate the same.

Real LlamaIndex objects, offline: BM25 over the quickstart, ``MockLLM`` for synthesis and
summaries, and selectors built here (an LLM selector would need a real model to parse its
answer): the single selector picks by a rule on the question, the multi selector picks both.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("llama_index.retrievers.bm25")

from llama_index.core.base.base_selector import (
    BaseSelector,
    SelectorResult,
    SingleSelection,
)
from llama_index.core.llms import MockLLM
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.query_engine import RetrieverQueryEngine, RouterQueryEngine
from llama_index.core.schema import QueryBundle
from llama_index.core.tools import QueryEngineTool, ToolMetadata

from spanchor_core import RetrievalRecord, Run, read_run
from spanchor_llamaindex import record_retrievals, tag_query
from tests.integrations.test_llamaindex_stages import (
    WorstFirstReranker,
    all_queries,
    evaluate,
    quickstart,
    retriever,
    stage,
    texts,
)


class _Selector(BaseSelector):
    """Deterministic selection; ``both`` selects every engine (a multi selection)."""

    def __init__(self, both: bool) -> None:
        self.both = both

    def _get_prompts(self) -> dict[str, Any]:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        return None

    def _select(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> SelectorResult:
        if self.both:
            return SelectorResult(
                selections=[SingleSelection(index=i, reason="all") for i in range(len(choices))]
            )
        index = len(query.query_str) % 2  # the question decides, the same way every time
        return SelectorResult(selections=[SingleSelection(index=index, reason="parity")])

    async def _aselect(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> SelectorResult:
        return self._select(choices, query)


def router(both: bool) -> RouterQueryEngine:
    wide = RetrieverQueryEngine.from_args(retriever(5), llm=MockLLM())
    reranked = RetrieverQueryEngine.from_args(
        retriever(4), llm=MockLLM(), node_postprocessors=[WorstFirstReranker(top_n=2)]
    )
    tools = [
        QueryEngineTool(wide, ToolMetadata(name="wide", description="top five")),
        QueryEngineTool(reranked, ToolMetadata(name="reranked", description="worst two")),
    ]
    return RouterQueryEngine(selector=_Selector(both), query_engine_tools=tools, llm=MockLLM())


def record(path: Path, engine: RouterQueryEngine, queries: Sequence[tuple[str, str]]) -> Any:
    corpus, gold, _ = quickstart()
    responses = {}
    with record_retrievals(path, corpus=corpus, gold=gold):
        for query_id, question in queries:
            with tag_query(query_id):
                responses[query_id] = engine.query(question)
    return read_run(path), responses


def traces(run: Run) -> dict[str | None, list[RetrievalRecord]]:
    found: dict[str | None, list[RetrievalRecord]] = defaultdict(list)
    for line in run.records:
        found[line.trace_id].append(line)
    return found


def shape(run: Run) -> list[tuple[Any, ...]]:
    return sorted((r.query_id, r.stage, r.source, r.sequence, tuple(texts(r))) for r in run.records)


@pytest.mark.parametrize("both", [False, True], ids=["single", "multi"])
def test_a_router_records_what_its_chosen_engines_synthesised(tmp_path: Path, both: bool) -> None:
    questions = all_queries()[:8]
    run, responses = record(tmp_path / "run.jsonl", router(both), questions)
    assert run.warnings == []
    by_trace = traces(run)
    assert len(by_trace) == len(questions), "one trace per question"
    for (query_id, question), (trace_id, lines) in zip(questions, by_trace.items(), strict=True):
        assert trace_id is not None
        assert trace_id.startswith("RouterQueryEngine.query-"), "the router's call is the root"
        assert {(r.query_id, r.query) for r in lines} == {(query_id, question)}
        assert sorted(r.sequence or 0 for r in lines) == list(range(len(lines)))
        assert all(r.sequence is not None for r in lines)
        contexts = [r for r in lines if r.stage == "context"]
        synthesised = [n.node.get_content() for n in responses[query_id].source_nodes]
        if both:
            assert [r.stage for r in lines].count("retrieval") == 2
            assert [r.stage for r in lines].count("postprocessed") == 1
            assert len(contexts) == 2, "each chosen engine's context"
            # the router's answer combines both engines' sources: exactly the two contexts
            ordered = sorted(contexts, key=lambda r: r.sequence or 0)
            assert [t for r in ordered for t in texts(r)] == synthesised
            assert [len(texts(r)) for r in ordered] == [5, 2]
        else:
            chosen = len(question) % 2
            assert [r.stage for r in lines] == (
                ["retrieval", "context"]
                if chosen == 0
                else ["retrieval", "postprocessed", "context"]
            )
            assert texts(contexts[0]) == synthesised
            assert len(synthesised) == (5 if chosen == 0 else 2)
    again, _ = record(tmp_path / "again.jsonl", router(both), questions)
    assert shape(again) == shape(run), "repeated runs record the same lines"
    ids = [q for q, _ in questions]
    first = evaluate(stage(run, "context"), ids)
    second = evaluate(stage(again, "context"), ids)
    assert first.missing_in_run == ()
    assert first.mapping.unmapped_rate == 0.0
    assert {q: dict(first[q]) for q in ids} == {q: dict(second[q]) for q in ids}
    # The whole run (the default grouping picks each trace's contexts) evaluates the same too.
    assert {q: dict(evaluate(run, ids)[q]) for q in ids} == {
        q: dict(evaluate(again, ids)[q]) for q in ids
    }
