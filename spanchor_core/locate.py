"""Mapping retrieved text back onto canonical source spans: :class:`Locator`.

A retriever hands back chunk text, sometimes with offsets (LangChain ``start_index``,
LlamaIndex ``start_char_idx``) and a document id, sometimes an explicit span with no text.
:class:`Locator` turns each result into a :class:`Location`: a span of one document's
canonical text with a :class:`MatchStatus`, a confidence and the candidate spans.

The order of evidence, for one result:

1. explicit span (no text): validated, never scored — ``SPAN`` or ``INVALID``;
2. given offsets: trusted only if ``canonical[start:end] == text`` — ``VERIFIED``;
   offsets that do not verify are re-anchored below and flagged ``hint_rejected``;
3. exact search over the whole corpus — ``EXACT``;
4. search ignoring whitespace and letter case — ``NORMALISED``;
5. approximate alignment for text a pipeline altered (markup stripped, whitespace
   collapsed, a metadata header prepended) — ``FUZZY`` with a score in [0, 1], or
   ``UNMAPPED`` below ``fuzzy_threshold``.

Text found more than once is ``AMBIGUOUS``: the occurrence in the named document wins,
then the one nearest the offset hint, then the lowest ``(document_id, start)`` — a rule
that does not depend on the order documents were loaded in. ``resolved_by`` says which
rule decided. A match never crosses a document boundary.

Confidence: 1.0 for ``EXACT``, ``VERIFIED`` and ``SPAN``; for ``NORMALISED`` the
similarity of the case-folded texts, capped at 0.99; for ``FUZZY`` the rapidfuzz ratio
between the normalised text and the normalised span; ``AMBIGUOUS`` keeps the score of the
stage that found the occurrences; 0.0 for ``UNMAPPED`` and ``INVALID``. ``hint_rejected``
is true when offsets came with a result and the text was not found exactly there.

Speed. Scanning the corpus once per result costs about 0.3 ms per MB per chunk, so the
corpus is indexed once, lazily, by *minimizers*: for every window of ``window``
consecutive ``kgram``-character substrings the one with the smallest (mixed polynomial)
hash is kept, packed with its position into one sorted ``uint64`` array (about
``2 / (window + 1)`` of all positions: 8 bytes per ~25 characters with the defaults).
Any text of at least ``kgram + window - 1`` characters (67 by default) contains a full
window, and that window's minimizer is indexed at the same relative place in every
occurrence — so one lookup of the text's rarest minimizer yields every occurrence, which
``str.startswith`` confirms. The whitespace-and-case view gets its own index (built only
when some result needs it) plus a map from normalised to canonical offsets that keeps
every 32nd position and walks the rest. Approximate matching votes with all of a text's
minimizers in that view for the region, then aligns with rapidfuzz (``Indel``).

Slow paths, by design: texts shorter than ``kgram + window - 1`` characters, and texts
whose minimizers all occur more than ``max_occurrences`` times, are found by a scan per
document (``str.find``; a whitespace-tolerant regular expression for the normalised
stage) — about 0.3 ms per MB of corpus each. Short texts that need approximate matching
are aligned with ``rapidfuzz.fuzz.partial_ratio_alignment`` per document (about 10 ms
per MB), only while the corpus (or the named document) is under ``fuzzy_scan_limit``
characters; beyond that they are ``UNMAPPED`` with a reason saying so.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from rapidfuzz import fuzz
from rapidfuzz.distance import Indel

from spanchor_core.corpus import Corpus, canonicalize
from spanchor_core.spans import DocSpan

__all__ = ["LocateRequest", "Location", "Locator", "MatchStatus"]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

_MASK64: Final = (1 << 64) - 1
_BASE: Final = 0x9E3779B97F4A7C15  # odd, so it has an inverse modulo 2**64
_BASE_INV: Final = pow(_BASE, -1, 1 << 64)
_SENTINEL: Final = np.uint64(_MASK64)  # "no k-gram here": never the minimum of a real window
_BLOCK_CHARS: Final = 16_000  # arrays stay under glibc's 128 KiB mmap threshold
_BATCH_CHARS: Final = 16_000  # code points per query batch (same reason)
_CHECKPOINT: Final = 32  # normalised -> canonical map keeps every 32nd position
_SCAN_K: Final = 12  # k-gram of the shared scan for texts too short for the index
_SCAN_K_MIN: Final = 4  # shorter normalised texts use a regular-expression scan
_SCAN_BATCH_MIN: Final = 16  # fewer exact texts than this: one str.find scan each
_FUZZY_MIN_CHARS: Final = 12  # below this, approximate matching means nothing
_NORMALISED_CAP: Final = 0.99  # a normalised match never scores like an exact one
_ALIGN_CELLS: Final = 16_000_000  # largest chunk x window alignment done in one piece
_ALIGN_EDGE: Final = 2_000  # characters aligned at each end of longer texts

_WS_LIMIT: Final = 0x3001  # every str.isspace() code point is below this
_WS_TABLE: Final = np.array([chr(c).isspace() for c in range(_WS_LIMIT + 1)], dtype=np.bool_)
_WS_TABLE[_WS_LIMIT] = False
_SPACE_OPT: Final = re.compile(r"\s*")
_NONSPACE_RUN: Final = re.compile(r"\S+")


class MatchStatus(StrEnum):
    """How a retrieved result was placed in the corpus."""

    EXACT = "exact"
    """The text occurs exactly once in the corpus."""
    VERIFIED = "verified"
    """The offsets given with the text were checked against the canonical text."""
    SPAN = "span"
    """An explicit span without text: inside the bounds of a known document."""
    NORMALISED = "normalised"
    """Found once when whitespace and letter case are ignored."""
    FUZZY = "fuzzy"
    """Found by approximate alignment; ``confidence`` is the alignment score."""
    AMBIGUOUS = "ambiguous"
    """Found more than once; one occurrence chosen by the rule in ``resolved_by``."""
    UNMAPPED = "unmapped"
    """Not found; ``reason`` says why."""
    INVALID = "invalid"
    """An explicit span that cannot exist (unknown document, out of bounds, inverted)."""


@dataclass(frozen=True, slots=True)
class Location:
    """Where one retrieved result lies in the corpus, and how sure we are.

    ``candidates`` lists the occurrences considered (sorted by document id then start,
    at most ``Locator.max_candidates`` of them; ``reason`` gives the full count when the
    list was cut). ``hint_rejected`` is true when offsets came with the result and the
    text was not found at them — the count users need to judge their pipeline's offsets.
    """

    status: MatchStatus
    document_id: str | None
    start: int | None
    end: int | None
    confidence: float
    candidates: tuple[DocSpan, ...] = ()
    resolved_by: str | None = None
    hint_rejected: bool = False
    reason: str | None = None

    @property
    def span(self) -> DocSpan | None:
        """The chosen span, or ``None`` when nothing was mapped."""
        if self.document_id is None or self.start is None or self.end is None:
            return None
        if self.status in (MatchStatus.UNMAPPED, MatchStatus.INVALID):
            return None
        return DocSpan(self.document_id, self.start, self.end)


@dataclass(frozen=True, slots=True)
class LocateRequest:
    """One result to map: text, and whatever location the retriever claimed for it."""

    text: str | None
    document_id: str | None = None
    start: int | None = None
    end: int | None = None


# --------------------------------------------------------------------------- text helpers


def _fold(text: str) -> str:
    """Lower-case ``text`` one code point to one code point, independent of context.

    ``str.lower`` changes length only for U+0130 and treats a final sigma by context;
    both are flattened so that folding a slice equals slicing the folded text.
    """
    if "\u0130" in text:
        text = text.replace("\u0130", "i")
    return text.lower().replace("\u03c2", "\u03c3")


def _normalise(text: str) -> str:
    """The whitespace- and case-insensitive view: folded, every whitespace removed."""
    return "".join(_fold(text).split())


def _codes(text: str) -> npt.NDArray[np.uint32]:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")


def _keep_mask(codes: npt.NDArray[np.uint32]) -> npt.NDArray[np.bool_]:
    """True where a code point is not whitespace."""
    return ~_WS_TABLE[np.minimum(codes, _WS_LIMIT)]


def _advance_nonspace(text: str, pos: int, n: int) -> int:
    """Index of the non-space character ``n`` non-space characters after ``text[pos]``."""
    while n > 0:
        run_end = _NONSPACE_RUN.match(text, pos)
        stop = run_end.end() if run_end else pos
        if stop - pos > n:
            return pos + n
        n -= stop - pos
        skip = _SPACE_OPT.match(text, stop)
        pos = skip.end() if skip else stop
    return pos


# --------------------------------------------------------------------------- hashing


class _Hasher:
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
        prefix = np.cumsum(codes.astype(np.uint64) * inv, axis=-1, dtype=np.uint64)
        upper = prefix[..., k - 1 :]
        lower = np.zeros_like(upper)
        lower[..., 1:] = prefix[..., : n - k]
        return _mix(pw[k - 1 :] * (upper - lower))


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


def _mix(h: U64) -> U64:
    """splitmix64 finaliser: spreads polynomial hashes so minimizers sample evenly."""
    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


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


def _minimizer_mask(
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
    mask: npt.NDArray[np.bool_] = (h == smax) & (smax != 0) & (h != _SENTINEL)
    return mask


# --------------------------------------------------------------------------- index


class _MinimizerIndex:
    """Minimizers of a virtual concatenated text, packed one ``uint64`` per entry.

    Each entry is ``(hash >> pos_bits) << pos_bits | position``; sorting the packed
    values sorts by hash, then position. ``pos_bits`` is just wide enough for the text
    (32 bits up to 4 G characters), so the stored hash keeps the rest — a shorter hash
    only adds false candidates, which verification discards.
    """

    def __init__(self, packed: U64, pos_bits: int) -> None:
        self.packed = packed
        self.pos_bits = pos_bits
        self._shift = np.uint64(pos_bits)
        self._low = np.uint64((1 << pos_bits) - 1)

    @property
    def nbytes(self) -> int:
        return int(self.packed.nbytes)

    def lookup(self, queries: U64) -> tuple[I64, I64]:
        """First entry and number of entries for each (full 64-bit) query hash."""
        base = (queries >> self._shift) << self._shift
        order = np.argsort(base)
        ordered = base[order]
        lo = np.empty(len(queries), dtype=np.int64)
        hi = np.empty(len(queries), dtype=np.int64)
        lo[order] = np.searchsorted(self.packed, ordered, side="left")
        hi[order] = np.searchsorted(self.packed, ordered | self._low, side="right")
        return lo, hi - lo

    def positions(self, first: I64, count: I64) -> tuple[I64, I64]:
        """Positions of entries ``first[i] .. first[i] + count[i]``, and which ``i`` each is."""
        owner = np.repeat(np.arange(len(first), dtype=np.int64), count)
        offsets = np.arange(len(owner), dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
        values = self.packed[first[owner] + offsets] & self._low
        return values.astype(np.int64), owner


class _IndexBuilder:
    """Streams code-point blocks of one long virtual text and collects its minimizers.

    Consecutive blocks overlap by ``window + k - 2`` code points, so every window is
    evaluated exactly once however the text is cut into blocks.
    """

    def __init__(self, hasher: _Hasher, window: int, total: int) -> None:
        self.hasher = hasher
        self.window = window
        self.overlap = window + hasher.k - 2
        self.pos_bits = max(32, int(total).bit_length())
        self._shift = np.uint64(self.pos_bits)
        self._carry = np.zeros(0, dtype=np.uint32)
        self._carry_start = 0
        self._last = -1
        self._packed: list[U64] = []

    def feed(self, codes: npt.NDArray[np.uint32]) -> None:
        data = np.concatenate([self._carry, codes]) if len(self._carry) else codes
        start = self._carry_start
        if len(data) >= self.overlap + 1:
            h = self.hasher.kgrams(data)
            picked = np.flatnonzero(_minimizer_mask(h, self.window))
            pos = picked.astype(np.int64) + start
            fresh = pos > self._last
            if fresh.any():
                keys = (h[picked[fresh]] >> self._shift) << self._shift
                self._packed.append(keys | pos[fresh].astype(np.uint64))
                self._last = int(pos[fresh][-1])
        keep = min(len(data), self.overlap)
        self._carry = data[len(data) - keep :].copy()
        self._carry_start = start + len(data) - keep

    def finish(self) -> _MinimizerIndex:
        packed = np.concatenate(self._packed) if self._packed else np.zeros(0, np.uint64)
        self._packed.clear()
        packed.sort()
        return _MinimizerIndex(packed, self.pos_bits)


@dataclass(slots=True)
class _NormalisedView:
    """Minimizer index of the normalised text plus its map back to canonical offsets."""

    index: _MinimizerIndex
    starts: I64  # normalised offset where each document starts
    lengths: I64  # normalised length of each document
    checkpoint_base: I64  # first checkpoint of each document
    checkpoints: npt.NDArray[
        np.integer[Any]
    ]  # canonical local offset of every _CHECKPOINT-th normalised char

    @property
    def nbytes(self) -> int:
        return int(
            self.index.nbytes
            + self.starts.nbytes
            + self.lengths.nbytes
            + self.checkpoint_base.nbytes
            + self.checkpoints.nbytes
        )


# --------------------------------------------------------------------------- locator


@dataclass(slots=True)
class _Pending:
    """A request still being searched for (internal working state)."""

    slot: int
    text: str
    doc: int | None  # index of the named document, when it is in the corpus
    named: str | None  # the document id as given
    hint_start: int | None
    hint_end: int | None
    rejected: bool = False
    norm: str = ""
    notes: list[str] = field(default_factory=list)


class Locator:
    """Maps retrieved results onto canonical spans of one corpus.

    Build one per corpus and reuse it: the index is built on first need and kept.
    ``locate_many`` is the fast path (batched numpy work); ``locate`` is the same
    computation for one result, so both always give the same answer.

    Parameters: ``fuzzy_threshold`` is the lowest alignment score accepted as
    ``FUZZY``; ``max_candidates`` caps ``Location.candidates``; ``kgram`` and
    ``window`` size the minimizer index (texts shorter than ``kgram + window - 1``
    characters use a per-document scan); ``max_occurrences`` is how many occurrences
    of one minimizer are enumerated before it counts as too frequent to use;
    ``fuzzy_scan_limit`` bounds, in characters, the scan used for short texts
    that need approximate matching.
    """

    def __init__(
        self,
        corpus: Corpus,
        *,
        fuzzy_threshold: float = 0.8,
        max_candidates: int = 50,
        kgram: int = 20,
        window: int = 48,
        max_occurrences: int = 128,
        fuzzy_scan_limit: int = 2_000_000,
    ) -> None:
        if not 0.0 <= fuzzy_threshold <= 1.0:
            raise ValueError("fuzzy_threshold must lie in [0, 1]")
        if kgram < 4 or window < 2:
            raise ValueError("kgram must be at least 4 and window at least 2")
        if max_candidates < 1 or max_occurrences < 1:
            raise ValueError("max_candidates and max_occurrences must be positive")
        self.corpus = corpus
        self.fuzzy_threshold = fuzzy_threshold
        self.max_candidates = max_candidates
        self.kgram = kgram
        self.window = window
        self.max_occurrences = max_occurrences
        self.fuzzy_scan_limit = fuzzy_scan_limit
        self.min_indexed_length = kgram + window - 1
        self._ids: list[str] = list(corpus)
        self._texts: list[str] = [corpus.text(i) for i in self._ids]
        self._slot = {doc_id: n for n, doc_id in enumerate(self._ids)}
        lengths = np.array([len(t) for t in self._texts], dtype=np.int64)
        self._lengths: I64 = lengths
        self._starts: I64 = np.cumsum(lengths) - lengths
        self._total = int(lengths.sum())
        self._hasher = _Hasher(kgram)
        self._scan_hashers: dict[int, _Hasher] = {}
        self._lock = threading.Lock()
        self._exact: _MinimizerIndex | None = None
        self._normalised: _NormalisedView | None = None

    # ---------------------------------------------------------------- public API

    def locate(
        self,
        text: str | None,
        *,
        document_id: str | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> Location:
        """Map one result; see :meth:`locate_many`."""
        return self.locate_many([LocateRequest(text, document_id, start, end)])[0]

    def locate_many(self, requests: Sequence[LocateRequest]) -> list[Location]:
        """Map every request, in order. Equal to ``[locate(r) for r in requests]``."""
        results: list[Location | None] = [None] * len(requests)
        pending: list[_Pending] = []
        for slot, request in enumerate(requests):
            early, job = self._prepare(slot, request)
            if early is not None:
                results[slot] = early
            elif job is not None:
                pending.append(job)
        if pending:
            pending = self._exact_stage(pending, results)
        if pending:
            pending = self._normalised_stage(pending, results)
        if pending:
            self._fuzzy_stage(pending, results)
        done = [r for r in results if r is not None]
        if len(done) != len(requests):  # pragma: no cover - internal invariant
            raise RuntimeError("locate_many left a request without a location")
        return done

    def build_index(self, *, normalised: bool = False) -> None:
        """Build the exact index now (and the normalised one if asked) instead of lazily."""
        self._exact_index()
        if normalised:
            self._normalised_view()

    @property
    def index_nbytes(self) -> int:
        """Bytes held by the indexes built so far (numpy arrays only)."""
        total = 0
        if self._exact is not None:
            total += self._exact.nbytes
        if self._normalised is not None:
            total += self._normalised.nbytes
        return total

    # ---------------------------------------------------------------- preparation

    def _prepare(
        self, slot: int, request: LocateRequest
    ) -> tuple[Location | None, _Pending | None]:
        if request.text is None:
            return self._explicit_span(request), None
        text = canonicalize(request.text)
        hint_start, hint_end = request.start, request.end
        has_hint = hint_start is not None or hint_end is not None
        if not text.strip():
            return (
                Location(
                    MatchStatus.UNMAPPED,
                    None,
                    None,
                    None,
                    0.0,
                    hint_rejected=has_hint,
                    reason="empty or whitespace-only text",
                ),
                None,
            )
        doc = self._slot.get(request.document_id) if request.document_id is not None else None
        job = _Pending(slot, text, doc, request.document_id, hint_start, hint_end)
        if request.document_id is not None and doc is None:
            job.notes.append(f"document {request.document_id!r} is not in the corpus")
        if doc is not None and hint_start is not None:
            verified = self._verify_hint(job, doc, hint_start, hint_end)
            if verified is not None:
                return verified, None
            job.rejected = True
        return None, job

    def _verify_hint(self, job: _Pending, doc: int, start: int, end: int | None) -> Location | None:
        source = self._texts[doc]
        stop = start + len(job.text)
        if start < 0 or (end is not None and end != stop) or stop > len(source):
            return None
        if not source.startswith(job.text, start):
            return None
        span = DocSpan(self._ids[doc], start, stop)
        return Location(MatchStatus.VERIFIED, span.document_id, start, stop, 1.0, (span,))

    def _explicit_span(self, request: LocateRequest) -> Location:
        doc_id, start, end = request.document_id, request.start, request.end

        def invalid(reason: str) -> Location:
            return Location(MatchStatus.INVALID, doc_id, start, end, 0.0, reason=reason)

        if doc_id is None:
            return invalid("no text and no document id: nothing to locate")
        if doc_id not in self._slot:
            return invalid(f"unknown document {doc_id!r}")
        if start is None or end is None:
            return invalid("an explicit span needs both start and end")
        if start < 0 or end < 0:
            return invalid(f"negative offset in [{start}, {end})")
        if start > end:
            return invalid(f"inverted span [{start}, {end})")
        if start == end:
            return invalid(f"empty span [{start}, {end})")
        length = len(self._texts[self._slot[doc_id]])
        if end > length:
            return invalid(f"span [{start}, {end}) ends past the document's {length} characters")
        span = DocSpan(doc_id, start, end)
        return Location(MatchStatus.SPAN, doc_id, start, end, 1.0, (span,))

    # ---------------------------------------------------------------- choosing

    def _choose(
        self,
        job: _Pending,
        found: list[tuple[int, int, int]],
        single: MatchStatus,
        confidence: float,
        what: str,
    ) -> Location:
        """Turn the sorted occurrences ``(doc, start, end)`` of one text into a Location."""
        notes = list(job.notes)
        scope = found
        rule: str | None = None
        if job.doc is not None:
            inside = [f for f in found if f[0] == job.doc]
            if inside:
                scope = inside
                if len(found) > 1 and len(inside) == 1:
                    rule = "document_id"
            else:
                notes.append(f"not found in the named document {job.named!r}")
        if len(scope) == 1:
            chosen = scope[0]
        elif job.hint_start is not None:
            hint = job.hint_start
            chosen = min(scope, key=lambda f: (abs(f[1] - hint), f[0], f[1]))
            rule = "nearest_hint"
        else:
            chosen = scope[0]
            rule = "first"
        status = single
        if len(found) > 1:
            status = MatchStatus.AMBIGUOUS
            notes.append(f"{what} occurs {len(found)} times; chosen by {rule}")
        doc, start, end = chosen
        rejected = job.hint_start is not None and (
            start != job.hint_start or (job.hint_end is not None and end != job.hint_end)
        )
        if job.hint_start is None and job.hint_end is not None:
            rejected = end != job.hint_end
        candidates = tuple(DocSpan(self._ids[d], s, e) for d, s, e in found[: self.max_candidates])
        return Location(
            status,
            self._ids[doc],
            start,
            end,
            confidence,
            candidates,
            rule if status is MatchStatus.AMBIGUOUS else None,
            rejected,
            "; ".join(notes) or None,
        )

    def _unmapped(self, job: _Pending, reason: str) -> Location:
        notes = [*job.notes, reason]
        has_hint = job.hint_start is not None or job.hint_end is not None
        return Location(
            MatchStatus.UNMAPPED,
            None,
            None,
            None,
            0.0,
            hint_rejected=has_hint,
            reason="; ".join(notes),
        )

    # ---------------------------------------------------------------- exact stage

    def _exact_index(self) -> _MinimizerIndex:
        with self._lock:
            if self._exact is None:
                builder = _IndexBuilder(self._hasher, self.window, self._total)
                for _, block in self._blocks():
                    builder.feed(_codes(block))
                self._exact = builder.finish()
            return self._exact

    def _blocks(self) -> Iterator[tuple[int, str]]:
        """The documents' texts as one virtual string, in blocks of about 1 M characters."""
        parts: list[str] = []
        size = 0
        offset = 0
        for text in self._texts:
            pos = 0
            while pos < len(text):
                piece = text[pos : pos + _BLOCK_CHARS - size]
                parts.append(piece)
                size += len(piece)
                pos += len(piece)
                if size >= _BLOCK_CHARS:
                    yield offset, "".join(parts)
                    offset += size
                    parts, size = [], 0
        if parts:
            yield offset, "".join(parts)

    def _exact_stage(
        self, pending: list[_Pending], results: list[Location | None]
    ) -> list[_Pending]:
        indexed = [job for job in pending if len(job.text) >= self.min_indexed_length]
        found: dict[int, list[tuple[int, int, int]]] = {}
        scan: list[_Pending] = [job for job in pending if len(job.text) < self.min_indexed_length]
        if indexed:
            index = self._exact_index()
            prefix = 3 * self.window + self.kgram - 1
            texts = [job.text for job in indexed]
            hits = self._anchor_candidates(index, texts, prefix, self._starts, self._lengths)
            for job, cands in zip(indexed, hits, strict=True):
                if cands is None:
                    scan.append(job)
                    continue
                occ = [
                    (d, s, s + len(job.text))
                    for d, s in cands
                    if self._texts[d].startswith(job.text, s)
                ]
                found[job.slot] = occ
        found.update(self._scan_all(scan, normalised=False))
        remaining: list[_Pending] = []
        for job in pending:
            occ = found[job.slot]
            if occ:
                results[job.slot] = self._choose(job, occ, MatchStatus.EXACT, 1.0, "text")
            else:
                remaining.append(job)
        return remaining

    def _scan_all(
        self, jobs: list[_Pending], *, normalised: bool
    ) -> dict[int, list[tuple[int, int, int]]]:
        """Every occurrence of texts the index cannot find (short or too frequent).

        Normalised texts, and many texts at once, share one rolling-hash pass over the
        corpus (:meth:`_scan_pass`); a few exact texts are cheaper with ``str.find``.
        Texts shorter than the pass's k-gram use ``str.find`` / the regex scan.
        """
        found: dict[int, list[tuple[int, int, int]]] = {}
        needles = [job.norm if normalised else job.text for job in jobs]
        groups = [
            [i for i, n in enumerate(needles) if len(n) >= _SCAN_K],
            [i for i, n in enumerate(needles) if _SCAN_K_MIN <= len(n) < _SCAN_K],
        ]
        for group in groups:
            if not group or (not normalised and len(group) < _SCAN_BATCH_MIN):
                continue
            k = min(_SCAN_K, min(len(needles[i]) for i in group))
            hits = self._scan_pass([needles[i] for i in group], k, normalised=normalised)
            for i, occ in zip(group, hits, strict=True):
                found[jobs[i].slot] = occ
        for job, needle in zip(jobs, needles, strict=True):
            if job.slot not in found:
                found[job.slot] = (
                    self._scan_normalised(needle) if normalised else self._scan_exact(needle)
                )
        return found

    def _scan_pass(
        self, needles: list[str], k: int, *, normalised: bool
    ) -> list[list[tuple[int, int, int]]]:
        """One pass over every document finding all occurrences of all ``needles``.

        Each needle (at least ``k`` characters) is looked for by the hash of its
        first ``k`` characters; hits are filtered by the hash of its last ones and
        then confirmed with ``str.startswith``. In the normalised view the pass runs over
        each block's folded, whitespace-free characters and maps hits back through the
        kept positions.
        """
        hasher = self._scan_hashers.setdefault(k, _Hasher(k))
        longest = max(len(n) for n in needles)
        ends = _codes("".join(n[:k] + n[-k:] for n in needles)).reshape(len(needles), 2 * k)
        head = hasher.kgrams(ends[:, :k])[:, 0]
        tail = hasher.kgrams(ends[:, k:])[:, 0]
        order = np.argsort(head, kind="stable")
        sorted_head = head[order]
        sizes = np.array([len(n) for n in needles], dtype=np.int64)
        # a bitmap of the heads' low bits rejects almost every position before searchsorted
        bitmap = np.zeros(1 << 20, dtype=np.bool_)
        low = np.uint64((1 << 20) - 1)
        bitmap[(head & low).astype(np.int64)] = True
        out: list[list[tuple[int, int, int]]] = [[] for _ in needles]
        for d, text in enumerate(self._texts):
            for b in range(0, len(text), _BLOCK_CHARS):
                stop = b + _BLOCK_CHARS
                reach = longest - 1
                while True:
                    piece = text[b : stop + reach]
                    if not normalised:
                        kept = None
                        codes = _codes(piece)
                        own = min(len(piece), _BLOCK_CHARS)
                        break
                    folded = _codes(_fold(piece))
                    keep_pos = np.flatnonzero(_keep_mask(folded))
                    own = int(np.searchsorted(keep_pos, _BLOCK_CHARS))
                    # enough normalised characters after this block's own starts?
                    if len(keep_pos) - own >= longest - 1 or stop + reach >= len(text):
                        kept = keep_pos
                        codes = folded[keep_pos]
                        break
                    reach *= 2
                if len(codes) < k or own == 0:
                    continue
                h = hasher.kgrams(codes)
                starts = h[: min(own, len(h))]
                maybe = np.flatnonzero(bitmap[(starts & low).astype(np.int64)])
                if not len(maybe):
                    continue
                lo = np.searchsorted(sorted_head, starts[maybe], side="left")
                hi = np.searchsorted(sorted_head, starts[maybe], side="right")
                count = hi - lo
                at = np.flatnonzero(count)
                if not len(at):
                    continue
                ranked = np.repeat(at, count[at])
                step = np.arange(len(ranked)) - np.repeat(
                    np.cumsum(count[at]) - count[at], count[at]
                )
                which = order[lo[ranked] + step]
                owner = maybe[ranked]
                last = owner + sizes[which] - k
                fits = last < len(h)
                owner, which, last = owner[fits], which[fits], last[fits]
                same = h[last] == tail[which]
                owner, which = owner[same], which[same]
                as_text = (
                    codes.tobytes().decode("utf-32-le", "surrogatepass")
                    if kept is not None
                    else piece
                )
                for i, q in sorted(zip(owner.tolist(), which.tolist(), strict=True)):
                    needle = needles[q]
                    if not as_text.startswith(needle, i):
                        continue
                    if kept is None:
                        out[q].append((d, b + i, b + i + len(needle)))
                    else:
                        end = int(kept[i + len(needle) - 1]) + 1
                        out[q].append((d, b + int(kept[i]), b + end))
        return out

    def _scan_exact(self, needle: str) -> list[tuple[int, int, int]]:
        """Slow path: every occurrence by ``str.find`` over each document."""
        out: list[tuple[int, int, int]] = []
        for d, text in enumerate(self._texts):
            pos = text.find(needle)
            while pos != -1:
                out.append((d, pos, pos + len(needle)))
                pos = text.find(needle, pos + 1)
        return out

    def _anchor_candidates(
        self,
        index: _MinimizerIndex,
        texts: list[str],
        prefix: int,
        starts: I64,
        lengths: I64,
    ) -> list[list[tuple[int, int]] | None]:
        """Candidate ``(doc, local start)`` for each text, via its rarest full-window minimizer.

        ``None`` when every minimizer is too frequent to enumerate (caller scans instead).
        Candidates still need confirming; ones that would cross a document end are dropped.
        """
        out: list[list[tuple[int, int]] | None] = [None] * len(texts)
        full = np.array([len(t) for t in texts], dtype=np.int64)
        for lo_row, rows, offs, keys in self._batched_minimizers(texts, prefix):
            first, count = index.lookup(keys)
            usable = count <= self.max_occurrences
            # the rarest usable minimizer of each text (ties: leftmost) finds every occurrence
            rank = np.where(usable, count, np.iinfo(np.int64).max)
            order = np.lexsort((offs, rank, rows))
            _, head = np.unique(rows[order], return_index=True)
            best = order[head]
            best = best[usable[best]]
            for row in rows[best].tolist():
                out[lo_row + row] = []
            pos, owner = index.positions(first[best], count[best])
            slots = lo_row + rows[best][owner]
            pos -= offs[best][owner]
            need = full[slots]
            docs = np.maximum(np.searchsorted(starts, pos, side="right") - 1, 0)
            local = pos - starts[docs]
            ok = (local >= 0) & (local + need <= lengths[docs])
            for slot, d, s in zip(
                slots[ok].tolist(), docs[ok].tolist(), local[ok].tolist(), strict=True
            ):
                hits = out[slot]
                if hits is not None:
                    hits.append((d, s))
        return out

    def _batched_minimizers(
        self, texts: list[str], limit: int | None = None
    ) -> Iterator[tuple[int, I64, I64, U64]]:
        """For batches of texts (each cut to ``limit`` characters): the minimizers of every
        full window, as (first text number, row, offset, hash)."""
        w, k = self.window, self.kgram
        cap = limit if limit is not None else max((len(t) for t in texts), default=0)
        start = 0
        while start < len(texts):
            stop = start
            width = 0
            while stop < len(texts):
                size = min(len(texts[stop]), cap)
                if stop > start and (stop - start + 1) * max(width, size) > _BATCH_CHARS:
                    break
                width = max(width, size)
                stop += 1
            batch = [t[:cap] for t in texts[start:stop]]
            codes = _codes("".join(t.ljust(width, "\0") for t in batch)).reshape(len(batch), width)
            h = self._hasher.kgrams(codes)
            nk = np.array([len(t) - k + 1 for t in batch], dtype=np.int64)
            cols = np.arange(h.shape[1])
            h = np.where(cols[None, :] < nk[:, None], h, _SENTINEL)
            mask = _minimizer_mask(h, w, nk - w + 1)
            rows, offs = np.nonzero(mask)
            yield start, rows.astype(np.int64), offs.astype(np.int64), h[rows, offs]
            start = stop

    # ---------------------------------------------------------------- normalised stage

    def _normalised_view(self) -> _NormalisedView:
        with self._lock:
            if self._normalised is None:
                self._normalised = self._build_normalised()
            return self._normalised

    def _build_normalised(self) -> _NormalisedView:
        builder = _IndexBuilder(self._hasher, self.window, self._total)
        ndocs = len(self._texts)
        norm_starts = np.zeros(ndocs, dtype=np.int64)
        norm_lengths = np.zeros(ndocs, dtype=np.int64)
        ckpt_base = np.zeros(ndocs, dtype=np.int64)
        checkpoints: list[npt.NDArray[np.integer[Any]]] = []
        # document-local offsets: 32 bits suffice unless one document passes 2 G characters
        narrow = np.int32 if int(self._lengths.max(initial=0)) < 2**31 else np.int64
        n_ckpt = 0
        produced = 0  # normalised characters emitted so far
        doc_ends = self._starts + self._lengths
        for offset, block in self._blocks():
            codes = _codes(_fold(block))
            keep = _keep_mask(codes)
            kept = np.flatnonzero(keep).astype(np.int64)  # block-local canonical offsets
            builder.feed(codes[keep])
            block_end = offset + len(block)
            first = int(np.searchsorted(doc_ends, offset, side="right"))
            d = first
            while d < ndocs and self._starts[d] < block_end:
                lo_c = max(int(self._starts[d]), offset) - offset
                hi_c = min(int(doc_ends[d]), block_end) - offset
                lo_k = int(np.searchsorted(kept, lo_c))
                hi_k = int(np.searchsorted(kept, hi_c))
                if self._starts[d] >= offset:
                    norm_starts[d] = produced + lo_k
                    ckpt_base[d] = n_ckpt
                local0 = produced + lo_k - int(norm_starts[d])  # doc-local normalised index
                local1 = local0 + (hi_k - lo_k)
                first_ck = -(-local0 // _CHECKPOINT) * _CHECKPOINT
                pick = np.arange(first_ck, local1, _CHECKPOINT, dtype=np.int64)
                if len(pick):
                    canon = kept[pick - local0 + lo_k] + offset - int(self._starts[d])
                    checkpoints.append(canon.astype(narrow))
                    n_ckpt += len(pick)
                norm_lengths[d] = local1
                d += 1
            produced += len(kept)
        ckpts: npt.NDArray[np.integer[Any]] = (
            np.concatenate(checkpoints) if checkpoints else np.zeros(0, dtype=narrow)
        )
        # documents are contiguous in the normalised stream; this also places empty documents
        # (never visited above) so that the starts stay sorted for searchsorted
        norm_starts = np.cumsum(norm_lengths) - norm_lengths
        return _NormalisedView(builder.finish(), norm_starts, norm_lengths, ckpt_base, ckpts)

    def _to_canonical(self, view: _NormalisedView, doc: int, local: int) -> int:
        """Canonical offset in document ``doc`` of its ``local``-th normalised character."""
        j = local // _CHECKPOINT
        pos = int(view.checkpoints[int(view.checkpoint_base[doc]) + j])
        return _advance_nonspace(self._texts[doc], pos, local - j * _CHECKPOINT)

    def _normalised_stage(
        self, pending: list[_Pending], results: list[Location | None]
    ) -> list[_Pending]:
        for job in pending:
            job.norm = _normalise(job.text)
        indexed = [job for job in pending if len(job.norm) >= self.min_indexed_length]
        scan = [job for job in pending if len(job.norm) < self.min_indexed_length]
        found: dict[int, list[tuple[int, int, int]]] = {}
        if indexed:
            view = self._normalised_view()
            prefix = 3 * self.window + self.kgram - 1
            hits = self._anchor_candidates(
                view.index,
                [job.norm for job in indexed],
                prefix,
                view.starts,
                view.lengths,
            )
            for job, cands in zip(indexed, hits, strict=True):
                if cands is None:
                    scan.append(job)
                    continue
                occ: list[tuple[int, int, int]] = []
                last = len(job.norm) - 1
                for d, s in cands:
                    cs = self._to_canonical(view, d, s)
                    ce = self._to_canonical(view, d, s + last) + 1
                    if _normalise(self._texts[d][cs:ce]) == job.norm:
                        occ.append((d, cs, ce))
                found[job.slot] = occ
        found.update(self._scan_all(scan, normalised=True))
        remaining: list[_Pending] = []
        for job in pending:
            occ = found[job.slot]
            if not occ:
                remaining.append(job)
                continue
            loc = self._choose(job, occ, MatchStatus.NORMALISED, 1.0, "normalised text")
            chosen = self._texts[self._slot[loc.document_id or ""]][loc.start : loc.end]
            # same letters; whitespace differences lower the score, and a normalised match
            # stays below an exact one
            score = min(_NORMALISED_CAP, fuzz.ratio(_fold(job.text.strip()), _fold(chosen)) / 100.0)
            results[job.slot] = _with_confidence(loc, score)
        return remaining

    def _scan_normalised(self, norm: str) -> list[tuple[int, int, int]]:
        """Slow path for short texts: a whitespace-tolerant, case-blind regex per document."""
        if not norm:
            return []
        pattern = re.compile(r"\s*".join(re.escape(c) for c in norm), re.IGNORECASE)
        out: list[tuple[int, int, int]] = []
        for d, text in enumerate(self._texts):
            m = pattern.search(text)
            while m is not None:
                if _normalise(m.group()) == norm:
                    out.append((d, m.start(), m.end()))
                m = pattern.search(text, m.start() + 1)
        return out

    # ---------------------------------------------------------------- fuzzy stage

    def _fuzzy_stage(self, pending: list[_Pending], results: list[Location | None]) -> None:
        indexed = [job for job in pending if len(job.norm) >= self.min_indexed_length]
        for job in pending:
            if len(job.norm) < self.min_indexed_length:
                results[job.slot] = self._fuzzy_scan(job)
        if not indexed:
            return
        view = self._normalised_view()
        votes: list[list[tuple[int, int]]] = [[] for _ in indexed]
        for lo_row, rows, offs, keys in self._batched_minimizers([j.norm for j in indexed]):
            first, count = view.index.lookup(keys)
            keep = np.flatnonzero((count > 0) & (count <= self.max_occurrences))
            pos, owner = view.index.positions(first[keep], count[keep])
            diag = pos - offs[keep][owner]
            for row, dg, p in zip(
                (lo_row + rows[keep][owner]).tolist(), diag.tolist(), pos.tolist(), strict=True
            ):
                votes[row].append((dg, p))
        for job, vote in zip(indexed, votes, strict=True):
            results[job.slot] = self._fuzzy_from_votes(job, vote, view)

    def _fuzzy_from_votes(
        self, job: _Pending, vote: list[tuple[int, int]], view: _NormalisedView
    ) -> Location:
        """Pick the densest diagonal cluster (in the named document first) and align there."""
        nothing = "not found, and no part of it matches the corpus"
        if not vote:
            return self._unmapped(job, nothing)
        n = len(job.norm)
        band = max(2 * self.window, n // 2)
        diag = np.array(sorted(vote), dtype=np.int64)
        docs = np.searchsorted(view.starts, diag[:, 1], side="right") - 1
        regions: list[tuple[int, int, int]] = []
        scopes: list[int | None] = [job.doc, None] if job.doc is not None else [None]
        for restrict in scopes:
            sel = np.arange(len(diag)) if restrict is None else np.flatnonzero(docs == restrict)
            if not len(sel):
                continue
            d_sel = diag[sel, 0]
            reach = np.searchsorted(d_sel, d_sel + band, side="right")
            i = int(np.argmax(reach - np.arange(len(sel))))
            cluster = sel[i : int(reach[i])]
            doc = int(np.bincount(docs[cluster]).argmax())
            cluster = cluster[docs[cluster] == doc]
            base = int(view.starts[doc])
            lo = max(0, int(diag[cluster[0], 0]) - base)
            hi = min(int(view.lengths[doc]), int(diag[cluster[-1], 0]) - base + n)
            if hi > lo and (doc, lo, hi) not in regions:
                regions.append((doc, lo, hi))
        outcome: Location | None = None
        for doc, lo, hi in regions:
            source = self._texts[doc]
            margin = 16
            c_lo = max(0, self._to_canonical(view, doc, lo) - margin)
            c_hi = min(len(source), self._to_canonical(view, doc, hi - 1) + 1 + margin)
            outcome = self._align(job, doc, c_lo, c_hi)
            if outcome.status is not MatchStatus.UNMAPPED:
                return outcome
        return outcome if outcome is not None else self._unmapped(job, nothing)

    def _align(self, job: _Pending, doc: int, c_lo: int, c_hi: int) -> Location:
        """Align the normalised text inside canonical ``[c_lo, c_hi)`` of ``doc``; score it."""
        window = self._texts[doc][c_lo:c_hi]
        codes = _codes(_fold(window))
        kept = np.flatnonzero(_keep_mask(codes))
        norm_window = codes[kept].tobytes().decode("utf-32-le", "surrogatepass")
        chunk = job.norm
        if len(chunk) * len(norm_window) <= _ALIGN_CELLS:
            bounds = _aligned_bounds(chunk, norm_window)
        else:
            # Long texts: the full alignment matrix would be too big, so place the start
            # by aligning the heads and the end by aligning the tails.
            head = _aligned_bounds(chunk[:_ALIGN_EDGE], norm_window[: 2 * _ALIGN_EDGE])
            cut = max(0, len(norm_window) - 2 * _ALIGN_EDGE)
            tail = _aligned_bounds(chunk[-_ALIGN_EDGE:], norm_window[cut:])
            bounds = None if head is None or tail is None else (head[0], cut + tail[1])
        if bounds is None or bounds[1] <= bounds[0]:
            return self._unmapped(job, "no alignment with the candidate region")
        n_lo, n_hi = bounds
        score = fuzz.ratio(job.norm, norm_window[n_lo:n_hi]) / 100.0
        start = c_lo + int(kept[n_lo])
        end = c_lo + int(kept[n_hi - 1]) + 1
        if score < self.fuzzy_threshold:
            return self._unmapped(
                job,
                f"best approximate match {self._ids[doc]}[{start}:{end}] scored {score:.3f}, "
                f"below the threshold {self.fuzzy_threshold}",
            )
        return self._choose(job, [(doc, start, end)], MatchStatus.FUZZY, score, "approximate text")

    def _fuzzy_scan(self, job: _Pending) -> Location:
        """Slow path for short texts: rapidfuzz partial alignment per document, size-capped."""
        if len(job.norm) < _FUZZY_MIN_CHARS:
            return self._unmapped(job, "not found, and too short to match approximately")
        scopes = [range(len(self._texts))]
        if job.doc is not None:
            scopes.insert(0, range(job.doc, job.doc + 1))
        needle = job.text.strip()
        best: tuple[float, int, int, int] | None = None
        for docs in scopes:
            if sum(len(self._texts[d]) for d in docs) > self.fuzzy_scan_limit:
                return self._unmapped(
                    job,
                    f"not found; approximate search for texts under {self.min_indexed_length} "
                    f"characters is limited to {self.fuzzy_scan_limit} characters of corpus",
                )
            best = None
            for d in docs:
                al = fuzz.partial_ratio_alignment(needle, self._texts[d])
                if al is None:
                    continue
                key = (al.score / 100.0, -d, -al.dest_start, al.dest_end)
                if best is None or key[:3] > best[:3]:
                    best = key
            if best is not None and best[0] >= self.fuzzy_threshold:
                score, nd, ns, end = best
                return self._choose(
                    job, [(-nd, -ns, end)], MatchStatus.FUZZY, score, "approximate text"
                )
        score = 0.0 if best is None else best[0]
        return self._unmapped(
            job, f"not found; best approximate match scored {score:.3f}, below the threshold"
        )


def _aligned_bounds(chunk: str, window: str) -> tuple[int, int] | None:
    """Where ``chunk`` lies in ``window`` (both normalised), as ``[lo, hi)`` of ``window``.

    Kadane over rapidfuzz's matching blocks: matched characters minus the characters
    skipped between blocks on either side, so stray matches (a prepended header's
    letters scattered over the text before the chunk) do not stretch the span; then the
    ends grow character by character, undoing the aligner's arbitrary choice between
    equally good alignments.
    """
    blocks = [b for b in Indel.opcodes(chunk, window).as_matching_blocks() if b.size > 0]
    if not blocks:
        return None
    best_score, best_lo, best_hi = -1, 0, 0
    cur_score, cur_lo = 0, 0
    for i, blk in enumerate(blocks):
        gap = 0
        if i:
            prev = blocks[i - 1]
            gap = (blk.b - prev.b - prev.size) + (blk.a - prev.a - prev.size)
        if i == 0 or cur_score - gap <= 0:
            cur_score, cur_lo = blk.size, i
        else:
            cur_score += blk.size - gap
        if cur_score > best_score:
            best_score, best_lo, best_hi = cur_score, cur_lo, i
    a_lo, lo = blocks[best_lo].a, blocks[best_lo].b
    while a_lo > 0 and lo > 0 and chunk[a_lo - 1] == window[lo - 1]:
        a_lo -= 1
        lo -= 1
    a_hi = blocks[best_hi].a + blocks[best_hi].size
    hi = blocks[best_hi].b + blocks[best_hi].size
    while a_hi < len(chunk) and hi < len(window) and chunk[a_hi] == window[hi]:
        a_hi += 1
        hi += 1
    return lo, hi


def _with_confidence(loc: Location, confidence: float) -> Location:
    return Location(
        loc.status,
        loc.document_id,
        loc.start,
        loc.end,
        confidence,
        loc.candidates,
        loc.resolved_by,
        loc.hint_rejected,
        loc.reason,
    )
