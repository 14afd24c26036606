"""The callback handler's run bookkeeping: open retriever, chain and tool runs, and traces.

Kept apart from :mod:`spanchor_langchain.callbacks` so the handler reads as "event -> line".
Every method here is called with the handler's lock held and does dictionary work only; no I/O.

* ``parents``: run id -> parent run id of every open nested run, so that any run finds its
  top-level run (its trace) by walking up; top-level runs are not stored.
* ``enclosing``: run id -> the nearest retriever run enclosing it, for chain and tool runs
  inside a retriever (nesting policy; steps inside a retriever offer no context). A retriever
  run is not stored there: being in ``retrievals`` says it encloses its children.
* ``retrievals``: open retriever runs, keyed by :func:`run_key` (the run id's integer: a
  ``uuid.UUID`` hashes in Python, its ``int`` in C, and this dict is used on every retrieval).
* ``steps``: open chain and tool runs (name, start time, sequence, the keys of the documents
  in their inputs); ``traces``: top-level run id -> :class:`~spanchor_langchain.traces.Trace`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from uuid import UUID

from spanchor_langchain.traces import Step, Trace, line_metadata

__all__ = ["HandlerState", "Retrieval"]

_MAX_DEPTH: Final = 256  # bound on parent walks; LangChain run trees are far shallower


def run_key(run_id: Any) -> Any:
    """The key of a run in :attr:`HandlerState.retrievals`: a UUID's integer, else the id."""
    return run_id.int if type(run_id) is UUID else run_id


@dataclass(slots=True)
class Retrieval:
    """A retriever run between its start and end events."""

    run_id: UUID
    query: str
    question: str | None  # the trace's question, when the retriever runs inside a trace
    query_id: str | None
    started: float
    nested: bool  # another retriever run encloses this one
    parent: UUID | None
    root: UUID  # the top-level run this one belongs to (itself when it is top-level)
    name: str | None
    sequence: int
    metadata: dict[str, Any]
    has_inner: bool = False  # another retriever run started inside this one


class HandlerState:
    """Open runs and traces of one handler (see the module docstring)."""

    __slots__ = (
        "enclosing",
        "foreign_unrecorded",
        "nested",
        "parents",
        "retrievals",
        "roots",
        "steps",
        "traces",
        "tracks_nesting",
    )

    def __init__(self, nested: str) -> None:
        self.nested = nested
        self.tracks_nesting = nested != "all"  # "all" needs no nesting, so tracks none
        self.retrievals: dict[Any, Retrieval] = {}  # by run_key
        self.enclosing: dict[UUID, UUID] = {}
        self.parents: dict[UUID, UUID] = {}
        self.steps: dict[UUID, Step] = {}
        self.traces: dict[UUID, Trace] = {}
        self.roots = 0
        self.foreign_unrecorded = 0

    def root_of(self, run_id: UUID) -> UUID:
        """The top-level run ``run_id`` belongs to (as far as this handler saw it start)."""
        for _ in range(_MAX_DEPTH):
            parent = self.parents.get(run_id)
            if parent is None:
                return run_id
            run_id = parent
        return run_id

    def _trace(self, root: UUID) -> Trace:
        trace = self.traces.get(root)
        if trace is None:  # a run whose top-level run started before we were attached
            trace = self.traces[root] = Trace(None, None)
        return trace

    # -- retrievers ---------------------------------------------------------------------------

    def enclosing_retriever(self, parent_run_id: UUID) -> UUID | None:
        """The retriever run that encloses a run whose parent is ``parent_run_id`` (``None``
        when there is none, or under ``nested="all"``, which tracks no nesting): the parent
        itself when it is an open retriever run, else the one enclosing the parent step."""
        if not self.tracks_nesting:
            return None
        if run_key(parent_run_id) in self.retrievals:
            return parent_run_id
        return self.enclosing.get(parent_run_id)

    def start_retrieval(
        self,
        run_id: UUID,
        parent_run_id: UUID | None,
        query: Any,
        query_id: str | None,
        name: Any,
        tags: Sequence[str] | None,
        metadata: Mapping[str, Any] | None,
        started: float,
    ) -> None:
        if not isinstance(query, str):
            query = str(query)
        if not isinstance(name, str):
            name = None
        if parent_run_id is None:  # a retriever called directly: its own trace
            key = run_id.int if type(run_id) is UUID else run_id  # run_key, inline
            self.retrievals[key] = Retrieval(
                run_id, query, None, query_id, started, False, None, run_id, name, 0,
                line_metadata(tags, metadata),
            )  # fmt: skip
            return
        self.parents[run_id] = parent_run_id
        root = self.root_of(parent_run_id)
        trace = self._trace(root)
        outer = self.enclosing_retriever(parent_run_id)
        if outer is not None:
            enclosing = self.retrievals.get(run_key(outer))
            if enclosing is not None:
                enclosing.has_inner = True
        self.retrievals[run_key(run_id)] = Retrieval(
            run_id,
            query,
            trace.question,
            query_id if query_id is not None else trace.query_id,
            started,
            outer is not None,
            parent_run_id,
            root,
            name,
            trace.next(),
            line_metadata(tags, metadata),
        )

    def finish_retrieval(self, run_id: UUID, documents: Any) -> Retrieval | None:
        """Forget the run; return it if the nesting policy keeps it."""
        retrieval = self.retrievals.pop(run_id.int if type(run_id) is UUID else run_id, None)
        if retrieval is None:  # its start was not seen (handler attached mid-run)
            if self.traces:
                self.traces.pop(run_id, None)
            return None
        if retrieval.parent is None:
            if self.traces:
                self.traces.pop(run_id, None)  # a top-level retriever with retrievers inside
            return retrieval if self.nested != "innermost" or not retrieval.has_inner else None
        self.parents.pop(run_id, None)
        if documents and isinstance(documents, list | tuple):
            trace = self.traces.get(retrieval.root)
            if trace is not None:
                trace.retrieved(documents)
        return retrieval if self.kept(retrieval) else None

    def kept(self, retrieval: Retrieval) -> bool:
        """Whether the nesting policy writes this retrieval."""
        if self.nested == "outermost":
            return not retrieval.nested
        if self.nested == "innermost":
            return not retrieval.has_inner
        return True

    # -- chains and tools ---------------------------------------------------------------------

    def start_step(
        self,
        run_id: UUID,
        parent_run_id: UUID | None,
        name: str | None,
        inputs: Any,
        tags: Sequence[str] | None,
        metadata: Mapping[str, Any] | None,
        query_id: str | None,
        started: float,
        question_of: Callable[[Any], str | None],
    ) -> None:
        if parent_run_id is None:
            self.roots += 1
            root = run_id
            trace = self.traces[run_id] = Trace(question_of(inputs), query_id)
        else:
            self.parents[run_id] = parent_run_id
            outer = self.enclosing_retriever(parent_run_id)
            if outer is not None:
                self.enclosing[run_id] = outer
                return  # a step inside a retriever: part of that retriever
            root = self.root_of(parent_run_id)
            trace = self._trace(root)
        self.steps[run_id] = Step(
            name,
            started,
            parent_run_id,
            root,
            trace.next(),
            trace.input_keys(inputs),
            line_metadata(tags, metadata),
            inputs if isinstance(inputs, str) else question_of(inputs),
        )

    def finish_step(
        self, run_id: UUID, lists: list[tuple[str | None, Sequence[Any]]], ended: float
    ) -> Trace | None:
        """Offer the step's document lists to its trace; for a top-level run, end the trace
        and return it (its context lines are then written)."""
        step = self.steps.pop(run_id, None)
        self.enclosing.pop(run_id, None)
        parent = self.parents.pop(run_id, None)
        if step is None:
            return self.traces.pop(run_id, None) if parent is None else None
        trace = self.traces.get(step.root)
        if trace is not None and lists:
            trace.offer(step, run_id, lists, ended)
        if parent is None and step.root == run_id:
            if self.steps:  # steps that never ended (a cancelled branch): forget them
                for other in [key for key, s in self.steps.items() if s.root == run_id]:
                    del self.steps[other]
                    self.parents.pop(other, None)
            return self.traces.pop(run_id, None)
        return None

    def offer(
        self, documents: Sequence[Any], run_id: UUID | None, source: str | None, now: float
    ) -> bool:
        """An explicit ``record`` from inside the run ``run_id``: a candidate of its trace."""
        if run_id is None:
            return False
        step = self.steps.get(run_id)
        if step is None:
            return False
        trace = self.traces.get(step.root)
        if trace is None:
            return False
        if source is not None and source != step.name:
            step = Step(source, step.started, step.parent, step.root, trace.next(),
                        frozenset(), dict(step.metadata), step.text)  # fmt: skip
        trace.offer(step, run_id, [(None, documents)], now, passthrough=False)
        return True

    # -- endings ------------------------------------------------------------------------------

    def abandon(self, root: UUID) -> list[Retrieval]:
        """The retrievals of a finished top-level run that will never end; forgotten."""
        left = [r for r in self.retrievals.values() if r.root == root]
        for retrieval in left:
            run_id = retrieval.run_id
            del self.retrievals[run_key(run_id)]
            # The runs between it and the root never ended either (a tool does not report a
            # cancellation); forget them too.
            parent = self.parents.pop(run_id, None)
            for _ in range(_MAX_DEPTH):
                if parent is None or parent == root:
                    break
                self.enclosing.pop(parent, None)
                self.steps.pop(parent, None)
                parent = self.parents.pop(parent, None)
        return left

    def drain(self) -> tuple[list[Retrieval], list[tuple[UUID, Trace]]]:
        """Everything still open (at close): pending retrievals and unfinished traces."""
        left = list(self.retrievals.values())
        traces = list(self.traces.items())
        self.retrievals.clear()
        self.enclosing.clear()
        self.parents.clear()
        self.steps.clear()
        self.traces.clear()
        return left, traces
