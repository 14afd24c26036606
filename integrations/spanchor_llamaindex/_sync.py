"""Running a coroutine from synchronous code, without LlamaIndex's ``asyncio_run``.

``llama_index.core.async_utils.asyncio_run`` runs coroutines on ``asyncio.get_event_loop()``:
the loop it creates is never closed (a ``ResourceWarning`` when it is collected, an error
under ``-W error``), ``get_event_loop`` is deprecated without a current loop from Python
3.12 on, and a ``RuntimeError`` from the coroutine can surface as a misleading "nested async"
message. The sync entry points of this package use :func:`run_sync` instead.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion on a fresh, closed-afterwards event loop.

    Inside a running loop (a notebook, an async framework) the coroutine runs on its own loop
    in a worker thread, with the caller's context variables (instrument tags) copied over.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, asyncio.run, coro).result()
