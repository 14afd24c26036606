"""Paired statistics of per-query deltas: percentile-bootstrap intervals and sign-flip p-values.

Pure numpy over a metrics x queries array, from local seeded generators only
(``numpy.random.Generator(PCG64(seed))``; the sign flips use that seed's ``jumped()`` stream),
so the result depends on nothing but the data and the seed. Exact enumeration of every sign
pattern when ``2**n <= n_resamples``; see :mod:`spanchor_core.compare.classify` for how the
comparison uses it. With several baselines the deltas are ``candidate - per-query mean of the
baselines`` (:mod:`spanchor_core.compare.noise` says why); this module does not know the
difference.
"""

from __future__ import annotations

from dataclasses import dataclass

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

    boot = np.random.Generator(np.random.PCG64(seed))
    sums = np.zeros((m, n_resamples))
    varying = np.flatnonzero(~constant)
    if varying.size:
        for start in range(0, n_resamples, rows):
            stop = min(n_resamples, start + rows)
            index = boot.integers(0, n, size=(stop - start, n))
            for j in varying:
                # take: the same values as deltas[j][index], gathered faster
                sums[j, start:stop] = deltas[j].take(index).sum(axis=1)
    means = sums / n
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail], axis=1)
    # A constant row resamples to itself: its interval is that value, exactly.
    low[constant] = deltas[constant, 0]
    high[constant] = deltas[constant, 0]

    totals = deltas.sum(axis=1)
    observed = np.abs(totals)
    # Sums of the same numbers in another order differ in the last bits; such ties must count.
    tolerance = 1e-9 * np.abs(deltas).sum(axis=1)
    extreme = np.zeros(m, dtype=np.int64)
    p_value: NDArray[np.float64]
    if 2**n <= n_resamples:
        # Few queries: every sign pattern can be tried, which gives the exact p-value.
        patterns = np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)
        signs = (patterns & 1).astype(np.float64) * 2.0 - 1.0
        extreme += (np.abs(signs @ deltas.T) >= observed - tolerance).sum(axis=0)
        p_value = extreme.astype(np.float64) / 2.0**n
    else:
        flips = np.random.Generator(np.random.PCG64(seed).jumped())
        for start in range(0, n_resamples, rows):
            count = min(n_resamples, start + rows) - start
            raw = flips.bytes((count * n + 7) // 8)
            bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8))[: count * n]
            kept = bits.reshape(count, n).astype(np.float64)
            # sum(s_i d_i) with s_i = 2 b_i - 1 is 2 (b . d) - sum(d): one pass fewer.
            flipped = np.abs(2.0 * (kept @ deltas.T) - totals)
            extreme += (flipped >= observed - tolerance).sum(axis=0)
        p_value = (1.0 + extreme.astype(np.float64)) / (1.0 + n_resamples)
    p_value[np.all(deltas == 0.0, axis=1)] = 1.0
    return PairedStatistics(low, high, p_value)
