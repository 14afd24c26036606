"""The fuzzy stage: text a pipeline altered, placed by approximate alignment (``FUZZY``).

Long texts vote with all their minimizers in the normalised view; the votes fall into regions
(runs of nearby diagonals in one document), and every region with at least half the votes of
the best one is aligned, so that copies and near-copies of the text compete on their scores.
Short texts are aligned against whole documents with ``partial_ratio_alignment``, only while
the corpus is small; texts under ``fuzzy_min_chars`` are not matched approximately at all.
The best score wins; every place within ``fuzzy_tie`` of it is equally good, and those are
resolved by the rules of exact matches (:func:`~spanchor_core.locate.resolve.choose`).
Everything this stage cannot place is ``UNMAPPED`` with a reason.
"""

from __future__ import annotations

from typing import Final, Protocol

import numpy as np
from rapidfuzz import fuzz

from spanchor_core.locate.align import align_normalised
from spanchor_core.locate.context import SearchContext
from spanchor_core.locate.documents import Occurrence
from spanchor_core.locate.hashing import I64, U64
from spanchor_core.locate.model import Location, MatchStatus
from spanchor_core.locate.normalised_view import CHECKPOINT, NormalisedView
from spanchor_core.locate.resolve import Pending, choose, unmapped
from spanchor_core.locate.windows import RegionWindows, normalised_points, region_windows

__all__ = ["fuzzy_stage", "resolve_scored"]

_MARGIN: Final = 16  # canonical characters added on each side of a voted region
_DIAGONAL_GAP: Final = 64  # votes whose diagonals differ by more belong to different regions
_SPARSE_VOTES: Final = 2  # a best region this thin is weak evidence: align at most two regions
_NOTHING: Final = "not found, and no part of it matches the corpus"
_LOOKUP_KEYS: Final = 1 << 15  # minimizers looked up together (a few MB of arrays)
_GROUP_CHARS: Final = 1 << 18  # text characters per group: their windows are normalised together

Scored = tuple[float, int, int, int]
"""``(score, document number, start, end)`` of one aligned place."""
Cluster = tuple[int, int, int, int]
"""``(document number, lowest local diagonal, highest, votes)``: one text's run of votes."""


class Offsets(Protocol):
    """What choosing regions reads of a normalised view (:class:`NormalisedView` has it)."""

    @property
    def lengths(self) -> I64: ...

    def to_normalised(self, doc: int, canonical: int) -> int: ...


def fuzzy_stage(
    ctx: SearchContext, pending: list[Pending], results: list[Location | None]
) -> list[Pending]:
    """Give every job a final location (``FUZZY``, ``AMBIGUOUS`` or ``UNMAPPED``)."""
    settings = ctx.settings
    shortest = settings.min_indexed_length
    indexed: list[Pending] = []
    for job in pending:
        if len(job.norm) < settings.fuzzy_min_chars:
            results[job.slot] = unmapped(
                job,
                f"not found, and under {settings.fuzzy_min_chars} characters: too short "
                "to match approximately",
            )
        elif len(job.norm) < shortest:
            results[job.slot] = _fuzzy_scan(ctx, job)
        else:
            indexed.append(job)
    if not indexed:
        return []
    # texts of like length share a batch of padded rows (less padding hashed); each text's
    # votes come from its own row, so the order changes no result
    indexed.sort(key=lambda job: len(job.norm))
    view = ctx.normalised_view()
    clusters = _votes(ctx, view, [j.norm for j in indexed])
    group: list[tuple[Pending, list[Cluster]]] = []
    size = 0
    for job, found in zip(indexed, clusters, strict=True):
        if not found:
            results[job.slot] = unmapped(job, _NOTHING)
            continue
        group.append((job, found))
        size += len(job.norm)
        if size >= _GROUP_CHARS:
            _align_group(ctx, group, view, results)
            group, size = [], 0
    if group:
        _align_group(ctx, group, view, results)
    return []


def _votes(ctx: SearchContext, view: NormalisedView, texts: list[str]) -> list[list[Cluster]]:
    """The clusters of votes of each text (:func:`_add_clusters`).

    The minimizers of many batches of texts are looked up together: sorted keys that lie
    close together in the index make its binary searches walk memory in order, which is
    most of what a lookup costs.
    """
    max_occurrences = ctx.settings.max_occurrences
    clusters: list[list[Cluster]] = [[] for _ in texts]
    parts: list[tuple[I64, I64, U64]] = []
    held = 0

    def vote() -> None:
        rows = np.concatenate([p[0] for p in parts])
        offs = np.concatenate([p[1] for p in parts])
        first, count = view.index.lookup(np.concatenate([p[2] for p in parts]))
        parts.clear()
        keep = np.flatnonzero((count > 0) & (count <= max_occurrences))
        pos, owner = view.index.positions(first[keep], count[keep])
        docs = np.searchsorted(view.starts, pos, side="right") - 1
        local_diag = pos - offs[keep][owner] - view.starts[docs]
        _add_clusters(clusters, 0, rows[keep][owner], docs, local_diag)

    for lo_row, rows, offs, keys in ctx.search.batched_minimizers(texts):
        parts.append((rows + lo_row, offs, keys))
        held += len(keys)
        if held >= _LOOKUP_KEYS:
            vote()
            held = 0
    if parts:
        vote()
    return clusters


def _add_clusters(
    clusters: list[list[Cluster]], lo_row: int, rows: I64, docs: I64, diagonals: I64
) -> None:
    """Group the votes ``(row, document, local diagonal)`` of one batch of texts into the
    clusters of each text ``lo_row + row``, in ``(document, diagonal)`` order.

    A cluster is a run of one text's votes in one document whose sorted diagonals are at
    most ``_DIAGONAL_GAP`` apart; done for the whole batch at once, so no vote becomes a
    Python object.
    """
    if not len(rows):
        return
    order = _vote_order(rows, docs, diagonals)
    rows, docs, diagonals = rows[order], docs[order], diagonals[order]
    new = np.ones(len(rows), dtype=np.bool_)
    new[1:] = (
        (rows[1:] != rows[:-1])
        | (docs[1:] != docs[:-1])
        | (diagonals[1:] - diagonals[:-1] > _DIAGONAL_GAP)
    )
    heads = np.flatnonzero(new)
    tails = np.append(heads[1:], len(rows))
    for row, doc, lo, hi, count in zip(
        (rows[heads] + lo_row).tolist(),
        docs[heads].tolist(),
        diagonals[heads].tolist(),
        diagonals[tails - 1].tolist(),
        (tails - heads).tolist(),
        strict=True,
    ):
        clusters[row].append((doc, lo, hi, count))


def _vote_order(rows: I64, docs: I64, diagonals: I64) -> I64:
    """The order that sorts the votes by ``(row, document, diagonal)``: one sort of the three
    packed into one integer, when they fit in 62 bits (always, in practice; a sixth of the
    cost of ``np.lexsort``, which sorts once per key), else ``np.lexsort``. Votes with equal
    keys are equal, so the sorted votes are the same either way."""
    lows = [int(a.min()) for a in (rows, docs, diagonals)]
    spans = [int(a.max()) - low + 1 for a, low in zip((rows, docs, diagonals), lows, strict=True)]
    if spans[0] * spans[1] * spans[2] >= 1 << 62:
        order: I64 = np.lexsort((diagonals, docs, rows))
        return order
    key = (rows - lows[0]) * spans[1] + (docs - lows[1])
    key *= spans[2]
    key += diagonals - lows[2]
    packed: I64 = np.argsort(key, kind="stable")
    return packed


def clusters_of(vote: list[tuple[int, int]]) -> list[Cluster]:
    """The clusters of one text's votes ``(document, local diagonal)``, exactly as
    :func:`_add_clusters` groups a batch: for a driver that gathers the votes of several
    shards (:mod:`.reduce`) and has a text's few tens of votes, in plain Python."""
    clusters: list[Cluster] = []
    if not vote:
        return clusters
    ordered = sorted(vote)
    doc, lo = ordered[0]
    hi, count = lo, 0
    for d, dg in ordered:
        if d != doc or dg - hi > _DIAGONAL_GAP:
            clusters.append((doc, lo, hi, count))
            doc, lo, count = d, dg, 0
        hi = dg
        count += 1
    clusters.append((doc, lo, hi, count))
    return clusters


def _regions(
    ctx: SearchContext, job: Pending, clusters: list[Cluster], view: Offsets
) -> list[tuple[int, int, int]]:
    """The voted regions worth aligning, as ``(doc, normalised lo, normalised hi)``.

    ``clusters`` are the text's runs of votes (:func:`_add_clusters`), in ``(document,
    diagonal)`` order.
    """
    n = len(job.norm)
    if len(clusters) == 1:  # the common case: one run of votes, aligned whatever is claimed
        doc, lo, hi, _ = clusters[0]
        lo, hi = max(0, lo), min(int(view.lengths[doc]), hi + n)
        return [(doc, lo, hi)] if hi > lo else []
    chosen, claimable = _voted(ctx, job, clusters)
    return _places(job, clusters, view, chosen, claimable)


def _voted(ctx: SearchContext, job: Pending, clusters: list[Cluster]) -> tuple[list[int], bool]:
    """The clusters (two or more) chosen by their votes, and whether a claim of the request
    could add another: :func:`_claimed` names only clusters in the named document or in a
    gold span's, so when all of those are chosen already, it adds nothing (most texts: their
    claims point at the run of votes chosen anyway), and its offsets need not be found."""
    best = max(c[3] for c in clusters)
    # most votes first, then position: the order only matters when the list is cut
    keep = sorted(
        (i for i, c in enumerate(clusters) if 2 * c[3] >= best),
        key=lambda i: (-clusters[i][3], i),
    )
    chosen = keep[: 2 if best <= _SPARSE_VOTES else ctx.settings.max_candidates]
    if (job.doc is None and not job.prefer) or len(chosen) == len(clusters):
        return chosen, False
    claimed = {d for d, _, _ in job.prefer}
    if job.doc is not None:
        claimed.add(job.doc)
    picked = set(chosen)
    return chosen, any(c[0] in claimed and i not in picked for i, c in enumerate(clusters))


def _places(
    job: Pending,
    clusters: list[Cluster],
    view: Offsets,
    chosen: list[int],
    claimable: bool,
) -> list[tuple[int, int, int]]:
    """The regions of the ``chosen`` clusters and of those the request claims (when
    ``claimable``, :func:`_voted`), each once, in that order."""
    # the places a document id, an offset hint or the gold point at always compete, however
    # few votes reach them (a copy's edge minimizers depend on the text around it); places
    # are compared in normalised offsets, the claims' rounded down to a checkpoint
    if claimable:
        chosen = chosen + _claimed(job, clusters, view)
    n = len(job.norm)
    regions: list[tuple[int, int, int]] = []
    for i in dict.fromkeys(chosen):
        doc, lo, hi, _ = clusters[i]
        lo, hi = max(0, lo), min(int(view.lengths[doc]), hi + n)
        if hi > lo:
            regions.append((doc, lo, hi))
    return regions


def _claimed(job: Pending, clusters: list[Cluster], view: Offsets) -> list[int]:
    """Clusters the request points at: the named document's best one, the one nearest the
    hint, the best one overlapping each gold span."""
    n = len(job.norm)
    out: list[int] = []
    if job.doc is not None:
        inside = [i for i, c in enumerate(clusters) if c[0] == job.doc]
        if inside:
            out.append(max(inside, key=lambda i: clusters[i][3]))
            if job.hint_start is not None:
                at = view.to_normalised(job.doc, job.hint_start)
                out.append(min(inside, key=lambda i: abs(clusters[i][1] - at)))
    for doc, g_lo, g_hi in job.prefer:
        n_lo = view.to_normalised(doc, g_lo)
        n_hi = view.to_normalised(doc, g_hi) + CHECKPOINT
        hits = [
            i
            for i, (d, lo, hi, _) in enumerate(clusters)
            if d == doc and lo < n_hi and n_lo < hi + n
        ]
        if hits:
            out.append(max(hits, key=lambda i: clusters[i][3]))
    return out


class _Claims:
    """What :func:`_regions` reads of the normalised view, with the normalised offsets of the
    places some texts of a group claim (those whose claims could add a region, :func:`_voted`)
    found together (:func:`normalised_points`)."""

    def __init__(self, view: NormalisedView, jobs: list[Pending]) -> None:
        self.lengths = view.lengths
        wanted: list[tuple[int, int]] = []
        for job in jobs:
            if job.doc is not None and job.hint_start is not None:
                wanted.append((job.doc, job.hint_start))
            for doc, start, end in job.prefer:
                wanted.append((doc, start))
                wanted.append((doc, end))
        found = normalised_points(view, [d for d, _ in wanted], [c for _, c in wanted])
        self._points = dict(zip(wanted, found, strict=True))

    def to_normalised(self, doc: int, canonical: int) -> int:
        return self._points[(doc, canonical)]


def _align_group(
    ctx: SearchContext,
    group: list[tuple[Pending, list[Cluster]]],
    view: NormalisedView,
    results: list[Location | None],
) -> None:
    """Align every voted region worth it of each text of ``group`` and let the scores
    compete; the windows of the whole group are found together (:func:`region_windows`)."""
    window = ctx.settings.window
    # texts with several runs of votes: the runs their votes choose first, then the claimed
    # offsets of those whose claims could add one, found together
    voted: dict[int, tuple[list[int], bool]] = {}
    for i, (job, clusters) in enumerate(group):
        if len(clusters) > 1:
            voted[i] = _voted(ctx, job, clusters)
    claims = _Claims(view, [group[i][0] for i, (_, claimable) in voted.items() if claimable])
    docs: list[int] = []
    los: list[int] = []
    his: list[int] = []
    margins: list[int] = []
    counts: list[int] = []  # regions of each text
    norms: list[str] = []  # the text of each region
    lengths = view.lengths
    for g, (job, clusters) in enumerate(group):
        n = len(job.norm)
        # markup and dropped words before the first (after the last) minimizer move the
        # true edges
        margin = _MARGIN + min(n // 10, window)
        if len(clusters) == 1:  # the common case, as _regions has it, without its lists
            doc, lo, hi, _ = clusters[0]
            lo, hi = max(0, lo), min(int(lengths[doc]), hi + n)
            if hi > lo:
                docs.append(doc)
                los.append(lo)
                his.append(hi)
                margins.append(margin)
                norms.append(job.norm)
                counts.append(1)
            else:
                counts.append(0)
            continue
        regions = _places(job, clusters, claims, *voted[g])
        for doc, lo, hi in regions:
            docs.append(doc)
            los.append(lo)
            his.append(hi)
            margins.append(margin)
            norms.append(job.norm)
        counts.append(len(regions))
    windows = region_windows(
        view,
        ctx.documents,
        np.array(docs, dtype=np.int64),
        np.array(los, dtype=np.int64),
        np.array(his, dtype=np.int64),
        np.array(margins, dtype=np.int64),
    )
    text, starts, ends = windows.text, windows.lo, windows.hi
    threshold = ctx.settings.fuzzy_threshold
    # every window aligned in normalised offsets first; the spans found are mapped back to
    # canonical offsets in one numpy gather (no slice of ``kept`` and two scalar reads each)
    aligned = [
        align_normalised(norm, text[a:b], threshold)
        for norm, a, b in zip(norms, starts, ends, strict=True)
    ]
    c_lo, c_hi = _canonical_spans(windows, aligned)
    w = 0
    for (job, _), count in zip(group, counts, strict=True):
        if count == 1:  # one place aligned: resolve_scored's common case, without its lists
            found = aligned[w]
            if found is not None and found[0] >= threshold:
                results[job.slot] = choose(
                    ctx,
                    job,
                    [(docs[w], c_lo[w], c_hi[w])],
                    MatchStatus.FUZZY,
                    found[0],
                    "approximate text",
                )
            else:
                weak: list[Scored] = (
                    [] if found is None else [(found[0], docs[w], c_lo[w], c_hi[w])]
                )
                results[job.slot] = resolve_scored(ctx, job, weak)
            w += 1
            continue
        scored: list[Scored] = []
        for i in range(w, w + count):
            found = aligned[i]
            if found is not None:
                scored.append((found[0], docs[i], c_lo[i], c_hi[i]))
        w += count
        results[job.slot] = resolve_scored(ctx, job, scored)


def _canonical_spans(
    windows: RegionWindows, aligned: list[tuple[float, int, int] | None]
) -> tuple[list[int], list[int]]:
    """The canonical ``[start, end)`` of each window's aligned span ``(score, lo, hi)`` (0
    where nothing aligned): ``origin + kept[lo]`` and ``origin + kept[hi - 1] + 1`` of its
    window, as :func:`~spanchor_core.locate.align.align_window` gives them, for all windows
    in one gather."""
    starts = windows.lo
    first = [0 if f is None else a + f[1] for a, f in zip(starts, aligned, strict=True)]
    last = [0 if f is None else a + f[2] - 1 for a, f in zip(starts, aligned, strict=True)]
    kept, origin = windows.kept, np.array(windows.origin, dtype=np.int64)
    c_lo: list[int] = (kept[first] + origin).tolist()
    c_hi: list[int] = (kept[last] + origin + 1).tolist()
    return c_lo, c_hi


def resolve_scored(ctx: SearchContext, job: Pending, scored: list[Scored]) -> Location:
    """The best-scoring place wins; places within ``fuzzy_tie`` of it are equally good and
    resolved like exact occurrences. Below ``fuzzy_threshold``: ``UNMAPPED``."""
    if not scored:
        return unmapped(job, "no alignment with the candidate regions")
    threshold = ctx.settings.fuzzy_threshold
    if len(scored) == 1 and scored[0][0] >= threshold:  # the common case: one place
        score, doc, start, end = scored[0]
        return choose(ctx, job, [(doc, start, end)], MatchStatus.FUZZY, score, "approximate text")
    best = max(scored)
    if best[0] < threshold:
        score, doc, start, end = best
        return unmapped(
            job,
            f"best approximate match {ctx.documents.ids[doc]}[{start}:{end}] scored "
            f"{score:.3f}, below the threshold {threshold}",
        )
    floor = max(threshold, best[0] - ctx.settings.fuzzy_tie)
    places: list[Scored] = []
    # best first, so that of two overlapping alignments the better one is kept
    for cand in sorted(scored, key=lambda c: (-c[0], c[1], c[2])):
        score, doc, start, end = cand
        if score < floor:
            break
        if not any(d == doc and s < end and start < e for _, d, s, e in places):
            places.append(cand)
    found: list[Occurrence] = sorted((d, s, e) for _, d, s, e in places)
    return choose(ctx, job, found, MatchStatus.FUZZY, best[0], "approximate text")


def _fuzzy_scan(ctx: SearchContext, job: Pending) -> Location:
    """Slow path for short texts: rapidfuzz partial alignment per document, size-capped."""
    texts = ctx.documents.texts
    settings = ctx.settings
    docs = range(len(texts))
    if ctx.documents.total > settings.fuzzy_scan_limit:
        if job.doc is None or len(texts[job.doc]) > settings.fuzzy_scan_limit:
            return unmapped(
                job,
                f"not found; approximate search for texts under {settings.min_indexed_length} "
                f"characters is limited to {settings.fuzzy_scan_limit} characters of corpus",
            )
        docs = range(job.doc, job.doc + 1)
    needle = job.text.strip()
    cutoff = 100.0 * max(0.0, settings.fuzzy_threshold - settings.fuzzy_tie)
    scored: list[Scored] = []
    for d in docs:
        al = fuzz.partial_ratio_alignment(needle, texts[d], score_cutoff=cutoff)
        if al is not None:
            scored.append((al.score / 100.0, d, al.dest_start, al.dest_end))
    if not scored:
        return unmapped(job, "not found; no approximate match reaches the threshold")
    return resolve_scored(ctx, job, scored)
