"""Wrong candidates rejected in numpy, before any is confirmed in Python: :class:`LowBytes`.

A frequent text (boilerplate) or a short one (found by a 12-gram of the sampled index) has
many candidate places, and most of them are wrong: confirming each with ``str.startswith`` or
by normalising a slice cost a Python call per candidate, ten million per 100,000 results on
issue 16's adversarial rows. :class:`LowBytes` keeps the low byte of every code point of the
virtual text (or of its normalised stream), one byte per character, and a :class:`Probe`
compares the first and the last eight characters of each text with the bytes at each
candidate, a 64-bit word at a time, for all the candidates at once.
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

__all__ = ["PROBE_CHARS", "LowBytes", "Probe"]

PROBE_CHARS: Final = 8  # characters compared at once (one unaligned 64-bit word)
_CHUNK: Final = 1 << 16  # candidates compared per numpy pass (bounded temporaries)

U8 = npt.NDArray[np.uint8]
U64 = npt.NDArray[np.uint64]


class LowBytes:
    """The low byte of each code point of one virtual text, in one ``bytearray``."""

    data: bytearray | U8  # one byte per character (kept from an earlier build: an array)
    words: U64  # every run of 8 bytes as one little-endian word

    def __init__(self, blocks: Iterator[npt.NDArray[np.uint32]], total: int) -> None:
        """Keep ``blocks`` (the code points of a text of at most ``total`` characters)."""
        self._start(total)
        for codes in blocks:
            self._add(codes)
        self._finish()

    @classmethod
    def from_array(cls, low: U8) -> LowBytes:
        """The bytes kept earlier of the same text (the persistent index cache), used as they
        are: ``low`` (one ``uint8`` per character) is not copied."""
        kept = cls.__new__(cls)
        kept.data = low
        words = max(0, len(low) - PROBE_CHARS + 1)
        kept.words = np.ndarray((words,), dtype="<u8", buffer=low, strides=(1,))
        kept.complete = True
        return kept

    @property
    def low(self) -> U8:
        """The bytes as a ``uint8`` array (the same memory), to keep them."""
        return np.frombuffer(self.data, dtype=np.uint8)

    @classmethod
    def alongside(
        cls, blocks: Iterator[npt.NDArray[np.uint32]], total: int
    ) -> tuple[Iterator[npt.NDArray[np.uint32]], LowBytes]:
        """``blocks`` passed on unchanged, and the low bytes kept of them as they pass: for a
        pass over the text that another structure makes anyway (the sampled index), so that
        the bytes cost no pass of their own. Complete (``complete``) once every block passed."""
        low = cls.__new__(cls)
        low._start(total)

        def passing() -> Iterator[npt.NDArray[np.uint32]]:
            for codes in blocks:
                low._add(codes)
                yield codes
            low._finish()

        return passing(), low

    def _start(self, total: int) -> None:
        self.complete = False
        self._data = bytearray(total)
        self._view = np.frombuffer(self._data, dtype=np.uint8)
        self._filled = 0

    def _add(self, codes: npt.NDArray[np.uint32]) -> None:
        filled = self._filled
        self._view[filled : filled + len(codes)] = codes  # the cast keeps the low byte
        self._filled = filled + len(codes)

    def _finish(self) -> None:
        data, filled = self._data, self._filled
        del self._view, self._data  # no export of the buffer left: it may shrink
        del data[filled:]  # the normalised stream is shorter
        self.data = data
        # unaligned reads of the same memory
        words = max(0, filled - PROBE_CHARS + 1)
        self.words = np.ndarray((words,), dtype="<u8", buffer=data, strides=(1,))
        self.complete = True

    @property
    def nbytes(self) -> int:
        return len(self.data)

    def probe(self, texts: list[str]) -> Probe | None:
        """A probe of ``texts`` against these bytes (``None`` when one is too short)."""
        if min(map(len, texts), default=0) < PROBE_CHARS:
            return None
        return Probe(self.words, texts)


def _word(codes: npt.NDArray[np.uint32], at: I64) -> U64:
    """The low bytes of ``codes[at[i] : at[i] + 8]`` as one little-endian word per ``i``."""
    picked = codes[at[:, None] + np.arange(PROBE_CHARS)].astype(np.uint8)
    words: U64 = picked.view("<u8").reshape(-1)
    return words


class Probe:
    """The first and the last eight characters of each of a list of texts (low bytes), to
    compare with candidate places."""

    def __init__(self, words: U64, texts: list[str]) -> None:
        self.words = words
        self.length = len(words) + PROBE_CHARS - 1 if len(words) else 0  # of the text read
        sizes = np.array([len(t) for t in texts], dtype=np.int64)
        codes = code_points("".join(texts))
        bases = np.cumsum(sizes) - sizes
        self.tail_at: I64 = sizes - PROBE_CHARS  # where the last eight start in each text
        self.head: U64 = _word(codes, bases)
        self.tail: U64 = _word(codes, bases + self.tail_at)

    def agrees(self, where: I64, pos: I64) -> npt.NDArray[np.bool_]:
        """Whether text ``where[j]`` may start at position ``pos[j]`` of the virtual text
        (every candidate must lie inside it): false only where a probed character differs."""
        out = np.empty(len(where), dtype=np.bool_)
        words = self.words
        for lo in range(0, len(where), _CHUNK):
            w, p = where[lo : lo + _CHUNK], pos[lo : lo + _CHUNK]
            ok = words[p] == self.head[w]
            rest = np.flatnonzero(ok)  # the last eight only where the first eight agree
            ok[rest] = words[p[rest] + self.tail_at[w[rest]]] == self.tail[w[rest]]
            out[lo : lo + _CHUNK] = ok
        return out
