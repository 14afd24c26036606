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
* It never breaks the user's chain: every method catches everything and counts it
  (:attr:`SpanchorCallbackHandler.failures`). ``raise_error`` stays ``False`` — LangChain would
  otherwise re-raise a handler's exception into the chain.
"""

from __future__ import annotations

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
    has_inner: bool = False  # another retriever run started inside this one


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
        """Release the run file if this handler opened it (every line is already written)."""
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

    @property
    def ignore_chain(self) -> bool:
        # Chain (and tool) runs only matter to tell nested retrievers apart.
        return self.nested == "all"

    @property
    def ignore_agent(self) -> bool:
        return self.nested == "all"  # tool events are filtered by this flag

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
        except Exception as exc:
            self._failed(exc)

    def _finish(self, run_id: UUID) -> _Retrieval | None:
        """Forget the run; return it if the nesting policy keeps it."""
        with self._lock:
            self._enclosing.pop(run_id, None)
            retrieval = self._retrievals.pop(run_id, None)
        if retrieval is None:  # its start was not seen (handler attached mid-run)
            return None
        if self.nested == "outermost":
            return None if retrieval.nested else retrieval
        if self.nested == "innermost":
            return None if retrieval.has_inner else retrieval
        return retrieval

    # -- chain and tool events: nesting only --------------------------------------------------

    def _enter(self, run_id: UUID, parent_run_id: UUID | None) -> None:
        if parent_run_id is None:
            return
        outer = self._enclosing.get(parent_run_id)  # one atomic lookup outside retrievers
        if outer is not None:
            with self._lock:
                self._enclosing[run_id] = outer

    def _leave(self, run_id: UUID) -> None:
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
            self._leave(run_id)
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
            self._leave(run_id)
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
            self._leave(run_id)
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
            self._leave(run_id)
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
