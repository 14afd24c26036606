"""Handing the C heap's free pages back to the system between two phases of an evaluation.

Mapping a run's results in batches leaves the process's heap full of holes: each batch's
retrieved texts (a few hundred bytes to a few kB each, so ``malloc``'s rather than Python's
small-object allocator) and the locate stages' arrays are freed when the batch is done, but
glibc keeps the pages behind them, and the long-lived columns allocated among them keep the
heap from shrinking from the top. On the 50 MB x 10,000-query evaluation of ``bench/`` that is
about 15 MiB of resident memory nobody uses when scoring starts, and scoring's own temporaries
then land on fresh pages rather than in those holes: the whole process peaked during scoring
or while writing the file. ``malloc_trim(0)`` gives back every whole free page inside the heap
(``madvise``), not only its top; it costs a walk over the free chunks (well under a
millisecond here), so it is called once at a phase boundary, never per batch (per batch it
lowered the peak by less and cost 0.2-0.4 s of page faults).

Only glibc has it: elsewhere (macOS, Windows, musl) :func:`release_free_heap` does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from collections.abc import Callable

__all__ = ["release_free_heap"]


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or ``None`` where the C library has none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    function: Callable[[int], int] = trim
    return function


def release_free_heap() -> bool:
    """Give the heap's free pages back to the system; whether the C library could be asked.

    Nothing live moves or changes: only pages no allocation uses are released, and they are
    faulted in again (zeroed) if the heap grows into them later.
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
