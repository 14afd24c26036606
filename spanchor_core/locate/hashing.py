"""Rolling k-gram hashes and minimizer selection, vectorised over numpy arrays of code points.

A polynomial hash (wrapping ``uint64`` arithmetic) gives every k-gram of an array in a few
vector operations; a splitmix64 finaliser spreads the values so that the minimum of each
window samples positions evenly. Both the index and the scans for short texts use these.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = ["I64", "SENTINEL", "U64", "KgramHasher", "minimizer_mask"]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

_MASK64: Final = (1 << 64) - 1
_BASE: Final = 0x9E3779B97F4A7C15  # odd, so it has an inverse modulo 2**64
_BASE_INV: Final = pow(_BASE, -1, 1 << 64)
SENTINEL: Final = np.uint64(_MASK64)  # "no k-gram here": never the minimum of a real window


class KgramHasher:
    """Polynomial k-gram hashes (wrapping uint64 arithmetic), mixed for minimizer order.

    Prefix sums of ``c[j] * B**-j`` give every k-gram hash of an array in a handful of
    vector operations: ``h(i) = B**(i+k-1) * (S[i+k-1] - S[i-1])``.
    """

    def __init__(self, k: int) -> None:
        self.k = k
        empty = np.ones(0, dtype=np.uint64)
        self._tables: tuple[U64, U64] = (empty, empty)

    def _powers(self, n: int) -> tuple[U64, U64]:
        tables = self._tables  # one read: another thread may swap in larger tables
        if len(tables[0]) < n:
            size = max(n, 2 * len(tables[0]), 1024)
            tables = (_power_table(_BASE, size), _power_table(_BASE_INV, size))
            self._tables = tables
        return tables[0][:n], tables[1][:n]

    def kgrams(self, codes: npt.NDArray[np.uint32]) -> U64:
        """Mixed hashes of every k-gram along the last axis (length ``n - k + 1``)."""
        n = codes.shape[-1]
        k = self.k
        pw, inv = self._powers(n)
        # in place where numpy allows: one scratch array and one result, no other temporaries
        prefix = codes.astype(np.uint64)
        np.multiply(prefix, inv, out=prefix)
        np.cumsum(prefix, axis=-1, dtype=np.uint64, out=prefix)
        out = prefix[..., k - 1 :].copy()
        np.subtract(out[..., 1:], prefix[..., : n - k], out=out[..., 1:])
        np.multiply(out, pw[k - 1 :], out=out)
        return _mix(out)

    def kgrams_every(self, codes: npt.NDArray[np.uint32], first: int, step: int) -> U64:
        """``kgrams(codes)[first::step]`` of a 1-d array, the same values, with only those
        k-grams hashed and mixed (the prefix sums still run over every code point)."""
        n = len(codes)
        k = self.k
        count = len(range(first, n - k + 1, step))
        if count <= 0:
            return np.zeros(0, dtype=np.uint64)
        pw, inv = self._powers(n)
        prefix = codes.astype(np.uint64)
        np.multiply(prefix, inv, out=prefix)
        np.cumsum(prefix, dtype=np.uint64, out=prefix)
        out = prefix[first + k - 1 :: step][:count].copy()  # S[i + k - 1]
        if first:  # minus S[i - 1]
            np.subtract(out, prefix[first - 1 :: step][:count], out=out)
        else:  # S[-1] is 0
            np.subtract(out[1:], prefix[step - 1 :: step][: count - 1], out=out[1:])
        np.multiply(out, pw[first + k - 1 :: step][:count], out=out)
        return _mix(out)


def _power_table(base: int, size: int) -> U64:
    """``base**i mod 2**64`` for ``i < size``, by doubling (wrapping uint64 products)."""
    table = np.ones(size, dtype=np.uint64)
    filled = 1
    step = base & _MASK64  # base**filled
    while filled < size:
        count = min(filled, size - filled)
        table[filled : filled + count] = table[:count] * np.uint64(step)
        filled += count
        step = (step * step) & _MASK64
    return table


_M1: Final = np.uint64(0xBF58476D1CE4E5B9)
_M2: Final = np.uint64(0x94D049BB133111EB)
_S30: Final = np.uint64(30)
_S27: Final = np.uint64(27)
_S31: Final = np.uint64(31)


def _mix(h: U64) -> U64:
    """splitmix64 finaliser: spreads polynomial hashes so minimizers sample evenly.

    Works in place on ``h`` (a fresh array of the caller's) with one scratch array.
    """
    tmp = np.right_shift(h, _S30)
    np.bitwise_xor(h, tmp, out=h)
    np.multiply(h, _M1, out=h)
    np.right_shift(h, _S27, out=tmp)
    np.bitwise_xor(h, tmp, out=h)
    np.multiply(h, _M2, out=h)
    np.right_shift(h, _S31, out=tmp)
    np.bitwise_xor(h, tmp, out=h)
    return h


def _sliding(a: U64, w: int, op: np.ufunc) -> U64:
    """``op`` (minimum or maximum) over every run of ``w`` along the last axis."""
    span = 1
    cur = a
    while span * 2 <= w:
        cur = op(cur[..., :-span], cur[..., span:])
        span *= 2
    n = a.shape[-1] - w + 1
    if span == w:
        return cur[..., :n]
    out: U64 = op(cur[..., :n], cur[..., w - span : w - span + n])
    return out


def minimizer_mask(
    h: U64, w: int, windows: npt.NDArray[np.int64] | None = None
) -> npt.NDArray[np.bool_]:
    """Positions that are the minimum of at least one full window of ``w`` hashes.

    ``windows`` (2-D case) gives per row how many full windows exist; the others are
    partial (they run past the row's text) and must not select anything, or a query
    could ask for a minimizer the corpus never indexed.
    """
    wmin = _sliding(h, w, np.minimum)
    if windows is not None:
        cols = np.arange(wmin.shape[-1])
        wmin = np.where(cols[None, :] < windows[:, None], wmin, np.uint64(0))
    pad = np.zeros((*h.shape[:-1], w - 1), dtype=np.uint64)
    smax = _sliding(np.concatenate([pad, wmin, pad], axis=-1), w, np.maximum)
    mask: npt.NDArray[np.bool_] = (h == smax) & (smax != 0) & (h != SENTINEL)
    return mask
