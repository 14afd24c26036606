"""Slow paths: finding texts the index cannot find (too short, or only frequent minimizers).

Many texts share one rolling-hash pass over the virtual text (:meth:`CorpusScanner.scan_pass`),
about 20 ms per MB of corpus (about 30 in the normalised view, 55 for a thousand texts at
once); a few exact texts use ``str.find`` (about 2 ms per MB each; a bare ``str.find`` is 0.3)
and very short normalised ones a whitespace-tolerant, case-blind regular expression (about
17 ms per MB); CPU time on 48 MB of bench_scale_ray's Zipf text. Every scan runs over the
documents end to end, never one document at a time, so a corpus of many tiny documents costs
what one long document does; a hit is placed in its document by ``searchsorted`` on the
document ends, and one that runs into the next document is dropped.
"""

from __future__ import annotations

import re
import threading
from typing import Final, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from spanchor_core.locate.copies import CopyMap
from spanchor_core.locate.documents import BLOCK_CHARS, CorpusTexts, Occurrence
from spanchor_core.locate.hashing import KgramHasher
from spanchor_core.locate.index import MinimizerIndex
from spanchor_core.locate.probe import LowBytes, Probe
from spanchor_core.locate.sampled import SAMPLE_K, SampledIndex, code_blocks
from spanchor_core.locate.text import code_points, fold, non_space_mask, normalise

__all__ = ["CorpusScanner", "KeptShortIndex", "ShortIndexStore"]

_SCAN_K: Final = 12  # k-gram of the shared scan for texts too short for the index
_SCAN_K_MIN: Final = 4  # shorter normalised texts use a regular-expression scan
_SCAN_BATCH_MIN: Final = 16  # fewer exact texts than this: one str.find scan each
_SAMPLED_AT_ONCE: Final = 256  # this many short texts in one batch: index them at once
_PROBE_SHARE: Final = 64  # low bytes kept past one enumerated candidate per this many characters


class KeptShortIndex(NamedTuple):
    """A sampled index as kept across runs: its sorted table and ``pos_bits``, and for the
    canonical text the probes' low bytes built with it (``None`` for the normalised stream)."""

    table: npt.NDArray[np.uint64]
    pos_bits: int
    low: npt.NDArray[np.uint8] | None


class ShortIndexStore(Protocol):
    """Where a scanner keeps its sampled indexes across processes and runs (the persistent
    index cache, :mod:`spanchor_core.index_store`); this layer itself reads and writes no file.
    Neither method raises: a store that cannot give or take an index says ``None`` or drops it."""

    def load(self, *, normalised: bool) -> KeptShortIndex | None: ...

    def save(self, kept: KeptShortIndex, *, normalised: bool) -> None: ...


class CorpusScanner:
    """Every occurrence of given texts in a corpus, by scanning it (no index); and what the
    slow paths keep across batches: the sampled indexes, the low bytes the probes read, the
    copy map of frequent minimizers, the normalised stream as one string."""

    def __init__(self, documents: CorpusTexts) -> None:
        self.documents = documents
        self._hashers: dict[int, KgramHasher] = {}
        self._lock = threading.Lock()
        self._passes = [0, 0]  # full scan passes run so far: exact, normalised
        self._sampled: list[SampledIndex | None] = [None, None]
        self._low_bytes: list[LowBytes | None] = [None, None]
        self._probed = [0, 0]  # candidates enumerated so far without low bytes, per view
        self._copies: CopyMap | None = None
        self._normalised_text: str | None = None
        self.store: ShortIndexStore | None = None
        """Where the sampled indexes are taken from before building and kept after."""

    def sampled_index(self, *, normalised: bool, wanted: int) -> SampledIndex | None:
        """The sampled k-gram index of the text (or of its normalised stream), for ``wanted``
        short texts: built for a batch of many short texts, or for a batch that would need a
        full scan pass once this run has shown it has short texts (a pass needed before, or
        the other view's sampled index built); until then ``None`` (scan instead).

        The second rule is per run, not per batch: a run of short chunks in batches half as
        large (``batch_results``) holds half as many short texts a batch, and the normalised
        stage of such a run sees only the few the exact one did not place (the absent ones,
        about 5 % of them). Building costs about one scan pass, so paying a pass on the first
        batch and then building on the second cost a fifth of the short row's mapping."""
        view = int(normalised)
        with self._lock:
            built = self._sampled[view]
            seen = self._passes[view] > 0 or self._sampled[1 - view] is not None
            repeated = seen and wanted >= _SCAN_BATCH_MIN
            if built is None and (repeated or wanted >= _SAMPLED_AT_ONCE):
                built = self._build_sampled(view)
            return built

    def build_sampled(self, *, normalised: bool) -> SampledIndex:
        """The sampled index of the text (or of its normalised stream), built now if it is not
        yet: for a caller that knows a run of short texts is coming (before forking, so that
        every process inherits one index instead of building its own)."""
        view = int(normalised)
        with self._lock:
            built = self._sampled[view]
            return built if built is not None else self._build_sampled(view)

    def sampled_kept(self, *, normalised: bool) -> bool:
        """Whether the sampled index of the text (or of its normalised stream) is built, or
        kept in :attr:`store` (then building it only maps the kept one)."""
        if self._sampled[int(normalised)] is not None:
            return True
        return self.store is not None and self.store.load(normalised=normalised) is not None

    def adopt_sampled(self, index: SampledIndex, *, normalised: bool) -> None:
        """Use ``index``, the sampled index of this corpus's text (or normalised stream) built
        elsewhere (:meth:`build_sampled` on a forked copy of this scanner)."""
        with self._lock:
            if self._sampled[int(normalised)] is None:
                self._sampled[int(normalised)] = index

    def _build_sampled(self, view: int) -> SampledIndex:
        """Build the sampled index of ``view`` (1: the normalised stream), or take it from the
        store, where it is kept once built; the lock is held."""
        normalised = bool(view)
        hasher = self._hashers.setdefault(SAMPLE_K, KgramHasher(SAMPLE_K))
        store = self.store
        kept = None if store is None else store.load(normalised=normalised)
        if kept is not None:
            built = SampledIndex.from_table(hasher, kept.table, kept.pos_bits)
            self._sampled[view] = built
            if kept.low is not None and self._low_bytes[view] is None:
                self._low_bytes[view] = LowBytes.from_array(kept.low)
            return built
        blocks = code_blocks(self.documents, normalised=normalised)
        low = None
        # the probes' bytes of the canonical text from the same pass (the normalised
        # stage sees only the few texts the exact one did not place: there the bytes
        # wait for their candidates, as before)
        if not normalised and self._low_bytes[view] is None:
            blocks, low = LowBytes.alongside(blocks, self.documents.total)
        built = SampledIndex(hasher, blocks, self.documents.total)
        self._sampled[view] = built
        if low is not None and low.complete:
            self._low_bytes[view] = low
        if store is not None:
            kept_low = self._low_bytes[view]
            low_array = None if normalised or kept_low is None else kept_low.low
            store.save(
                KeptShortIndex(built.index.packed, built.pos_bits, low_array), normalised=normalised
            )
        return built

    def probe(self, texts: list[str], candidates: int, *, normalised: bool) -> Probe | None:
        """A probe of ``texts`` (``None``: not worth one) against the low bytes of the text (or
        of its normalised stream), for a search about to enumerate ``candidates``: the bytes
        are kept once the searches of this scanner have enumerated more candidates than one
        corpus character in ``_PROBE_SHARE`` (below that, confirming them one by one costs less
        than a pass over the corpus and the bytes); those of the canonical text from the start
        when its sampled index is built (its pass reads every code point anyway, and the short
        texts it serves enumerate some ten candidates each, nine of them wrong: a run of
        100,000 short texts confirmed most of its million candidates one by one before the
        bytes paid)."""
        view = int(normalised)
        with self._lock:
            low = self._low_bytes[view]
            if low is None:
                self._probed[view] += candidates
                if self._probed[view] * _PROBE_SHARE < self.documents.total:
                    return None
                blocks = code_blocks(self.documents, normalised=normalised)
                low = self._low_bytes[view] = LowBytes(blocks, self.documents.total)
        return low.probe(texts)

    def copies(self, index: MinimizerIndex) -> CopyMap:
        """The agreement of the copies of frequent minimizers of ``index`` (the exact index of
        these documents), kept across batches."""
        with self._lock:
            if self._copies is None or self._copies.index is not index:
                self._copies = CopyMap(self.documents, index)
            return self._copies

    def normalised_text(self) -> str:
        """The normalised stream of the whole corpus as one string (built on first call): a
        few short normalised texts are found in it by ``str.find``, not by a rolling-hash pass."""
        with self._lock:
            if self._normalised_text is None:
                self._normalised_text = "".join(
                    normalise(block) for _, block in self.documents.blocks()
                )
            return self._normalised_text

    def find_normalised(self, norm: str) -> list[int]:
        """Every offset of the normalised stream where ``norm`` (not empty) starts."""
        stream = self.normalised_text()
        hits: list[int] = []
        pos = stream.find(norm)
        while pos != -1:
            hits.append(pos)
            pos = stream.find(norm, pos + 1)
        return hits

    def find_all(self, needles: list[str], *, normalised: bool) -> list[list[Occurrence]]:
        """Every occurrence of each needle (canonical text, or normalised with ``normalised``).

        Normalised texts, and many texts at once, share one rolling-hash pass over the
        corpus (:meth:`scan_pass`); a few exact texts are cheaper with ``str.find``.
        Texts shorter than the pass's k-gram use ``str.find`` / the regex scan.
        """
        found: dict[int, list[Occurrence]] = {}
        groups = [
            [i for i, n in enumerate(needles) if len(n) >= _SCAN_K],
            [i for i, n in enumerate(needles) if _SCAN_K_MIN <= len(n) < _SCAN_K],
        ]
        for group in groups:
            if not group or (not normalised and len(group) < _SCAN_BATCH_MIN):
                continue
            k = min(_SCAN_K, min(len(needles[i]) for i in group))
            self._passes[int(normalised)] += 1
            hits = self.scan_pass([needles[i] for i in group], k, normalised=normalised)
            for i, occ in zip(group, hits, strict=True):
                found[i] = occ
        return [
            found[i]
            if i in found
            else (self.scan_normalised(needle) if normalised else self.scan_exact(needle))
            for i, needle in enumerate(needles)
        ]

    def scan_pass(self, needles: list[str], k: int, *, normalised: bool) -> list[list[Occurrence]]:
        """One pass over every document finding all occurrences of all ``needles``.

        Each needle (at least ``k`` characters) is looked for by the hash of its
        first ``k`` characters; hits are filtered by the hash of its last ones and
        then confirmed with ``str.startswith``. In the normalised view the pass runs over
        each block's folded, whitespace-free characters and maps hits back through the
        kept positions.
        """
        hasher = self._hashers.setdefault(k, KgramHasher(k))
        longest = max(len(n) for n in needles)
        ends = code_points("".join(n[:k] + n[-k:] for n in needles)).reshape(len(needles), 2 * k)
        head = hasher.kgrams(ends[:, :k])[:, 0]
        tail = hasher.kgrams(ends[:, k:])[:, 0]
        order = np.argsort(head, kind="stable")
        sorted_head = head[order]
        sizes = np.array([len(n) for n in needles], dtype=np.int64)
        # a bitmap of the heads' low bits rejects almost every position before searchsorted
        bitmap = np.zeros(1 << 20, dtype=np.bool_)
        low = np.uint64((1 << 20) - 1)
        bitmap[(head & low).astype(np.int64)] = True
        out: list[list[Occurrence]] = [[] for _ in needles]
        documents = self.documents
        total = documents.total
        for b in range(0, total, BLOCK_CHARS):
            stop = b + BLOCK_CHARS
            reach = longest - 1
            while True:
                piece = documents.virtual(b, stop + reach)
                if not normalised:
                    kept = None
                    codes = code_points(piece)
                    own = min(len(piece), BLOCK_CHARS)
                    break
                folded = code_points(fold(piece))
                keep_pos = np.flatnonzero(non_space_mask(folded))
                own = int(np.searchsorted(keep_pos, BLOCK_CHARS))
                # enough normalised characters after this block's own starts?
                if len(keep_pos) - own >= longest - 1 or stop + reach >= total:
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
            step = np.arange(len(ranked)) - np.repeat(np.cumsum(count[at]) - count[at], count[at])
            which = order[lo[ranked] + step]
            owner = maybe[ranked]
            last = owner + sizes[which] - k
            fits = last < len(h)
            owner, which, last = owner[fits], which[fits], last[fits]
            same = h[last] == tail[which]
            owner, which = owner[same], which[same]
            if not len(owner):
                continue
            # the virtual range of each hit: it must lie inside one document
            if kept is None:
                first = owner.astype(np.int64) + b
                after = first + sizes[which]
            else:
                first = kept[owner].astype(np.int64) + b
                after = kept[owner + sizes[which] - 1].astype(np.int64) + (b + 1)
            docs, inside = documents.owners(first, after)
            owner, which, docs = owner[inside], which[inside], docs[inside]
            local = first[inside] - documents.starts[docs]
            local_end = after[inside] - documents.starts[docs]
            as_text = (
                codes.tobytes().decode("utf-32-le", "surrogatepass") if kept is not None else piece
            )
            for i, q, d, s, e in sorted(
                zip(
                    owner.tolist(),
                    which.tolist(),
                    docs.tolist(),
                    local.tolist(),
                    local_end.tolist(),
                    strict=True,
                )
            ):
                if as_text.startswith(needles[q], i):
                    out[q].append((d, s, e))
        return out

    def scan_exact(self, needle: str) -> list[Occurrence]:
        """Slow path: every occurrence by ``str.find`` over runs of whole documents."""
        out: list[Occurrence] = []
        if not needle:  # every position of every document, as str.find sees it
            for d, length in enumerate(self.documents.lengths.tolist()):
                out.extend((d, p, p) for p in range(length + 1))
            return out
        for _, base, text in self.documents.groups():
            hits: list[int] = []
            pos = text.find(needle)
            while pos != -1:
                hits.append(pos)
                pos = text.find(needle, pos + 1)
            if hits:
                out.extend(self._inside(base, hits, [len(needle)] * len(hits)))
        return out

    def _inside(self, base: int, hits: list[int], sizes: list[int]) -> list[Occurrence]:
        """Hits ``(offset, size)`` in a group joined at virtual ``base`` that lie inside one
        document, as occurrences."""
        first = np.array(hits, dtype=np.int64) + base
        after = first + np.array(sizes, dtype=np.int64)
        docs, inside = self.documents.owners(first, after)
        starts = self.documents.starts[docs[inside]]
        return list(
            zip(
                docs[inside].tolist(),
                (first[inside] - starts).tolist(),
                (after[inside] - starts).tolist(),
                strict=True,
            )
        )

    def scan_normalised(self, norm: str) -> list[Occurrence]:
        """Slow path for short texts: a whitespace-tolerant, case-blind regex over runs of whole
        documents (a match that runs from one document into the next is dropped)."""
        if not norm:
            return []
        pattern = re.compile(r"\s*".join(re.escape(c) for c in norm), re.IGNORECASE)
        out: list[Occurrence] = []
        for _, base, text in self.documents.groups():
            hits: list[int] = []
            sizes: list[int] = []
            m = pattern.search(text)
            while m is not None:
                if normalise(m.group()) == norm:
                    hits.append(m.start())
                    sizes.append(m.end() - m.start())
                m = pattern.search(text, m.start() + 1)
            if hits:
                out.extend(self._inside(base, hits, sizes))
        return out
