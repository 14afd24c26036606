"""Mapping on local processes: :class:`ProcessLocator`, a :class:`Locator` whose batches are split
over ``jobs`` processes of this machine, the driver one of them.

Each batch of requests is cut into ``jobs`` contiguous partitions; the workers map all but the
first, the driver maps the first meanwhile, and the answers are joined in request order. The
answers are those of one process, byte for byte: ``Locator.locate_many(requests)`` is defined
as ``[locate(r) for r in requests]`` — every request is mapped on its own against the whole
corpus by the same code — so any split gives the same locations (the argument
:mod:`spanchor_core.distributed.ray_engine` rests on too).

The index is built once, in the driver, before the workers start. With ``fork`` (Linux) they
inherit it — its pages, like the corpus's, are shared copy-on-write — and nothing but the
requests and the answers crosses a pipe. With ``spawn`` (macOS, Windows) each worker is sent
the corpus and takes the index from the persistent cache's memory-mapped files (a corpus the
pipeline caches, :func:`~spanchor_core.index_store.pipeline_locator`) or builds it.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, Final

from spanchor_core.corpus import Corpus
from spanchor_core.distributed.ray_engine import partition_bounds
from spanchor_core.index_store import persistent_locator, pipeline_locator
from spanchor_core.locate import LocateRequest, Location, Locator
from spanchor_core.parallel.pool import (
    StartMethod,
    WorkerPool,
    can_start_workers,
    default_start_method,
    resolve_jobs,
)

__all__ = ["MIN_BATCH", "ProcessLocator", "process_engine", "shared_locator"]

MIN_BATCH: Final = 64
"""Batches of this many requests or fewer are mapped by the driver alone (same answers)."""

_WORKER: Locator | None = None
"""The locator of this worker process (set up once, by :func:`_adopt` or :func:`_rebuild`)."""


def shared_locator(
    corpus: Corpus,
    *,
    cache: str | os.PathLike[str] | None = None,
    **settings: Any,
) -> Locator:
    """A locator over ``corpus`` with both indexes built, for processes to share.

    From the persistent cache when ``cache`` is given, or (default settings) when the pipeline
    would cache this corpus; else built in memory.
    """
    locator: Locator | None
    if cache is not None:
        locator = persistent_locator(corpus, cache, **settings)
    elif not settings:
        locator = pipeline_locator(corpus)
    else:
        locator = None
    if locator is None:
        locator = Locator(corpus, **settings)
    locator.build_index(normalised=True)  # a no-op for indexes the cache gave
    return locator


def _adopt(locator: Locator) -> None:
    """Worker set-up under ``fork``: the driver's own locator, inherited."""
    global _WORKER
    _WORKER = locator


def _rebuild(
    corpus: Corpus, cache: str | os.PathLike[str] | None, settings: dict[str, Any]
) -> None:
    """Worker set-up under ``spawn``: the corpus was pickled here; the index is cached or built."""
    global _WORKER
    _WORKER = shared_locator(corpus, cache=cache, **settings)


def _locate_part(requests: Sequence[LocateRequest]) -> list[Location]:
    if _WORKER is None:  # pragma: no cover - the initializer always ran first
        raise RuntimeError("the worker has no locator")
    return _WORKER.locate_many(requests)


class ProcessLocator(Locator):
    """A :class:`Locator` that maps each batch on ``jobs`` local processes (see module doc).

    ``jobs`` counts the driver (0: one per CPU; 1: no worker at all). ``base`` is a locator
    of ``corpus`` whose indexes to share (default: :func:`shared_locator`); ``cache`` and
    ``settings`` are as for :func:`shared_locator`. ``start_method`` defaults to ``fork`` on
    Linux, ``spawn`` elsewhere. Workers start on the first batch larger than ``min_batch`` and
    end with :meth:`close` (or when the locator is collected, or at exit).
    """

    def __init__(
        self,
        corpus: Corpus,
        *,
        jobs: int = 2,
        base: Locator | None = None,
        cache: str | os.PathLike[str] | None = None,
        start_method: StartMethod | None = None,
        min_batch: int = MIN_BATCH,
        **settings: Any,
    ) -> None:
        super().__init__(corpus, **settings)
        self.jobs = resolve_jobs(jobs)
        self.min_batch = min_batch
        if base is None:
            base = shared_locator(corpus, cache=cache, **settings)
        else:
            base.build_index(normalised=True)
        exact, normalised = base.built_indexes()
        if exact is not None:
            self.use_indexes(exact, normalised)
        self._pool: WorkerPool | None = None
        if self.jobs > 1 and can_start_workers():
            method = start_method or default_start_method()
            if method == "fork":  # the workers inherit a twin of this locator, index and all
                twin = Locator(corpus, **settings)
                if exact is not None:
                    twin.use_indexes(exact, normalised)
                pool = WorkerPool(self.jobs - 1, setup=_adopt, args=(twin,), start_method=method)
            else:
                setup = (corpus, cache, dict(settings))
                pool = WorkerPool(self.jobs - 1, setup=_rebuild, args=setup, start_method=method)
            self._pool = pool
            weakref.finalize(self, pool.close)

    @property
    def start_method(self) -> StartMethod | None:
        """How the workers start (None: there are none, ``jobs`` is 1)."""
        return None if self._pool is None else self._pool.start_method

    def locate_many(self, requests: Sequence[LocateRequest]) -> list[Location]:
        """Map every request, in order, on the processes; equal to :meth:`Locator.locate_many`."""
        pool = self._pool
        if pool is None or len(requests) <= self.min_batch:
            return super().locate_many(requests)
        listed = list(requests)
        first, *rest = partition_bounds(len(listed), self.jobs)
        futures: list[Future[list[Location]]] = [
            pool.submit(_locate_part, listed[start:end]) for start, end in rest
        ]
        try:
            located = super().locate_many(listed[first[0] : first[1]])
        except BaseException:
            pool.close(kill=True)
            raise
        for future in futures:
            part: list[Location] = pool.result(future)
            located.extend(part)
        return located

    def close(self) -> None:
        """End the workers (a later batch starts new ones)."""
        if self._pool is not None:
            self._pool.close()

    def __enter__(self) -> ProcessLocator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def process_engine(jobs: int) -> Callable[[Corpus], Locator]:
    """``engine(corpus)`` for :func:`spanchor_core.pipeline.run_gate`: a :class:`ProcessLocator`
    on ``jobs`` processes (0: one per CPU)."""
    count = resolve_jobs(jobs)

    def engine(corpus: Corpus) -> Locator:
        return ProcessLocator(corpus, jobs=count)

    return engine
