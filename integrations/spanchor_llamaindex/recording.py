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

import logging
import threading
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

from spanchor_core import Corpus, GoldSet, RunRecorder
from spanchor_core.runs.recorder import RecorderTarget, open_recorder_of
from spanchor_llamaindex._events import EventJoiner
from spanchor_llamaindex._spans import Stage
from spanchor_llamaindex.nodes import DocumentIdResolver, NodeConverter

__all__ = ["SpanchorEventHandler"]

_log = logging.getLogger(__name__)

# Every handler's install/uninstall is a read-modify-write of the same dispatcher lists: one
# lock for all of them, or two handlers racing would drop one of the updates.
_INSTALL_LOCK: Final = threading.Lock()


class SpanchorEventHandler(BaseEventHandler):
    """Records retrievals, reranks and final contexts on the dispatcher into a run file.

    ``path`` is a run file to create (``mode="w"``) or append to (``mode="a"``), or an open
    :class:`~spanchor_core.RunRecorder` to share (then :meth:`close` leaves it open, and the
    header arguments ``parameters``, ``gold`` and ``tags`` are refused: it has its header).
    ``corpus`` puts its fingerprint in the header, lets the default document-id rule use file
    paths and translates raw-file offsets (see :class:`~spanchor_llamaindex.nodes.
    NodeConverter`); ``gold`` fills in missing query ids from the question text and puts its
    hash in the header. ``stages`` chooses what is recorded (default: all three).

    Use :func:`~spanchor_llamaindex.blocks.record_retrievals` for a ``with`` block, or
    :meth:`install` / :meth:`uninstall` / :meth:`close` for a long-lived recorder.
    """

    _core: EventJoiner = PrivateAttr()
    _recorder: RunRecorder = PrivateAttr()
    _owns_recorder: bool = PrivateAttr()
    _dispatcher: Dispatcher | None = PrivateAttr()

    def __init__(
        self,
        path: RecorderTarget,
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
        given = open_recorder_of(path, parameters=parameters, gold=gold, tags=tags)
        if isinstance(given, RunRecorder):
            self._recorder = given
            self._owns_recorder = False
        else:
            self._recorder = RunRecorder(
                given,
                retriever=retriever,
                parameters=parameters,
                corpus_fingerprint=None if corpus is None else corpus.fingerprint,
                gold=gold,
                tags=tags,
                mode=mode,
            )
            self._owns_recorder = True
        self._core = EventJoiner(
            self._recorder, NodeConverter(corpus, document_id), frozenset(stages)
        )
        self._dispatcher: Dispatcher | None = None

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
        return self._core.counts["failures"] + self._recorder.failures

    @property
    def nested(self) -> int:
        """Retrievals skipped because an enclosing retrieval was being recorded."""
        return self._core.counts["nested"]

    @property
    def adopted(self) -> int:
        """Retrievals from threads outside every block's context, recorded by this block."""
        return self._core.counts["adopted"]

    @property
    def unattributed(self) -> int:
        """Retrievals outside every block's context that no block could claim (not recorded)."""
        return self._core.counts["unattributed"]

    @property
    def resolver_errors(self) -> int:
        """Nodes whose document-id resolver raised (recorded without a document id)."""
        return self._core.converter.resolver_errors

    @property
    def pending(self) -> int:
        """Retrievals started and not yet finished."""
        return len(self._core.retrievals)

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

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        """Join start and end events by ``span_id``; never raises."""
        # Called for every event of the application: ``self._core`` would go through
        # pydantic's slow ``__getattr__`` for private attributes (see ``_spans.private``).
        self.__pydantic_private__["_core"].handle(event)  # type: ignore[index]

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
            target.span_handlers = [*target.span_handlers, self._core.watcher]
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
            target.span_handlers = [h for h in target.span_handlers if h is not self._core.watcher]
            self._dispatcher = None
            self._core.clear()

    def close(self) -> None:
        """Uninstall and close the run file (unless the recorder was passed in)."""
        self.uninstall()
        if self._owns_recorder:
            self._recorder.close()

    def __enter__(self) -> SpanchorEventHandler:
        return self.install()

    def __exit__(self, *exc_info: object) -> None:
        self.close()
