"""Every value of a metric plan for many ranked lists at once: :func:`score_columns`.

The same values, bit for bit, as :func:`~spanchor_core.metrics.score_ranked` for each list (and
so as ``apply_plan(measure_coverage(...))``), computed with numpy across lists instead of one
Python walk per list: a 10,000-query evaluation spent most of its scoring time in that walk.

How, for a group of lists padded to the same length ``N`` (and ``M`` anchors): the documents
are laid end to end (``code * width + offset``) so that one list's spans and anchors are
intervals on one line, their end points cut the line into elementary segments, and every
segment is either wholly inside or wholly outside each span and each anchor. A segment's
*first rank* is the first result covering it; the characters covered after rank ``i`` are the
segments with first rank ``<= i``. That gives every integer of the walk — gold and retrieved
characters covered, per-anchor coverage, results that added characters — exactly, as integer
sums. The floats are then made from those integers by the walk's own operations in the walk's
own order (the same divisions, the same running sums rank by rank, the discounts from
``math.log2``), so no value changes. A padded slot is an empty result: it adds nothing and
changes no running value (``x + 0.0 == x``), so a short list reads its last state at any
cutoff past its end, as the walk does.

Lists longer than :data:`_MAX_RESULTS` results, gold of more than :data:`_MAX_ANCHORS`
anchors, or a plan holding a function other than the built-in ones are scored one list at a
time by :func:`~spanchor_core.metrics.score_ranked`, as before.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from spanchor_core.metrics.compute import MetricPlan
from spanchor_core.metrics.coverage import _validate_gold
from spanchor_core.metrics.fused import (
    _AP,
    _FULL,
    _HIT,
    _IOU,
    _MRR,
    _NDCG,
    _PRECISION,
    _RECALL,
    _RETRIEVED,
    _UNMAPPED,
    _compile,
    score_ranked,
)
from spanchor_core.spans import DocSpan, union_spans

__all__ = ["RankedColumns", "score_columns", "score_many"]

_Ints = npt.NDArray[np.int64]
_Floats = npt.NDArray[np.float64]
_Array = npt.NDArray[Any]

_MAX_RESULTS = 64
"""Longer lists are scored one at a time: the padded arrays grow as results squared."""
_MAX_ANCHORS = 16
_CELLS = 100_000
"""Segments x slots per chunk of a group: keeps the temporaries to a few MB (6.3 MiB at
10,000 lists of 10 results, against 8.9 at 250,000: scoring sets the peak of a large
evaluation; 0.03-0.05 s more CPU there)."""


class RankedColumns(NamedTuple):
    """Ranked lists, column by column: list ``q`` holds results ``offsets[q]:offsets[q + 1]``
    of ``documents`` (a document code, ``-1``: no span — an unmapped result keeping its slot),
    ``starts`` and ``ends``. Codes are those of :func:`score_columns`'s ``codes``."""

    offsets: _Ints
    documents: _Ints
    starts: _Ints
    ends: _Ints


def _bucket(count: int, exact: int) -> int:
    """Pad ``count`` to itself up to ``exact``, else to the next power of two."""
    if count <= exact:
        return count
    return 1 << (count - 1).bit_length()


def _ideal(pieces: tuple[int, ...], gold_chars: int, k: int) -> float:
    """``IDCG@k``, as :meth:`~spanchor_core.metrics.RankedCoverage.ideal_dcg` sums it."""
    return sum(
        length / gold_chars / math.log2(rank + 1) for rank, length in enumerate(pieces[:k], start=1)
    )


def _ideal_cached(
    pieces: tuple[int, ...],
    gold_chars: int,
    k: int,
    cache: dict[tuple[tuple[int, ...], int, int], float],
) -> float:
    """:func:`_ideal`, once per distinct gold shape (every cutoff past the pieces is one)."""
    key = (pieces, gold_chars, min(k, len(pieces)))
    found = cache.get(key)
    if found is None:
        found = cache[key] = _ideal(pieces, gold_chars, k)
    return found


def _pieces(gold: Sequence[DocSpan]) -> tuple[int, ...]:
    """Lengths of the maximal pieces of the gold union, largest first."""
    if len(gold) == 1:
        return (gold[0][2] - gold[0][1],)
    by_doc: dict[str, list[tuple[int, int]]] = {}
    for doc, start, end in gold:
        by_doc.setdefault(doc, []).append((start, end))
    return tuple(
        sorted(
            (end - start for spans in by_doc.values() for start, end in union_spans(spans)),
            reverse=True,
        )
    )


def score_many(
    golds: Sequence[Sequence[DocSpan]],
    rankeds: Sequence[Sequence[DocSpan | None]],
    plan: MetricPlan,
    overlap: float,
) -> list[dict[str, float]]:
    """``[score_ranked(g, r, plan, overlap) for g, r in zip(golds, rankeds)]``, vectorised."""
    codes: dict[str, int] = {}
    documents: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    offsets = [0]
    for ranked in rankeds:
        for item in ranked:
            if item is None:
                documents.append(-1)
                starts.append(0)
                ends.append(0)
            else:
                documents.append(codes.setdefault(item[0], len(codes)))
                starts.append(item[1])
                ends.append(item[2])
        offsets.append(len(documents))
    columns = RankedColumns(
        np.array(offsets, dtype=np.int64),
        np.array(documents, dtype=np.int64),
        np.array(starts, dtype=np.int64),
        np.array(ends, dtype=np.int64),
    )
    names = [name for name, _, _ in plan]
    values = score_columns(golds, columns, codes, plan, overlap)
    return [dict(zip(names, row, strict=True)) for row in values.tolist()]


def score_columns(
    golds: Sequence[Sequence[DocSpan]],
    ranked: RankedColumns,
    codes: Mapping[str, int],
    plan: MetricPlan,
    overlap: float,
) -> _Floats:
    """The plan's values for every list: row ``q`` is ``score_ranked(golds[q], list q)``'s
    values in plan order (a ``(lists, entries)`` float array).

    ``codes`` maps the document ids of ``golds`` that also occur in ``ranked`` to their codes
    (gold in other documents needs none). Gold is checked as :func:`score_ranked` checks it,
    the first bad list in order raising the same :class:`~spanchor_core.errors.InputError`.
    """
    entries, needs_record = _compile(plan)
    n_lists = len(golds)
    out = np.zeros((n_lists, len(entries)), dtype=np.float64)
    if n_lists == 0:
        return out
    for gold in golds:  # the walk's checks, in list order (a few tuple reads per list)
        if not gold or any(end <= start for _, start, end in gold):
            _validate_gold(gold)
    lengths = np.diff(ranked.offsets)
    if needs_record:
        _one_by_one(golds, ranked, codes, plan, overlap, range(n_lists), out)
        return out
    # gold, column by column; documents without a result get codes of their own
    gold_codes = dict(codes)
    next_code = 1 + max(max(codes.values(), default=-1), int(ranked.documents.max(initial=-1)))
    g_docs: list[int] = []
    g_starts: list[int] = []
    g_ends: list[int] = []
    g_offsets = [0]
    for gold in golds:
        for doc, start, end in gold:
            code = gold_codes.get(doc)
            if code is None:
                code = gold_codes[doc] = next_code
                next_code += 1
            g_docs.append(code)
            g_starts.append(start)
            g_ends.append(end)
        g_offsets.append(len(g_docs))
    gold_columns = RankedColumns(
        np.array(g_offsets, dtype=np.int64),
        np.array(g_docs, dtype=np.int64),
        np.array(g_starts, dtype=np.int64),
        np.array(g_ends, dtype=np.int64),
    )
    anchors = np.diff(gold_columns.offsets)
    width = 1 + max(
        int(ranked.ends.max(initial=0)),
        int(ranked.starts.max(initial=0)),
        int(gold_columns.ends.max()),
    )
    lowest = min(int(ranked.starts.min(initial=0)), int(gold_columns.starts.min()))
    if lowest < 0 or width * (next_code + 1) >= 2**62:
        _one_by_one(golds, ranked, codes, plan, overlap, range(n_lists), out)
        return out
    groups: dict[tuple[int, int], list[int]] = {}
    slow: list[int] = []
    for q, (n, m) in enumerate(zip(lengths.tolist(), anchors.tolist(), strict=True)):
        if n > _MAX_RESULTS or m > _MAX_ANCHORS:
            slow.append(q)
        else:
            groups.setdefault((_bucket(n, 16), _bucket(m, 4)), []).append(q)
    pieces_cache: dict[tuple[DocSpan, ...], tuple[int, ...]] = {}
    for (n_slots, m_slots), members in groups.items():
        segments = 2 * (max(n_slots, 1) + m_slots)
        per_chunk = max(1, _CELLS // (segments * (n_slots + 2)))
        for first in range(0, len(members), per_chunk):
            index = np.array(members[first : first + per_chunk], dtype=np.int64)
            out[index] = _score_group(
                [golds[q] for q in index.tolist()],
                ranked,
                gold_columns,
                index,
                max(n_slots, 1),
                m_slots,
                width,
                entries,
                overlap,
                pieces_cache,
            )
    if slow:
        _one_by_one(golds, ranked, codes, plan, overlap, slow, out)
    return out


def _one_by_one(
    golds: Sequence[Sequence[DocSpan]],
    ranked: RankedColumns,
    codes: Mapping[str, int],
    plan: MetricPlan,
    overlap: float,
    lists: Sequence[int],
    out: _Floats,
) -> None:
    """The lists ``lists`` scored by :func:`score_ranked`, into their rows of ``out``."""
    names = {code: doc for doc, code in codes.items()}
    offsets = ranked.offsets.tolist()
    documents, starts, ends = (
        ranked.documents.tolist(),
        ranked.starts.tolist(),
        ranked.ends.tolist(),
    )
    for q in lists:
        spans = [
            None if documents[i] < 0 else DocSpan(names[documents[i]], starts[i], ends[i])
            for i in range(offsets[q], offsets[q + 1])
        ]
        out[q] = list(score_ranked(golds[q], spans, plan, overlap).values())


def _padded(columns: RankedColumns, index: _Ints, slots: int) -> tuple[_Array, ...]:
    """``(real, documents, starts, ends)`` of lists ``index``, padded to ``slots`` columns."""
    base = columns.offsets[index]
    count = columns.offsets[index + 1] - base
    position = np.arange(slots, dtype=np.int64)
    real = position[None, :] < count[:, None]
    where = np.where(real, base[:, None] + position[None, :], 0)
    total = len(columns.documents)
    if total == 0:
        zeros = np.zeros(real.shape, dtype=np.int64)
        return real, zeros - 1, zeros, zeros
    where = np.minimum(where, total - 1)
    documents = np.where(real, columns.documents[where], -1)
    starts = np.where(real, columns.starts[where], 0)
    ends = np.where(real, columns.ends[where], 0)
    return real, documents, starts, ends


_LOG2: list[float] = [math.log2(rank + 1) for rank in range(_MAX_RESULTS + 2)]


def _score_group(
    golds: Sequence[Sequence[DocSpan]],
    ranked: RankedColumns,
    gold_columns: RankedColumns,
    index: _Ints,
    n_slots: int,
    m_slots: int,
    width: int,
    entries: tuple[tuple[str, int, int | None, object], ...],
    overlap: float,
    pieces_cache: dict[tuple[DocSpan, ...], tuple[int, ...]],
) -> _Floats:
    """The values of lists ``index`` (at most ``n_slots`` results and ``m_slots`` anchors)."""
    q_count = len(index)
    real, r_docs, r_starts, r_ends = _padded(ranked, index, n_slots)
    mapped = real & (r_docs >= 0)
    unmapped_item = real & (r_docs < 0)
    valid = mapped & (r_ends > r_starts)
    r_lo = np.where(valid, r_docs * width + r_starts, 0)
    r_hi = np.where(valid, r_docs * width + r_ends, 0)
    g_real, g_docs, g_starts, g_ends = _padded(gold_columns, index, m_slots)
    g_lo = np.where(g_real, g_docs * width + g_starts, 0)
    g_hi = np.where(g_real, g_docs * width + g_ends, 0)

    points = np.sort(np.concatenate([r_lo, r_hi, g_lo, g_hi], axis=1), axis=1)
    lo, hi = points[:, :-1], points[:, 1:]
    seg_len = hi - lo
    covers = (
        valid[:, None, :]
        & (r_lo[:, None, :] <= lo[:, :, None])
        & (hi[:, :, None] <= r_hi[:, None, :])
    )
    first_rank = np.where(covers.any(axis=2), covers.argmax(axis=2) + 1, n_slots + 1)
    in_anchor = (
        g_real[:, None, :]
        & (g_lo[:, None, :] <= lo[:, :, None])
        & (hi[:, :, None] <= g_hi[:, None, :])
    )
    in_gold = in_anchor.any(axis=2)
    # what each rank adds: segments by first rank (column 0 stays empty), then running sums
    at_rank = (first_rank[:, :, None] == np.arange(n_slots + 2)[None, None, :]).astype(np.int64)
    retrieved_new = np.einsum("qs,qsr->qr", seg_len, at_rank)[:, : n_slots + 1]
    covered_new = np.einsum("qs,qsr->qr", seg_len * in_gold, at_rank)[:, : n_slots + 1]
    anchor_new = np.einsum("qsj,qsr->qrj", seg_len[:, :, None] * in_anchor, at_rank)
    covered = np.cumsum(covered_new, axis=1)
    retrieved = np.cumsum(retrieved_new, axis=1)
    anchor_covered = np.cumsum(anchor_new[:, : n_slots + 1, :], axis=1)
    zero = np.zeros((q_count, 1), dtype=np.int64)
    adding = np.cumsum(np.concatenate([zero, retrieved_new[:, 1:] > 0], axis=1), axis=1)
    unmapped = np.cumsum(np.concatenate([zero, unmapped_item], axis=1), axis=1)
    gold_chars = (seg_len * in_gold).sum(axis=1)
    touches = np.any(
        valid[:, :, None]
        & g_real[:, None, :]
        & (
            np.minimum(r_hi[:, :, None], g_hi[:, None, :])
            > np.maximum(r_lo[:, :, None], g_lo[:, None, :])
        ),
        axis=2,
    )
    first_overlap = np.where(touches.any(axis=1), touches.argmax(axis=1) + 1, 0)

    dcg = np.zeros((q_count, n_slots + 1), dtype=np.float64)
    ap = np.zeros((q_count, n_slots + 1), dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        for rank in range(1, n_slots + 1):
            gain = covered_new[:, rank] / gold_chars
            dcg[:, rank] = dcg[:, rank - 1] + gain / _LOG2[rank]
            here = _precision(
                covered[:, rank], retrieved[:, rank], adding[:, rank], unmapped[:, rank]
            )
            ap[:, rank] = ap[:, rank - 1] + here * gain

        n_results = real.sum(axis=1)
        anchor_lengths = np.where(g_real, g_ends - g_starts, 1)
        out = np.empty((q_count, len(entries)), dtype=np.float64)
        pieces: list[tuple[int, ...]] | None = None
        ideal: dict[tuple[tuple[int, ...], int, int], float] = {}
        for column, (_, code, cutoff, _) in enumerate(entries):
            i = n_slots if cutoff is None else min(cutoff, n_slots)
            if code == _RECALL:
                out[:, column] = covered[:, i] / gold_chars
            elif code == _PRECISION:
                out[:, column] = _precision(
                    covered[:, i], retrieved[:, i], adding[:, i], unmapped[:, i]
                )
            elif code in (_HIT, _FULL):
                state = anchor_covered[:, i, :]
                met = (state > 0) & (state / anchor_lengths >= overlap)
                if code == _HIT:
                    out[:, column] = np.where((met & g_real).any(axis=1), 1.0, 0.0)
                else:
                    out[:, column] = np.where((met | ~g_real).all(axis=1), 1.0, 0.0)
            elif code == _IOU:
                c = covered[:, i]
                out[:, column] = c / (gold_chars + retrieved[:, i] - c)
            elif code == _MRR:
                k = np.maximum(n_results, 1) if cutoff is None else cutoff
                hit = (first_overlap > 0) & (first_overlap <= k)
                out[:, column] = np.where(hit, 1.0 / np.maximum(first_overlap, 1), 0.0)
            elif code == _NDCG:
                if pieces is None:
                    pieces = [_cached_pieces(gold, pieces_cache) for gold in golds]
                chars = gold_chars.tolist()
                ks = (
                    [max(n, 1) for n in n_results.tolist()]
                    if cutoff is None
                    else [cutoff] * q_count
                )
                best = np.array(
                    [
                        _ideal_cached(p, g, k, ideal)
                        for p, g, k in zip(pieces, chars, ks, strict=True)
                    ],
                    dtype=np.float64,
                )
                out[:, column] = np.minimum(1.0, dcg[:, i] / best)
            elif code == _AP:
                out[:, column] = ap[:, i]
            elif code == _RETRIEVED:
                out[:, column] = retrieved[:, i].astype(np.float64)
            elif code == _UNMAPPED:
                out[:, column] = unmapped[:, i].astype(np.float64)
            else:  # pragma: no cover - plans with other functions are scored one by one
                raise AssertionError(code)
    return out


def _cached_pieces(
    gold: Sequence[DocSpan], cache: dict[tuple[DocSpan, ...], tuple[int, ...]]
) -> tuple[int, ...]:
    if len(gold) == 1:
        return (gold[0][2] - gold[0][1],)
    key = tuple(gold)
    found = cache.get(key)
    if found is None:
        found = cache[key] = _pieces(gold)
    return found


def _precision(covered: _Ints, retrieved: _Ints, adding: _Ints, unmapped: _Ints) -> _Floats:
    """``covered / retrieved * adding / (adding + unmapped)``, 0.0 where nothing was retrieved
    (the registry's precision, the same operations in the same order)."""
    value = covered / retrieved * adding / (adding + unmapped)
    return np.where(retrieved > 0, value, 0.0)
