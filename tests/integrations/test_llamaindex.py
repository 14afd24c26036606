"""spanchor_llamaindex: public surface, nodes -> results, span metrics in RetrieverEvaluator.

Shared helpers for the other ``test_llamaindex_*`` modules live here too (a tiny corpus, a
BM25 retriever over SentenceSplitter nodes, a retriever over the contract scenario).
Everything is offline: BM25 (bm25s) needs no model, and tiktoken/nltk data ship with
llama-index-core.
"""

from __future__ import annotations

import ast
import asyncio
import math
import re
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document
from llama_index.core.evaluation import RetrieverEvaluator
from llama_index.core.evaluation.retrieval.metrics import METRIC_REGISTRY, HitRate
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import (
    BaseNode,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)

import spanchor_llamaindex
from spanchor_core import (
    Corpus,
    GoldQuery,
    GoldSet,
    InputError,
    anchor_from_text,
    load_corpus,
)
from spanchor_llamaindex import (
    SpanContext,
    SpanHit,
    SpanMRR,
    SpanRecall,
    default_document_id,
    node_to_result,
    register_span_metrics,
    span_metrics,
    unregister_span_metrics,
)
from tests.integrations.contract import Scenario

bm25 = pytest.importorskip("llama_index.retrievers.bm25")

# -- shared helpers --------------------------------------------------------------------------

GARDEN = "Tomatoes need six hours of sun a day. Water them at the base."
KITCHEN = "Basil leaves turn black when cut with a dull knife. Water them at the base."


def small_corpus() -> tuple[Corpus, GoldSet]:
    """Two documents; q1's evidence is 'six hours of sun' = garden[14:30]."""
    corpus = Corpus.from_texts({"garden": GARDEN, "kitchen": KITCHEN})
    gold = GoldSet(
        [
            GoldQuery(
                "q1",
                "How much sun do tomatoes need?",
                (anchor_from_text(corpus, "six hours of sun"),),
            ),
            GoldQuery(
                "q2",
                "Why do basil leaves turn black?",
                (anchor_from_text(corpus, "cut with a dull knife"),),
            ),
        ]
    )
    return corpus, gold


def documents_of(corpus: Corpus) -> list[Document]:
    """LlamaIndex documents carrying their corpus id (the explicit document-id rule)."""
    return [
        Document(text=corpus.text(doc_id), id_=doc_id, metadata={"document_id": doc_id})
        for doc_id in corpus
    ]


def bm25_retriever(nodes: Sequence[BaseNode], k: int = 3) -> BaseRetriever:
    retriever: BaseRetriever = bm25.BM25Retriever.from_defaults(
        nodes=list(nodes), similarity_top_k=k
    )
    return retriever


class ScenarioRetriever(BaseRetriever):
    """A LlamaIndex retriever over the contract scenario's deterministic ranking."""

    def __init__(self, scenario: Scenario, k: int = 3, fail_on: str | None = None) -> None:
        super().__init__()
        self.scenario = scenario
        self.k = k
        self.fail_on = fail_on

    def _nodes(self, query: str) -> list[NodeWithScore]:
        if self.fail_on is not None and self.fail_on in query:
            raise ValueError(f"index unavailable for {query!r}")
        return [
            NodeWithScore(
                node=TextNode(text=hit.text, metadata={"document_id": hit.document_id}),
                score=hit.score,
            )
            for hit in self.scenario.retrieve(query, self.k)
        ]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(query_bundle.query_str)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        await asyncio.sleep(0)  # let other tasks interleave
        return self._nodes(query_bundle.query_str)


@pytest.fixture
def clean_registry() -> Iterator[None]:
    """Span metric names registered by a test are removed after it."""
    yield None
    unregister_span_metrics()


@pytest.fixture
def llamaindex_sync_api() -> Iterator[None]:
    """Close the event loop LlamaIndex's own sync API leaves behind.

    ``RetrieverEvaluator.evaluate`` runs ``asyncio_run``, which creates a loop with
    ``asyncio.get_event_loop()`` and never closes it: under ``-W error`` its ResourceWarning
    would fail whichever later test happens to collect it.
    """
    yield None
    policy = asyncio.get_event_loop_policy()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            loop = policy.get_event_loop()
    except RuntimeError:  # no loop was left behind (asyncio_run fell back to asyncio.run)
        return
    loop.close()
    policy.set_event_loop(None)


# -- public surface --------------------------------------------------------------------------

EXPECTED_API = {
    "QUERY_ID_TAG",
    "DocumentIdResolver",
    "GoldSetEvaluation",
    "MigrationProblem",
    "NodeConverter",
    "QADataset",
    "QAMigration",
    "RagDataset",
    "RagExample",
    "SpanAP",
    "SpanContext",
    "SpanEvaluationResult",
    "SpanEvidenceEvaluator",
    "SpanFullEvidence",
    "SpanHit",
    "SpanIoU",
    "SpanMRR",
    "SpanMetric",
    "SpanNDCG",
    "SpanPrecision",
    "SpanRecall",
    "SpanRetrievalEvalResult",
    "SpanRetrieverEvaluator",
    "SpanchorEventHandler",
    "default_document_id",
    "docstore_nodes",
    "gold_from_qa_dataset",
    "gold_from_rag_dataset",
    "inventory_from_nodes",
    "node_to_result",
    "nodes_to_chunks",
    "nodes_to_results",
    "rag_to_qa_dataset",
    "read_qa_dataset",
    "read_rag_dataset",
    "record_retrievals",
    "register_span_metrics",
    "span_metrics",
    "span_results_rows",
    "span_results_table",
    "tag_query",
    "unregister_span_metrics",
    "write_inventory",
    "write_qa_dataset",
}


def test_public_api_is_pinned() -> None:
    assert set(spanchor_llamaindex.__all__) == EXPECTED_API
    assert len(spanchor_llamaindex.__all__) == len(EXPECTED_API), "no duplicates"
    for name in EXPECTED_API:
        assert getattr(spanchor_llamaindex, name) is not None


def test_every_module_has_a_docstring_and_all() -> None:
    import importlib

    modules = ["batch", "blocks", "context", "datasets", "evaluator", "metrics", "nodes"]
    modules += ["rag_dataset", "recording", "tables", "_events", "_scopes", "_spans", "_sync"]
    for module in modules:
        mod = importlib.import_module(f"spanchor_llamaindex.{module}")
        assert len(mod.__doc__ or "") > 80, module
        assert mod.__all__, module


# -- nodes -> results ------------------------------------------------------------------------


def test_node_text_never_includes_metadata() -> None:
    node = TextNode(text="six hours of sun", metadata={"file_path": "/x/garden.md"})
    # The trap: some modes prepend metadata that is not in the source document.
    assert "file_path" in node.get_content(metadata_mode=MetadataMode.ALL)
    result = node_to_result(NodeWithScore(node=node, score=0.25), rank=1)
    assert result.text == "six hours of sun"
    assert result.score == 0.25
    assert result.document_id is None  # no rule applies without a corpus or explicit id
    assert result.metadata == {"node_id": node.node_id, "ref_doc_id": None}


def test_offsets_are_passed_as_hints() -> None:
    node = TextNode(text="six hours of sun", start_char_idx=14, end_char_idx=30)
    result = node_to_result(node, rank=2)
    assert (result.rank, result.start, result.end, result.score) == (2, 14, 30, None)


def test_default_document_id_rules(tmp_path: Path) -> None:
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "install.md").write_text("Install it.", encoding="utf-8")
    (tmp_path / "faq.txt").write_text("Ask us.", encoding="utf-8")
    corpus = load_corpus(tmp_path)
    resolve = default_document_id(corpus)

    def node(**kwargs: object) -> TextNode:
        source = kwargs.pop("ref", None)
        text_node = TextNode(text="x", metadata=dict(kwargs))
        if source is not None:
            text_node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=str(source))
        return text_node

    assert resolve(node(document_id="faq", file_path=str(tmp_path / "guide/install.md"))) == "faq"
    assert resolve(node(file_path=str(tmp_path / "guide" / "install.md"))) == "guide/install"
    assert resolve(node(file_path="/elsewhere/install.md")) is None
    assert resolve(node(ref="faq")) == "faq"
    assert resolve(node(ref="3f2a-uuid")) is None
    assert resolve(node(file_name="faq.txt")) == "faq"
    assert resolve(node(file_name="install.md")) is None  # its id is guide/install
    # Without a corpus only the explicit key counts.
    assert default_document_id()(node(document_id="faq", ref="faq")) == "faq"
    assert default_document_id()(node(ref="faq")) is None


# -- span metrics ----------------------------------------------------------------------------

# Hand-computed for q1: gold = garden[14:30] (16 chars). Rank 1 = garden[38:61] "Water them
# at the base." (no gold), rank 2 = garden[0:37] (contains the gold).
RANKED = ["Water them at the base.", "Tomatoes need six hours of sun a day."]


def test_offsets_in_the_hand_computed_example() -> None:
    assert GARDEN.index("six hours of sun") == 14
    assert GARDEN.index("Water them") == 38
    assert len(GARDEN) == 61
    # "Water them at the base." also ends KITCHEN: bind the garden copy by hand below.


def test_metric_values_are_the_hand_computed_ones() -> None:
    corpus, gold = small_corpus()
    context = SpanContext(corpus, gold)
    # The rank-1 text occurs in both documents: the locator takes the lowest (document id,
    # start), garden[38:61], which has no gold either way.
    values = {
        m.metric_name: m.compute("How much sun do tomatoes need?", [], [], None, RANKED).score
        for m in span_metrics(context, k=(1, 2))
    }
    assert values["span_recall@1"] == 0.0
    assert values["span_recall@2"] == 1.0
    assert values["span_precision@2"] == pytest.approx(16 / 60)
    assert values["span_iou@2"] == pytest.approx(16 / 60)
    assert values["span_hit@1"] == 0.0
    assert values["span_hit@2"] == 1.0
    assert values["span_full_evidence@2"] == 1.0
    assert values["span_mrr@1"] == 0.0
    assert values["span_mrr"] == 0.5
    assert values["span_ndcg@2"] == pytest.approx(1 / math.log2(3))
    assert values["span_ap@2"] == pytest.approx(16 / 60)
    assert values["span_iou"] == pytest.approx(16 / 60)


def test_empty_retrieval_scores_zero_where_llamaindex_raises() -> None:
    corpus, gold = small_corpus()
    context = SpanContext(corpus, gold)
    with pytest.raises(ValueError, match="must be provided"):
        HitRate().compute("q", ["n1"], [], None, [])
    for metric in (SpanRecall(k=5, context=context), SpanHit(context=context)):
        result = metric.compute("How much sun do tomatoes need?", [], [], None, [])
        assert result.score == 0.0
    assert SpanMRR(context=context).compute("Why do basil leaves turn black?").score == 0.0


def test_instances_name_themselves_by_k() -> None:
    corpus, gold = small_corpus()
    context = SpanContext(corpus, gold)
    assert SpanRecall(k=5, context=context).metric_name == "span_recall@5"
    assert SpanRecall(context=context).metric_name == "span_recall"
    assert SpanRecall.metric_name == "span_recall"
    with pytest.raises(ValueError, match="K must be"):  # pydantic wraps our InputError
        SpanRecall(k=0, context=context)


def test_gold_precedence_and_errors() -> None:
    corpus, gold = small_corpus()
    context = SpanContext(corpus, gold)
    # A gold query id among expected_ids wins over the question text.
    by_id = context.gold_evidence("How much sun do tomatoes need?", ["q2"])
    assert by_id.query_id == "q2"
    by_text = context.gold_evidence("  How much sun do tomatoes need?\n")
    assert (by_text.query_id, by_text.source) == ("q1", "gold_set")
    # Not in the gold set: expected_texts serve as evidence.
    texts = context.gold_evidence("unknown?", None, ["cut with a dull knife"])
    assert texts.source == "expected_texts"
    assert [tuple(s) for s in texts.spans] == [
        ("kitchen", 29, 50)
    ]  # "Basil leaves turn black when " is 29
    with pytest.raises(InputError, match="not in the gold set"):
        context.gold_evidence("unknown?")
    with pytest.raises(InputError, match="occurs 2 times"):
        context.gold_evidence("unknown?", None, ["Water them at the base."])
    with pytest.raises(InputError, match="cannot serve as gold"):
        context.gold_evidence("unknown?", None, ["never written anywhere"])
    no_gold = SpanContext(corpus)
    with pytest.raises(InputError, match="no gold evidence"):
        no_gold.gold_evidence("How much sun do tomatoes need?")
    with pytest.raises(InputError, match="no corpus"):
        SpanRecall().compute("q", [], [], None, [])


# RetrieverEvaluator.evaluate (LlamaIndex's sync path) calls asyncio.get_event_loop(), which
# warns from Python 3.12 on when no loop is set.
@pytest.mark.filterwarnings("ignore:There is no current event loop:DeprecationWarning")
def test_registered_names_work_in_retriever_evaluator(
    clean_registry: None, llamaindex_sync_api: None
) -> None:
    corpus, gold = small_corpus()
    nodes = SentenceSplitter(chunk_size=1024, chunk_overlap=0).get_nodes_from_documents(
        documents_of(corpus)
    )
    retriever = bm25_retriever(nodes, k=2)
    names = register_span_metrics(corpus, gold, k=(1, 2))
    assert "span_recall@2" in names
    assert "span_mrr" in names
    assert METRIC_REGISTRY["hit_rate"] is HitRate  # LlamaIndex's own are untouched
    evaluator = RetrieverEvaluator.from_metric_names(
        ["span_recall@1", "span_recall@2", "span_hit@2", "hit_rate", "mrr"], retriever=retriever
    )
    garden_node = next(n for n in nodes if n.ref_doc_id == "garden")
    result = evaluator.evaluate(
        query="How much sun do tomatoes need?", expected_ids=[garden_node.node_id]
    )
    values = result.metric_vals_dict
    assert values["hit_rate"] == 1.0
    # One node per document: the garden document is ranked first by BM25 ("tomatoes", "sun").
    assert result.retrieved_ids[0] == garden_node.node_id
    assert values["span_recall@1"] == 1.0
    assert values["span_recall@2"] == 1.0
    assert values["span_hit@2"] == 1.0
    assert result.metric_dict["span_recall@1"].metadata["query_id"] == "q1"
    removed = unregister_span_metrics()
    assert set(removed) == set(names)
    assert "span_recall@1" not in METRIC_REGISTRY
    with pytest.raises(ValueError, match="Invalid metric name"):
        RetrieverEvaluator.from_metric_names(["span_recall@1"], retriever=retriever)


def test_registration_rejects_unknown_metrics(clean_registry: None) -> None:
    corpus, gold = small_corpus()
    with pytest.raises(InputError, match="unknown span metric 'recal'"):
        register_span_metrics(corpus, gold, metrics=["recal"])
    with pytest.raises(InputError, match="K must be"):
        register_span_metrics(corpus, gold, k=[0])


def test_one_retrieval_is_mapped_once_for_many_metrics() -> None:
    corpus, gold = small_corpus()
    context = SpanContext(corpus, gold)
    calls = 0
    original = context.locator.locate_many

    def counting(requests: object) -> object:
        nonlocal calls
        calls += 1
        return original(requests)  # type: ignore[arg-type]

    context.locator.locate_many = counting  # type: ignore[method-assign,assignment]
    for metric in span_metrics(context, k=(1, 2, 3)):
        metric.compute("How much sun do tomatoes need?", [], [], None, RANKED)
    assert calls == 1


# -- README ----------------------------------------------------------------------------------


def readme_block(module: str) -> str:
    """The README's Python block that imports ``module`` (the one users copy, not a copy)."""
    readme = Path(__file__).resolve().parents[2] / "README.md"
    blocks = re.findall(r"^```python\n(.*?)^```", readme.read_text(encoding="utf-8"), re.M | re.S)
    found = [b for b in blocks if re.search(rf"^from {re.escape(module)} import ", b, re.M)]
    assert len(found) == 1, f"README.md has {len(found)} python blocks importing {module}"
    return str(found[0])


def test_readme_snippet_runs(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    clean_registry: None,
) -> None:
    pytest.importorskip("llama_index.retrievers.bm25")
    snippet = readme_block("spanchor_llamaindex")
    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    monkeypatch.setattr(tempfile, "mkdtemp", lambda *args, **kwargs: str(tmp_path))
    namespace: dict[str, object] = {"__name__": "__readme__"}
    exec(compile(snippet, "README.md (spanchor_llamaindex block)", "exec"), namespace)
    from spanchor_core import Evaluation, read_run

    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2, printed
    # q01's evidence is in BM25's top 5: both span metrics are 1.
    assert ast.literal_eval(printed[0]) == {"span_recall@5": 1.0, "span_hit@5": 1.0}
    path = tmp_path / "llamaindex.jsonl"
    assert namespace["path"] == path
    run = read_run(path)
    gold = namespace["gold"]
    assert [r.query_id for r in run.records] == list(gold)  # type: ignore[call-overload]
    evaluation = namespace["evaluate"](namespace["corpus"], gold, run)  # type: ignore[operator]
    assert isinstance(evaluation, Evaluation)
    assert evaluation.mapping.unmapped_rate == 0.0
    # The second line is the mean recall of the run file the block wrote.
    assert float(printed[1]) == evaluation.mean("recall@5")
    assert 0.5 < float(printed[1]) <= 1.0
    # SimpleDirectoryReader's file paths were mapped to corpus ids by the default rule.
    assert {r.document_id for rec in run.records for r in rec.results} <= set(
        namespace["corpus"]  # type: ignore[call-overload]
    )
