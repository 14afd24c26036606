"""Record every retrieval inside a ``with`` block, without passing callbacks by hand.

LangChain asks every registered *configure hook* for a handler each time it builds a callback
manager, i.e. at the start of every top-level run. :func:`record_retrievals` makes a
:class:`~spanchor_langchain.SpanchorCallbackHandler` the answer of our hook for the duration
of the block; LangChain adds it (inheritable, so nested runs get it too) to every run started
in that context. On exit the hook answers nothing again and the run file is released.

The block's handler lives in a ``ContextVar``: asyncio tasks created inside the block and
LangChain's own worker threads (``batch``; they copy the context) see it. Threads and
executors you start yourself (``ThreadPoolExecutor.map``, ``run_in_executor``) do not carry
the context — so runs started where no block is in context are not lost:

* while exactly **one** block is open in the process, they are recorded into it too, and
  counted in :attr:`~spanchor_langchain.SpanchorCallbackHandler.foreign_runs`;
* while several blocks are open, it cannot be told which one they belong to: they are counted,
  not recorded, and every block open meanwhile warns at exit
  (:class:`~spanchor_langchain.RecordingWarning`; ``strict=True`` raises).

Nested blocks: the innermost one records (each block's runs go to its own file).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Literal, cast
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tracers.context import register_configure_hook

from spanchor_core import Corpus, GoldSet
from spanchor_core.runs.recorder import given_arguments
from spanchor_langchain.callbacks import NestedPolicy, SpanchorCallbackHandler
from spanchor_langchain.documents import DEFAULT_SCORE_KEYS, DocumentIdRule
from spanchor_langchain.recording import QUERY_ID_KEY, RecordTarget

__all__ = ["active_handler", "open_handlers", "record_retrievals"]

_active: ContextVar[SpanchorCallbackHandler | None] = ContextVar(
    "spanchor_langchain_active_handler", default=None
)
_open_lock = threading.Lock()
_open: list[tuple[SpanchorCallbackHandler, BaseCallbackHandler]] = []  # (handler, its view)
_unattributed = [0]  # retriever runs started outside every block while several were open


class _Counter(BaseCallbackHandler):
    """Counts top-level runs started outside every block while several blocks are open."""

    @property
    def ignore_llm(self) -> bool:
        return True

    @property
    def ignore_chat_model(self) -> bool:
        return True

    def on_retriever_start(
        self, serialized: Any, query: str, *, run_id: UUID, **kwargs: Any
    ) -> None:
        _unattributed[0] += 1


_COUNTER = _Counter()


class _ForeignView(BaseCallbackHandler):
    """The one open block's handler as seen from outside its context: forwards every event
    to it and counts the top-level runs so received (``handler.foreign_runs``)."""

    run_inline = True

    def __init__(self, handler: SpanchorCallbackHandler) -> None:
        self.handler = handler
        self.raise_error = handler.raise_error

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

    def _count(self, parent_run_id: UUID | None) -> None:
        if parent_run_id is None:
            self.handler.foreign_runs += 1

    def on_retriever_start(self, *args: Any, **kwargs: Any) -> None:
        self._count(kwargs.get("parent_run_id"))
        self.handler.on_retriever_start(*args, **kwargs)

    def on_retriever_end(self, *args: Any, **kwargs: Any) -> None:
        self.handler.on_retriever_end(*args, **kwargs)

    def on_retriever_error(self, *args: Any, **kwargs: Any) -> None:
        self.handler.on_retriever_error(*args, **kwargs)

    def on_chain_start(self, *args: Any, **kwargs: Any) -> None:
        self._count(kwargs.get("parent_run_id"))
        self.handler.on_chain_start(*args, **kwargs)

    def on_chain_end(self, *args: Any, **kwargs: Any) -> None:
        self.handler.on_chain_end(*args, **kwargs)

    def on_chain_error(self, *args: Any, **kwargs: Any) -> None:
        self.handler.on_chain_error(*args, **kwargs)

    def on_tool_start(self, *args: Any, **kwargs: Any) -> None:
        self._count(kwargs.get("parent_run_id"))
        self.handler.on_tool_start(*args, **kwargs)

    def on_tool_end(self, *args: Any, **kwargs: Any) -> None:
        self.handler.on_tool_end(*args, **kwargs)

    def on_tool_error(self, *args: Any, **kwargs: Any) -> None:
        self.handler.on_tool_error(*args, **kwargs)


class _Hook:
    """What LangChain's configure hook reads (it only calls ``.get()``): the block's handler
    in context, else the one open block's, else the counter while several are open."""

    def get(self) -> BaseCallbackHandler | None:
        handler = _active.get()
        if handler is not None:
            return handler
        if not _open:
            return None
        with _open_lock:
            if len(_open) == 1:
                return _open[0][1]
        return _COUNTER


# Registered once, at import: LangChain keeps hooks in a module-level list and has no removal.
register_configure_hook(cast("ContextVar[Any]", _Hook()), inheritable=True)


def active_handler() -> SpanchorCallbackHandler | None:
    """The handler recording in the current context, if a :func:`record_retrievals` is active."""
    return _active.get()


def open_handlers() -> list[SpanchorCallbackHandler]:
    """The handlers of the blocks open in the process (a snapshot)."""
    with _open_lock:
        return [handler for handler, _ in _open]


@contextmanager
def record_retrievals(
    target: RecordTarget | SpanchorCallbackHandler,
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
    mode: Literal["w", "a"] = "w",
    strict: bool = False,
) -> Iterator[SpanchorCallbackHandler]:
    """Record every retrieval and context started inside the block; yield the handler.

    ``target`` is a run-file path, an open :class:`~spanchor_core.RunRecorder`, or a handler
    you made (then the other arguments must be left at their defaults, and the handler is not
    closed on exit). The arguments are those of :class:`SpanchorCallbackHandler`, except that
    ``mode`` defaults to ``"w"``: a block is one recording. Check what was captured::

        with record_retrievals("runs/candidate.jsonl", gold=gold) as recorder:
            chain.batch(questions)
        assert recorder.failures == 0
    """
    if isinstance(target, SpanchorCallbackHandler):
        given = given_arguments(
            gold=gold,
            corpus=corpus,
            document_id=document_id,
            max_results=max_results,
            description=description,
            parameters=parameters,
            run_tags=run_tags,
        )
        if given:
            raise ValueError(
                f"{', '.join(given)} cannot be applied to an existing handler; "
                "pass them when creating it"
            )
        handler = target
        owned = False
    else:
        handler = SpanchorCallbackHandler(
            target,
            gold=gold,
            corpus=corpus,
            document_id=document_id,
            score_keys=score_keys,
            max_results=max_results,
            nested=nested,
            contexts=contexts,
            query_id_key=query_id_key,
            description=description,
            parameters=parameters,
            run_tags=run_tags,
            mode=mode,
            strict=strict,
        )
        owned = True
    with _open_lock:
        entry = (handler, _ForeignView(handler))
        _open.append(entry)
        missed_before = _unattributed[0]
    token = _active.set(handler)
    try:
        yield handler
    finally:
        _active.reset(token)
        with _open_lock:
            _open.remove(entry)
            missed = _unattributed[0] - missed_before
        handler.note_unrecorded(missed)
        if owned:
            handler.close()
