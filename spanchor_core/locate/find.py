"""Every occurrence of a list of texts: through an index where it can, by scanning where not.

Shared by the exact and the normalised stage, which differ only in the index they consult and
how they confirm a candidate. Texts shorter than a full minimizer window, and texts whose
minimizers are all too frequent, go to the scanner.
"""

from __future__ import annotations

from collections.abc import Callable

from spanchor_core.locate.context import SearchContext
from spanchor_core.locate.documents import Occurrence

__all__ = ["IndexLookup", "find_occurrences"]

IndexLookup = Callable[[list[str]], list[list[Occurrence] | None]]
"""Confirmed occurrences of each text via an index; ``None``: the index cannot tell."""


def find_occurrences(
    ctx: SearchContext, needles: list[str], lookup: IndexLookup, *, normalised: bool
) -> list[list[Occurrence]]:
    """Occurrences of each needle, in order; ``lookup`` gets the needles long enough for it."""
    shortest = ctx.settings.min_indexed_length
    found: dict[int, list[Occurrence]] = {}
    scan = [i for i, needle in enumerate(needles) if len(needle) < shortest]
    indexed = [i for i, needle in enumerate(needles) if len(needle) >= shortest]
    if indexed:
        for i, occ in zip(indexed, lookup([needles[i] for i in indexed]), strict=True):
            if occ is None:
                scan.append(i)
            else:
                found[i] = occ
    scanned = ctx.scanner.find_all([needles[i] for i in scan], normalised=normalised)
    found.update(zip(scan, scanned, strict=True))
    return [found[i] for i in range(len(needles))]
