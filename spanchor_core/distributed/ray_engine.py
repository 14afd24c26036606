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

from spanchor_core.corpus import Corpus, is_corpus_file, load_corpus, load_corpus_file, shard_of
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


class _ShardWorker:
    """The body of one shard actor: the documents of one shard, no index.

    It decides the results that need no search (explicit spans, offsets that verify), which
    depend on their own document only: the same answer as a locator over the whole corpus.
    """

    def __init__(self, source: Corpus | str, shard: int, shards: int) -> None:
        if isinstance(source, Corpus):
            corpus = source
        else:
            corpus = load_corpus_file(source, shard=(shard, shards))
        self.locator = Locator(corpus)

    def decide(self, requests: Sequence[LocateRequest]) -> list[Location | None]:
        return [self.locator.decide_without_search(r) for r in requests]

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

    ``shards`` > 1 also splits the corpus by document (:func:`~spanchor_core.corpus.shard_of`)
    over that many shard actors, each holding only its documents: a result that names its
    document with offsets (or an explicit span) is sent to that document's shard and decided
    there, with no index at all; the rest (text to search for, offsets that do not verify)
    go to the mapping actors, which are started only when some result needs them.
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
        shards: int = 1,
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
        if shards < 1:
            raise InputError(f"shards must be 1 or more, got {shards}")
        self.shards = shards
        self._shipped: Corpus | str = corpus if source is None else str(Path(source).resolve())
        self._root = str(cache_dir(cache).resolve())
        self._settings = dict(settings)
        self._actors: list[Any] = []
        self._shard_actors: list[Any] = []
        if shards > 1:
            shard_actor = ray.remote(num_cpus=0)(_ShardWorker)  # light: must not starve mapping
            from_file = isinstance(self._shipped, str) and is_corpus_file(self._shipped)
            for i in range(shards):
                part: Corpus | str = self._shipped if from_file else self._shard_corpus(i)
                self._shard_actors.append(shard_actor.remote(part, i, shards))
        else:
            self._start_mapping_actors()

    def _shard_corpus(self, shard: int) -> Corpus:
        docs = [self.corpus[i] for i in self.corpus if shard_of(i, self.shards) == shard]
        return Corpus.from_documents(docs)

    def _start_mapping_actors(self) -> None:
        if not self._actors:
            actor = self._ray.remote(num_cpus=1)(_MappingWorker)
            fingerprint = self.corpus.fingerprint
            self._actors = [
                actor.remote(self._shipped, self._root, self._settings, fingerprint)
                for _ in range(self.workers)
            ]

    def locate_many(self, requests: Sequence[LocateRequest]) -> list[Location]:
        """Map every request, in order, on the actors; equal to :meth:`Locator.locate_many`."""
        if len(requests) <= self.min_batch:
            return super().locate_many(requests)
        listed = list(requests)
        if self._shard_actors:
            return self._sharded(listed)
        return self._mapped(listed)

    def _sharded(self, requests: list[LocateRequest]) -> list[Location]:
        """Route what its shard can decide there; map the rest on the mapping actors."""
        routed: list[list[int]] = [[] for _ in self._shard_actors]
        for slot, request in enumerate(requests):
            named = request.document_id
            decidable = request.text is None or request.start is not None
            if decidable and isinstance(named, str) and named in self.corpus:
                routed[shard_of(named, self.shards)].append(slot)
        futures = [
            actor.decide.remote([requests[s] for s in slots])
            for actor, slots in zip(self._shard_actors, routed, strict=True)
            if slots
        ]
        decided: dict[int, Location] = {}
        answers = iter(self._ray.get(futures))
        for slots in routed:
            if slots:
                for slot, location in zip(slots, next(answers), strict=True):
                    if location is not None:
                        decided[slot] = location
        rest = [slot for slot in range(len(requests)) if slot not in decided]
        if rest:
            self._start_mapping_actors()
            for slot, location in zip(rest, self._mapped([requests[s] for s in rest]), strict=True):
                decided[slot] = location
        return [decided[slot] for slot in range(len(requests))]

    def _mapped(self, listed: list[LocateRequest]) -> list[Location]:
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
        actors = [*self._shard_actors, *self._actors]
        return list(self._ray.get([a.pid.remote() for a in actors]))

    def shutdown(self) -> None:
        """End the actors (Ray itself keeps running)."""
        for actor in [*self._shard_actors, *self._actors]:
            self._ray.kill(actor)
        self._actors = []
        self._shard_actors = []


def ray_engine(
    address: str | None,
    *,
    workers: int = 2,
    source: str | os.PathLike[str] | None = None,
    shards: int = 1,
) -> Callable[[Corpus], Locator]:
    """``engine(corpus)`` for :func:`spanchor_core.pipeline.run_gate`: a :class:`RayLocator`.

    ``address`` ``"local"`` (or None) starts a local cluster; anything else is given to
    ``ray.init`` (``"auto"``, ``"ray://head:10001"``).
    """
    chosen = None if address in {None, "", "local"} else address

    def engine(corpus: Corpus) -> Locator:
        return RayLocator(corpus, source=source, address=chosen, workers=workers, shards=shards)

    return engine
