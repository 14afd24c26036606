"""Live recording: every LlamaIndex retrieval in scope becomes one run-file line.

LlamaIndex announces each ``BaseRetriever.retrieve``/``aretrieve`` call on its instrumentation
dispatcher with a ``RetrievalStartEvent`` and a ``RetrievalEndEvent`` that share the call's
``span_id``. :class:`SpanchorEventHandler` joins the two and appends one record per retrieval
to a run file through the core :class:`~spanchor_core.RunRecorder` (one flushed write per
line, thread-safe). What it relies on, and why:

* **Query ids** come from ``instrument_tags``: LlamaIndex copies the active tags (a
  ``ContextVar``) into every event, so ``with tag_query("q1"): retriever.retrieve(...)``
  labels that retrieval. Without a tag, a ``gold`` set given to the handler fills the id in
  from the query text; otherwise the id is left empty and ``spanchor evaluate`` resolves it
  the same way later. ContextVars follow ``asyncio`` tasks but not plain worker threads: set
  the tag inside the thread that retrieves.
* **Errors**: a retrieval that raises emits no end event. A span handler installed with the
  event handler sees the span dropped with the exception and records an error line, so a
  failing query is reported instead of silently missing.
* **Nested retrievers** (a router or fusion retriever calling others) would record one query
  several times. The span handler keeps the parent of every open span; a retrieval whose
  ancestor is a retrieval being recorded is skipped, so the outermost call is the record.
* **Never breaks retrieval**: the dispatcher swallows handler exceptions silently; this
  handler catches its own, counts them in :attr:`~SpanchorEventHandler.failures` and logs
  the first, and the recorder does the same for writes.
* **Install and remove**: LlamaIndex has no removal API, so :meth:`~SpanchorEventHandler.
  install` and :meth:`~SpanchorEventHandler.uninstall` assign new handler lists (never mutate
  the list a concurrent dispatch is iterating), under one module-wide lock so that handlers
  installed and removed from several threads never lose each other's update;
  :func:`record_retrievals` does both around a ``with`` block.
* **Scope**: the handler sits on the process-wide root dispatcher, so it sees every retrieval
  of every thread. :func:`record_retrievals` therefore marks its block in a ``ContextVar`` and
  its handler records only retrievals that *start* inside the block: two threads (or two
  ``asyncio`` tasks) each in its own block get only their own queries. Tasks created inside
  the block, ``asyncio.to_thread`` and ``contextvars.copy_context().run`` carry the mark;
  plain worker threads (``ThreadPoolExecutor.submit``/``map``, ``loop.run_in_executor``) do not
  — submit ``copy_context().run`` as for :func:`tag_query`. A handler installed explicitly
  (:meth:`~SpanchorEventHandler.install`, or used as its own context manager) is not scoped
  and records every retrieval in the process.
* End-event nodes are what the retriever returned, **before** node postprocessors or
  rerankers of a query engine: a recording judges the retriever, not the reranker.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final, Literal

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.instrumentation import (  # type: ignore[attr-defined]  # no __all__
    Dispatcher,
    get_dispatcher,
)
from llama_index.core.instrumentation.dispatcher import (  # type: ignore[attr-defined]  # no __all__
    active_instrument_tags,
    instrument_tags,
)
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.retrieval import (
    RetrievalEndEvent,
    RetrievalStartEvent,
)
from llama_index.core.instrumentation.span import BaseSpan
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
from llama_index.core.schema import QueryBundle

from spanchor_core import Corpus, GoldSet, RunRecorder
from spanchor_llamaindex.nodes import DocumentIdResolver, default_document_id, nodes_to_results

__all__ = ["QUERY_ID_TAG", "SpanchorEventHandler", "record_retrievals", "tag_query"]

QUERY_ID_TAG: Final = "spanchor_query_id"
"""The ``instrument_tags`` key whose value is recorded as the retrieval's query id."""

_log = logging.getLogger(__name__)

# Every handler's install/uninstall is a read-modify-write of the same dispatcher lists: one
# lock for all of them, or two handlers racing would drop one of the updates.
_INSTALL_LOCK: Final = threading.Lock()

# The scope tokens of the record_retrievals blocks the current context is inside.
_active_scopes: contextvars.ContextVar[frozenset[object]] = contextvars.ContextVar(
    "spanchor_llamaindex_scopes", default=frozenset()
)


@contextlib.contextmanager
def tag_query(query_id: str) -> Iterator[None]:
    """Label the retrievals in this block with ``query_id`` (other active tags are kept)."""
    with instrument_tags({**active_instrument_tags.get(), QUERY_ID_TAG: query_id}):
        yield


def _query_text(value: Any) -> str:
    if isinstance(value, QueryBundle):
        return value.query_str
    return value if isinstance(value, str) else str(value)


class _SpanWatcher(BaseSpanHandler[BaseSpan]):
    """Parents of open spans (for nesting) and the exception of a dropped retrieval.

    Overrides ``span_enter``/``span_exit``/``span_drop`` directly and keeps no span objects:
    it sees every span in the application, so it does two dict operations per span, lock-free
    (single dict operations are atomic in CPython).
    """

    _owner: SpanchorEventHandler = PrivateAttr()
    _parents: dict[str, str | None] = PrivateAttr(default_factory=dict)

    def __init__(self, owner: SpanchorEventHandler) -> None:
        super().__init__()
        self._owner = owner
        self._parents: dict[str, str | None] = {}

    @classmethod
    def class_name(cls) -> str:
        return "SpanchorSpanWatcher"

    def span_enter(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        parent_id: str | None = None,
        tags: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._parents[id_] = parent_id

    def span_exit(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        result: Any | None = None,
        **kwargs: Any,
    ) -> None:
        self._parents.pop(id_, None)

    def span_drop(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        err: BaseException | None = None,
        **kwargs: Any,
    ) -> None:
        self._parents.pop(id_, None)
        self._owner._dropped(id_, err)

    def has_recorded_ancestor(self, span_id: str, pending: Mapping[str, Any]) -> bool:
        parent = self._parents.get(span_id)
        seen = 0
        while parent is not None and seen < 1000:  # a cycle would be a LlamaIndex bug
            if parent in pending:
                return True
            parent = self._parents.get(parent)
            seen += 1
        return False

    # The abstract hooks of BaseSpanHandler; unused because the three methods above are
    # overridden, but they must exist.
    def new_span(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        parent_span_id: str | None = None,
        tags: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> BaseSpan | None:
        return None

    def prepare_to_exit_span(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        result: Any | None = None,
        **kwargs: Any,
    ) -> BaseSpan | None:
        return None

    def prepare_to_drop_span(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        err: BaseException | None = None,
        **kwargs: Any,
    ) -> BaseSpan | None:
        return None


class SpanchorEventHandler(BaseEventHandler):
    """Records every retrieval on the dispatcher into a spanchor run file.

    ``path`` is a run file to create (``mode="w"``) or append to (``mode="a"``), or an open
    :class:`~spanchor_core.RunRecorder` to share (then :meth:`close` leaves it open).
    ``corpus`` puts its fingerprint in the header and lets the default document-id rule use
    file paths (see :func:`~spanchor_llamaindex.nodes.default_document_id`); ``gold`` fills
    in missing query ids from the query text and puts its hash in the header.

    Use :func:`record_retrievals` for a ``with`` block, or :meth:`install` /
    :meth:`uninstall` / :meth:`close` for a long-lived recorder.
    """

    _recorder: RunRecorder = PrivateAttr()
    _owns_recorder: bool = PrivateAttr()
    _resolve: DocumentIdResolver = PrivateAttr()
    _pending: dict[str, tuple[str, str | None, float]] = PrivateAttr()
    _watcher: _SpanWatcher = PrivateAttr()
    _dispatcher: Dispatcher | None = PrivateAttr()
    _scope: object | None = PrivateAttr()
    _failure_lock: threading.Lock = PrivateAttr()
    _failures: int = PrivateAttr()
    _nested: int = PrivateAttr()

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
        self._resolve = document_id if document_id is not None else default_document_id(corpus)
        # span_id -> (query, query id, perf_counter at start); dict ops are atomic.
        self._pending: dict[str, tuple[str, str | None, float]] = {}
        self._watcher = _SpanWatcher(self)
        self._dispatcher: Dispatcher | None = None
        self._scope: object | None = None  # set by record_retrievals: record its block only
        self._failures = 0
        self._nested = 0
        self._failure_lock = threading.Lock()

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
        """Retrievals written to the run file."""
        return self._recorder.records

    @property
    def failures(self) -> int:
        """Retrievals that could not be recorded (handler errors plus failed writes)."""
        return self._failures + self._recorder.failures

    @property
    def nested(self) -> int:
        """Retrievals skipped because an enclosing retrieval was being recorded."""
        return self._nested

    @property
    def pending(self) -> int:
        """Retrievals started and not yet finished."""
        return len(self._pending)

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

    # -- events ------------------------------------------------------------------------------

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        """Join start and end events by ``span_id``; never raises."""
        try:
            if isinstance(event, RetrievalEndEvent):
                self._end(event)
            elif isinstance(event, RetrievalStartEvent):
                self._start(event)
        except Exception as exc:
            self._failed(exc)

    def _start(self, event: RetrievalStartEvent) -> None:
        span_id = event.span_id
        if span_id is None:
            return
        if self._scope is not None and self._scope not in _active_scopes.get():
            return  # another record_retrievals block's retrieval (or none's)
        if self._pending and self._watcher.has_recorded_ancestor(span_id, self._pending):
            self._nested += 1
            return
        query_id = event.tags.get(QUERY_ID_TAG)
        self._pending[span_id] = (
            _query_text(event.str_or_query_bundle),
            None if query_id is None else str(query_id),
            time.perf_counter(),
        )

    def _end(self, event: RetrievalEndEvent) -> None:
        started = self._pending.pop(event.span_id, None) if event.span_id is not None else None
        if started is None:
            return  # nested, or started before install
        query, query_id, t0 = started
        self._recorder.record(
            query,
            nodes_to_results(event.nodes, self._resolve),
            query_id=query_id,
            latency_ms=(time.perf_counter() - t0) * 1000.0,
        )

    def _dropped(self, span_id: str, err: BaseException | None) -> None:
        try:
            started = self._pending.pop(span_id, None)
            if started is None:
                return
            query, query_id, t0 = started
            self._recorder.record(
                query,
                [],
                query_id=query_id,
                latency_ms=(time.perf_counter() - t0) * 1000.0,
                error=err if err is not None else "the retrieval was dropped",
            )
        except Exception as exc:
            self._failed(exc)

    def _failed(self, exc: Exception) -> None:
        with self._failure_lock:
            self._failures += 1
            first = self._failures == 1
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
            self._pending.clear()

    def close(self) -> None:
        """Uninstall and close the run file (unless the recorder was passed in)."""
        self.uninstall()
        if self._owns_recorder:
            self._recorder.close()

    def __enter__(self) -> SpanchorEventHandler:
        return self.install()

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@contextlib.contextmanager
def record_retrievals(
    path: str | os.PathLike[str] | RunRecorder,
    *,
    retriever: str = "llama_index",
    parameters: Mapping[str, Any] | None = None,
    corpus: Corpus | None = None,
    gold: GoldSet | None = None,
    document_id: DocumentIdResolver | None = None,
    tags: Mapping[str, Any] | None = None,
    mode: Literal["w", "a"] = "w",
    dispatcher: Dispatcher | None = None,
) -> Iterator[SpanchorEventHandler]:
    """Record the LlamaIndex retrievals that run inside the block into the run file at ``path``.

    The handler is installed on entry and removed (and the file closed) on exit, also when
    the block raises. Only retrievals started in this block's context are recorded — not
    those of other threads or tasks running at the same time (see the module docstring:
    worker threads need ``contextvars.copy_context().run``). Arguments are those of
    :class:`SpanchorEventHandler`.
    """
    handler = SpanchorEventHandler(
        path,
        retriever=retriever,
        parameters=parameters,
        corpus=corpus,
        gold=gold,
        document_id=document_id,
        tags=tags,
        mode=mode,
    )
    scope = object()
    handler._scope = scope
    token = _active_scopes.set(_active_scopes.get() | {scope})
    handler.install(dispatcher)
    try:
        yield handler
    finally:
        try:
            _active_scopes.reset(token)
        except ValueError:  # exited in another context than entered: just drop our mark
            _active_scopes.set(_active_scopes.get() - {scope})
        handler.close()
