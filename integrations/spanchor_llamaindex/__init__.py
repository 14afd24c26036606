"""spanchor for LlamaIndex: span metrics, span-aware evaluators, live recording, QA migration.

Thin translation layers from LlamaIndex objects to spanchor's core (depends on
``llama-index-core`` only)::

    register_span_metrics(corpus, gold)               # "span_recall@5" & co. become names
    RetrieverEvaluator.from_metric_names(["span_recall@5", "hit_rate"], retriever=r)

    with record_retrievals("runs/candidate.jsonl", corpus=corpus, gold=gold):
        with tag_query("q1"):
            retriever.retrieve("How long is the warranty?")   # one run-file line

* :mod:`~spanchor_llamaindex.context` — :class:`SpanContext`: corpus, locator, gold, nodes;
* :mod:`~spanchor_llamaindex.metrics` — ``BaseRetrievalMetric`` subclasses for
  ``RetrieverEvaluator`` (``SpanRecall`` ... ``SpanAP``) and their registration;
* :mod:`~spanchor_llamaindex.evaluator` — :class:`SpanRetrieverEvaluator`, which keeps
  ``NodeWithScore``, evaluates a gold set or a QA dataset (``evaluate_dataset``);
* :mod:`~spanchor_llamaindex.batch` — :class:`SpanEvidenceEvaluator` for ``BatchEvalRunner``;
* :mod:`~spanchor_llamaindex.tables` — per-query tables of span metrics;
* :mod:`~spanchor_llamaindex.recording` — the instrumentation event handler (retrieval,
  reranked and final-context stages, per trace); :mod:`~spanchor_llamaindex.blocks` —
  ``record_retrievals`` and ``tag_query``;
* :mod:`~spanchor_llamaindex.nodes` — how a node becomes a result (text, score, document id);
* :mod:`~spanchor_llamaindex.inventory` — chunk inventories from nodes, a docstore or an index;
* :mod:`~spanchor_llamaindex.datasets`, :mod:`~spanchor_llamaindex.rag_dataset` — LlamaIndex
  QA datasets and ``LabelledRagDataset`` files to span gold sets.

Needs ``llama-index-core``: ``pip install "spanchor[llamaindex]"``.
"""

from __future__ import annotations

try:
    import llama_index.core  # noqa: F401  # the one framework this package translates
except ImportError as _missing:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "spanchor_llamaindex needs llama-index-core, which is not installed: "
        'pip install "spanchor[llamaindex]"',
        name=_missing.name,
    ) from _missing

from spanchor_llamaindex.batch import SpanEvaluationResult, SpanEvidenceEvaluator
from spanchor_llamaindex.blocks import QUERY_ID_TAG, record_retrievals, tag_query
from spanchor_llamaindex.context import SpanContext
from spanchor_llamaindex.datasets import (
    MigrationProblem,
    QADataset,
    QAMigration,
    gold_from_qa_dataset,
    read_qa_dataset,
    write_qa_dataset,
)
from spanchor_llamaindex.evaluator import (
    GoldSetEvaluation,
    SpanRetrievalEvalResult,
    SpanRetrieverEvaluator,
)
from spanchor_llamaindex.inventory import (
    docstore_nodes,
    inventory_from_nodes,
    nodes_to_chunks,
    write_inventory,
)
from spanchor_llamaindex.metrics import (
    SpanAP,
    SpanFullEvidence,
    SpanHit,
    SpanIoU,
    SpanMetric,
    SpanMRR,
    SpanNDCG,
    SpanPrecision,
    SpanRecall,
    register_span_metrics,
    span_metrics,
    unregister_span_metrics,
)
from spanchor_llamaindex.nodes import (
    DocumentIdResolver,
    NodeConverter,
    default_document_id,
    node_to_result,
    nodes_to_results,
)
from spanchor_llamaindex.rag_dataset import (
    RagDataset,
    RagExample,
    gold_from_rag_dataset,
    rag_to_qa_dataset,
    read_rag_dataset,
)
from spanchor_llamaindex.recording import SpanchorEventHandler
from spanchor_llamaindex.tables import span_results_rows, span_results_table

__all__ = [
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
]
