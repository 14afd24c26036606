"""Mapping on a Ray cluster: :class:`RayLocator`, a :class:`Locator` whose batches run on actors.

Scoring a run is mapping (costly: the corpus index, the matcher stages) then metrics (cheap,
per query). The mapping of a batch of results is split into contiguous partitions, one per
call, spread over ``workers`` Ray actors; each actor holds the corpus and a
:class:`~spanchor_core.locate.Locator` whose indexes come from the persistent cache
(:mod:`spanchor_core.index_store`: the first actor builds them under the entry's lock, the
others — and every later run — memory-map the same files, so the pages are shared by the
actors of one machine). The partitions' answers are concatenated in request order.

Why the result is byte-identical to one process: ``Locator.locate_many(requests)`` is defined
as ``[locate(r) for r in requests]`` — every request is mapped on its own, against the whole
corpus, by the same code — so any split of the requests gives the same locations, and the
evaluation built from them (grouping, metrics, aggregates, in the driver) is the same.

Ray is imported only when a cluster is used; without it the error names the ``[ray]`` extra.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from spanchor_core.corpus import Corpus, load_corpus
from spanchor_core.errors import InputError
from spanchor_core.index_store import cache_dir, persistent_locator
from spanchor_core.locate import LocateRequest, Location, Locator

__all__ = ["RayLocator", "import_ray", "partition_bounds", "ray_engine"]


def import_ray() -> Any:
    """The ``ray`` module, or an :class:`InputError` naming the extra that installs it."""
    try:
        import ray  # optional: only the distributed engine needs it
    except ImportError:
        raise InputError(
            "the Ray engine needs ray, which is not installed",
            hint="pip install 'spanchor[ray]'",
        ) from None
    return ray


def partition_bounds(n: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous ``[start, end)`` ranges covering ``range(n)``, sizes within one."""
    parts = max(1, min(parts, n))
    size, extra = divmod(n, parts)
    bounds = []
    start = 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        bounds.append((start, end))
        start = end
    return bounds


class _MappingWorker:
    """The body of one Ray actor: a corpus and its cached locator."""

    def __init__(
        self, source: Corpus | str, cache: str, settings: dict[str, Any], expected: str
    ) -> None:
        corpus = source if isinstance(source, Corpus) else load_corpus(source)
        if corpus.fingerprint != expected:
            raise InputError(
                f"the worker read another corpus (fingerprint {corpus.fingerprint[:12]}, "
                f"expected {expected[:12]})",
                path=None if isinstance(source, Corpus) else source,
                hint="give every node the same documents at the same path",
            )
        self.locator = persistent_locator(corpus, cache, **settings)

    def locate_many(self, requests: Sequence[LocateRequest]) -> list[Location]:
        return self.locator.locate_many(requests)

    def pid(self) -> int:
        return os.getpid()


class RayLocator(Locator):
    """A :class:`Locator` that maps each batch on ``workers`` Ray actors (see module doc).

    ``source`` is where the workers read the corpus: its path (each worker loads it; the
    nodes of a cluster must see the same file), or None to ship the in-memory ``corpus`` to
    them through Ray's object store. ``address`` is passed to ``ray.init`` when Ray is not
    running yet (None: a local cluster). ``partitions`` (default ``2 * workers``) is how many
    calls a batch is split into; ``min_batch`` requests or fewer are mapped by the driver's
    own locator, which gives the same answers.
    """

    def __init__(
        self,
        corpus: Corpus,
        *,
        source: str | os.PathLike[str] | None = None,
        address: str | None = None,
        workers: int = 2,
        partitions: int | None = None,
        cache: str | os.PathLike[str] | None = None,
        min_batch: int = 0,
        **settings: Any,
    ) -> None:
        super().__init__(corpus, **settings)
        if workers < 1:
            raise InputError(f"workers must be 1 or more, got {workers}")
        ray = import_ray()
        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        self._ray = ray
        self.workers = workers
        self.partitions = partitions if partitions is not None else 2 * workers
        self.min_batch = min_batch
        shipped: Corpus | str = corpus if source is None else str(Path(source).resolve())
        actor = ray.remote(num_cpus=1)(_MappingWorker)
        root = str(cache_dir(cache).resolve())
        self._actors = [
            actor.remote(shipped, root, dict(settings), corpus.fingerprint) for _ in range(workers)
        ]

    def locate_many(self, requests: Sequence[LocateRequest]) -> list[Location]:
        """Map every request, in order, on the actors; equal to :meth:`Locator.locate_many`."""
        if len(requests) <= self.min_batch:
            return super().locate_many(requests)
        listed = list(requests)
        futures = [
            self._actors[i % len(self._actors)].locate_many.remote(listed[start:end])
            for i, (start, end) in enumerate(partition_bounds(len(listed), self.partitions))
        ]
        located: list[Location] = []
        for part in self._ray.get(futures):
            located.extend(part)
        return located

    def worker_pids(self) -> list[int]:
        """The process id of every actor (for measuring them)."""
        return list(self._ray.get([a.pid.remote() for a in self._actors]))

    def shutdown(self) -> None:
        """End the actors (Ray itself keeps running)."""
        for actor in self._actors:
            self._ray.kill(actor)
        self._actors = []


def ray_engine(
    address: str | None,
    *,
    workers: int = 2,
    source: str | os.PathLike[str] | None = None,
) -> Callable[[Corpus], Locator]:
    """``engine(corpus)`` for :func:`spanchor_core.pipeline.run_gate`: a :class:`RayLocator`.

    ``address`` ``"local"`` (or None) starts a local cluster; anything else is given to
    ``ray.init`` (``"auto"``, ``"ray://head:10001"``).
    """
    chosen = None if address in {None, "", "local"} else address

    def engine(corpus: Corpus) -> Locator:
        return RayLocator(corpus, source=source, address=chosen, workers=workers)

    return engine
