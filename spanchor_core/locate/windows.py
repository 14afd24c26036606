"""The normalised view of many source windows at once: :func:`normalise_windows`.

The fuzzy stage aligns every text against a window of canonical source text, normalised
(:func:`~spanchor_core.locate.text.normalise_with_positions`). Normalising is one code point
to one code point and drops whitespace, independent of context, so the view of windows laid
end to end is the views of the windows laid end to end: one numpy pass for a batch of
windows instead of one per window, which is most of what a short alignment costs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from spanchor_core.locate.text import normalise_with_positions

__all__ = ["NormalisedWindows", "normalise_windows"]


@dataclass(frozen=True, slots=True)
class NormalisedWindows:
    """Windows normalised together.

    Window ``i`` is ``text[bounds[i]:bounds[i + 1]]``; its ``n``-th character is at offset
    ``kept[bounds[i] + n] - starts[i]`` of the window as given.
    """

    text: str
    kept: npt.NDArray[np.intp]
    bounds: list[int]
    starts: list[int]


def normalise_windows(windows: list[str]) -> NormalisedWindows:
    """The normalised views of ``windows``, computed in one pass."""
    text, kept = normalise_with_positions("".join(windows))
    lengths = np.fromiter((len(w) for w in windows), dtype=np.int64, count=len(windows))
    starts = np.zeros(len(windows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    bounds = np.searchsorted(kept, starts, side="left")
    return NormalisedWindows(text, kept, bounds.tolist(), starts[:-1].tolist())
