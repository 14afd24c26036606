"""Live recording: what LlamaIndex retrieves, reranks and hands to the model, per trace.

:class:`SpanchorEventHandler` listens on LlamaIndex's instrumentation dispatcher and appends
one run-file line per stage of a question through the core :class:`~spanchor_core.RunRecorder`
(one flushed write per line, thread-safe):

============== =================================================== ===========================
stage          LlamaIndex events (joined by ``span_id``)           what the line holds
============== =================================================== ===========================
``retrieval``  ``RetrievalStartEvent`` / ``RetrievalEndEvent``     the retriever's raw output
``postprocessed`` ``ReRankStartEvent`` / ``ReRankEndEvent``        a reranker's output
``context``    ``SynthesizeStartEvent`` / ``SynthesizeEndEvent``   ``response.source_nodes``:
                                                                   what the synthesizer got,
                                                                   after every postprocessor
============== =================================================== ===========================

``RetrievalEndEvent`` fires *before* node postprocessors and rerankers, so a reranker change
shows only in the later stages; evaluation prefers a trace's ``context`` line (the core's
grouping rule). Every line carries:

* ``trace_id``: the id of the root span — the user's call (``query_engine.query(...)``, a chat
  turn, or the bare ``retriever.retrieve(...)``). A ``SubQuestionQueryEngine`` or a
  ``RouterQueryEngine`` writes all its retrievals and contexts under one trace per question;
* ``query``: the question of the root call (its ``str_or_query_bundle``/``message``
  argument), so sub-questions resolve to their user's gold query; a retrieval made for a
  different text (a sub-question, a condensed question) keeps it in
  ``metadata["retrieval_query"]``;
* ``source`` (the retriever's, reranker's or query engine's class), ``stage``, ``run_id`` (the
  event's span), ``parent_run_id`` and ``sequence`` (order of starts within the trace).

A context line leaves out nodes that the engine made itself rather than retrieved (the
"Sub question: ... Response: ..." nodes of ``SubQuestionQueryEngine``: neither retrieved in
the trace nor from a source document), counting them in ``metadata["synthetic_nodes"]``.

What it relies on, and why:

* **Query ids** come from ``instrument_tags`` (``with tag_query("q1"): ...``), copied by
  LlamaIndex into every event; without a tag a ``gold`` set fills the id in from the question
  text, or ``spanchor evaluate`` does later.
* **Errors**: a retrieval that raises emits no end event; the span watcher sees the span
  dropped with the exception and an error line is written. A raising document-id resolver
  costs only that node's id (:class:`~spanchor_llamaindex.nodes.NodeConverter`).
* **Nested retrievers** (a router or fusion retriever calling others): only the outermost
  retrieval is recorded; :attr:`~SpanchorEventHandler.nested` counts the others.
* **Never breaks the application**: the dispatcher swallows handler exceptions silently; this
  handler catches its own, counts them in :attr:`~SpanchorEventHandler.failures` and logs
  the first, and the recorder does the same for writes.
* **Install and remove**: LlamaIndex has no removal API, so :meth:`~SpanchorEventHandler.
  install` / :meth:`~SpanchorEventHandler.uninstall` assign new handler lists under one
  module-wide lock.
* **Scope**: :func:`~spanchor_llamaindex.blocks.record_retrievals` records what starts inside
  its block, including worker threads that did not inherit the block's context (see
  :mod:`spanchor_llamaindex._scopes`); what it cannot attribute it counts and reports when
  the block closes, as it does a block that recorded nothing. A handler installed explicitly
  records everything in the process.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.instrumentation import (  # type: ignore[attr-defined]  # no __all__
    Dispatcher,
    get_dispatcher,
)
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.instrumentation.events.retrieval import (
    RetrievalEndEvent,
    RetrievalStartEvent,
)
from llama_index.core.instrumentation.events.synthesis import (
    SynthesizeEndEvent,
    SynthesizeStartEvent,
)
from llama_index.core.schema import NodeWithScore

from spanchor_core import Corpus, GoldSet, RetrievedResult, RunRecorder
from spanchor_llamaindex import _scopes
from spanchor_llamaindex._scopes import QUERY_ID_TAG, Membership
from spanchor_llamaindex._spans import Pending, SpanWatcher, Stage, Trace, class_name, text_of
from spanchor_llamaindex.nodes import DocumentIdResolver, NodeConverter

__all__ = ["SpanchorEventHandler"]

_log = logging.getLogger(__name__)

# Every handler's install/uninstall is a read-modify-write of the same dispatcher lists: one
# lock for all of them, or two handlers racing would drop one of the updates.
_INSTALL_LOCK: Final = threading.Lock()


class SpanchorEventHandler(BaseEventHandler):
    """Records retrievals, reranks and final contexts on the dispatcher into a run file.

    ``path`` is a run file to create (``mode="w"``) or append to (``mode="a"``), or an open
    :class:`~spanchor_core.RunRecorder` to share (then :meth:`close` leaves it open).
    ``corpus`` puts its fingerprint in the header, lets the default document-id rule use file
    paths and translates raw-file offsets (see :class:`~spanchor_llamaindex.nodes.
    NodeConverter`); ``gold`` fills in missing query ids from the question text and puts its
    hash in the header. ``stages`` chooses what is recorded (default: all three).

    Use :func:`~spanchor_llamaindex.blocks.record_retrievals` for a ``with`` block, or
    :meth:`install` / :meth:`uninstall` / :meth:`close` for a long-lived recorder.
    """

    _recorder: RunRecorder = PrivateAttr()
    _owns_recorder: bool = PrivateAttr()
    _converter: NodeConverter = PrivateAttr()
    _stages: frozenset[str] = PrivateAttr()
    _retrievals: dict[str, Pending] = PrivateAttr()
    _others: dict[str, Pending] = PrivateAttr()
    _traces: dict[str, Trace] = PrivateAttr()
    _watcher: SpanWatcher = PrivateAttr()
    _dispatcher: Dispatcher | None = PrivateAttr()
    _scope: object | None = PrivateAttr()
    _adopt: bool = PrivateAttr()
    _count_lock: threading.Lock = PrivateAttr()
    _counts: dict[str, int] = PrivateAttr()

    def __init__(
        self,
        path: str | os.PathLike[str] | RunRecorder,
        *,
        retriever: str = "llama_index",
        parameters: Mapping[str, Any] | None = None,
        corpus: Corpus | None = None,
        gold: GoldSet | None = None,
        document_id: DocumentIdResolver | None = None,
        tags: Mapping[str, Any] | None = None,
        mode: Literal["w", "a"] = "w",
        stages: tuple[Stage, ...] = ("retrieval", "postprocessed", "context"),
    ) -> None:
        super().__init__()
        if isinstance(path, RunRecorder):
            self._recorder = path
            self._owns_recorder = False
        else:
            self._recorder = RunRecorder(
                path,
                retriever=retriever,
                parameters=parameters,
                corpus_fingerprint=None if corpus is None else corpus.fingerprint,
                gold=gold,
                tags=tags,
                mode=mode,
            )
            self._owns_recorder = True
        self._converter = NodeConverter(corpus, document_id)
        self._stages = frozenset(stages)
        # span_id -> pending stage; single dict operations are atomic.
        self._retrievals: dict[str, Pending] = {}
        self._others: dict[str, Pending] = {}
        self._traces: dict[str, Trace] = {}
        self._watcher = SpanWatcher(self._dropped, self._root_closed)
        self._dispatcher: Dispatcher | None = None
        self._scope: object | None = None  # set by record_retrievals: record its block only
        self._adopt = True
        self._count_lock = threading.Lock()
        self._counts = {"failures": 0, "nested": 0, "adopted": 0, "unattributed": 0}

    @classmethod
    def class_name(cls) -> str:
        return "SpanchorEventHandler"

    # -- state -------------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._recorder.path

    @property
    def recorder(self) -> RunRecorder:
        return self._recorder

    @property
    def records(self) -> int:
        """Lines written to the run file (every stage)."""
        return self._recorder.records

    @property
    def failures(self) -> int:
        """Stages that could not be recorded (handler errors plus failed writes)."""
        return self._counts["failures"] + self._recorder.failures

    @property
    def nested(self) -> int:
        """Retrievals skipped because an enclosing retrieval was being recorded."""
        return self._counts["nested"]

    @property
    def adopted(self) -> int:
        """Retrievals from threads outside every block's context, recorded by this block."""
        return self._counts["adopted"]

    @property
    def unattributed(self) -> int:
        """Retrievals outside every block's context that no block could claim (not recorded)."""
        return self._counts["unattributed"]

    @property
    def resolver_errors(self) -> int:
        """Nodes whose document-id resolver raised (recorded without a document id)."""
        return self._converter.resolver_errors

    @property
    def pending(self) -> int:
        """Retrievals started and not yet finished."""
        return len(self._retrievals)

    @property
    def installed(self) -> bool:
        return self._dispatcher is not None

    def __str__(self) -> str:
        return repr(self)

    def __repr__(self) -> str:
        state = "installed" if self.installed else "not installed"
        return (
            f"SpanchorEventHandler({str(self.path)!r}, {state}, records={self.records}, "
            f"failures={self.failures})"
        )

    def _count(self, name: str) -> None:
        with self._count_lock:
            self._counts[name] += 1

    # -- events ------------------------------------------------------------------------------

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        """Join start and end events by ``span_id``; never raises."""
        try:
            kind = type(event)
            if kind is RetrievalEndEvent:
                self._end_retrieval(event)  # type: ignore[arg-type]
            elif kind is RetrievalStartEvent:
                self._start_retrieval(event)  # type: ignore[arg-type]
            elif kind is SynthesizeStartEvent:
                self._start(event, "context", event.query)  # type: ignore[attr-defined]
            elif kind is SynthesizeEndEvent:
                self._end_synthesis(event)  # type: ignore[arg-type]
            elif kind is ReRankStartEvent:
                self._start(event, "postprocessed", event.query)  # type: ignore[attr-defined]
            elif kind is ReRankEndEvent:
                self._end_rerank(event)  # type: ignore[arg-type]
        except Exception as exc:
            self._failed(exc)

    def _in_scope(self, counted: bool) -> bool:
        if self._scope is None:
            return True
        member = _scopes.membership(self._scope)
        if member is Membership.INSIDE:
            return True
        if member is Membership.ADOPTED and self._adopt:
            if counted:
                self._count("adopted")
            return True
        if member is not Membership.ELSEWHERE and counted:
            self._count("unattributed")
        return False

    def _pending_for(self, event: BaseEvent, stage: Stage, query: Any) -> Pending | None:
        span_id = event.span_id
        if span_id is None or stage not in self._stages:
            return None
        if not self._in_scope(counted=stage == "retrieval"):
            return None
        if (
            stage == "retrieval"
            and self._retrievals
            and self._watcher.has_ancestor_in(span_id, self._retrievals)
        ):
            self._count("nested")
            return None
        now = time.perf_counter()
        text = text_of(query)
        tagged = event.tags.get(QUERY_ID_TAG)
        query_id = None if tagged is None else str(tagged)
        root, question = self._watcher.root(span_id)
        trace = self._traces.get(root)
        if trace is None:
            trace = Trace(root, question if question is not None else text, query_id, now)
            self._traces[root] = trace
        elif trace.query_id is None:
            trace.query_id = query_id
        parent = self._watcher.parent(span_id)
        instance = self._watcher.instance(span_id)
        if stage == "context":
            # The query engine that asked for the synthesis names the context, not the
            # synthesizer class.
            engine = self._watcher.instance(parent)
            source = class_name(engine if engine is not None else instance, "synthesizer")
        else:
            source = class_name(instance, stage)
        return Pending(trace, stage, text, query_id, next(trace.sequence), parent, source, now)

    def _start_retrieval(self, event: RetrievalStartEvent) -> None:
        pending = self._pending_for(event, "retrieval", event.str_or_query_bundle)
        if pending is not None and event.span_id is not None:
            self._retrievals[event.span_id] = pending

    def _start(self, event: BaseEvent, stage: Stage, query: Any) -> None:
        pending = self._pending_for(event, stage, query)
        if pending is not None and event.span_id is not None:
            self._others[event.span_id] = pending

    def _write(
        self,
        pending: Pending,
        span_id: str,
        results: list[RetrievedResult],
        *,
        latency_ms: float | None,
        error: BaseException | str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        trace = pending.trace
        metadata: dict[str, Any] = dict(extra or {})
        if pending.query != trace.question:
            metadata["retrieval_query"] = pending.query
        self._recorder.record(
            trace.question,
            results,
            query_id=pending.query_id if pending.query_id is not None else trace.query_id,
            latency_ms=latency_ms,
            error=error,
            source=pending.source,
            stage=pending.stage,
            trace_id=trace.root,
            run_id=span_id,
            parent_run_id=pending.parent,
            sequence=pending.sequence,
            metadata=metadata or None,
        )

    def _seen(self, pending: Pending, nodes: list[NodeWithScore]) -> None:
        seen = pending.trace.seen
        for node in nodes:
            seen.add(node.node.node_id)

    def _end_retrieval(self, event: RetrievalEndEvent) -> None:
        pending = self._retrievals.pop(event.span_id, None) if event.span_id is not None else None
        if pending is None:
            return  # nested, out of scope, or started before install
        self._seen(pending, event.nodes)
        self._write(
            pending,
            event.span_id or "",
            self._converter.results(event.nodes),
            latency_ms=(time.perf_counter() - pending.started) * 1000.0,
        )
        self._forget_if_closed(pending.trace)

    def _end_rerank(self, event: ReRankEndEvent) -> None:
        pending = self._others.pop(event.span_id, None) if event.span_id is not None else None
        if pending is None or pending.stage != "postprocessed":
            return
        self._seen(pending, event.nodes)
        self._write(
            pending,
            event.span_id or "",
            self._converter.results(event.nodes),
            latency_ms=(time.perf_counter() - pending.started) * 1000.0,
        )
        self._forget_if_closed(pending.trace)

    def _end_synthesis(self, event: SynthesizeEndEvent) -> None:
        pending = self._others.pop(event.span_id, None) if event.span_id is not None else None
        if pending is None or pending.stage != "context":
            return
        nodes = list(getattr(event.response, "source_nodes", None) or ())
        kept: list[RetrievedResult] = []
        synthetic = 0
        for node in nodes:
            result = self._converter.result(node, len(kept) + 1)
            inner = node.node
            if (
                inner.node_id in pending.trace.seen
                or inner.ref_doc_id is not None
                or result.document_id is not None
            ):
                kept.append(result)
            else:
                synthetic += 1
        if synthetic:
            kept = [dataclasses.replace(r, rank=rank) for rank, r in enumerate(kept, start=1)]
        self._write(
            pending,
            event.span_id or "",
            kept,
            # how long the question took until its context was ready
            latency_ms=(pending.started - pending.trace.started) * 1000.0,
            extra={"synthetic_nodes": synthetic} if synthetic else None,
        )
        self._forget_if_closed(pending.trace)

    def _dropped(self, span_id: str, err: BaseException | None) -> None:
        try:
            self._others.pop(span_id, None)  # a failed rerank or synthesis: no line
            pending = self._retrievals.pop(span_id, None)
            if pending is None:
                return
            self._write(
                pending,
                span_id,
                [],
                latency_ms=(time.perf_counter() - pending.started) * 1000.0,
                error=err if err is not None else "the retrieval was dropped",
            )
            self._forget_if_closed(pending.trace)
        except Exception as exc:
            self._failed(exc)

    def _root_closed(self, root: str) -> None:
        trace = self._traces.pop(root, None)
        if trace is not None and self._others:
            for span_id, pending in list(self._others.items()):
                if pending.trace is trace:  # a reranker that returned without its end event
                    self._others.pop(span_id, None)

    def _forget_if_closed(self, trace: Trace) -> None:
        # A root the watcher never saw open (installed mid-call) never reports its close.
        if not self._watcher.is_open(trace.root):
            self._traces.pop(trace.root, None)

    def _failed(self, exc: Exception) -> None:
        with self._count_lock:
            self._counts["failures"] += 1
            first = self._counts["failures"] == 1
        if first:
            _log.warning(
                "spanchor: could not record a LlamaIndex retrieval (%s: %s); retrieval is "
                "unaffected, further failures are counted in handler.failures",
                type(exc).__name__,
                exc,
            )

    # -- lifetime ----------------------------------------------------------------------------

    def install(self, dispatcher: Dispatcher | None = None) -> SpanchorEventHandler:
        """Attach to ``dispatcher`` (default: LlamaIndex's root, which every retriever reaches).

        New lists are assigned rather than appended in place, so a dispatch running in
        another thread keeps iterating the list it started with.
        """
        with _INSTALL_LOCK:
            if self._dispatcher is not None:
                if dispatcher is None or dispatcher is self._dispatcher:
                    return self
                raise RuntimeError("this handler is already installed on another dispatcher")
            target = dispatcher if dispatcher is not None else get_dispatcher()
            target.span_handlers = [*target.span_handlers, self._watcher]
            target.event_handlers = [*target.event_handlers, self]
            self._dispatcher = target
        return self

    def uninstall(self) -> None:
        """Detach from the dispatcher (idempotent). Unfinished retrievals are not recorded."""
        with _INSTALL_LOCK:
            target = self._dispatcher
            if target is None:
                return
            target.event_handlers = [h for h in target.event_handlers if h is not self]
            target.span_handlers = [h for h in target.span_handlers if h is not self._watcher]
            self._dispatcher = None
            self._retrievals.clear()
            self._others.clear()
            self._traces.clear()
            self._watcher.clear()

    def close(self) -> None:
        """Uninstall and close the run file (unless the recorder was passed in)."""
        self.uninstall()
        if self._owns_recorder:
            self._recorder.close()

    def __enter__(self) -> SpanchorEventHandler:
        return self.install()

    def __exit__(self, *exc_info: object) -> None:
        self.close()
