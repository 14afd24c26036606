"""Wrong candidates rejected in numpy, before any is confirmed in Python: :class:`LowBytes`.

A frequent text (boilerplate) or a short one (found by a 12-gram of the sampled index) has
many candidate places, and most of them are wrong: confirming each with ``str.startswith`` or
by normalising a slice cost a Python call per candidate, ten million per 100,000 results on
issue 16's adversarial rows. :class:`LowBytes` keeps the low byte of every code point of the
virtual text (or of its normalised stream), one byte per character, and a :class:`Probe`
compares a few characters spread over each text with the bytes at each candidate at once.
A true occurrence always passes (equal code points have equal low bytes), so only the wrong
candidates that happen to agree at every probed character are left for the caller's own
confirmation, which decides as before: the result never depends on the probe.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

import numpy as np
import numpy.typing as npt

from spanchor_core.locate.hashing import I64
from spanchor_core.locate.text import code_points

__all__ = ["PROBES", "LowBytes", "Probe"]

PROBES: Final = 8  # characters compared per candidate, spread over the text
_CHUNK: Final = 1 << 16  # candidates compared per numpy pass (bounded temporaries)

U8 = npt.NDArray[np.uint8]


class LowBytes:
    """The low byte of each code point of one virtual text, in one array."""

    def __init__(self, blocks: Iterator[npt.NDArray[np.uint32]], total: int) -> None:
        """Keep ``blocks`` (the code points of a text of at most ``total`` characters)."""
        data = np.empty(total, dtype=np.uint8)
        filled = 0
        for codes in blocks:
            data[filled : filled + len(codes)] = codes  # the cast keeps the low byte
            filled += len(codes)
        if filled < total:  # the normalised stream is shorter: give the rest back
            data.resize((filled,), refcheck=False)
        self.data: U8 = data

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)

    def probe(self, texts: list[str]) -> Probe:
        """A probe of ``texts`` (none empty) against these bytes."""
        return Probe(self.data, texts)


class Probe:
    """A few characters of each of a list of texts, to compare with candidate places."""

    def __init__(self, data: U8, texts: list[str]) -> None:
        self.data = data
        sizes = np.array([len(t) for t in texts], dtype=np.int64)
        # PROBES offsets from the first character to the last of each text (repeats when the
        # text is shorter); the offsets of text i are offsets[i]
        spread = np.linspace(0.0, 1.0, PROBES)
        self.offsets: I64 = np.rint(spread[None, :] * (sizes[:, None] - 1)).astype(np.int64)
        codes = code_points("".join(texts))
        bases = np.cumsum(sizes) - sizes
        self.values: U8 = codes[bases[:, None] + self.offsets].astype(np.uint8)

    def agrees(self, where: I64, pos: I64) -> npt.NDArray[np.bool_]:
        """Whether text ``where[j]`` may start at position ``pos[j]`` of the virtual text
        (every candidate must lie inside it): false only where a probed character differs."""
        out = np.empty(len(where), dtype=np.bool_)
        for lo in range(0, len(where), _CHUNK):
            w = where[lo : lo + _CHUNK]
            at = pos[lo : lo + _CHUNK, None] + self.offsets[w]
            np.all(self.data[at] == self.values[w], axis=1, out=out[lo : lo + _CHUNK])
        return out
