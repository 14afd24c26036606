"""Paired statistics of per-query deltas: percentile-bootstrap intervals and sign-flip p-values.

Pure numpy over a metrics x queries array, from local seeded generators only
(``numpy.random.Generator(PCG64(seed))``; the sign flips use that seed's ``jumped()`` stream),
so the result depends on nothing but the data and the seed. Exact enumeration of every sign
pattern when ``2**n <= n_resamples``; see :mod:`spanchor_core.compare.classify` for how the
comparison uses it. With several baselines the deltas are ``candidate - per-query mean of the
baselines`` (:mod:`spanchor_core.compare.noise` says why); this module does not know the
difference.

The work is numpy's, which lets go of the GIL: the resample indices are drawn on the calling
thread while a second one gathers and sums the previous block, and a third counts the sign
flips (its own generator). Each generator is used by one thread, block after block, and every
sum is taken over the same values in the same order as on one thread, so the numbers are the
same. The big buffers are made once, on the calling thread (a thread's own malloc arena would
give their pages back and fault them in again for every block).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray

from spanchor_core.errors import InputError

__all__ = ["PairedStatistics", "paired_statistics"]

_CHUNK_ELEMENTS = 1 << 22
"""Resample indices drawn per block (32 MiB of int64): bounds memory for any number of queries."""


@dataclass(frozen=True, slots=True)
class PairedStatistics:
    """Per-metric bootstrap interval bounds of the mean delta and sign-flip p-values."""

    ci_low: NDArray[np.float64]
    ci_high: NDArray[np.float64]
    p_value: NDArray[np.float64]


def paired_statistics(
    deltas: NDArray[np.float64], *, n_resamples: int, confidence: float, seed: int
) -> PairedStatistics:
    """Bootstrap intervals and sign-flip p-values for each row of ``deltas`` (metrics x queries).

    Columns are paired queries, already in a canonical order. Every row is resampled with the
    same query indices. Vectorised in blocks of about four million draws.
    """
    m, n = deltas.shape
    if n == 0 or n_resamples < 1:
        raise InputError("paired statistics need at least one query and one resample")
    rows = max(1, _CHUNK_ELEMENTS // n)
    constant = np.all(deltas == deltas[:, :1], axis=1)
    totals = deltas.sum(axis=1)
    observed = np.abs(totals)
    # Sums of the same numbers in another order differ in the last bits; such ties must count.
    tolerance = 1e-9 * np.abs(deltas).sum(axis=1)
    varying = np.flatnonzero(~constant)
    exact = 2**n <= n_resamples
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="spanchor-statistics") as pool:
        flipped = (
            None
            if exact
            else pool.submit(
                _sign_flips, deltas, totals, observed - tolerance, n_resamples, rows, seed
            )
        )
        sums = np.zeros((m, n_resamples))
        if varying.size:
            _bootstrap_sums(deltas, varying, sums, rows, seed, pool)
        extreme = np.zeros(m, dtype=np.int64) if flipped is None else flipped.result()
    means = sums / n
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail], axis=1)
    # A constant row resamples to itself: its interval is that value, exactly.
    low[constant] = deltas[constant, 0]
    high[constant] = deltas[constant, 0]

    p_value: NDArray[np.float64]
    if exact:
        # Few queries: every sign pattern can be tried, which gives the exact p-value.
        patterns = np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)
        signs = (patterns & 1).astype(np.float64) * 2.0 - 1.0
        extreme += (np.abs(signs @ deltas.T) >= observed - tolerance).sum(axis=0)
        p_value = extreme.astype(np.float64) / 2.0**n
    else:
        p_value = (1.0 + extreme.astype(np.float64)) / (1.0 + n_resamples)
    p_value[np.all(deltas == 0.0, axis=1)] = 1.0
    return PairedStatistics(low, high, p_value)


def _bootstrap_sums(
    deltas: NDArray[np.float64],
    varying: NDArray[np.intp],
    sums: NDArray[np.float64],
    rows: int,
    seed: int,
    pool: ThreadPoolExecutor,
) -> None:
    """``sums[j, r]``: the sum of row ``j`` of ``deltas`` over the ``r``-th resample's query
    indices, for every varying row; the indices of block ``b + 1`` are drawn (here) while
    block ``b`` is gathered and summed (on ``pool``)."""
    n = deltas.shape[1]
    n_resamples = sums.shape[1]
    boot = np.random.Generator(np.random.PCG64(seed))
    gathered = np.empty((min(rows, n_resamples), n))
    pending: Future[None] | None = None
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        index = boot.integers(0, n, size=(stop - start, n))
        if pending is not None:
            pending.result()
        pending = pool.submit(_gather, deltas, varying, index, gathered, sums, start, stop)
    if pending is not None:
        pending.result()


def _gather(
    deltas: NDArray[np.float64],
    varying: NDArray[np.intp],
    index: NDArray[np.int64],
    gathered: NDArray[np.float64],
    sums: NDArray[np.float64],
    start: int,
    stop: int,
) -> None:
    into = gathered[: stop - start]
    for j in varying.tolist():
        # the same values as deltas[j][index] (every index is in range: "clip" never clips,
        # and unlike "raise" it writes straight into the buffer), summed row by row alike
        deltas[j].take(index, out=into, mode="clip")
        sums[j, start:stop] = into.sum(axis=1)


_BITS: Final = (
    (np.arange(256, dtype=np.uint8)[:, None] >> np.arange(7, -1, -1, dtype=np.uint8)) & 1
).astype(np.float64)
"""Each byte's eight bits as 0.0 / 1.0, most significant first (``numpy.unpackbits``'s order)."""


def _sign_flips(
    deltas: NDArray[np.float64],
    totals: NDArray[np.float64],
    bound: NDArray[np.float64],
    n_resamples: int,
    rows: int,
    seed: int,
) -> NDArray[np.int64]:
    """How many of ``n_resamples`` random sign patterns (the seed's ``jumped()`` stream, one
    bit per query) give ``|sum(s_i d_i)| >= bound`` for each row of ``deltas``."""
    m, n = deltas.shape
    flips = np.random.Generator(np.random.PCG64(seed).jumped())
    extreme = np.zeros(m, dtype=np.int64)
    size = min(rows, n_resamples) * n
    bits = np.empty(((size + 7) // 8) * 8)
    for start in range(0, n_resamples, rows):
        count = min(n_resamples, start + rows) - start
        raw = np.frombuffer(flips.bytes((count * n + 7) // 8), dtype=np.uint8)
        unpacked = bits[: raw.size * 8].reshape(raw.size, 8)
        _BITS.take(raw, axis=0, out=unpacked, mode="clip")
        kept = bits[: count * n].reshape(count, n)
        # sum(s_i d_i) with s_i = 2 b_i - 1 is 2 (b . d) - sum(d): one pass fewer.
        flipped = np.abs(2.0 * (kept @ deltas.T) - totals)
        extreme += (flipped >= bound).sum(axis=0)
    return extreme
