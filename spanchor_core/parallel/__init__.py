"""Mapping and scoring on the processes of this machine, with results identical to one process.

:class:`ProcessLocator` is a :class:`~spanchor_core.locate.Locator` that maps each batch on
``jobs`` processes sharing one index (forked on Linux, the index cache's memory-mapped files
elsewhere); :func:`run_tasks` runs independent tasks — the sides of a gate — concurrently.
The pipeline's ``jobs=`` (``spanchor evaluate --jobs N``, ``[tool.spanchor] jobs``) uses both.
"""

from __future__ import annotations

from spanchor_core.parallel.locator import (
    MIN_BATCH,
    ProcessLocator,
    process_engine,
    shared_locator,
)
from spanchor_core.parallel.pool import (
    StartMethod,
    WorkerError,
    WorkerPool,
    default_start_method,
    resolve_jobs,
    run_tasks,
)

__all__ = [
    "MIN_BATCH",
    "ProcessLocator",
    "StartMethod",
    "WorkerError",
    "WorkerPool",
    "default_start_method",
    "process_engine",
    "resolve_jobs",
    "run_tasks",
    "shared_locator",
]
