"""spanchor for LangChain: record what retrievers return into spanchor run files.

Four ways in, one run-file format (``spanchor evaluate`` / ``spanchor gate`` read it)::

    from spanchor_langchain import SpanchorCallbackHandler
    chain.batch(questions, config={"callbacks": [SpanchorCallbackHandler("runs/candidate.jsonl")]})

    retriever = RecordingRetriever(vectorstore.as_retriever(), "runs/candidate.jsonl")
    with record_retrievals("runs/candidate.jsonl", gold=gold): agent.invoke(task)
    run = run_gold_set(retriever, gold, "runs/baseline.jsonl", corpus=corpus)

plus :func:`span_recall_evaluator` for LangSmith, :class:`ScoredVectorStoreRetriever` to keep
vector-store scores, and :func:`source_to_document_id` to turn loader paths into corpus ids.
Depends on langchain-core only; never raises into a chain it records.
"""

from __future__ import annotations

from spanchor_langchain.callbacks import NestedPolicy, SpanchorCallbackHandler
from spanchor_langchain.documents import (
    DEFAULT_SCORE_KEYS,
    DocumentIdRule,
    documents_to_results,
    source_to_document_id,
)
from spanchor_langchain.evaluators import span_recall_evaluator
from spanchor_langchain.recording import QUERY_ID_KEY
from spanchor_langchain.retriever import RecordingRetriever, ScoredVectorStoreRetriever
from spanchor_langchain.runner import arun_gold_set, run_gold_set
from spanchor_langchain.scope import active_handler, record_retrievals

__all__ = [
    "DEFAULT_SCORE_KEYS",
    "QUERY_ID_KEY",
    "DocumentIdRule",
    "NestedPolicy",
    "RecordingRetriever",
    "ScoredVectorStoreRetriever",
    "SpanchorCallbackHandler",
    "active_handler",
    "arun_gold_set",
    "documents_to_results",
    "record_retrievals",
    "run_gold_set",
    "source_to_document_id",
    "span_recall_evaluator",
]
