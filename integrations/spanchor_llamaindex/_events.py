"""Joining LlamaIndex's instrumentation events into run-file lines, one per stage.

:class:`EventJoiner` is the logic of :class:`~spanchor_llamaindex.recording.
SpanchorEventHandler` (see that module for the stages and the fields each line carries): it
pairs start and end events by ``span_id``, finds each event's trace through the
:class:`~spanchor_llamaindex._spans.SpanWatcher`, decides scope membership
(:mod:`spanchor_llamaindex._scopes`), and writes through the core ``RunRecorder``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from time import perf_counter
from typing import Any

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

from spanchor_core import RunRecorder
from spanchor_core.runs.write import ResultEntries
from spanchor_llamaindex import _scopes
from spanchor_llamaindex._scopes import QUERY_ID_TAG, Membership
from spanchor_llamaindex._spans import (
    Pending,
    SpanInfo,
    SpanWatcher,
    Stage,
    Trace,
    class_name,
    has_ancestor_in,
    lineage,
    text_of,
)
from spanchor_llamaindex.nodes import NodeConverter

__all__ = ["EventJoiner"]

_log = logging.getLogger("spanchor_llamaindex.recording")  # one logger for the recorder


class EventJoiner:
    """The recording state and logic behind ``SpanchorEventHandler``.

    A plain slotted object: the dispatcher calls the handler for every event of the
    application, and each private attribute of a pydantic model is a ``__getattr__`` call.
    For the same reason an event's fields are read from its ``__dict__`` (one attribute
    through pydantic's hook, then dict subscripts), and the watcher's span table is kept here
    (``spans``) and queried with the functions of :mod:`spanchor_llamaindex._spans`.
    """

    __slots__ = (
        "adopt",
        "converter",
        "count_lock",
        "counts",
        "others",
        "recorder",
        "retrievals",
        "scope",
        "spans",
        "stages",
        "traces",
        "watcher",
    )

    def __init__(self, recorder: RunRecorder, converter: NodeConverter, stages: frozenset[str]):
        self.recorder = recorder
        self.converter = converter
        self.stages = stages
        # span_id -> pending stage; single dict operations are atomic.
        self.retrievals: dict[str, Pending] = {}
        self.others: dict[str, Pending] = {}
        self.traces: dict[str, Trace] = {}
        self.watcher = SpanWatcher(self._dropped, self._root_closed)
        self.spans: dict[str, SpanInfo] = self.watcher.table
        self.scope: object | None = None  # set by record_retrievals: record its block only
        self.adopt = True
        self.count_lock = threading.Lock()
        self.counts = {"failures": 0, "nested": 0, "adopted": 0, "unattributed": 0}

    def clear(self) -> None:
        self.retrievals.clear()
        self.others.clear()
        self.traces.clear()
        self.watcher.clear()

    def _count(self, name: str) -> None:
        with self.count_lock:
            self.counts[name] += 1

    # -- events ------------------------------------------------------------------------------

    def handle(self, event: BaseEvent) -> None:
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
        if self.scope is None:
            return True
        member = _scopes.membership(self.scope)
        if member is Membership.INSIDE:
            return True
        if member is Membership.ADOPTED and self.adopt:
            if counted:
                self._count("adopted")
            return True
        if member is not Membership.ELSEWHERE and counted:
            self._count("unattributed")
        return False

    def _pending_for(
        self, span_id: str, tags: Mapping[str, Any], stage: Stage, query: Any
    ) -> Pending | None:
        if stage not in self.stages:
            return None
        if self.scope is not None and not self._in_scope(counted=stage == "retrieval"):
            return None
        spans = self.spans
        if (
            stage == "retrieval"
            and self.retrievals
            and has_ancestor_in(spans, span_id, self.retrievals)
        ):
            self._count("nested")
            return None
        now = perf_counter()
        text = query if type(query) is str else text_of(query)
        tagged = tags.get(QUERY_ID_TAG)
        query_id = None if tagged is None else tagged if type(tagged) is str else str(tagged)
        root, question, parent, instance = lineage(spans, span_id)
        trace = self.traces.get(root)
        if trace is None:
            trace = Trace(root, question if question is not None else text, query_id, now)
            self.traces[root] = trace
        elif trace.query_id is None:
            trace.query_id = query_id
        if stage == "context":
            # The query engine that asked for the synthesis names the context, not the
            # synthesizer class.
            info = spans.get(parent) if parent is not None else None
            engine = None if info is None else info[1]
            source = class_name(engine if engine is not None else instance, "synthesizer")
        else:
            source = class_name(instance, stage)
        return Pending(trace, stage, text, query_id, next(trace.sequence), parent, source, now)

    def _start_retrieval(self, event: RetrievalStartEvent) -> None:
        fields = event.__dict__
        span_id = fields["span_id"]
        if span_id is not None:
            pending = self._pending_for(
                span_id, fields["tags"], "retrieval", fields["str_or_query_bundle"]
            )
            if pending is not None:
                self.retrievals[span_id] = pending

    def _start(self, event: BaseEvent, stage: Stage, query: Any) -> None:
        span_id = event.span_id
        if span_id is not None:
            pending = self._pending_for(span_id, event.tags, stage, query)
            if pending is not None:
                self.others[span_id] = pending

    def _write(
        self,
        pending: Pending,
        span_id: str,
        results: ResultEntries,
        *,
        latency_ms: float | None,
        error: BaseException | str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        trace = pending.trace
        metadata: dict[str, Any] | None = dict(extra) if extra else None
        if pending.query != trace.question:
            if metadata is None:
                metadata = {}
            metadata["retrieval_query"] = pending.query
        self.recorder.record(
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
            metadata=metadata,
        )

    def _end_retrieval(self, event: RetrievalEndEvent) -> None:
        fields = event.__dict__
        span_id = fields["span_id"]
        pending = self.retrievals.pop(span_id, None) if span_id is not None else None
        if pending is None:
            return  # nested, out of scope, or started before install
        latency_ms = (perf_counter() - pending.started) * 1000.0
        trace = pending.trace
        root = trace.root
        # A retrieval that is its own trace (a bare ``retrieve()``) has no later context
        # line to compare node ids with: its ids need not be remembered.
        seen = None if root == span_id else trace.seen
        self._write(
            pending, span_id, self.converter.entries(fields["nodes"], seen), latency_ms=latency_ms
        )
        if root not in self.spans:  # _forget_if_closed, inlined
            self.traces.pop(root, None)

    def _end_rerank(self, event: ReRankEndEvent) -> None:
        pending = self.others.pop(event.span_id, None) if event.span_id is not None else None
        if pending is None or pending.stage != "postprocessed":
            return
        self._write(
            pending,
            event.span_id or "",
            self.converter.entries(event.nodes, pending.trace.seen),
            latency_ms=(perf_counter() - pending.started) * 1000.0,
        )
        self._forget_if_closed(pending.trace)

    def _end_synthesis(self, event: SynthesizeEndEvent) -> None:
        pending = self.others.pop(event.span_id, None) if event.span_id is not None else None
        if pending is None or pending.stage != "context":
            return
        nodes = list(getattr(event.response, "source_nodes", None) or ())
        kept = ResultEntries()
        synthetic = 0
        seen = pending.trace.seen
        for entry in self.converter.entries(nodes):  # ranked again among the kept ones
            metadata = entry["metadata"]  # the entry's own dict: node_id, ref_doc_id
            if (
                metadata["node_id"] in seen
                or metadata["ref_doc_id"] is not None
                or entry["document_id"] is not None
            ):
                entry["rank"] = len(kept) + 1
                kept.append(entry)
            else:
                synthetic += 1
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
            self.others.pop(span_id, None)  # a failed rerank or synthesis: no line
            pending = self.retrievals.pop(span_id, None)
            if pending is None:
                return
            self._write(
                pending,
                span_id,
                ResultEntries(),
                latency_ms=(perf_counter() - pending.started) * 1000.0,
                error=err if err is not None else "the retrieval was dropped",
            )
            self._forget_if_closed(pending.trace)
        except Exception as exc:
            self._failed(exc)

    def _root_closed(self, root: str) -> None:
        trace = self.traces.pop(root, None)
        if trace is not None and self.others:
            for span_id, pending in list(self.others.items()):
                if pending.trace is trace:  # a reranker that returned without its end event
                    self.others.pop(span_id, None)

    def _forget_if_closed(self, trace: Trace) -> None:
        # A root the watcher never saw open (installed mid-call) never reports its close.
        if trace.root not in self.spans:
            self.traces.pop(trace.root, None)

    def _failed(self, exc: Exception) -> None:
        with self.count_lock:
            self.counts["failures"] += 1
            first = self.counts["failures"] == 1
        if first:
            _log.warning(
                "spanchor: could not record a LlamaIndex retrieval (%s: %s); retrieval is "
                "unaffected, further failures are counted in handler.failures",
                type(exc).__name__,
                exc,
            )
