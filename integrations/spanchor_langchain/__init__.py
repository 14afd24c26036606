"""spanchor for LangChain: record what a chain, graph or agent retrieved into spanchor run files.

Ways in, one run-file format (``spanchor evaluate`` / ``spanchor gate`` read it)::

    from spanchor_langchain import SpanchorCallbackHandler
    graph.invoke(inputs, config={"callbacks": [SpanchorCallbackHandler("runs/candidate.jsonl")]})

    with record_retrievals("runs/candidate.jsonl", gold=gold): agent.invoke(task)
    SPANCHOR_RUN_FILE=runs/candidate.jsonl python app.py          # zero code, once imported
    retriever = RecordingRetriever(vectorstore.as_retriever(), "runs/candidate.jsonl")
    run = run_gold_set(app, gold, "runs/baseline.jsonl", input_mapper=lambda q: {...})

plus :func:`record` / :func:`recorded` for documents no LangChain event shows, LangSmith
evaluators (:func:`span_evaluator`, :func:`span_summary_evaluator`,
:func:`langsmith_examples`), :class:`ScoredVectorStoreRetriever` to keep vector-store scores,
and :func:`source_to_document_id` to turn loader paths into corpus ids. Depends on
langchain-core only (0.3.x and 1.x); never raises into a chain it records unless asked to
(``strict=True``).
"""

from __future__ import annotations

try:
    import langchain_core  # noqa: F401
except ModuleNotFoundError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'spanchor_langchain needs langchain-core: pip install "spanchor[langchain]"',
        name=exc.name,
    ) from exc

from spanchor_langchain.activation import RUN_FILE_ENV, EnvRunFileHandler
from spanchor_langchain.callbacks import NestedPolicy, RecordingWarning, SpanchorCallbackHandler
from spanchor_langchain.documents import (
    DEFAULT_SCORE_KEYS,
    DocumentIdRule,
    documents_to_results,
    source_to_document_id,
)
from spanchor_langchain.evaluators import (
    langsmith_examples,
    span_evaluator,
    span_recall_evaluator,
    span_summary_evaluator,
)
from spanchor_langchain.inventory import (
    documents_to_chunks,
    inventory_from_documents,
    vector_store_documents,
    write_inventory,
)
from spanchor_langchain.manual import record, recorded
from spanchor_langchain.recording import QUERY_ID_KEY
from spanchor_langchain.retriever import RecordingRetriever, ScoredVectorStoreRetriever
from spanchor_langchain.runner import arun_gold_set, run_gold_set
from spanchor_langchain.scope import active_handler, record_retrievals

__all__ = [
    "DEFAULT_SCORE_KEYS",
    "QUERY_ID_KEY",
    "RUN_FILE_ENV",
    "DocumentIdRule",
    "EnvRunFileHandler",
    "NestedPolicy",
    "RecordingRetriever",
    "RecordingWarning",
    "ScoredVectorStoreRetriever",
    "SpanchorCallbackHandler",
    "active_handler",
    "arun_gold_set",
    "documents_to_chunks",
    "documents_to_results",
    "inventory_from_documents",
    "langsmith_examples",
    "record",
    "record_retrievals",
    "recorded",
    "run_gold_set",
    "source_to_document_id",
    "span_evaluator",
    "span_recall_evaluator",
    "span_summary_evaluator",
    "vector_store_documents",
    "write_inventory",
]
