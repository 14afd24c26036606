"""What the callback handler writes: the keyword arguments of one retrieval or context line,
and the message of a handler that saw runs but recorded nothing.

Pure functions over the handler's bookkeeping (:mod:`spanchor_langchain._handler_state`), so
the handler itself reads as "event -> line".
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from spanchor_core import GoldSet
from spanchor_langchain._handler_state import Retrieval
from spanchor_langchain.traces import Trace

__all__ = ["context_lines", "line_query", "retrieval_line", "silence_message"]


def line_query(gold: GoldSet | None, question: str | None, own: str) -> tuple[str, dict[str, Any]]:
    """A line's query — the trace's question — and metadata keeping the retriever's own query
    when it differs. With a gold set, a retriever query that is a gold question and a trace
    question that is not keep the retriever query (the gold set knows better)."""
    if question is None or question == own:
        return own, {}
    if (
        gold is not None
        and gold.by_question(question.strip()) is None
        and gold.by_question(own.strip()) is not None
    ):
        return own, {}
    return question, {"retriever_query": own}


def retrieval_line(
    retrieval: Retrieval,
    documents: Any,
    error: str | BaseException | None,
    ended: float,
    gold: GoldSet | None,
) -> tuple[Any, ...]:
    """The arguments of a retrieval line, in the order of
    :meth:`~spanchor_langchain.recording.Recording.record` (a tuple: this runs on every
    retrieval)."""
    own = retrieval.query
    question = retrieval.question
    metadata = retrieval.metadata
    query = own
    if question is not None and question != own:
        query, extra = line_query(gold, question, own)
        if extra:
            metadata = {**metadata, **extra}
    # Run ids go to the recorder as UUIDs: the encoder writes their text (as ``str`` would).
    run_id = retrieval.run_id
    root = retrieval.root
    parent = retrieval.parent
    return (
        query,
        documents,
        retrieval.query_id,
        (ended - retrieval.started) * 1000.0,
        error,
        retrieval.name,
        "retrieval",
        root if type(root) is UUID else str(root),
        run_id if type(run_id) is UUID else str(run_id),
        None if parent is None else parent if type(parent) is UUID else str(parent),
        retrieval.sequence,
        metadata,
    )


def context_lines(root: UUID, trace: Trace) -> list[dict[str, Any]]:
    """The keyword arguments of the context lines of a finished trace, in sequence order."""
    lines = []
    for candidate in trace.remaining():
        step = candidate.step
        metadata = dict(step.metadata)
        if candidate.field is not None:
            metadata["output_key"] = candidate.field
        if step.text is not None and step.text != trace.question:
            metadata["retriever_query"] = step.text  # the tool's or step's own query
        lines.append(
            {
                "query": trace.question or step.text or "",
                "documents": candidate.documents,
                "query_id": trace.query_id,
                "latency_ms": (candidate.ended - step.started) * 1000.0,
                "source": step.name,
                "stage": "context",
                "trace_id": str(root),
                "run_id": str(candidate.run_id),
                "parent_run_id": None if step.parent is None else str(step.parent),
                "sequence": trace.next(),
                "metadata": metadata,
            }
        )
    return lines


def silence_message(path: str, roots: int, written: int, unrecorded: int) -> str | None:
    """Why a closing handler must speak up, or ``None`` when all is well."""
    if unrecorded:
        return (
            f"spanchor: {unrecorded} retriever runs started outside the context of every "
            "record_retrievals block while several blocks were open, and were not recorded "
            f"to {path}; run them in the block's context (contextvars.copy_context().run, "
            "asyncio.to_thread) or pass the handler in config callbacks"
        )
    if not roots or written:
        return None
    return (
        f"spanchor: the handler recording to {path} saw {roots} LangChain runs but recorded "
        "nothing: no retriever ran and no step returned Documents. If a step calls "
        "vector_store.similarity_search(...) and returns text, return the Documents from a "
        'step (LangGraph: {"context": docs}) or record them with spanchor_langchain.record(docs)'
    )
