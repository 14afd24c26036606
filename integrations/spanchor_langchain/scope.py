"""Record every retriever that runs inside a ``with`` block, without passing callbacks by hand.

LangChain asks every registered *configure hook* — a ``ContextVar`` — for a handler each time it
builds a callback manager, i.e. at the start of every top-level run. :func:`record_retrievals`
puts a :class:`~spanchor_langchain.SpanchorCallbackHandler` into such a variable for the
duration of the block; LangChain then adds it (inheritable, so nested runs get it too) to every
run started in that context. On exit the variable is reset, so runs started afterwards are not
recorded, and the run file is closed if the block opened it.

Because it is a ``ContextVar``: asyncio tasks created inside the block, and LangChain's own
worker threads (``batch``; they copy the context), are recorded; threads you start yourself
are not, unless you run them in a copy of the context (``contextvars.copy_context().run``).
Nested blocks: the innermost one records (each block's runs go to its own file).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Literal

from langchain_core.tracers.context import register_configure_hook

from spanchor_core.corpus import Corpus
from spanchor_core.gold import GoldSet
from spanchor_langchain.callbacks import NestedPolicy, SpanchorCallbackHandler
from spanchor_langchain.documents import DEFAULT_SCORE_KEYS, DocumentIdRule
from spanchor_langchain.recording import QUERY_ID_KEY, RecordTarget

__all__ = ["active_handler", "record_retrievals"]

_active: ContextVar[SpanchorCallbackHandler | None] = ContextVar(
    "spanchor_langchain_active_handler", default=None
)
# Registered once, at import: LangChain keeps hooks in a module-level list and has no removal.
register_configure_hook(_active, inheritable=True)


def active_handler() -> SpanchorCallbackHandler | None:
    """The handler recording in the current context, if a :func:`record_retrievals` is active."""
    return _active.get()


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
    query_id_key: str = QUERY_ID_KEY,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    run_tags: Mapping[str, Any] | None = None,
    mode: Literal["w", "a"] = "w",
) -> Iterator[SpanchorCallbackHandler]:
    """Record every retriever run started inside the block; yield the handler doing it.

    ``target`` is a run-file path, an open :class:`~spanchor_core.RunRecorder`, or a handler
    you made (then the other arguments must be left at their defaults, and the handler is not
    closed on exit). The arguments are those of :class:`SpanchorCallbackHandler`. Use the
    yielded handler's ``records`` and ``failures`` to check what was captured::

        with record_retrievals("runs/candidate.jsonl", gold=gold) as recorder:
            chain.batch(questions)
        assert recorder.failures == 0
    """
    if isinstance(target, SpanchorCallbackHandler):
        given = [
            name
            for name, value in (
                ("gold", gold),
                ("corpus", corpus),
                ("document_id", document_id),
                ("max_results", max_results),
                ("description", description),
                ("parameters", parameters),
                ("run_tags", run_tags),
            )
            if value is not None
        ]
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
            query_id_key=query_id_key,
            description=description,
            parameters=parameters,
            run_tags=run_tags,
            mode=mode,
        )
        owned = True
    token = _active.set(handler)
    try:
        yield handler
    finally:
        _active.reset(token)
        if owned:
            handler.close()
