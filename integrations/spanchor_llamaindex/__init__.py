"""spanchor for LlamaIndex: span metrics, span-aware evaluators, live recording, QA migration.

Thin translation layers from LlamaIndex objects to spanchor's core (depends on
``llama-index-core`` only)::

    register_span_metrics(corpus, gold)               # "span_recall@5" & co. become names
    RetrieverEvaluator.from_metric_names(["span_recall@5", "hit_rate"], retriever=r)

    with record_retrievals("runs/candidate.jsonl", corpus=corpus, gold=gold):
        with tag_query("q1"):
            retriever.retrieve("How long is the warranty?")   # one run-file line

* :mod:`~spanchor_llamaindex.metrics` — ``BaseRetrievalMetric`` subclasses for
  ``RetrieverEvaluator`` (``SpanRecall`` ... ``SpanAP``) and their registration;
* :mod:`~spanchor_llamaindex.evaluator` — :class:`SpanRetrieverEvaluator`, which keeps
  ``NodeWithScore`` and evaluates a whole gold set into a run file and an ``Evaluation``;
* :mod:`~spanchor_llamaindex.batch` — :class:`SpanEvidenceEvaluator` for ``BatchEvalRunner``;
* :mod:`~spanchor_llamaindex.recording` — the instrumentation event handler;
* :mod:`~spanchor_llamaindex.nodes` — how a node becomes a result (text, score, document id);
* :mod:`~spanchor_llamaindex.datasets` — LlamaIndex QA datasets to span gold sets.
"""

from __future__ import annotations

from spanchor_llamaindex.batch import SpanEvidenceEvaluator
from spanchor_llamaindex.blocks import QUERY_ID_TAG, record_retrievals, tag_query
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
from spanchor_llamaindex.metrics import (
    SpanAP,
    SpanContext,
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
    default_document_id,
    node_to_result,
    nodes_to_results,
)
from spanchor_llamaindex.recording import SpanchorEventHandler

__all__ = [
    "QUERY_ID_TAG",
    "DocumentIdResolver",
    "GoldSetEvaluation",
    "MigrationProblem",
    "QADataset",
    "QAMigration",
    "SpanAP",
    "SpanContext",
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
    "gold_from_qa_dataset",
    "node_to_result",
    "nodes_to_results",
    "read_qa_dataset",
    "record_retrievals",
    "register_span_metrics",
    "span_metrics",
    "tag_query",
    "unregister_span_metrics",
    "write_qa_dataset",
]
