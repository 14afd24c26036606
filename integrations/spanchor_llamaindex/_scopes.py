"""Which ``record_retrievals`` block a retrieval belongs to, also from worker threads.

(And :data:`QUERY_ID_TAG`, the instrument tag that says which gold query it answers.)

A block marks its context (a ``ContextVar``): retrievals started in that context — the block
itself, ``asyncio`` tasks it creates, ``asyncio.to_thread``, ``copy_context().run`` — carry
the mark and belong to it; another thread's block has its own mark. A plain worker thread
(``ThreadPoolExecutor.submit``/``map``, ``loop.run_in_executor``, ``threading.Thread``) starts
with an *empty* context: no block's mark at all. Such a retrieval is

* **adopted** when the blocks open in the process form one chain (one block, or blocks nested
  in each other): it is recorded by every open block, as if it had run inside the innermost;
* otherwise (blocks open side by side in several threads or tasks) it cannot be attributed:
  every open block counts it and says so loudly when it closes.

The registry is process-wide and changes only when a block opens or closes (under one lock);
the per-retrieval check reads one ``ContextVar`` and one frozenset.
"""

from __future__ import annotations

import contextvars
import itertools
import threading
from enum import Enum
from typing import Final

__all__ = ["QUERY_ID_TAG", "Membership", "close_scope", "membership", "open_scope"]

QUERY_ID_TAG: Final = "spanchor_query_id"
"""The ``instrument_tags`` key whose value is recorded as the retrieval's query id."""

_active: contextvars.ContextVar[frozenset[object]] = contextvars.ContextVar(
    "spanchor_llamaindex_scopes", default=frozenset()
)
_lock: Final = threading.Lock()
_open: dict[object, frozenset[object]] = {}  # scope -> the scopes active where it opened
_adopters: frozenset[object] = frozenset()


class Membership(Enum):
    """Whether a retrieval started now belongs to a given block."""

    INSIDE = "inside"
    ADOPTED = "adopted"  # started outside every block, attributed to this one
    UNATTRIBUTED = "unattributed"  # started outside every block, owner unknown
    ELSEWHERE = "elsewhere"  # another block's


def _recompute() -> None:
    global _adopters
    chain = sorted(_open.values(), key=len)
    # A chain: each block's entry set contains the previous one's (sorted by size).
    nested = all(smaller <= larger for smaller, larger in itertools.pairwise(chain))
    _adopters = frozenset(_open) if nested else frozenset()


def open_scope(scope: object) -> contextvars.Token[frozenset[object]]:
    """Mark the current context as inside ``scope``; returns the token for :func:`close_scope`."""
    active = _active.get() | {scope}
    with _lock:
        _open[scope] = active
        _recompute()
    return _active.set(active)


def close_scope(scope: object, token: contextvars.Token[frozenset[object]]) -> None:
    with _lock:
        _open.pop(scope, None)
        _recompute()
    try:
        _active.reset(token)
    except ValueError:  # exited in another context than entered: just drop our mark
        _active.set(_active.get() - {scope})


def membership(scope: object) -> Membership:
    """Whether a retrieval starting in the current context belongs to ``scope``."""
    active = _active.get()
    if scope in active:
        return Membership.INSIDE
    if active:
        return Membership.ELSEWHERE
    return Membership.ADOPTED if scope in _adopters else Membership.UNATTRIBUTED
