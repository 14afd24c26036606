"""A LangChain callback handler that records what reaches the model in a chain, graph or agent.

Attach it through config callbacks (``chain.invoke(x, config={"callbacks": [handler]})``): they
are inheritable, so it reaches every step inside, however deep. It writes two kinds of lines:

* **retrieval** — every retriever run: ``on_retriever_start`` gives the query, the metadata
  (where the gold query id travels, ``metadata["spanchor_query_id"]``, and LangChain's
  ``ls_retriever_name`` ...) and the run id; ``on_retriever_end`` the documents (joined by run
  id; the time between is the latency); ``on_retriever_error`` an error line.
  ``serialized`` is ``None`` for retrievers in langchain-core 1.x and never read. Retrievers
  nest (compression, ensembles): ``nested="outermost"`` (default) keeps the outermost run,
  ``"innermost"`` the runs with no retriever inside, ``"all"`` every run.
* **context** — documents that steps produced without a retriever run, which LangChain's own
  tutorials use first: a LangGraph node returning ``{"context": docs}`` from
  ``vector_store.similarity_search``, a ``@chain`` returning Documents with scores, a tool's
  ``content_and_artifact`` artifact. Which step outputs count, and how one list handed from
  step to step stays one line, is the rule of :mod:`spanchor_langchain.traces`; the lines are
  written when the top-level run ends.

Every line carries its provenance: ``source`` (the retriever's, node's, step's or tool's run
name), ``stage``, ``trace_id`` (the top-level run id; ``parent_run_id`` is followed up to it),
``run_id``, ``parent_run_id``, ``sequence`` (order in the trace) and ``metadata`` (tags,
``ls_*`` keys, the LangGraph node). The query of every line is the *question of the trace*
(the top-level input's question, or its last human message) — so a rewritten or generated
retriever query still belongs to its gold question; the retriever's own query is then kept in
``metadata["retriever_query"]``.

The handler is called from LangChain's worker threads under ``batch`` and inline under
``ainvoke`` (``run_inline``); its state is guarded by a lock. A retrieval that never ends (a
cancelled ``ainvoke``) is written as an error line when its top-level run ends, or at
:meth:`SpanchorCallbackHandler.close`. It never breaks the user's chain: every method catches
everything and counts it (:attr:`SpanchorCallbackHandler.failures`) — unless ``strict=True``,
which fails fast: LangChain re-raises the handler's :class:`~spanchor_core.RecorderError`
into the chain (``raise_error``), and :meth:`close` raises when nothing was recorded.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import warnings
from collections.abc import Mapping, Sequence
from time import perf_counter
from typing import Any, Final, Literal
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from spanchor_core import Corpus, GoldSet, RecorderError, RunRecorder
from spanchor_langchain._handler_state import HandlerState, Retrieval
from spanchor_langchain._lines import context_lines, retrieval_line, silence_message
from spanchor_langchain.documents import DEFAULT_SCORE_KEYS, DocumentIdRule, document_lists
from spanchor_langchain.recording import QUERY_ID_KEY, Recording, RecordTarget
from spanchor_langchain.traces import Trace, question_of

__all__ = ["NESTED_POLICIES", "NestedPolicy", "RecordingWarning", "SpanchorCallbackHandler"]

NestedPolicy = Literal["outermost", "innermost", "all"]
NESTED_POLICIES: Final[tuple[str, ...]] = ("outermost", "innermost", "all")

_log = logging.getLogger("spanchor_langchain")


class RecordingWarning(UserWarning):
    """A recorder saw the application run but could not record what it retrieved."""


def _abandoned(error: BaseException | None) -> str:
    """The error text of a retrieval whose top-level run ended before it did."""
    if isinstance(error, asyncio.CancelledError):
        return "CancelledError: the retrieval was cancelled (no end event)"
    if error is not None:
        return f"no end event: the enclosing run failed with {type(error).__name__}"
    return "no end event: the enclosing run ended before the retrieval did"


class SpanchorCallbackHandler(BaseCallbackHandler):
    """Record the retrievals and the context documents of every run the handler sees.

    ``target`` is a run-file path or an open :class:`~spanchor_core.RunRecorder`. All handlers
    (and wrappers) given the same path in one process share one open file, so a handler built
    per call loses nothing; ``mode="a"`` (default, as LangChain's ``FileCallbackHandler``)
    appends to an existing run file, ``mode="w"`` starts it afresh if it is not open in this
    process yet (see :mod:`spanchor_langchain.shared`). ``gold`` resolves query ids from the
    question text when the run metadata carries none; ``corpus`` stamps the corpus
    fingerprint into the header. ``nested`` chooses among nested retriever runs;
    ``contexts=False`` records retriever runs only. ``strict=True`` raises instead of
    counting (see the module docstring). The remaining arguments are those of
    :class:`~spanchor_langchain.RecordingRetriever`.
    """

    run_inline: bool = True

    def __init__(
        self,
        target: RecordTarget,
        *,
        gold: GoldSet | None = None,
        corpus: Corpus | None = None,
        document_id: DocumentIdRule = None,
        score_keys: Sequence[str] = DEFAULT_SCORE_KEYS,
        max_results: int | None = None,
        nested: NestedPolicy = "outermost",
        contexts: bool = True,
        query_id_key: str = QUERY_ID_KEY,
        description: str | None = None,
        parameters: Mapping[str, Any] | None = None,
        run_tags: Mapping[str, Any] | None = None,
        mode: Literal["w", "a"] = "a",
        strict: bool = False,
    ) -> None:
        if nested not in NESTED_POLICIES:
            raise ValueError(f"nested must be one of {NESTED_POLICIES}, got {nested!r}")
        if description is None and not isinstance(target, RunRecorder):
            description = "langchain:callbacks"
        if parameters is None and not isinstance(target, RunRecorder):
            parameters = {"nested": nested, "max_results": max_results, "contexts": contexts}
        self.nested: NestedPolicy = nested
        self.contexts = contexts
        self._recording = Recording(
            target,
            gold=gold,
            corpus=corpus,
            document_id=document_id,
            score_keys=score_keys,
            max_results=max_results,
            query_id_key=query_id_key,
            description=description or "",
            parameters=parameters,
            tags=run_tags,
            mode=mode,
            strict=strict,
        )
        self.raise_error = self._recording.strict
        self._gold = gold
        self._query_id_key = self._recording.query_id_key
        self._lock = threading.Lock()
        self._state = HandlerState(nested)
        self._failures = 0
        self._written = 0
        self._closed = False
        self.foreign_runs = 0
        """Top-level runs received from outside a ``record_retrievals`` block's context."""

    # -- state --------------------------------------------------------------------------------

    @property
    def recorder(self) -> RunRecorder:
        """The recorder lines go to."""
        return self._recording.recorder

    @property
    def strict(self) -> bool:
        return self._recording.strict

    @property
    def records(self) -> int:
        """Lines written to the recorder so far (by every recorder sharing its file)."""
        return self._recording.records

    @property
    def written(self) -> int:
        """Lines this handler wrote."""
        return self._written

    @property
    def roots(self) -> int:
        """Top-level chain, graph and tool runs this handler saw."""
        return self._state.roots

    @property
    def failures(self) -> int:
        """Events that could not be handled or recorded (the chain ran on regardless)."""
        return self._failures + self._recording.failures

    @property
    def pending(self) -> int:
        """Retriever runs started and not yet ended."""
        return len(self._state.retrievals)

    def close(self) -> None:
        """Write what is still pending (retrievals as error lines, context of unfinished
        traces), warn if the handler saw runs but recorded nothing, release the run file."""
        if self._closed:
            return
        self._closed = True
        try:
            with self._lock:
                left, traces = self._state.drain()
            for retrieval in left:
                self._write_abandoned(
                    retrieval, "no end event: the handler was closed before the retrieval ended"
                )
            for root, trace in traces:
                self._write_contexts(root, trace)
        except RecorderError:
            if self.strict:
                self._recording.close()
                raise
        except Exception as exc:
            self._failed(exc)
        try:
            self._warn_if_silent()
        finally:
            self._recording.close()

    def _warn_if_silent(self) -> None:
        message = silence_message(
            str(self.recorder.path), self._state.roots, self._written,
            self._state.foreign_unrecorded,
        )  # fmt: skip
        if message is None:
            return
        if self.strict:
            raise RecorderError(message)
        warnings.warn(message, RecordingWarning, stacklevel=3)

    def note_unrecorded(self, count: int) -> None:
        """``count`` retriever runs belonging to this handler's block could not be recorded
        (see :mod:`spanchor_langchain.scope`); :meth:`close` reports them."""
        self._state.foreign_unrecorded += count

    def __enter__(self) -> SpanchorCallbackHandler:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({str(self.recorder.path)!r}, nested={self.nested!r}, "
            f"records={self.records}, failures={self.failures})"
        )

    # -- which events we want -----------------------------------------------------------------
    # Class attributes rather than BaseCallbackHandler's properties: LangChain reads the one
    # of each event's kind on every event, and a property is a Python call each time.

    ignore_llm: bool = True
    ignore_chat_model: bool = True
    ignore_retry: bool = True
    ignore_custom_event: bool = True
    ignore_retriever: bool = False
    ignore_chain: bool = False
    ignore_agent: bool = False

    # -- retriever events ---------------------------------------------------------------------

    def on_retriever_start(
        self,
        serialized: dict[str, Any] | None,
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            started = perf_counter()
            query_id = None
            if metadata:  # Recording.query_id, inline: this runs on every retrieval
                query_id = metadata.get(self._query_id_key)
                if not (isinstance(query_id, str) and query_id):
                    query_id = None
            lock = self._lock  # acquire/release: half the cost of "with" on this path
            lock.acquire()
            try:
                self._state.start_retrieval(
                    run_id, parent_run_id, query, query_id, kwargs.get("name"), tags, metadata,
                    started,
                )  # fmt: skip
            finally:
                lock.release()
        except Exception as exc:
            self._failed(exc)

    def on_retriever_end(
        self,
        documents: Sequence[Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self._end_retrieval(documents, None, run_id, parent_run_id)

    def on_retriever_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self._end_retrieval(None, error, run_id, parent_run_id)

    def _end_retrieval(
        self,
        documents: Any,
        error: BaseException | None,
        run_id: UUID,
        parent_run_id: UUID | None,
    ) -> None:
        try:
            ended = perf_counter()
            lock = self._lock
            lock.acquire()
            try:
                retrieval = self._state.finish_retrieval(run_id, documents)
            finally:
                lock.release()
            if retrieval is not None:
                self._recording.record(
                    *retrieval_line(retrieval, documents, error, ended, self._gold)
                )
                self._written += 1
            if parent_run_id is None and self._state.retrievals:
                self._end_root(run_id, error)
        except Exception as exc:
            self._failed(exc)

    # -- chain and tool events ----------------------------------------------------------------

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._start_step(serialized, inputs, run_id, parent_run_id, tags, metadata, kwargs)

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        inputs = kwargs.get("inputs")
        self._start_step(
            serialized, input_str if inputs is None else inputs, run_id, parent_run_id,
            tags, metadata, kwargs,
        )  # fmt: skip

    def _start_step(
        self,
        serialized: Mapping[str, Any] | None,
        inputs: Any,
        run_id: UUID,
        parent_run_id: UUID | None,
        tags: list[str] | None,
        metadata: dict[str, Any] | None,
        kwargs: Mapping[str, Any],
    ) -> None:
        try:
            name = kwargs.get("name")
            if name is None and serialized:
                name = serialized.get("name")
            shared = self._recording.shared
            if parent_run_id is None and shared is not None:
                shared.saw_root()
            with self._lock:
                self._state.start_step(
                    run_id,
                    parent_run_id,
                    name if isinstance(name, str) else None,
                    inputs,
                    tags,
                    metadata,
                    None if parent_run_id is not None else self._recording.query_id(metadata),
                    perf_counter(),
                    question_of,
                )
        except Exception as exc:
            self._failed(exc)

    def on_chain_end(
        self, outputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        self._end_step(run_id, parent_run_id, outputs, None)

    def on_tool_end(
        self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        artifact = getattr(output, "artifact", None)
        lists = document_lists(artifact) if artifact is not None else []
        if lists:
            self._end_step(run_id, parent_run_id, None, None, [("artifact", lists[0][1])])
        else:
            self._end_step(run_id, parent_run_id, output, None)

    def on_chain_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self._end_step(run_id, parent_run_id, None, error)

    def on_tool_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self._end_step(run_id, parent_run_id, None, error)

    def _end_step(
        self,
        run_id: UUID,
        parent_run_id: UUID | None,
        outputs: Any,
        error: BaseException | None,
        lists: list[tuple[str | None, Sequence[Any]]] | None = None,
    ) -> None:
        try:
            ended = perf_counter()
            if lists is None:
                lists = document_lists(outputs) if self.contexts and outputs is not None else []
            with self._lock:
                trace = self._state.finish_step(run_id, lists, ended)
            if parent_run_id is None:
                if self._state.retrievals:
                    self._end_root(run_id, error)
                if trace is not None:
                    self._write_contexts(run_id, trace)
        except Exception as exc:
            self._failed(exc)

    # -- explicit records (spanchor_langchain.record) -----------------------------------------

    def offer_documents(
        self, documents: Sequence[Any], *, parent_run_id: UUID | None, source: str | None
    ) -> bool:
        """Offer a document list as context of the trace ``parent_run_id`` belongs to; return
        whether the handler knows that trace (else the caller writes the line itself)."""
        with self._lock:
            return self._state.offer(documents, parent_run_id, source, perf_counter())

    def write_line(self, query: str, documents: Sequence[Any], **provenance: Any) -> None:
        """Write one line now (outside any known trace)."""
        self._recording.record(query, documents, query_id=None, latency_ms=None, **provenance)
        self._written += 1

    # -- writing ------------------------------------------------------------------------------

    def _write_retrieval(
        self,
        retrieval: Retrieval,
        documents: Any,
        ended: float,
        error: str | BaseException | None,
    ) -> None:
        self._recording.record(*retrieval_line(retrieval, documents, error, ended, self._gold))
        self._written += 1

    def _write_contexts(self, root: UUID, trace: Trace) -> None:
        for line in context_lines(root, trace):
            self._recording.record(**line)
            self._written += 1

    def _end_root(self, root: UUID, error: BaseException | None) -> None:
        """A top-level run ended: its retrievals still pending will never end; write them."""
        with self._lock:
            left = self._state.abandon(root)
        for retrieval in left:
            self._write_abandoned(retrieval, _abandoned(error))

    def _write_abandoned(self, retrieval: Retrieval, reason: str) -> None:
        if self._state.kept(retrieval):
            self._write_retrieval(retrieval, None, perf_counter(), reason)

    # -- failures -----------------------------------------------------------------------------

    def _failed(self, exc: Exception) -> None:
        if self.strict and isinstance(exc, RecorderError):
            raise exc
        with self._lock:
            self._failures += 1
            first = self._failures == 1
        if first:
            _log.warning(
                "spanchor: the callback handler failed (%s: %s); the chain is unaffected, "
                "further failures are counted in handler.failures",
                type(exc).__name__,
                exc,
            )
        if self.strict:
            raise RecorderError(f"spanchor callback handler failed: {exc}") from exc
