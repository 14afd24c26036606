"""Recording a block of code: :func:`record_retrievals` and :func:`tag_query`.

``with record_retrievals(path): ...`` installs a :class:`~spanchor_llamaindex.recording.
SpanchorEventHandler` for the block and removes it after; ``with tag_query("q1"): ...`` labels
the retrievals inside with a gold query id (through LlamaIndex's ``instrument_tags``, which it
copies into every event). Which retrievals belong to a block, also from worker threads, is the
rule of :mod:`spanchor_llamaindex._scopes`; a block never records nothing silently.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from llama_index.core.instrumentation import Dispatcher  # type: ignore[attr-defined]  # no __all__
from llama_index.core.instrumentation.dispatcher import (  # type: ignore[attr-defined]  # no __all__
    active_instrument_tags,
    instrument_tags,
)

from spanchor_core import Corpus, GoldSet, RunRecorder
from spanchor_llamaindex import _scopes
from spanchor_llamaindex._scopes import QUERY_ID_TAG
from spanchor_llamaindex._spans import Stage
from spanchor_llamaindex.nodes import DocumentIdResolver
from spanchor_llamaindex.recording import SpanchorEventHandler

__all__ = ["QUERY_ID_TAG", "record_retrievals", "tag_query"]


@contextlib.contextmanager
def tag_query(query_id: str) -> Iterator[None]:
    """Label the retrievals in this block with ``query_id`` (other active tags are kept)."""
    with instrument_tags({**active_instrument_tags.get(), QUERY_ID_TAG: query_id}):
        yield


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
    stages: tuple[Stage, ...] = ("retrieval", "postprocessed", "context"),
    adopt_threads: bool = True,
) -> Iterator[SpanchorEventHandler]:
    """Record the LlamaIndex retrievals, reranks and contexts of the block into ``path``.

    The handler is installed on entry and removed (and the file closed) on exit, also when
    the block raises. Recorded: what starts in this block's context (tasks it creates,
    ``asyncio.to_thread``, ``copy_context().run``) and, with ``adopt_threads`` (default),
    what worker threads that inherited no block's context start while the open blocks are
    nested in one another (``ThreadPoolExecutor.map``, ``loop.run_in_executor``). Not
    recorded: other blocks' retrievals. A block that could not attribute some retrievals, or
    that recorded nothing, says so in a ``RuntimeWarning`` when it closes. The other
    arguments are those of :class:`SpanchorEventHandler`.
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
        stages=stages,
    )
    scope = object()
    handler._core.scope = scope
    handler._core.adopt = adopt_threads
    token = _scopes.open_scope(scope)
    handler.install(dispatcher)
    try:
        yield handler
    finally:
        _scopes.close_scope(scope, token)
        handler.close()
        _report(handler, adopt_threads)


def _report(handler: SpanchorEventHandler, adopt_threads: bool) -> None:
    """Say loudly what a block could not record (never silently nothing)."""
    if handler.unattributed:
        why = (
            "other record_retrievals blocks were open side by side, so their owner is unknown"
            if adopt_threads
            else "adopt_threads=False"
        )
        warnings.warn(
            f"spanchor: {handler.unattributed} LlamaIndex retrieval(s) ran in threads outside "
            f"this block's context and were NOT recorded in {handler.path} ({why}). Run them "
            "with contextvars.copy_context().run(...) or asyncio.to_thread(...).",
            RuntimeWarning,
            stacklevel=3,
        )
    elif handler.records == 0 and handler.failures == 0:
        warnings.warn(
            f"spanchor: record_retrievals recorded nothing into {handler.path}: no LlamaIndex "
            "retrieval ran inside the block",
            RuntimeWarning,
            stacklevel=3,
        )
