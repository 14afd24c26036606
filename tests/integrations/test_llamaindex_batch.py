"""SpanEvidenceEvaluator inside BatchEvalRunner, over a query engine with MockLLM (offline)."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.base.response.schema import Response
from llama_index.core.evaluation import BatchEvalRunner
from llama_index.core.evaluation.base import BaseEvaluator, EvaluationResult
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine

from spanchor_core import InputError, evaluate, read_run
from spanchor_llamaindex import (
    SpanEvaluationResult,
    SpanEvidenceEvaluator,
    span_results_rows,
    span_results_table,
)
from tests.integrations.contract import SCENARIO, check_run_file
from tests.integrations.test_llamaindex import ScenarioRetriever

# BatchEvalRunner.__init__ itself calls LlamaIndex's deprecated asyncio_module() (0.14.25).
pytestmark = pytest.mark.filterwarnings(
    r"ignore:asyncio_module\(\) is deprecated:DeprecationWarning:llama_index"
)

QUESTIONS = [q.question for q in SCENARIO.gold.values()]
IDS = list(SCENARIO.gold)


def _engine(**kwargs: object) -> RetrieverQueryEngine:
    return RetrieverQueryEngine.from_args(
        ScenarioRetriever(SCENARIO, **kwargs),  # type: ignore[arg-type]
        llm=MockLLM(max_tokens=8),
    )


def _gold_kwargs(**lists: list[str]) -> dict[str, Any]:
    """Per-query keyword lists; LlamaIndex types ``**eval_kwargs_lists`` as dicts, wrongly."""
    return dict(lists)


def _response(engine: RetrieverQueryEngine, question: str) -> Response:
    response = engine.query(question)
    assert isinstance(response, Response)
    return response


def _evaluator() -> SpanEvidenceEvaluator:
    return SpanEvidenceEvaluator(SCENARIO.corpus, SCENARIO.gold, k=(1, 3), metric="recall@3")


def test_evaluate_queries_with_query_ids(tmp_path: Path) -> None:
    evaluator = _evaluator()
    runner = BatchEvalRunner({"span": evaluator}, workers=4)
    results = asyncio.run(
        runner.aevaluate_queries(_engine(), queries=QUESTIONS, **_gold_kwargs(query_id=IDS))
    )
    span = results["span"]
    assert [r.query for r in span] == QUESTIONS
    assert all(r.passing and r.score == 1.0 and not r.invalid_result for r in span)
    assert span[0].feedback is not None
    assert "recall@3=1" in span[0].feedback
    # The scored source nodes form a run file the contract (and the gate) accepts.
    path = tmp_path / "run.jsonl"
    evaluator.write_run(path)
    check_run_file(path)
    own = evaluator.evaluation()
    direct = evaluate(SCENARIO.corpus, SCENARIO.gold, read_run(path), k=(1, 3))
    for qid in IDS:
        assert dict(own[qid]) == dict(direct[qid])


def test_evaluate_responses_by_question_text_and_evidence() -> None:
    engine = _engine()
    responses = [_response(engine, q) for q in QUESTIONS]
    evaluator = _evaluator()
    runner = BatchEvalRunner({"span": evaluator})
    by_text = asyncio.run(runner.aevaluate_responses(queries=QUESTIONS, responses=responses))
    assert [r.score for r in by_text["span"]] == [1.0, 1.0, 1.0, 1.0]
    # Evidence given as texts instead of a gold set.
    bare = SpanEvidenceEvaluator(SCENARIO.corpus, k=(1, 3), metric="hit@1")
    evidence = ["six hours of sun", "at room temperature", "A sharp knife", "Water them"]
    by_ref = asyncio.run(
        BatchEvalRunner({"span": bare}).aevaluate_responses(
            queries=QUESTIONS, responses=responses, **_gold_kwargs(evidence=evidence)
        )
    )
    assert [r.passing for r in by_ref["span"]] == [True, True, True, True]
    assert len(bare.gold_set()) == 4
    # The old keyword, when wanted, by name.
    renamed = SpanEvidenceEvaluator(
        SCENARIO.corpus, k=(1, 3), metric="hit@1", evidence_keyword="reference"
    )
    assert renamed.evaluate_response(QUESTIONS[0], responses[0], reference="six hours").passing


def test_contexts_only_path_scores_by_text() -> None:
    evaluator = _evaluator()
    contexts = [[hit.text for hit in SCENARIO.retrieve(q, 3)] for q in QUESTIONS]
    results = asyncio.run(
        BatchEvalRunner({"span": evaluator}).aevaluate_response_strs(
            queries=QUESTIONS,
            response_strs=["-"] * 4,
            contexts_list=contexts,
            **_gold_kwargs(query_id=IDS),
        )
    )
    assert [r.score for r in results["span"]] == [1.0, 1.0, 1.0, 1.0]


def test_bad_input_fails_plainly_and_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    evaluator = _evaluator()
    runner = BatchEvalRunner({"span": evaluator}, workers=2)
    calls: list[str | None] = []
    original = type(evaluator).aevaluate_response

    async def counted(self: Any, query: str | None = None, *args: Any, **kwargs: Any) -> Any:
        calls.append(query)
        return await original(self, query, *args, **kwargs)

    monkeypatch.setattr(type(evaluator), "aevaluate_response", counted)
    results = asyncio.run(
        runner.aevaluate_queries(
            _engine(), queries=QUESTIONS, **_gold_kwargs(query_id=["q1", "q2", "nope", "q4"])
        )
    )
    # One call per query: the bad one is answered, not raised, so tenacity never retries it
    # (a raise would mean 3 attempts at least 4 s apart).
    assert sorted(calls, key=str) == sorted(QUESTIONS, key=str)
    bad = results["span"][2]
    assert bad.invalid_result
    assert bad.passing is False
    assert bad.score is None
    assert bad.invalid_reason == "query id 'nope' cannot be scored: it is not in the gold set"
    assert [r.passing for r in results["span"]] == [True, True, False, True]
    # Other evaluators' keywords are ignored, and named on the result.
    other = asyncio.run(
        BatchEvalRunner({"span": evaluator}).aevaluate_queries(
            _engine(), queries=QUESTIONS[:1], **_gold_kwargs(queryid=["q1"])
        )
    )
    (ignored,) = other["span"]
    assert isinstance(ignored, SpanEvaluationResult)
    assert ignored.score == 1.0
    assert ignored.ignored_arguments == ["queryid"]


def test_check_inputs_lists_every_problem_before_the_run() -> None:
    evaluator = _evaluator()
    evaluator.check_inputs(QUESTIONS, query_id=IDS)  # fine: no error
    with pytest.raises(InputError) as caught:
        evaluator.check_inputs(QUESTIONS, query_id=["q1", "x", "q3", "y"])
    message = str(caught.value)
    assert message.startswith("2 of 4 queries cannot be scored")
    assert "'x'" in message
    assert "'y'" in message
    with pytest.raises(InputError, match="query_id has 1 items for 4 queries"):
        evaluator.check_inputs(QUESTIONS, query_id=["q1"])
    with pytest.raises(InputError, match="occurs"):
        evaluator.check_inputs(["q?"], evidence=["Basil"])
    evaluator.check_inputs(QUESTIONS, reference=["an answer"] * 9)  # not ours: ignored


def test_sync_entry_points_do_not_use_llamaindex_asyncio_run() -> None:
    evaluator = _evaluator()
    response = _response(_engine(), QUESTIONS[0])
    assert evaluator.evaluate_response(QUESTIONS[0], response).score == 1.0
    result = evaluator.evaluate(QUESTIONS[0], "-", [SCENARIO.retrieve(QUESTIONS[0])[0].text])
    assert result.score == 1.0


def test_constructor_rejects_a_metric_not_computed() -> None:
    with pytest.raises(InputError, match="not computed"):
        SpanEvidenceEvaluator(SCENARIO.corpus, k=(1, 3), metric="recall@5")


def test_a_second_batch_replaces_records_instead_of_duplicating_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    evaluator = _evaluator()
    first = asyncio.run(
        BatchEvalRunner({"span": evaluator}).aevaluate_queries(
            _engine(), queries=QUESTIONS, **_gold_kwargs(query_id=IDS)
        )
    )
    assert [r.score for r in first["span"]] == [1.0, 1.0, 1.0, 1.0]
    with caplog.at_level(logging.WARNING, logger="spanchor_llamaindex.batch"):
        asyncio.run(
            BatchEvalRunner({"span": evaluator}).aevaluate_queries(
                _engine(k=1), queries=QUESTIONS, **_gold_kwargs(query_id=IDS)
            )
        )
    assert sum("scored again" in m for m in caplog.messages) == 1, "logged once, not 4 times"
    assert sorted(str(r.query_id) for r in evaluator.records) == sorted(IDS)
    assert all(len(r.results) == 1 for r in evaluator.records), "the second batch's (k=1)"
    path = tmp_path / "run.jsonl"
    evaluator.write_run(path)
    assert sorted(str(r.query_id) for r in read_run(path).records) == sorted(IDS)
    evaluator.reset()
    assert evaluator.records == []


class _Correctness(BaseEvaluator):
    """Stands in for CorrectnessEvaluator: needs the flat ``reference=[answers]`` list."""

    def _get_prompts(self) -> dict[str, Any]:
        return {}

    def _update_prompts(self, prompts: Any) -> None:
        return None

    async def aevaluate(
        self,
        query: str | None = None,
        response: str | None = None,
        contexts: Sequence[str] | None = None,
        reference: str | None = None,
        **kwargs: Any,
    ) -> EvaluationResult:
        return EvaluationResult(query=query, passing=reference is not None, score=1.0)


def test_reference_answers_for_other_evaluators_leave_span_results_valid() -> None:
    engine = _engine()
    answers = ["Six hours.", "At room temperature.", "It slips less.", "At the base."]
    runner = BatchEvalRunner({"span": _evaluator(), "correctness": _Correctness()}, workers=2)
    results = asyncio.run(
        runner.aevaluate_queries(
            engine, queries=QUESTIONS, **_gold_kwargs(reference=answers, query_id=IDS)
        )
    )
    span = results["span"]
    assert all(isinstance(r, SpanEvaluationResult) for r in span)
    assert [(r.invalid_result, r.score) for r in span] == [(False, 1.0)] * 4
    assert all(
        isinstance(r, SpanEvaluationResult) and r.ignored_arguments == ["reference"] for r in span
    )
    assert [r.passing for r in results["correctness"]] == [True] * 4
    # Every metric is a number, not only inside the feedback string.
    first = span[0]
    assert isinstance(first, SpanEvaluationResult)
    assert first.query_id == "q1"
    assert first.metrics["recall@3"] == 1.0
    assert set(first.metrics) >= {"recall@1", "precision@3", "hit@3", "iou@3", "mrr", "ndcg@3"}
    # ... and as a per-query table (a DataFrame when pandas is installed).
    rows = span_results_rows(results)
    assert [row["query_id"] for row in rows] == IDS
    assert {row["evaluator"] for row in rows} == {"span"}, "other evaluators' rows left out"
    assert rows[0]["recall@3"] == 1.0
    table = span_results_table(results)
    if importlib.util.find_spec("pandas") is None:
        assert table == rows
    else:
        assert list(table["query_id"]) == IDS


def test_streaming_responses_are_scored_from_their_source_nodes() -> None:
    engine = RetrieverQueryEngine.from_args(
        ScenarioRetriever(SCENARIO), llm=MockLLM(max_tokens=8), streaming=True
    )
    response = engine.query(QUESTIONS[0])
    assert not hasattr(response, "response")
    result = _evaluator().evaluate_response(QUESTIONS[0], response)
    assert isinstance(result, SpanEvaluationResult)
    assert (result.score, result.invalid_result, result.query_id) == (1.0, False, "q1")
    assert result.response is None  # not consumed yet
