"""A LangChain callback handler that records every retriever run of a chain or agent.

Attach it through config callbacks (``chain.invoke(x, config={"callbacks": [handler]})``) and
it reaches every retriever inside the chain, however deep: config callbacks are inheritable.
(``BaseRetriever(callbacks=[...])`` does not exist: LangChain silently ignores it.)

How it joins and filters LangChain's events:

* ``on_retriever_start`` gives the query, the run metadata (where the gold query id travels,
  ``metadata["spanchor_query_id"]``) and the run id; ``serialized`` is ``None`` for every
  ``BaseRetriever`` in langchain-core 1.x and is never read. ``on_retriever_end`` gives the
  documents and the same run id, nothing else; the two are joined by run id, and the
  time between them is the latency. ``on_retriever_error`` ends the run as an error line.
* Retrievers nest (a compression retriever around a vector-store retriever, an ensemble, a
  retriever that runs a chain that runs a retriever). Each of them is a retriever run, and one
  user retrieval must be one line. ``nested="outermost"`` (default) keeps the outermost run —
  what the rest of the chain, and the model, actually received; ``"innermost"`` keeps runs with
  no retriever inside them (what the index returned, before reranking); ``"all"`` keeps every
  run. Nesting is known from ``parent_run_id``: the handler remembers the chain and tool runs
  that start *inside* a retriever run (only those — runs outside every retriever cost one
  dictionary lookup) so that a retriever two chains below another is still seen as nested.
* The handler is called from LangChain's worker threads under ``batch`` and inline on the
  event loop under ``ainvoke``/``abatch`` (``run_inline``: its work is a dictionary update and
  one small write, cheaper than a hop to a thread, and the timing stays honest). Its state is
  guarded by a lock; the run file by the recorder's own lock.
* A retriever run can start and never end: ``BaseRetriever.ainvoke`` reports only
  ``Exception``, so a cancellation (``asyncio.wait_for``, a cancelled task) fires neither
  ``on_retriever_end`` nor ``on_retriever_error``. Such a run is not left pending forever: when
  the top-level run it belongs to ends or fails (chains report ``BaseException``, cancellation
  included), every retrieval of that run still pending is written as an error line
  (``CancelledError: ...`` or ``no end event: ...``), and :meth:`SpanchorCallbackHandler.close`
  does the same for whatever is left. To know which top-level run a retrieval belongs to, the
  handler keeps the parent of every open nested chain, tool and retriever run (one dictionary
  write at the start of a run and one removal at its end; top-level runs are not stored).
* It never breaks the user's chain: every method catches everything and counts it
  (:attr:`SpanchorCallbackHandler.failures`). ``raise_error`` stays ``False`` — LangChain would
  otherwise re-raise a handler's exception into the chain.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from spanchor_core.corpus import Corpus
from spanchor_core.gold import GoldSet
from spanchor_core.runs import RunRecorder
from spanchor_langchain.documents import DEFAULT_SCORE_KEYS, DocumentIdRule
from spanchor_langchain.recording import QUERY_ID_KEY, Recording, RecordTarget

__all__ = ["NESTED_POLICIES", "NestedPolicy", "SpanchorCallbackHandler"]

NestedPolicy = Literal["outermost", "innermost", "all"]
NESTED_POLICIES: Final[tuple[str, ...]] = ("outermost", "innermost", "all")

_log = logging.getLogger("spanchor_langchain")


@dataclass(slots=True)
class _Retrieval:
    """A retriever run between its start and end events."""

    query: str
    query_id: str | None
    started: float
    nested: bool  # another retriever run encloses this one
    parent: UUID | None  # the run this one was started in
    root: UUID  # the top-level run this one belongs to (itself when it is top-level)
    has_inner: bool = False  # another retriever run started inside this one


_MAX_DEPTH: Final = 256  # bound on parent walks; LangChain run trees are far shallower


def _abandoned(error: BaseException | None) -> str:
    """The error text of a retrieval whose top-level run ended before it did."""
    if isinstance(error, asyncio.CancelledError):
        return "CancelledError: the retrieval was cancelled (no end event)"
    if error is not None:
        return f"no end event: the enclosing run failed with {type(error).__name__}"
    return "no end event: the enclosing run ended before the retrieval did"


class SpanchorCallbackHandler(BaseCallbackHandler):
    """Record every retriever run the handler sees into a run file (one line per retrieval).

    ``target`` is a run-file path (opened now and truncated unless ``mode="a"``; the file is
    complete after every line, :meth:`close` just releases it) or an open
    :class:`~spanchor_core.RunRecorder`. Create one handler per run file and pass it to every
    call: each new handler on the same path starts the file afresh. ``gold`` resolves query ids
    from the query text when the run metadata carries none; ``corpus`` stamps the corpus
    fingerprint into the header. ``nested`` chooses which of nested retriever runs to keep (see
    the module docstring). The remaining arguments are those of
    :class:`~spanchor_langchain.RecordingRetriever`.
    """

    raise_error: bool = False
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
        query_id_key: str = QUERY_ID_KEY,
        description: str | None = None,
        parameters: Mapping[str, Any] | None = None,
        run_tags: Mapping[str, Any] | None = None,
        mode: Literal["w", "a"] = "w",
    ) -> None:
        if nested not in NESTED_POLICIES:
            raise ValueError(f"nested must be one of {NESTED_POLICIES}, got {nested!r}")
        if description is None and not isinstance(target, RunRecorder):
            description = "langchain:callbacks"
        if parameters is None and not isinstance(target, RunRecorder):
            parameters = {"nested": nested, "max_results": max_results}
        self.nested: NestedPolicy = nested
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
        )
        self._lock = threading.Lock()
        self._retrievals: dict[UUID, _Retrieval] = {}
        # run id -> id of the nearest retriever run enclosing it (itself, for a retriever run);
        # holds only runs inside some retriever run.
        self._enclosing: dict[UUID, UUID] = {}
        # run id -> parent run id, for open nested runs (chains, tools, retrievers); single
        # dict operations are atomic, so the chain hot path writes it without the lock.
        self._parents: dict[UUID, UUID] = {}
        self._failures = 0

    # -- state --------------------------------------------------------------------------------

    @property
    def recorder(self) -> RunRecorder:
        """The recorder lines go to."""
        return self._recording.recorder

    @property
    def records(self) -> int:
        """Lines written to the recorder so far."""
        return self._recording.records

    @property
    def failures(self) -> int:
        """Events that could not be handled or recorded (the chain ran on regardless)."""
        return self._failures + self._recording.failures

    @property
    def pending(self) -> int:
        """Retriever runs started and not yet ended."""
        return len(self._retrievals)

    def close(self) -> None:
        """Write still-pending retrievals as error lines, then release the run file if this
        handler opened it (every other line is already written)."""
        try:
            with self._lock:
                left = list(self._retrievals.values())
                self._retrievals.clear()
                self._enclosing.clear()
                self._parents.clear()
            for retrieval in left:
                self._write_abandoned(
                    retrieval, "no end event: the handler was closed before the retrieval ended"
                )
        except Exception as exc:
            self._failed(exc)
        self._recording.close()

    def __enter__(self) -> SpanchorCallbackHandler:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"SpanchorCallbackHandler({str(self.recorder.path)!r}, nested={self.nested!r}, "
            f"records={self.records}, failures={self.failures})"
        )

    # -- which events we want -----------------------------------------------------------------

    @property
    def ignore_llm(self) -> bool:
        return True

    @property
    def ignore_chat_model(self) -> bool:
        return True

    @property
    def ignore_retry(self) -> bool:
        return True

    @property
    def ignore_custom_event(self) -> bool:
        return True

    # Chain and tool events (tools are filtered by ``ignore_agent``) are always wanted: they tell
    # nested retrievers apart and end the retrievals a cancelled top-level run left pending.

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
            started = time.perf_counter()
            query_id = self._recording.query_id(metadata)
            with self._lock:
                if parent_run_id is None:
                    root = run_id
                else:
                    self._parents[run_id] = parent_run_id
                    root = self._root_of(parent_run_id)
                outer = None if parent_run_id is None else self._enclosing.get(parent_run_id)
                if outer is not None:
                    enclosing = self._retrievals.get(outer)
                    if enclosing is not None:
                        enclosing.has_inner = True
                if self.nested != "all":  # "all" needs no nesting, so tracks none
                    self._enclosing[run_id] = run_id
                self._retrievals[run_id] = _Retrieval(
                    query if isinstance(query, str) else str(query),
                    query_id,
                    started,
                    outer is not None,
                    parent_run_id,
                    root,
                )
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
        try:
            ended = time.perf_counter()
            retrieval = self._finish(run_id)
            if retrieval is not None:
                self._recording.record(
                    retrieval.query,
                    documents,
                    query_id=retrieval.query_id,
                    latency_ms=(ended - retrieval.started) * 1000.0,
                )
            if parent_run_id is None and self._retrievals:
                self._end_root(run_id, None)
        except Exception as exc:
            self._failed(exc)

    def on_retriever_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            ended = time.perf_counter()
            retrieval = self._finish(run_id)
            if retrieval is not None:
                self._recording.record(
                    retrieval.query,
                    None,
                    query_id=retrieval.query_id,
                    latency_ms=(ended - retrieval.started) * 1000.0,
                    error=error,
                )
            if parent_run_id is None and self._retrievals:
                self._end_root(run_id, error)
        except Exception as exc:
            self._failed(exc)

    def _finish(self, run_id: UUID) -> _Retrieval | None:
        """Forget the run; return it if the nesting policy keeps it."""
        with self._lock:
            self._enclosing.pop(run_id, None)
            self._parents.pop(run_id, None)
            retrieval = self._retrievals.pop(run_id, None)
        if retrieval is None:  # its start was not seen (handler attached mid-run)
            return None
        return retrieval if self._kept(retrieval) else None

    def _kept(self, retrieval: _Retrieval) -> bool:
        """Whether the nesting policy writes this retrieval."""
        if self.nested == "outermost":
            return not retrieval.nested
        if self.nested == "innermost":
            return not retrieval.has_inner
        return True

    def _root_of(self, run_id: UUID) -> UUID:
        """The top-level run ``run_id`` belongs to (runs started before we saw them end it)."""
        for _ in range(_MAX_DEPTH):
            parent = self._parents.get(run_id)
            if parent is None:
                return run_id
            run_id = parent
        return run_id

    def _end_root(self, root: UUID, error: BaseException | None) -> None:
        """A top-level run ended: its retrievals still pending will never end; write them."""
        with self._lock:
            left = [r for r in self._retrievals.items() if r[1].root == root]
            for run_id, _ in left:
                del self._retrievals[run_id]
                self._enclosing.pop(run_id, None)
                # The runs between it and the root never ended either (a tool does not
                # report a cancellation); forget them too.
                parent = self._parents.pop(run_id, None)
                for _ in range(_MAX_DEPTH):
                    if parent is None or parent == root:
                        break
                    self._enclosing.pop(parent, None)
                    parent = self._parents.pop(parent, None)
        for _, retrieval in left:
            self._write_abandoned(retrieval, _abandoned(error))

    def _write_abandoned(self, retrieval: _Retrieval, reason: str) -> None:
        if self._kept(retrieval):
            self._recording.record(
                retrieval.query,
                None,
                query_id=retrieval.query_id,
                latency_ms=(time.perf_counter() - retrieval.started) * 1000.0,
                error=reason,
            )

    # -- chain and tool events: nesting only --------------------------------------------------

    def _enter(self, run_id: UUID, parent_run_id: UUID | None) -> None:
        if parent_run_id is None:
            return
        self._parents[run_id] = parent_run_id  # one atomic write
        outer = self._enclosing.get(parent_run_id)  # one atomic lookup outside retrievers
        if outer is not None:
            with self._lock:
                self._enclosing[run_id] = outer

    def _leave(
        self, run_id: UUID, parent_run_id: UUID | None, error: BaseException | None = None
    ) -> None:
        if parent_run_id is None:
            if self._retrievals:
                self._end_root(run_id, error)
            return
        self._parents.pop(run_id, None)  # one atomic removal
        if run_id in self._enclosing:
            with self._lock:
                self._enclosing.pop(run_id, None)

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            self._enter(run_id, parent_run_id)
        except Exception as exc:
            self._failed(exc)

    def on_chain_end(
        self, outputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        try:
            self._leave(run_id, parent_run_id)
        except Exception as exc:
            self._failed(exc)

    def on_chain_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            self._leave(run_id, parent_run_id, error)
        except Exception as exc:
            self._failed(exc)

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            self._enter(run_id, parent_run_id)
        except Exception as exc:
            self._failed(exc)

    def on_tool_end(
        self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        try:
            self._leave(run_id, parent_run_id)
        except Exception as exc:
            self._failed(exc)

    def on_tool_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            self._leave(run_id, parent_run_id, error)
        except Exception as exc:
            self._failed(exc)

    # -- failures -----------------------------------------------------------------------------

    def _failed(self, exc: Exception) -> None:
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
