"""Searching a corpus split into shards: the shards find, the driver chooses (broadcast, reduce).

A text-only result may lie in any shard, so its search is broadcast to every shard and the
shards' answers are reduced on the driver by the rules of one process
(:func:`~spanchor_core.locate.resolve.choose`, :func:`~spanchor_core.locate.fuzzy.resolve_scored`).
The driver holds no document text: only the ids and lengths of all documents (a
:class:`ShardCatalog`). Stage by stage, like :meth:`Locator.locate_many`:

1. exact: every shard returns every occurrence of each text in its documents; the union,
   sorted by (document, start), is what the exact stage over the whole corpus finds (an
   occurrence lies inside one document, and the index and the scan both find all of them);
2. normalised: the same for the texts no shard found exactly, each occurrence with the
   confidence its slice would get, computed on the shard that holds it;
3. fuzzy: each shard returns, per text, how often each of its minimizers occurs in the
   shard's normalised index and the votes of those rare enough there; the driver adds the
   counts up (a minimizer too frequent in the whole corpus votes nowhere, as in one process),
   forms the regions exactly as the fuzzy stage does, and sends each region to its shard to
   be aligned; the scores compete on the driver. Short texts are aligned per document on
   every shard (within the ``fuzzy_scan_limit`` of the whole corpus).

Why the answer equals one process's: every step a shard takes depends on its own documents
only, and every step that compares documents (the stage reached, the candidates' order, the
tie-breaks, the vote threshold, the best score) runs on the driver over the union. The
indexes qualify as "its own documents only" by construction: no k-gram and no minimizer
window crosses a document boundary (:mod:`.index`), so a shard's exact index and normalised
view are the whole corpus's restricted to its documents — the same entries, the same hashes,
so the same counts summed over the shards (while the corpus has under 2**32 characters:
beyond, one process keeps fewer hash bits than a shard and the counts of colliding hashes
may differ).

Shard side: the ``shard_*`` functions, called on a :class:`Locator` over one shard's
documents. Driver side: :func:`locate_on_shards`, given a ``Broadcast`` that calls a
``shard_*`` function on every shard and returns their answers in shard order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from rapidfuzz import fuzz

from spanchor_core.locate.align import align_span
from spanchor_core.locate.context import SearchContext
from spanchor_core.locate.documents import CorpusTexts, Occurrence
from spanchor_core.locate.exact import exact_occurrences
from spanchor_core.locate.fuzzy import _MARGIN, _NOTHING, _regions, clusters_of, resolve_scored
from spanchor_core.locate.locator import Locator
from spanchor_core.locate.model import LocateRequest, Location, MatchStatus
from spanchor_core.locate.normalised import _NORMALISED_CAP, normalised_occurrences
from spanchor_core.locate.prepare import PreferCache, prepare
from spanchor_core.locate.resolve import Pending, choose, unmapped
from spanchor_core.locate.settings import LocatorSettings
from spanchor_core.locate.text import fold, normalise

__all__ = [
    "Broadcast",
    "Decide",
    "ShardCatalog",
    "Votes",
    "locate_on_shards",
    "needs_document",
    "shard_align",
    "shard_catalog",
    "shard_exact",
    "shard_fuzzy_scan",
    "shard_normalised",
    "shard_votes",
]

Found = tuple[str, int, int]
"""``(document id, start, end)``: an occurrence as a shard reports it."""
ScoredFound = tuple[float, str, int, int]
"""``(score, document id, start, end)``: an aligned place as a shard reports it."""
Votes = tuple[list[int], list[tuple[int, str, int]], dict[str, int], dict[tuple[str, int], int]]
"""A shard's votes for one text: minimizer counts, votes, voted documents' normalised
lengths, claimed places' normalised offsets (see :func:`shard_votes`)."""
Broadcast = Callable[[str, Any], list[Any]]
"""``broadcast(name, payload)``: ``shard_<name>(shard, payload)`` on every shard, in order."""
Decide = Callable[[list[tuple[int, str, LocateRequest]]], dict[int, Location]]
"""``decide([(slot, document id, request)])``: the locations the documents' shards decide
without search (:meth:`Locator.decide_without_search`), by slot; undecided slots left out."""


@dataclass(frozen=True, slots=True)
class ShardCatalog:
    """What the driver knows of a sharded corpus: every document's id and length, no text."""

    ids: tuple[str, ...]  # sorted, as CorpusTexts numbers them
    lengths: tuple[int, ...]
    number: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "number", {d: n for n, d in enumerate(self.ids)})

    @classmethod
    def merge(cls, parts: Sequence[tuple[Sequence[str], Sequence[int]]]) -> ShardCatalog:
        """The catalog of the whole corpus from each shard's ``(ids, lengths)``."""
        pairs = sorted((d, n) for ids, lengths in parts for d, n in zip(ids, lengths, strict=True))
        return cls(tuple(d for d, _ in pairs), tuple(n for _, n in pairs))

    @property
    def total(self) -> int:
        return sum(self.lengths)


class _Texts:
    """Stands in for :class:`CorpusTexts` on the driver: numbers, no texts.

    ``texts[d]`` is ``""``: :func:`prepare` only reads a text to verify offsets, and the
    driver prepares only results whose offsets their shard has already failed to verify."""

    def __init__(self, catalog: ShardCatalog) -> None:
        self.ids = list(catalog.ids)
        self.number = catalog.number
        self.texts = _Empty()


class _Empty:
    def __getitem__(self, doc: int) -> str:
        return ""


class _DriverView:
    """The parts of a normalised view the region choice reads, filled from shard answers."""

    def __init__(self) -> None:
        self.lengths: dict[int, int] = {}
        self.points: dict[tuple[int, int], int] = {}

    def to_normalised(self, doc: int, canonical: int) -> int:
        return self.points[(doc, canonical)]


@dataclass(slots=True)
class _DriverContext:
    """The parts of a :class:`SearchContext` the choosing rules read: ids and settings."""

    documents: _Texts
    settings: LocatorSettings


def shard_catalog(shard: Locator) -> tuple[list[str], list[int]]:
    """This shard's document ids and lengths."""
    docs = shard._ctx.documents
    return list(docs.ids), docs.lengths.tolist()


def needs_document(request: LocateRequest, catalog: ShardCatalog) -> str | None:
    """The document whose shard decides ``request`` without search (an explicit span, offsets
    to verify), or None: the driver prepares it and, if need be, searches every shard."""
    named = request.document_id
    if not isinstance(named, str) or named not in catalog.number:
        return None
    return named if request.text is None or request.start is not None else None


def locate_on_shards(
    requests: Sequence[LocateRequest],
    catalog: ShardCatalog,
    settings: LocatorSettings,
    decide: Decide,
    broadcast: Broadcast,
) -> list[Location]:
    """Every request's location, in order: equal to :meth:`Locator.locate_many` over the
    whole corpus (see the module docstring). A request of the wrong shape is an
    :class:`~spanchor_core.errors.InputError` before any shard is asked."""
    texts = _Texts(catalog)
    ctx = cast(SearchContext, _DriverContext(texts, settings))
    documents = cast(CorpusTexts, texts)
    prepared: list[Location | Pending] = []
    routed: list[tuple[int, str, LocateRequest]] = []
    prefer_cache: PreferCache = {}
    for slot, request in enumerate(requests):
        prepared.append(prepare(documents, slot, request, prefer_cache))  # checks each one
        named = needs_document(request, catalog)
        if named is not None:
            routed.append((slot, named, request))
    decided = decide(routed) if routed else {}
    results: list[Location | None] = [None] * len(requests)
    pending: list[Pending] = []
    for slot, outcome in enumerate(prepared):
        if slot in decided:
            results[slot] = decided[slot]
        elif isinstance(outcome, Location):
            results[slot] = outcome
        else:
            pending.append(outcome)
    if pending:
        pending = _exact(ctx, catalog, pending, results, broadcast)
    if pending:
        pending = _normalised(ctx, catalog, pending, results, broadcast)
    if pending:
        _fuzzy(ctx, catalog, pending, results, broadcast)
    done = [r for r in results if r is not None]
    if len(done) != len(requests):  # pragma: no cover - internal invariant
        raise RuntimeError("locate_on_shards left a request without a location")
    return done


def _merged(catalog: ShardCatalog, answers: list[list[list[Found]]], row: int) -> list[Occurrence]:
    number = catalog.number
    return sorted((number[d], s, e) for answer in answers for d, s, e in answer[row])


def _exact(
    ctx: SearchContext,
    catalog: ShardCatalog,
    pending: list[Pending],
    results: list[Location | None],
    broadcast: Broadcast,
) -> list[Pending]:
    answers = broadcast("exact", [job.text for job in pending])
    remaining = []
    for row, job in enumerate(pending):
        found = _merged(catalog, answers, row)
        if found:
            results[job.slot] = choose(ctx, job, found, MatchStatus.EXACT, 1.0, "text")
        else:
            remaining.append(job)
    return remaining


def _normalised(
    ctx: SearchContext,
    catalog: ShardCatalog,
    pending: list[Pending],
    results: list[Location | None],
    broadcast: Broadcast,
) -> list[Pending]:
    for job in pending:
        job.norm = normalise(job.text)
    answers = broadcast("normalised", [(job.text, job.norm) for job in pending])
    number = catalog.number
    remaining = []
    for row, job in enumerate(pending):
        scores: dict[Occurrence, float] = {}
        found: list[Occurrence] = []
        for answer in answers:
            for d, s, e, score in answer[row]:
                scores[(number[d], s, e)] = score
                found.append((number[d], s, e))
        if not found:
            remaining.append(job)
            continue
        found.sort()
        loc = choose(ctx, job, found, MatchStatus.NORMALISED, 1.0, "normalised text")
        chosen = (number[loc.document_id or ""], loc.start or 0, loc.end or 0)
        # as the normalised stage: the chosen slice's score, times 1 or 1 / n
        results[job.slot] = dataclasses.replace(loc, confidence=scores[chosen] * loc.confidence)
    return remaining


def _fuzzy(
    ctx: SearchContext,
    catalog: ShardCatalog,
    pending: list[Pending],
    results: list[Location | None],
    broadcast: Broadcast,
) -> None:
    settings = ctx.settings
    shortest = settings.min_indexed_length
    indexed: list[Pending] = []
    scan: list[Pending] = []
    for job in pending:
        if len(job.norm) < settings.fuzzy_min_chars:
            results[job.slot] = unmapped(
                job,
                f"not found, and under {settings.fuzzy_min_chars} characters: too short "
                "to match approximately",
            )
        elif len(job.norm) < shortest:
            scan.append(job)
        else:
            indexed.append(job)
    if scan:
        _fuzzy_scan(ctx, catalog, scan, results, broadcast)
    if indexed:
        _fuzzy_votes(ctx, catalog, indexed, results, broadcast)


def _fuzzy_scan(
    ctx: SearchContext,
    catalog: ShardCatalog,
    jobs: list[Pending],
    results: list[Location | None],
    broadcast: Broadcast,
) -> None:
    """:func:`~spanchor_core.locate.fuzzy._fuzzy_scan` with the documents on the shards."""
    settings = ctx.settings
    limit = settings.fuzzy_scan_limit
    asked: list[tuple[Pending, str | None]] = []
    for job in jobs:
        if catalog.total > limit:
            if job.doc is None or catalog.lengths[job.doc] > limit:
                results[job.slot] = unmapped(
                    job,
                    f"not found; approximate search for texts under "
                    f"{settings.min_indexed_length} characters is limited to {limit} "
                    "characters of corpus",
                )
                continue
            asked.append((job, catalog.ids[job.doc]))
        else:
            asked.append((job, None))
    if not asked:
        return
    cutoff = 100.0 * max(0.0, settings.fuzzy_threshold - settings.fuzzy_tie)
    answers = broadcast("fuzzy_scan", [(job.text.strip(), only, cutoff) for job, only in asked])
    for row, (job, _) in enumerate(asked):
        scored = [
            (sc, catalog.number[d], s, e) for answer in answers for sc, d, s, e in answer[row]
        ]
        if not scored:
            results[job.slot] = unmapped(
                job, "not found; no approximate match reaches the threshold"
            )
        else:
            results[job.slot] = resolve_scored(ctx, job, scored)


def _fuzzy_votes(
    ctx: SearchContext,
    catalog: ShardCatalog,
    jobs: list[Pending],
    results: list[Location | None],
    broadcast: Broadcast,
) -> None:
    """:func:`~spanchor_core.locate.fuzzy.fuzzy_stage` (indexed texts) with the votes counted
    on the shards and the regions aligned there."""
    ids, number = catalog.ids, catalog.number
    asked = [
        (
            job.norm,
            None if job.doc is None else ids[job.doc],
            job.hint_start,
            tuple((ids[d], s, e) for d, s, e in job.prefer),
        )
        for job in jobs
    ]
    answers = broadcast("votes", asked)
    view = _DriverView()
    max_occurrences = ctx.settings.max_occurrences
    work: list[tuple[Pending, int, list[tuple[str, int, int]]]] = []
    for row, job in enumerate(jobs):
        counts = np.sum([np.asarray(a[row][0], dtype=np.int64) for a in answers], axis=0)
        vote: list[tuple[int, int]] = []
        for answer in answers:
            _, hits, lengths, points = answer[row]
            for j, d, dg in hits:
                if counts[j] <= max_occurrences:
                    vote.append((number[d], dg))
            for d, n in lengths.items():
                view.lengths[number[d]] = n
            for (d, c), n in points.items():
                view.points[(number[d], c)] = n
        if not vote:
            results[job.slot] = unmapped(job, _NOTHING)
            continue
        regions = _regions(ctx, job, clusters_of(vote), cast(Any, view))
        margin = _MARGIN + min(len(job.norm) // 10, ctx.settings.window)
        work.append((job, margin, [(ids[d], lo, hi) for d, lo, hi in regions]))
    if not work:
        return
    aligned = broadcast("align", [(job.norm, margin, regions) for job, margin, regions in work])
    for row, (job, _, _) in enumerate(work):
        scored = [(sc, number[d], s, e) for answer in aligned for sc, d, s, e in answer[row]]
        results[job.slot] = resolve_scored(ctx, job, scored)


# --- the shard side -------------------------------------------------------------------------


def shard_exact(shard: Locator, texts: list[str]) -> list[list[Found]]:
    """Every occurrence of each (canonical) text in this shard, as the exact stage finds them."""
    ctx = shard._ctx
    found = exact_occurrences(ctx, texts)
    ids = ctx.documents.ids
    return [[(ids[d], s, e) for d, s, e in occ] for occ in found]


def shard_normalised(
    shard: Locator, jobs: list[tuple[str, str]]
) -> list[list[tuple[str, int, int, float]]]:
    """Every occurrence of each ``(text, normalised text)`` here, with the confidence of its
    slice (as the normalised stage scores the one it chooses)."""
    ctx = shard._ctx
    texts = ctx.documents.texts
    found = normalised_occurrences(ctx, [norm for _, norm in jobs])
    ids = ctx.documents.ids
    out = []
    for (text, _), occ in zip(jobs, found, strict=True):
        folded = fold(text.strip())
        out.append(
            [
                (
                    ids[d],
                    s,
                    e,
                    min(_NORMALISED_CAP, fuzz.ratio(folded, fold(texts[d][s:e])) / 100.0),
                )
                for d, s, e in occ
            ]
        )
    return out


def shard_votes(
    shard: Locator,
    jobs: list[tuple[str, str | None, int | None, tuple[Found, ...]]],
) -> list[Votes]:
    """For each ``(normalised text, named document, offset hint, gold spans)``: the count of
    each of its minimizers in this shard's normalised index, the votes ``(minimizer, document,
    local diagonal)`` of those that are rare enough here, the normalised length of every
    document voted for, and the normalised offsets of the claimed places in this shard."""
    ctx = shard._ctx
    documents = ctx.documents
    view = ctx.normalised_view()
    max_occurrences = ctx.settings.max_occurrences
    counts: list[list[int]] = [[] for _ in jobs]
    hits: list[list[tuple[int, str, int]]] = [[] for _ in jobs]
    for lo_row, rows, offs, keys in ctx.search.batched_minimizers([j[0] for j in jobs]):
        first, count = view.index.lookup(keys)
        # minimizer number j within its text: rows come out grouped and in order
        order = np.arange(len(rows)) - np.searchsorted(rows, rows, side="left")
        for row, n in zip(rows.tolist(), count.tolist(), strict=True):
            counts[lo_row + row].append(n)
        keep = np.flatnonzero((count > 0) & (count <= max_occurrences))
        pos, owner = view.index.positions(first[keep], count[keep])
        docs = np.searchsorted(view.starts, pos, side="right") - 1
        local_diag = pos - offs[keep][owner] - view.starts[docs]
        for row, j, doc, dg in zip(
            (lo_row + rows[keep][owner]).tolist(),
            order[keep][owner].tolist(),
            docs.tolist(),
            local_diag.tolist(),
            strict=True,
        ):
            hits[row].append((j, documents.ids[doc], dg))
    out = []
    for (_, named, hint, prefer), c, h in zip(jobs, counts, hits, strict=True):
        lengths = {d: int(view.lengths[documents.number[d]]) for _, d, _ in h}
        points: dict[tuple[str, int], int] = {}
        if named is not None and hint is not None and named in documents.number:
            points[(named, hint)] = view.to_normalised(documents.number[named], hint)
        for d, s, e in prefer:
            if d in documents.number:
                n = documents.number[d]
                points[(d, s)] = view.to_normalised(n, s)
                points[(d, e)] = view.to_normalised(n, e)
        out.append((c, h, lengths, points))
    return out


def shard_align(
    shard: Locator, jobs: list[tuple[str, int, list[tuple[str, int, int]]]]
) -> list[list[ScoredFound]]:
    """Align each normalised text in its regions ``(document, normalised lo, hi)`` that lie in
    this shard, widened by ``margin`` canonical characters (the fuzzy stage's alignment)."""
    ctx = shard._ctx
    documents = ctx.documents
    view = ctx.normalised_view()
    out = []
    for norm, margin, regions in jobs:
        scored: list[ScoredFound] = []
        for doc_id, lo, hi in regions:
            doc = documents.number.get(doc_id)
            if doc is None:
                continue
            source = documents.texts[doc]
            c_lo = max(0, view.to_canonical(source, doc, lo) - margin)
            c_hi = min(len(source), view.to_canonical(source, doc, hi - 1) + 1 + margin)
            found = align_span(ctx, norm, doc, c_lo, c_hi)
            if found is not None:
                scored.append((found[0], doc_id, found[1], found[2]))
        out.append(scored)
    return out


def shard_fuzzy_scan(
    shard: Locator, jobs: list[tuple[str, str | None, float]]
) -> list[list[ScoredFound]]:
    """Partial alignment of each short ``(text, only this document or None, cutoff)`` against
    the documents of this shard (the fuzzy stage's slow path)."""
    documents = shard._ctx.documents
    out = []
    for needle, only, cutoff in jobs:
        if only is None:
            docs: Sequence[int] = range(len(documents.texts))
        else:
            doc = documents.number.get(only)
            docs = [] if doc is None else [doc]
        scored: list[ScoredFound] = []
        for d in docs:
            al = fuzz.partial_ratio_alignment(needle, documents.texts[d], score_cutoff=cutoff)
            if al is not None:
                scored.append((al.score / 100.0, documents.ids[d], al.dest_start, al.dest_end))
        out.append(scored)
    return out
