"""Anchors broken by a changed corpus: :func:`check_corpus` finds them and where their text
went, :func:`fix_gold` rewrites the moved ones (``spanchor check-corpus [--fix]``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Final, Literal

from spanchor_core.authoring.gold_edits import rebuilt
from spanchor_core.authoring.hash_search import HashSearch, nearest
from spanchor_core.corpus import Corpus, sha256_text
from spanchor_core.errors import GoldError
from spanchor_core.gold import Anchor, GoldProblem, GoldQuery, GoldSet, validate_gold
from spanchor_core.spans import DocSpan

__all__ = ["AnchorCheck", "AnchorFate", "CorpusCheck", "check_corpus", "fix_gold"]


class AnchorFate(StrEnum):
    """What :func:`check_corpus` found out about one broken anchor."""

    MOVED = "moved"
    """The anchor's exact text is elsewhere; ``moved_to`` says where."""
    AMBIGUOUS = "ambiguous"
    """The text is in several other documents and none is preferable: not moved."""
    LOST = "lost"
    """The text is nowhere in the searched part of the corpus (see ``searched``)."""
    UNSEARCHABLE = "unsearchable"
    """The anchor is malformed (negative, inverted or empty span): nothing to look for."""


@dataclass(frozen=True, slots=True)
class AnchorCheck:
    """One broken anchor: what is wrong, and where its text went, if anywhere.

    ``entry`` and ``anchor_index`` locate it in ``gold.entries[entry].anchors``.
    ``candidates`` are all places found whose text hashes to the anchor's hash;
    ``searched`` says how far the search went: ``"previous"`` (the text came from a
    previous corpus and was looked up everywhere), ``"nearby"`` (found near its old place,
    nothing else scanned), ``"document"`` (found in, or only searched, its own document),
    ``"corpus"`` (every document), ``"partial"`` (the hash budget ran out first) or
    ``"none"``. ``resolved_by`` says why ``moved_to`` was chosen.
    """

    entry: int
    anchor_index: int
    query_id: str
    line: int | None
    anchor: Anchor
    code: str
    message: str
    fate: AnchorFate
    moved_to: DocSpan | None = None
    candidates: tuple[DocSpan, ...] = ()
    searched: str = "none"
    resolved_by: str | None = None


@dataclass(frozen=True, slots=True)
class CorpusCheck:
    """Result of :func:`check_corpus`.

    ``problems`` is everything :func:`spanchor_core.validate_gold` reports (query-level
    problems too); ``broken`` has one :class:`AnchorCheck` per broken anchor. The cost
    fields say what the hash search did: ``windows_hashed`` sha256 computations over
    ``scans`` (document, length) pairs in ``seconds``.
    """

    gold_sha256: str
    corpus_fingerprint: str
    queries: int
    anchors: int
    problems: tuple[GoldProblem, ...]
    broken: tuple[AnchorCheck, ...]
    windows_hashed: int = 0
    scans: int = 0
    seconds: float = 0.0

    @property
    def healthy(self) -> bool:
        """True when the gold set has no problem at all against the corpus."""
        return not self.problems

    @property
    def moved(self) -> tuple[AnchorCheck, ...]:
        return tuple(c for c in self.broken if c.fate is AnchorFate.MOVED)

    @property
    def unresolved(self) -> tuple[AnchorCheck, ...]:
        """Broken anchors that :func:`fix_gold` cannot repair."""
        return tuple(c for c in self.broken if c.fate is not AnchorFate.MOVED)


_WINDOW_LIMIT: Final = 20_000_000
_NEARBY: Final = 2048


def _anchor_defect(anchor: Anchor, corpus: Corpus) -> tuple[str, str] | None:
    where = f"anchor {anchor.document_id}[{anchor.start}:{anchor.end}]"
    if anchor.start < 0 or anchor.end < 0:
        return "negative_offset", f"{where}: offsets must not be negative"
    if anchor.start > anchor.end:
        return "inverted_span", f"{where}: start is after end"
    if anchor.start == anchor.end:
        return "empty_span", f"{where}: empty span covers no text"
    if anchor.document_id not in corpus:
        return "unknown_document", f"{where}: the corpus has no document {anchor.document_id!r}"
    text = corpus.text(anchor.document_id)
    if anchor.end > len(text):
        return "out_of_bounds", f"{where}: the document is only {len(text)} characters long"
    if sha256_text(text[anchor.start : anchor.end]) != anchor.hash:
        return "hash_mismatch", f"{where}: the text there changed"
    return None


def _find_exact(corpus: Corpus, needle: str) -> list[DocSpan]:
    # needle is a slice of canonical text: searched as it is, not re-canonicalised
    found: list[DocSpan] = []
    for doc_id in corpus:
        haystack = corpus.text(doc_id)
        pos = haystack.find(needle)
        while pos != -1:
            found.append(DocSpan(doc_id, pos, pos + len(needle)))
            pos = haystack.find(needle, pos + 1)
    return found


def _chosen(anchor: Anchor, candidates: list[DocSpan]) -> DocSpan:
    """The candidate in the anchor's own document nearest its old start, else the first."""
    own = [c for c in candidates if c.document_id == anchor.document_id]
    return nearest(own, anchor.start) if own else candidates[0]


def _decide(
    anchor: Anchor, candidates: list[DocSpan]
) -> tuple[AnchorFate, DocSpan | None, str | None]:
    """Pick where a broken anchor moved: unique match, else nearest in its own document."""
    if not candidates:
        return AnchorFate.LOST, None, None
    if len(candidates) == 1:
        return AnchorFate.MOVED, candidates[0], "unique"
    own = [c for c in candidates if c.document_id == anchor.document_id]
    if own:
        return AnchorFate.MOVED, nearest(own, anchor.start), "nearest in the same document"
    return AnchorFate.AMBIGUOUS, None, None


def check_corpus(
    gold: GoldSet,
    corpus: Corpus,
    *,
    previous: Corpus | None = None,
    search: Literal["corpus", "document", "none"] = "corpus",
    max_windows: int = _WINDOW_LIMIT,
    nearby: int = _NEARBY,
) -> CorpusCheck:
    """Which anchors of ``gold`` the (changed) ``corpus`` broke, and where their text went.

    A gold anchor stores the sha256 of its text, not the text. Its text is recovered so:

    1. from ``previous`` (a copy of the corpus the gold set was made against), when its
       slice at the anchor's span has the anchor's hash: the text is then searched exactly
       in every document (``str.find``, linear);
    2. otherwise by hash search. The anchor's length is known (``end - start`` code
       points), so windows of that length can be hashed and compared with its hash:

       a. near its old place first: shifts 0, ±1, ±2, ... up to ``nearby`` characters
          (the first hit is the nearest), then the shifts by which earlier anchors of
          the same document moved — an insertion or deletion moves everything after it
          by one amount — at one hash each;
       b. then every window of the anchor's own document (nearest hit wins);
       c. then the places in *other* documents where earlier anchors of the same
          original document went (a renamed or merged document), one hash each;
       d. then (``search="corpus"``) every window of every other document.

       Anchors are searched in (document, start) order so that hints accumulate. Each
       (document, length) pair is scanned at most once for all broken anchors of that
       length. A full scan costs one sha256 per character per distinct length, about
       0.55 µs per window on one core (0.4 s for a 740,000-character document); the
       search stops before ``max_windows`` hashes in all and says so
       (``searched="partial"``). ``nearby=0`` turns passes a and c off.

    Where several places match: the one in the anchor's own document nearest its old
    start wins (ties: the earlier); otherwise a single place elsewhere; several places
    elsewhere is AMBIGUOUS and nothing moves. Found nowhere: LOST. Passes a and c stop at
    the first hit, so ``candidates`` then holds that one place: a nearer occurrence
    beyond ``nearby``, or another copy of the text elsewhere, is not looked for.
    Malformed anchors (negative, inverted, empty) are UNSEARCHABLE. Identical text hashes
    identically, so a moved anchor keeps its hash.
    """
    started = time.perf_counter()
    problems = tuple(validate_gold(gold, corpus))
    defects: list[tuple[int, int, GoldQuery, Anchor, str, str]] = []
    n_anchors = 0
    for entry, query in enumerate(gold.entries):
        for index, anchor in enumerate(query.anchors):
            n_anchors += 1
            defect = _anchor_defect(anchor, corpus)
            if defect is not None:
                defects.append((entry, index, query, anchor, *defect))

    candidates: dict[tuple[int, int], list[DocSpan]] = {}
    searched: dict[tuple[int, int], str] = {}
    hash_search: list[tuple[int, int, Anchor]] = []
    for entry, index, _query, anchor, code, _message in defects:
        key = (entry, index)
        if code in {"negative_offset", "inverted_span", "empty_span"}:
            continue
        text = _previous_text(previous, anchor)
        if text is not None:
            candidates[key] = _find_exact(corpus, text)
            searched[key] = "previous"
        elif search != "none":
            hash_search.append((entry, index, anchor))

    how: dict[tuple[int, int], str | None] = {}
    windows = scans = 0
    if hash_search:
        searcher = HashSearch(corpus, hash_search, nearby, max_windows)
        ordered = sorted(hash_search, key=lambda p: (p[2].document_id, p[2].start, p[0], p[1]))
        for entry, index, anchor in ordered:
            key = (entry, index)
            candidates[key], searched[key], how[key] = searcher.find(anchor, search == "corpus")
        windows, scans = searcher.windows, searcher.scans

    broken: list[AnchorCheck] = []
    for entry, index, query, anchor, code, message in defects:
        key = (entry, index)
        if key not in searched and code in {"negative_offset", "inverted_span", "empty_span"}:
            fate, moved, why = AnchorFate.UNSEARCHABLE, None, None
        else:
            fate, moved, why = _decide(anchor, candidates.get(key, []))
            if how.get(key) is not None:
                fate, moved, why = AnchorFate.MOVED, _chosen(anchor, candidates[key]), how[key]
        broken.append(
            AnchorCheck(
                entry,
                index,
                query.query_id,
                query.line,
                anchor,
                code,
                message,
                fate,
                moved,
                tuple(candidates.get(key, ())),
                searched.get(key, "none"),
                why,
            )
        )
    return CorpusCheck(
        gold.sha256,
        corpus.fingerprint,
        len(gold.entries),
        n_anchors,
        problems,
        tuple(broken),
        windows,
        scans,
        time.perf_counter() - started,
    )


def _previous_text(previous: Corpus | None, anchor: Anchor) -> str | None:
    if previous is None or anchor.document_id not in previous:
        return None
    text = previous.text(anchor.document_id)
    if not 0 <= anchor.start < anchor.end <= len(text):
        return None
    piece = text[anchor.start : anchor.end]
    return piece if sha256_text(piece) == anchor.hash else None


def fix_gold(gold: GoldSet, check: CorpusCheck) -> GoldSet:
    """``gold`` with every MOVED anchor of ``check`` rewritten to where its text is now.

    ``check`` must come from :func:`check_corpus` on this very gold set (compared by
    content hash). An anchor that moves onto a span the query already has is dropped
    rather than duplicated. Other broken anchors are left as they are; the caller reports
    ``check.unresolved``. Nothing is written: pass the result to
    :func:`spanchor_core.write_gold`.
    """
    if check.gold_sha256 != gold.sha256:
        raise GoldError(
            "the corpus check was made for a different gold set",
            path=gold.path,
            hint="run check_corpus on this gold set first",
        )
    moves: dict[tuple[int, int], DocSpan] = {
        (c.entry, c.anchor_index): c.moved_to for c in check.moved if c.moved_to is not None
    }
    if not moves:
        return gold
    entries: list[GoldQuery] = []
    for entry, query in enumerate(gold.entries):
        if not any((entry, i) in moves for i in range(len(query.anchors))):
            entries.append(query)
            continue
        anchors: list[Anchor] = []
        seen: set[DocSpan] = set()
        for index, anchor in enumerate(query.anchors):
            target = moves.get((entry, index))
            new = anchor if target is None else Anchor(*target, anchor.hash)
            if new.span in seen:
                continue
            seen.add(new.span)
            anchors.append(new)
        entries.append(replace(query, anchors=tuple(anchors)))
    return rebuilt(gold, entries)
