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

A corpus too large for one actor is split by document over ``shards`` actors instead
(:func:`~spanchor_core.corpus.shard_of`), each holding its documents and their cached index
only. A result naming its document with offsets (or an explicit span) is decided on that
document's shard; every other result is searched on every shard and the candidates reduced
on the driver by the single-process rules (:mod:`spanchor_core.locate.reduce`, which says
why that gives the same locations). The driver then needs the documents' ids, hashes and
lengths but no text: give it a :class:`~spanchor_core.corpus.lazy.LazyCorpus`
(:func:`~spanchor_core.corpus.lazy.open_corpus_file`), as ``spanchor evaluate --shards`` does.

Ray is imported only when a cluster is used; without it the error names the ``[ray]`` extra.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from spanchor_core.corpus import Corpus, is_corpus_file, load_corpus, load_corpus_file, shard_of
from spanchor_core.corpus.lazy import fingerprint_of
from spanchor_core.errors import InputError
from spanchor_core.index_store import cache_dir, persistent_locator
from spanchor_core.locate import LocateRequest, Location, Locator, LocatorSettings, reduce
from spanchor_core.locate.context import SearchContext

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
    """The body of one shard actor: the documents of one shard and their cached locator.

    It decides the results that need no search (explicit spans, offsets that verify), which
    depend on their own document only, and answers the searches broadcast to every shard
    (:mod:`spanchor_core.locate.reduce`); the driver reduces the answers.
    """

    def __init__(
        self, source: Corpus | str, shard: int, shards: int, cache: str, settings: dict[str, Any]
    ) -> None:
        if isinstance(source, Corpus):
            corpus = source
        else:
            corpus = load_corpus_file(source, shard=(shard, shards))
        self.corpus = corpus
        self._cache = cache
        self._settings = settings
        self.locator = Locator(corpus, **settings)
        self._indexed = False

    def _searcher(self) -> Locator:
        """The locator with its indexes from the cache (built there on first need)."""
        if not self._indexed:
            self.locator = persistent_locator(self.corpus, self._cache, **self._settings)
            self._indexed = True
        return self.locator

    def catalog(self) -> tuple[list[str], list[int], list[str]]:
        ids, lengths = reduce.shard_catalog(self.locator)
        return ids, lengths, [self.corpus[i].sha256 for i in ids]

    def decide(self, requests: Sequence[LocateRequest]) -> list[Location | None]:
        return [self.locator.decide_without_search(r) for r in requests]

    def search(self, name: str, payload: Any) -> Any:
        function = _SHARD_CALLS[name]
        shard = self.locator if name == "fuzzy_scan" else self._searcher()
        return function(shard, payload)

    def pid(self) -> int:
        return os.getpid()


_SHARD_CALLS: dict[str, Callable[[Locator, Any], Any]] = {
    "exact": reduce.shard_exact,
    "normalised": reduce.shard_normalised,
    "votes": reduce.shard_votes,
    "align": reduce.shard_align,
    "fuzzy_scan": reduce.shard_fuzzy_scan,
}


class RayLocator(Locator):
    """A :class:`Locator` that maps each batch on ``workers`` Ray actors (see module doc).

    ``source`` is where the workers read the corpus: its path (each worker loads it; the
    nodes of a cluster must see the same file), or None to ship the in-memory ``corpus`` to
    them through Ray's object store. ``address`` is passed to ``ray.init`` when Ray is not
    running yet (None: a local cluster). ``partitions`` (default ``2 * workers``) is how many
    calls a batch is split into; ``min_batch`` requests or fewer are mapped by the driver's
    own locator, which gives the same answers.

    ``shards`` > 1 splits the corpus by document (:func:`~spanchor_core.corpus.shard_of`)
    over that many shard actors instead, each holding only its documents (read from
    ``source`` when it is a JSONL or Parquet file, else shipped): a result that names its
    document with offsets (or an explicit span) is decided on that document's shard with no
    index; every other result is searched on all shards (each builds or memory-maps its own
    index from the cache on first need) and reduced on the driver, which searches nothing
    and reads no text (``workers``, ``partitions`` and ``min_batch`` do not apply). Shard
    actors reserve no CPU: they share the cluster's cores.
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
        if shards > 1:
            # the driver of a sharded run searches nothing itself: no texts of its own (with a
            # LazyCorpus it holds none at all); a search context only if one is asked for
            if not isinstance(corpus, Corpus):
                super().__init__(corpus, **settings)  # the base class's error
            self.corpus = corpus
            self.settings = LocatorSettings(**settings)
        else:
            super().__init__(corpus, **settings)
        if workers < 1:
            raise InputError(f"workers must be 1 or more, got {workers}")
        ray = import_ray()
        if not ray.is_initialized():
            _connect(ray, address)
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
        self._catalog: reduce.ShardCatalog | None = None
        if shards > 1:
            # no CPU reserved: any number of shards fits a cluster (they share its cores)
            shard_actor = ray.remote(num_cpus=0)(_ShardWorker)
            from_file = isinstance(self._shipped, str) and is_corpus_file(self._shipped)
            for i in range(shards):
                part: Corpus | str = self._shipped if from_file else self._shard_corpus(i)
                self._shard_actors.append(
                    shard_actor.remote(part, i, shards, self._root, self._settings)
                )
        else:
            self._start_mapping_actors()

    def __getattr__(self, name: str) -> Any:
        # only for attributes not set: the search context a sharded driver did not build
        if name == "_ctx" and "corpus" in self.__dict__:
            ctx = SearchContext(self.corpus, self.settings)
            self.__dict__["_ctx"] = ctx
            return ctx
        raise AttributeError(name)

    def _shard_corpus(self, shard: int) -> Corpus:
        docs = [self.corpus[i] for i in self.corpus if shard_of(i, self.shards) == shard]
        return Corpus.from_documents(docs)

    def _start_mapping_actors(self) -> None:
        if not self._actors:
            # one CPU each, or a share of the cluster's when it has fewer CPUs than workers:
            # an actor asking for a CPU the cluster does not have would wait for ever
            cpus = float(self._ray.cluster_resources().get("CPU", 0.0))
            share = 1.0 if cpus >= self.workers else cpus / self.workers
            actor = self._ray.remote(num_cpus=share)(_MappingWorker)
            fingerprint = self.corpus.fingerprint
            self._actors = [
                actor.remote(self._shipped, self._root, self._settings, fingerprint)
                for _ in range(self.workers)
            ]

    def locate_many(self, requests: Sequence[LocateRequest]) -> list[Location]:
        """Map every request, in order, on the actors; equal to :meth:`Locator.locate_many`."""
        listed = list(requests)
        if self._shard_actors:
            return self._sharded(listed)
        if len(requests) <= self.min_batch:
            return super().locate_many(requests)
        return self._mapped(listed)

    def catalog(self) -> reduce.ShardCatalog:
        """Every document's id and length, as the shards hold them; the shards together must
        hold the driver's corpus (same fingerprint), else an :class:`InputError`."""
        if self._catalog is None:
            parts = self._ray.get([a.catalog.remote() for a in self._shard_actors])
            pairs = sorted(
                (d, sha) for ids, _, shas in parts for d, sha in zip(ids, shas, strict=True)
            )
            found = fingerprint_of(pairs)
            if found != self.corpus.fingerprint:
                raise InputError(
                    f"the shards read another corpus (fingerprint {found[:12]}, expected "
                    f"{self.corpus.fingerprint[:12]})",
                    path=self._shipped if isinstance(self._shipped, str) else None,
                    hint="give every node the same documents at the same path",
                )
            self._catalog = reduce.ShardCatalog.merge([(ids, lengths) for ids, lengths, _ in parts])
        return self._catalog

    def _sharded(self, requests: list[LocateRequest]) -> list[Location]:
        """Route what its shard can decide there; broadcast the searches and reduce them."""
        return reduce.locate_on_shards(
            requests, self.catalog(), self.settings, self._decide, self._broadcast
        )

    def _decide(self, routed: list[tuple[int, str, LocateRequest]]) -> dict[int, Location]:
        by_shard: list[list[tuple[int, LocateRequest]]] = [[] for _ in self._shard_actors]
        for slot, doc_id, request in routed:
            by_shard[shard_of(doc_id, self.shards)].append((slot, request))
        pairs = zip(self._shard_actors, by_shard, strict=True)
        asked = [(actor, part) for actor, part in pairs if part]
        answers = self._ray.get([a.decide.remote([r for _, r in part]) for a, part in asked])
        decided: dict[int, Location] = {}
        for (_, part), answer in zip(asked, answers, strict=True):
            for (slot, _), location in zip(part, answer, strict=True):
                if location is not None:
                    decided[slot] = location
        return decided

    def _broadcast(self, name: str, payload: Any) -> list[Any]:
        shared = self._ray.put(payload)  # one copy in the object store for every shard
        return list(self._ray.get([a.search.remote(name, shared) for a in self._shard_actors]))

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


def _connect(ray: Any, address: str | None) -> None:
    """``ray.init``: a new local cluster (``address`` None) or the one at ``address``; a
    cluster that cannot be reached is bad input, worded (not Ray's traceback)."""
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    except ConnectionError as err:
        raise InputError(
            f"cannot connect to the Ray cluster at {address}: {err}"[:300],
            hint="check the address (ray status on the head node); a cluster started with "
            "token authentication needs RAY_AUTH_MODE=token and its token here (Ray's "
            "token-auth guide)",
        ) from None


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
    return RayEngine(chosen, workers, source, shards)


class RayEngine:
    """The engine :func:`ray_engine` returns: ``engine(corpus)`` is a :class:`RayLocator`.

    :attr:`holds_documents` tells the pipeline whether the shard actors read the documents
    themselves from ``source``, so that the driver may keep only their ids, hashes and lengths
    (:func:`~spanchor_core.corpus.lazy.open_corpus_file`) instead of the whole corpus text.
    """

    def __init__(
        self, address: str | None, workers: int, source: str | os.PathLike[str] | None, shards: int
    ) -> None:
        self.address, self.workers, self.source, self.shards = address, workers, source, shards

    @property
    def holds_documents(self) -> bool:
        """Whether the documents live on shard actors that read them from a corpus file."""
        return self.shards > 1 and self.source is not None and is_corpus_file(self.source)

    def __call__(self, corpus: Corpus) -> Locator:
        return RayLocator(
            corpus,
            source=self.source,
            address=self.address,
            workers=self.workers,
            shards=self.shards,
        )
