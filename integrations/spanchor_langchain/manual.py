"""Record documents by hand: :func:`record` and the :func:`recorded` decorator.

For what no LangChain event shows — a helper that calls ``vector_store.similarity_search``
and returns formatted text, documents fetched by your own code::

    @recorded(source="search")
    def search(question: str) -> list[Document]:
        return vector_store.similarity_search(question, k=4)

    docs = search(q)                        # or, anywhere: record(docs, source="search")

Inside a LangChain run (a graph node, a ``RunnableLambda``, a tool) the documents become a
context candidate of that run's trace, exactly like a step's output (same de-duplication, same
question, trace id and sequence), for every :class:`~spanchor_langchain.SpanchorCallbackHandler`
attached to the run. Outside any run they are written at once, as a line of their own, by the
active :func:`~spanchor_langchain.record_retrievals` block's handler (or the ``handler=`` given);
``query`` is then needed.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ParamSpec, TypeVar, cast

from langchain_core.runnables.config import var_child_runnable_config

from spanchor_core.runs import Stage  # not exported at the top level yet
from spanchor_langchain.callbacks import SpanchorCallbackHandler
from spanchor_langchain.scope import active_handler

__all__ = ["record", "recorded"]

P = ParamSpec("P")
R = TypeVar("R")


def _run_handlers() -> tuple[list[SpanchorCallbackHandler], Any]:
    """The spanchor handlers of the LangChain run we are inside, and that run's id."""
    config = var_child_runnable_config.get()
    if not config:
        return [], None
    manager = config.get("callbacks")
    handlers = getattr(manager, "handlers", None)
    if not isinstance(handlers, list):
        return [], None
    found = [h for h in handlers if isinstance(h, SpanchorCallbackHandler)]
    found += [
        h.handler  # the one open block's handler seen from another thread
        for h in handlers
        if isinstance(getattr(h, "handler", None), SpanchorCallbackHandler)
    ]
    return found, getattr(manager, "parent_run_id", None)


def record(
    documents: Sequence[Any],
    *,
    query: str | None = None,
    source: str | None = None,
    stage: Stage = "context",
    handler: SpanchorCallbackHandler | None = None,
) -> int:
    """Record ``documents`` (``Document`` objects or ``(Document, score)`` pairs) as what the
    model sees; return how many handlers took them (0: no recorder is active here).

    Never raises for a recording failure unless the handler is strict.
    """
    documents = list(documents)
    handlers, run_id = _run_handlers()
    if handler is not None:
        handlers = [handler]
    elif not handlers:
        scoped = active_handler()
        handlers = [] if scoped is None else [scoped]
    taken = 0
    for target in dict.fromkeys(handlers):  # once each, in order
        if stage == "context" and target.offer_documents(
            documents, parent_run_id=run_id, source=source
        ):
            taken += 1
            continue
        if query is None:
            continue
        target.write_line(query, documents, source=source, stage=stage)
        taken += 1
    return taken


def recorded(
    *, source: str | None = None, stage: Stage = "context"
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a function (sync or async) returning documents: :func:`record` its result.

    The query of a line written outside a LangChain run is the function's first string
    argument. ``source`` defaults to the function's name.
    """

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        name = source or function.__name__

        def query_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
            for value in (*args, *kwargs.values()):
                if isinstance(value, str):
                    return value
            return None

        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def arun(*args: P.args, **kwargs: P.kwargs) -> Any:
                result = await cast("Callable[P, Awaitable[Any]]", function)(*args, **kwargs)
                record(result, query=query_of(args, kwargs), source=name, stage=stage)
                return result

            return cast("Callable[P, R]", arun)

        @functools.wraps(function)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            result = function(*args, **kwargs)
            record(cast("Sequence[Any]", result), query=query_of(args, kwargs), source=name,
                   stage=stage)  # fmt: skip
            return result

        return run

    return decorate
