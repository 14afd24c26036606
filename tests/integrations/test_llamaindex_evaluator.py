"""SpanRetrieverEvaluator: keeps NodeWithScore, evaluates whole gold sets into run files."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document
from llama_index.core.evaluation.retrieval.metrics import HitRate
from llama_index.core.node_parser import MarkdownNodeParser, SentenceSplitter
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

from spanchor_core import (
    Corpus,
    DocSpan,
    GoldQuery,
    GoldSet,
    InputError,
    anchor_from_text,
    evaluate,
    read_run,
)
from spanchor_core.metrics import compute_metrics, measure_coverage
from spanchor_llamaindex import SpanRetrieverEvaluator
from tests.integrations.contract import SCENARIO, check_run_file
from tests.integrations.test_llamaindex import (
    ScenarioRetriever,
    bm25_retriever,
    documents_of,
    small_corpus,
)


def test_one_query_keeps_nodes_scores_and_record() -> None:
    corpus, gold = small_corpus()
    nodes = SentenceSplitter(chunk_size=1024, chunk_overlap=0).get_nodes_from_documents(
        documents_of(corpus)
    )
    evaluator = SpanRetrieverEvaluator.from_corpus(
        bm25_retriever(nodes, k=2), corpus, gold, k=(1, 2), metrics=[HitRate()]
    )
    garden = next(n for n in nodes if n.ref_doc_id == "garden")
    result = evaluator.evaluate("How much sun do tomatoes need?", expected_ids=[garden.node_id])
    assert result.query_id == "q1"
    assert next(n.node.node_id for n in result.nodes) == garden.node_id
    assert all(isinstance(n.score, float) and n.score > 0 for n in result.nodes[:1])
    values = result.metric_vals_dict
    assert values["hit_rate"] == 1.0
    assert values["span_recall@1"] == 1.0
    # Rank 1 is the whole garden document (61 chars) around the 16-char anchor.
    assert values["span_precision@1"] == pytest.approx(16 / 61)
    assert result.record is not None
    first = result.record.results[0]
    assert (first.document_id, first.start, first.end) == ("garden", 0, 61)
    assert first.score == result.nodes[0].score
    assert result.record.latency_ms is not None


def test_unknown_query_is_a_plain_error() -> None:
    corpus, gold = small_corpus()
    evaluator = SpanRetrieverEvaluator.from_corpus(ScenarioRetriever(SCENARIO), corpus, gold)
    with pytest.raises(InputError, match="not in the gold set"):
        evaluator.evaluate("What is the capital of France?", expected_ids=[])


def test_evaluate_gold_equals_core_evaluation_of_its_run(tmp_path: Path) -> None:
    evaluator = SpanRetrieverEvaluator.from_corpus(
        ScenarioRetriever(SCENARIO), SCENARIO.corpus, SCENARIO.gold, k=(1, 3)
    )
    outcome = evaluator.evaluate_gold(tmp_path / "run.jsonl", show_progress=False)
    check_run_file(outcome.run_path)
    again = evaluate(SCENARIO.corpus, SCENARIO.gold, read_run(outcome.run_path), k=(1, 3))
    for qid in SCENARIO.gold:
        assert dict(outcome.evaluation[qid]) == dict(again[qid])
    assert outcome.errors == 0
    header = read_run(outcome.run_path).header
    assert header.gold_sha256 == SCENARIO.gold.sha256
    assert header.retriever.description == "ScenarioRetriever"


def test_evaluate_gold_records_errors_and_goes_on(tmp_path: Path) -> None:
    evaluator = SpanRetrieverEvaluator.from_corpus(
        ScenarioRetriever(SCENARIO, fail_on="knife"), SCENARIO.corpus, SCENARIO.gold
    )
    outcome = evaluator.evaluate_gold(tmp_path / "run.jsonl", show_progress=False)
    assert outcome.errors == 1
    assert outcome.evaluation.errors == ("q3",)
    assert outcome.evaluation["q3"]["recall@5"] == 0.0
    assert outcome.evaluation["q1"]["recall@5"] == 1.0


class _Counting(BaseRetriever):
    """Counts how many retrievals are in flight at once."""

    def __init__(self) -> None:
        super().__init__()
        self.active = 0
        self.peak = 0

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        raise NotImplementedError

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        self.active += 1
        self.peak = max(self.peak, self.active)
        await asyncio.sleep(0.005)
        self.active -= 1
        return [NodeWithScore(node=TextNode(text=query_bundle.query_str), score=1.0)]


def test_concurrency_is_bounded(tmp_path: Path) -> None:
    corpus = Corpus.from_texts({"d": " ".join(f"question number {i}." for i in range(30))})
    gold = GoldSet(
        GoldQuery(f"q{i}", f"question number {i}.", (anchor_from_text(corpus, f"number {i}."),))
        for i in range(30)
    )
    retriever = _Counting()
    evaluator = SpanRetrieverEvaluator.from_corpus(retriever, corpus, gold)
    outcome = evaluator.evaluate_gold(tmp_path / "run.jsonl", max_concurrency=3)
    assert retriever.peak == 3
    assert len(read_run(outcome.run_path).records) == 30
    assert outcome.evaluation.mean("recall@1") == 1.0
    with pytest.raises(InputError, match="max_concurrency"):
        evaluator.evaluate_gold(tmp_path / "x.jsonl", max_concurrency=0)


def test_progress_bar_only_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evaluator = SpanRetrieverEvaluator.from_corpus(
        ScenarioRetriever(SCENARIO), SCENARIO.corpus, SCENARIO.gold
    )
    evaluator.evaluate_gold(tmp_path / "a.jsonl")  # stderr is captured: not a terminal
    assert capsys.readouterr().err == ""
    evaluator.evaluate_gold(tmp_path / "b.jsonl", show_progress=True)
    assert "4/4" in capsys.readouterr().err


def test_evaluate_gold_inside_a_running_loop(tmp_path: Path) -> None:
    evaluator = SpanRetrieverEvaluator.from_corpus(
        ScenarioRetriever(SCENARIO), SCENARIO.corpus, SCENARIO.gold
    )

    async def main() -> float:
        outcome = await evaluator.aevaluate_gold(tmp_path / "run.jsonl")
        return outcome.evaluation.mean("hit@3")

    assert asyncio.run(main()) == 1.0


MARKDOWN = """# Kettle

The kettle holds at most 1.7 litres of water. Never fill it above the MAX mark.

## Cleaning

Descale the kettle every month with white vinegar. Rinse it twice before use.

## Safety

Unplug the kettle before cleaning it. Do not immerse the base in water.
"""


def test_two_stage_pipeline_scores_exactly_despite_wrong_offsets() -> None:
    corpus = Corpus.from_texts({"kettle": MARKDOWN})
    gold = GoldSet(
        [
            GoldQuery(
                "descale",
                "How often should I descale the kettle?",
                (anchor_from_text(corpus, "Descale the kettle every month"),),
            ),
            GoldQuery(
                "unplug",
                "What must I do before cleaning the kettle?",
                (anchor_from_text(corpus, "Unplug the kettle before cleaning it."),),
            ),
        ]
    )
    document = Document(text=MARKDOWN, metadata={"document_id": "kettle"})
    sections = MarkdownNodeParser().get_nodes_from_documents([document])
    # LlamaIndex types the argument as documents; node parsers accept any nodes.
    nodes = SentenceSplitter(chunk_size=24, chunk_overlap=0).get_nodes_from_documents(
        sections  # type: ignore[arg-type]
    )
    text_nodes = [n for n in nodes if isinstance(n, TextNode)]
    assert len(text_nodes) == len(nodes)
    wrong = [
        n
        for n in text_nodes
        if n.start_char_idx is None
        or MARKDOWN[n.start_char_idx : n.end_char_idx] != n.get_content(MetadataMode.NONE)
    ]
    assert wrong, "the two-stage pipeline's offsets are known to be wrong"

    evaluator = SpanRetrieverEvaluator.from_corpus(
        bm25_retriever(nodes, k=3), corpus, gold, k=(1, 3)
    )
    for query in gold.values():
        result = evaluator.evaluate(query.question, expected_ids=[])
        # The spans computed directly: each retrieved text found in the source by hand.
        direct: list[DocSpan | None] = []
        for node in result.nodes:
            text = node.node.get_content(MetadataMode.NONE)
            start = MARKDOWN.index(text)
            assert MARKDOWN.count(text) == 1
            direct.append(DocSpan("kettle", start, start + len(text)))
        expected = compute_metrics(
            measure_coverage([a.span for a in query.anchors], direct), k=(1, 3)
        )
        for name in ("recall@1", "recall@3", "precision@3", "hit@3", "iou@3", "ndcg@3"):
            assert result.metric_vals_dict[f"span_{name}"] == pytest.approx(expected[name]), name
        assert expected["hit@3"] == 1.0, "BM25 finds the evidence"
