"""Authoring gold sets: find text, add anchors, repair anchors after edits, propose evidence.

The library functions behind the authoring commands of the CLI:

* :func:`locate_text` — where does this text occur? (``spanchor locate``)
* :func:`add_anchor` — append one verified anchor to a gold file (``spanchor anchor add``)
* :func:`check_corpus` / :func:`fix_gold` — which anchors an edited corpus broke, where
  their text went, and the gold set with moved anchors rewritten (``spanchor check-corpus``)
* :func:`propose_candidates`, :func:`write_candidates`, :func:`read_candidates`,
  :func:`review_candidate`, :func:`promote_candidates` — the candidate workflow: propose
  sentence-level evidence spans, record each review decision in the candidates file, and
  promote approved candidates with a question into the gold set
  (``spanchor gold extract`` / ``gold review`` / ``gold promote``).

Every file is written atomically (temporary file, fsync, rename), so an interrupted command
leaves the old file or the new one. Everything here is linear in the corpus size except the
hash search of :func:`check_corpus`, whose cost is bounded and reported (see there).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from spanchor_core._io import atomic_write
from spanchor_core._version import __version__
from spanchor_core.corpus import Corpus, canonicalize, sha256_text
from spanchor_core.errors import AnchorError, GoldError, InputError
from spanchor_core.gold import (
    Anchor,
    GoldProblem,
    GoldQuery,
    GoldSet,
    read_gold,
    validate_gold,
    write_gold,
)
from spanchor_core.spans import DocSpan

__all__ = [
    "CANDIDATES_KIND",
    "CANDIDATES_SCHEMA_VERSION",
    "AnchorCheck",
    "AnchorFate",
    "Candidate",
    "CandidateStatus",
    "CorpusCheck",
    "Occurrence",
    "PromotionReport",
    "add_anchor",
    "check_corpus",
    "fix_gold",
    "locate_text",
    "promote_candidates",
    "propose_candidates",
    "read_candidates",
    "review_candidate",
    "write_candidates",
]

CANDIDATES_KIND: Final = "spanchor.candidates"
CANDIDATES_SCHEMA_VERSION: Final = 1


# --------------------------------------------------------------------------- locate


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One place a text occurs: its span, the hash an anchor there would carry, context.

    ``whitespace_insensitive`` is true when the text was not found as given and this match
    differs from it in whitespace only (runs of whitespace of any kind count as equal).
    """

    document_id: str
    start: int
    end: int
    sha256: str
    text: str
    left: str
    right: str
    whitespace_insensitive: bool = False

    @property
    def span(self) -> DocSpan:
        return DocSpan(self.document_id, self.start, self.end)


def _check_document(corpus: Corpus, document_id: str | None) -> None:
    if document_id is not None and document_id not in corpus:
        raise AnchorError(
            f"document {document_id!r} is not in the corpus",
            hint="use a document id the corpus has (its path without suffix)",
        )


def _whitespace_insensitive(corpus: Corpus, text: str, ids: Iterable[str]) -> list[DocSpan]:
    # tokens never contain whitespace, so the pattern cannot backtrack across a token:
    # one left-to-right regex pass per document
    tokens = text.split()
    pattern = re.compile(r"\s+".join(re.escape(token) for token in tokens))
    return [
        DocSpan(doc_id, m.start(), m.end())
        for doc_id in ids
        for m in pattern.finditer(corpus.text(doc_id))
    ]


def locate_text(
    corpus: Corpus, text: str, *, context: int = 80, document_id: str | None = None
) -> list[Occurrence]:
    """Every occurrence of ``text`` in ``corpus``, in document id then offset order.

    ``text`` is canonicalised like the documents. Exact occurrences (overlapping ones
    included) are returned when there are any; otherwise the occurrences that differ only
    in whitespace (non-overlapping), marked ``whitespace_insensitive``. ``context``
    characters either side are kept for display. A single scan of the corpus: right for
    one text, not for thousands (use :class:`spanchor_core.Locator` for those).
    """
    if context < 0:
        raise InputError(f"context must be >= 0, got {context}")
    _check_document(corpus, document_id)
    needle = canonicalize(text)
    if not needle.strip():
        raise AnchorError("cannot locate empty text", hint="give the text to look for")
    ids = list(corpus) if document_id is None else [document_id]
    spans = corpus.find_all(needle, document_id)
    loose = not spans
    if loose:
        spans = _whitespace_insensitive(corpus, needle, ids)
    found: list[Occurrence] = []
    for span in spans:
        doc_text = corpus.text(span.document_id)
        matched = doc_text[span.start : span.end]
        found.append(
            Occurrence(
                span.document_id,
                span.start,
                span.end,
                sha256_text(matched),
                matched,
                doc_text[max(0, span.start - context) : span.start],
                doc_text[span.end : span.end + context],
                loose,
            )
        )
    return found


# --------------------------------------------------------------------------- anchor add


def _read_gold_or_empty(path: Path) -> GoldSet:
    return read_gold(path) if path.exists() else GoldSet(path=path)


def _rebuilt(gold: GoldSet, entries: Iterable[GoldQuery]) -> GoldSet:
    """``gold`` with other entries, keeping its header fields (written in our format)."""
    return GoldSet(
        entries,
        path=gold.path,
        description=gold.description,
        corpus_fingerprint=gold.corpus_fingerprint,
        metadata=gold.metadata,
    )


def _choose_occurrence(
    corpus: Corpus, text: str, document_id: str | None, occurrence: int | None
) -> DocSpan:
    matches = corpus.find_all(text, document_id)
    scope = "the corpus" if document_id is None else f"document {document_id!r}"
    if not matches:
        raise AnchorError(
            f"text {text[:60]!r} does not occur in {scope}",
            hint="copy the evidence exactly from the document; `spanchor locate` shows "
            "near matches that differ in whitespace",
        )
    if occurrence is not None:
        if not 1 <= occurrence <= len(matches):
            raise AnchorError(
                f"occurrence {occurrence} asked for, but the text occurs {len(matches)} "
                f"time{'s' if len(matches) > 1 else ''} in {scope}",
                hint=f"occurrences are numbered from 1 to {len(matches)}",
            )
        return matches[occurrence - 1]
    if len(matches) > 1:
        shown = ", ".join(
            f"#{n} {m.document_id}[{m.start}:{m.end}]" for n, m in enumerate(matches[:5], 1)
        )
        more = f" and {len(matches) - 5} more" if len(matches) > 5 else ""
        raise AnchorError(
            f"text occurs {len(matches)} times in {scope}: {shown}{more}",
            hint="choose one with --occurrence N (numbered from 1) or name the document",
        )
    return matches[0]


def add_anchor(
    gold_path: str | os.PathLike[str],
    corpus: Corpus,
    *,
    query_id: str,
    question: str | None,
    text: str,
    document_id: str | None = None,
    occurrence: int | None = None,
) -> GoldQuery:
    """Anchor ``text`` and append it to the gold file at ``gold_path``; return the query.

    A new ``query_id`` becomes a new query (``question`` required). An existing one gets
    the anchor added; ``question`` must then be ``None`` or equal the stored question
    (compared after canonicalising and stripping), and an anchor already on that query is
    an error. ``occurrence`` is **1-based**, counted over every occurrence in document id
    then offset order (within ``document_id`` when given) — the numbering of spanchor
    0.x's ``anchor add --occurrence`` — and required when the text occurs more than once.

    The file is read, changed in memory and rewritten atomically with
    :func:`spanchor_core.write_gold` (created, with our header, if missing). A spanchor 0.x
    gold file is rewritten in our format. Concurrent writers are not serialised: the last
    rename wins.
    """
    path = Path(gold_path)
    if not query_id.strip():
        raise GoldError("the query id is empty", hint="give a query id such as q1")
    _check_document(corpus, document_id)
    needle = canonicalize(text)
    if not needle:
        raise AnchorError("cannot anchor empty text", hint="give the evidence text to anchor")
    gold = _read_gold_or_empty(path)
    chosen = _choose_occurrence(corpus, needle, document_id, occurrence)
    anchor = Anchor.from_span(corpus, chosen.document_id, chosen.start, chosen.end)
    existing = gold.get(query_id)
    if existing is None:
        if question is None or not question.strip():
            raise GoldError(
                f"query {query_id!r} is new and needs a question",
                path=path,
                hint="give the question the evidence answers",
            )
        updated = GoldQuery(query_id, question, (anchor,))
        entries = [*gold.entries, updated]
    else:
        if (
            question is not None
            and canonicalize(question).strip() != canonicalize(existing.question).strip()
        ):
            raise GoldError(
                f"query {query_id!r} already exists with the question {existing.question!r}",
                path=path,
                line=existing.line,
                hint="omit the question to add evidence to that query, or use a new query id",
            )
        if any(a.span == anchor.span for a in existing.anchors):
            raise AnchorError(
                f"query {query_id!r} already has the anchor "
                f"{anchor.document_id}[{anchor.start}:{anchor.end}]",
                path=path,
                line=existing.line,
                hint="nothing to add",
            )
        updated = replace(existing, anchors=(*existing.anchors, anchor), line=None)
        index = gold.entries.index(existing)
        entries = list(gold.entries)
        entries[index] = updated
    write_gold(_rebuilt(gold, entries), path)
    return updated


# --------------------------------------------------------------------------- check-corpus


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


class _HashSearch:
    """Find broken anchors' text by hashing windows of their length (see check_corpus).

    Keeps the (document, length) scans already made, the hash budget, and *hints*: where
    earlier anchors of each original document went, as ``(document, shift)`` — an edit
    moves every later anchor by the same amount, a rename moves all of them to one new
    document, so the next anchor tries those places first at one hash each.
    """

    def __init__(
        self, corpus: Corpus, pending: list[tuple[int, int, Anchor]], radius: int, budget: int
    ) -> None:
        self.corpus = corpus
        self.radius = radius
        self.budget = budget
        self.windows = 0
        self.scans = 0
        self.targets: dict[int, dict[bytes, None]] = {}
        for _entry, _index, anchor in pending:
            digest = _digest(anchor.hash)
            if digest is not None:
                self.targets.setdefault(anchor.end - anchor.start, {})[digest] = None
        self.results: dict[tuple[str, int], dict[bytes, list[int]]] = {}
        self.hints: dict[str, list[tuple[str, int]]] = {}

    def _at(self, anchor: Anchor, doc_id: str, begin: int) -> bool:
        length = anchor.end - anchor.start
        text = self.corpus.text(doc_id)
        if begin < 0 or begin + length > len(text):
            return False
        self.windows += 1
        return sha256_text(text[begin : begin + length]) == anchor.hash

    def _scan(self, doc_id: str, length: int) -> dict[bytes, list[int]] | None:
        key = (doc_id, length)
        if key not in self.results:
            cost = max(0, len(self.corpus[doc_id]) - length + 1)
            if self.windows + cost > self.budget:
                return None
            self.windows += cost
            self.scans += 1
            self.results[key] = _scan_windows(
                self.corpus.text(doc_id), length, self.targets.get(length, {})
            )
        return self.results[key]

    def _hit(self, anchor: Anchor, span: DocSpan) -> None:
        hints = self.hints.setdefault(anchor.document_id, [])
        hint = (span.document_id, span.start - anchor.start)
        if hint in hints:
            hints.remove(hint)
        hints.insert(0, hint)

    def find(self, anchor: Anchor, everywhere: bool) -> tuple[list[DocSpan], str, str | None]:
        """``(candidates, searched, resolved_by)`` for one anchor (see AnchorCheck)."""
        length = anchor.end - anchor.start
        own = anchor.document_id if anchor.document_id in self.corpus else None
        # radius 0 turns the cheap passes off: hashing whole documents only
        hints = self.hints.get(anchor.document_id, []) if self.radius > 0 else []
        if own is not None and self.radius > 0:
            for step in range(self.radius + 1):
                for begin in (
                    (anchor.start - step, anchor.start + step) if step else (anchor.start,)
                ):
                    if self._at(anchor, own, begin):
                        span = DocSpan(own, begin, begin + length)
                        self._hit(anchor, span)
                        return [span], "nearby", "nearest in the same document"
        for doc_id, shift in list(hints) if own is not None else ():
            if doc_id == own and self._at(anchor, own, anchor.start + shift):
                span = DocSpan(own, anchor.start + shift, anchor.end + shift)
                self._hit(anchor, span)
                return [span], "nearby", "shifted like its neighbours"
        complete = True
        if own is not None:
            found = self._scan(own, length)
            if found is None:
                complete = False
            else:
                starts = found.get(_digest(anchor.hash) or b"", [])
                if starts:
                    best = min(starts, key=lambda s: (abs(s - anchor.start), s))
                    self._hit(anchor, DocSpan(own, best, best + length))
                    own_spans = [DocSpan(own, s, s + length) for s in starts]
                    return own_spans, "document", "nearest in the same document"
        for doc_id, shift in list(hints):
            if doc_id != own and self._at(anchor, doc_id, anchor.start + shift):
                span = DocSpan(doc_id, anchor.start + shift, anchor.end + shift)
                self._hit(anchor, span)
                return [span], "nearby", "moved with its neighbours"
        if not everywhere:
            return [], "document" if complete else "partial", None
        spans: list[DocSpan] = []
        for doc_id in self.corpus:
            if doc_id == own:
                continue
            found = self._scan(doc_id, length)
            if found is None:
                complete = False
                continue
            starts = found.get(_digest(anchor.hash) or b"", [])
            spans.extend(DocSpan(doc_id, s, s + length) for s in starts)
        if len(spans) == 1:
            self._hit(anchor, spans[0])
        return spans, "corpus" if complete else "partial", None


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


def _scan_windows(
    text: str, length: int, targets: Mapping[bytes, object]
) -> dict[bytes, list[int]]:
    """Start of every ``length``-code-point window of ``text`` whose sha256 is in ``targets``.

    One sha256 per position over a memoryview of the UTF-8 bytes (no copies, no encoding
    per window): linear in the document per distinct length.
    """
    n = len(text)
    found: dict[bytes, list[int]] = {}
    if length > n:
        return found
    data = text.encode("utf-8")
    view = memoryview(data)
    sha = hashlib.sha256
    if len(data) == n:  # ASCII: byte offsets are code-point offsets
        for i in range(n - length + 1):
            digest = sha(view[i : i + length]).digest()
            if digest in targets:
                found.setdefault(digest, []).append(i)
        return found
    bounds = [0] * (n + 1)
    pos = 0
    for i, char in enumerate(text):
        code = ord(char)
        pos += 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
        bounds[i + 1] = pos
    for i in range(n - length + 1):
        digest = sha(view[bounds[i] : bounds[i + length]]).digest()
        if digest in targets:
            found.setdefault(digest, []).append(i)
    return found


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
    if not own:
        return candidates[0]
    return min(own, key=lambda c: (abs(c.start - anchor.start), c.start))


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
        best = min(own, key=lambda c: (abs(c.start - anchor.start), c.start))
        return AnchorFate.MOVED, best, "nearest in the same document"
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
        searcher = _HashSearch(corpus, hash_search, nearby, max_windows)
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


def _digest(hex_hash: str) -> bytes | None:
    try:
        return bytes.fromhex(hex_hash)
    except ValueError:
        return None


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
    return _rebuilt(gold, entries)


# --------------------------------------------------------------------------- candidates


class CandidateStatus(StrEnum):
    """Review state of a candidate evidence span."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


@dataclass(frozen=True, slots=True)
class Candidate:
    """A proposed evidence span and its review state.

    ``candidate_id`` is ``"<document_id>#<n>"``, ``n`` counting (from 0) the proposals of
    that document in offset order before duplicates were removed, so ids do not depend on
    other documents. ``edited_from`` is the span first proposed, once a reviewer changed it.
    """

    candidate_id: str
    document_id: str
    start: int
    end: int
    hash: str
    text: str
    status: CandidateStatus = CandidateStatus.PENDING
    question: str | None = None
    reason: str | None = None
    edited_from: tuple[int, int] | None = None
    line: int | None = field(default=None, compare=False)

    @property
    def span(self) -> DocSpan:
        return DocSpan(self.document_id, self.start, self.end)


_TERMINATORS: Final = frozenset(".!?\u2026\u0964\u0965\u3002\uff01\uff1f")
_CLOSERS: Final = frozenset("\"')]\u201d\u2019\u00bb")
# a whitespace run, or the point right after a CJK full stop (written without a space)
_BOUNDARY: Final = re.compile(r"\s+|(?<=[\u3002\uff01\uff1f])(?=\S)")
_WORD: Final = re.compile(r"\w+")
_PARAGRAPH, _LINE, _SENTENCE = 2, 1, 0


def _pieces(text: str) -> Iterator[tuple[int, int, int]]:
    """Sentence-ish pieces ``(start, end, break_after)`` of one document, in one pass.

    A piece ends at a whitespace run that holds a newline (two or more: paragraph break)
    or follows a sentence terminator (optionally behind a closing quote or bracket), or
    right after a CJK full stop. Pieces never start or end with whitespace.
    """
    pos = 0
    for match in _BOUNDARY.finditer(text):
        start = match.start()
        gap = match.group()
        newlines = gap.count("\n")
        if newlines >= 2:
            kind = _PARAGRAPH
        elif newlines == 1:
            kind = _LINE
        else:
            before = text[start - 1] if start > 0 else ""
            if before in _CLOSERS and start > 1:
                before = text[start - 2]
            if not gap or before in _TERMINATORS:
                kind = _SENTENCE
            else:
                if start == pos:  # leading whitespace of a document: skip it
                    pos = match.end()
                continue
        if start > pos:
            yield pos, start, kind
        pos = match.end()
    end = len(text)
    while end > pos and text[end - 1].isspace():
        end -= 1
    if pos < end:
        yield pos, end, _PARAGRAPH


def _split_long(
    text: str, start: int, end: int, min_chars: int, max_chars: int
) -> Iterator[tuple[int, int]]:
    """Cut an over-long piece at the last space before ``max_chars`` (hard cut if none)."""
    while end - start > max_chars:
        cut = text.rfind(" ", start + min_chars, start + max_chars + 1)
        if cut <= start:
            cut = start + max_chars
        stop = cut
        while text[stop - 1].isspace():  # never empties: pieces start with non-space
            stop -= 1
        yield start, stop
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if start < end:
        yield start, end


def _segment(text: str, min_chars: int, max_chars: int) -> list[tuple[int, int]]:
    """Candidate spans of one document: pieces merged within a paragraph to fit the bounds."""
    out: list[tuple[int, int, int]] = []  # (start, end, paragraph number)
    current: list[int] | None = None
    paragraph = 0

    def flush() -> None:
        nonlocal current
        if current is None:
            return
        start, end = current
        if end - start >= min_chars:
            out.append((start, end, paragraph))
        elif out and out[-1][2] == paragraph and end - out[-1][0] <= max_chars:
            out[-1] = (out[-1][0], end, paragraph)  # a short tail joins its predecessor
        current = None

    for p_start, p_end, kind in _pieces(text):
        for start, end in _split_long(text, p_start, p_end, min_chars, max_chars):
            if current is None:
                current = [start, end]
            elif current[1] - current[0] < min_chars and end - current[0] <= max_chars:
                current[1] = end
            else:
                flush()
                current = [start, end]
        if kind == _PARAGRAPH:
            flush()
            paragraph += 1
    flush()
    return [(start, end) for start, end, _ in out]


def _dedup_key(text: str) -> str:
    return " ".join(_WORD.findall(text.casefold()))


def propose_candidates(
    corpus: Corpus, *, min_chars: int = 40, max_chars: int = 400
) -> list[Candidate]:
    """Sentence-level evidence candidates of every document, pending review.

    Each document is cut into sentences (terminator followed by whitespace, line breaks,
    CJK full stops); consecutive short sentences of one paragraph are joined until they
    reach ``min_chars``; pieces longer than ``max_chars`` are cut at the last space that
    keeps them under it. Every candidate is a span of one document, ``min_chars <= length
    <= max_chars``, without surrounding whitespace, and candidates of a document do not
    overlap. Near duplicates — texts equal after case folding and dropping everything but
    words — are removed, keeping the first in document id then offset order: one hash
    lookup each, linear overall. (Paraphrases and one-word edits are not caught.)
    """
    if min_chars < 1 or max_chars < min_chars:
        raise InputError(
            f"need 1 <= min_chars <= max_chars, got {min_chars} and {max_chars}",
            hint="e.g. --min-chars 40 --max-chars 400",
        )
    seen: set[str] = set()
    found: list[Candidate] = []
    for doc_id in corpus:
        text = corpus.text(doc_id)
        for n, (start, end) in enumerate(_segment(text, min_chars, max_chars)):
            piece = text[start:end]
            key = _dedup_key(piece)
            if key in seen:
                continue
            seen.add(key)
            found.append(Candidate(f"{doc_id}#{n}", doc_id, start, end, sha256_text(piece), piece))
    return found


# --------------------------------------------------------------------------- candidates file


class CandidatesHeader(BaseModel):
    """First line of a candidates file."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    kind: Literal["spanchor.candidates"] = CANDIDATES_KIND
    schema_version: Literal[1] = CANDIDATES_SCHEMA_VERSION
    spanchor_version: str | None = None
    corpus_fingerprint: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)


class CandidateLine(BaseModel):
    """One candidate line of a candidates file."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    candidate_id: str = Field(min_length=1)
    document_id: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    text: str
    status: Literal["pending", "approved", "rejected"] = "pending"
    question: str | None = None
    reason: str | None = None
    edited_from: list[int] | None = Field(default=None, min_length=2, max_length=2)


def _candidate_json(candidate: Candidate) -> dict[str, Any]:
    line: dict[str, Any] = {
        "candidate_id": candidate.candidate_id,
        "document_id": candidate.document_id,
        "start": candidate.start,
        "end": candidate.end,
        "hash": candidate.hash,
        "text": candidate.text,
        "status": candidate.status.value,
    }
    if candidate.question is not None:
        line["question"] = candidate.question
    if candidate.reason is not None:
        line["reason"] = candidate.reason
    if candidate.edited_from is not None:
        line["edited_from"] = list(candidate.edited_from)
    return line


def write_candidates(
    candidates: Iterable[Candidate],
    path: str | os.PathLike[str],
    *,
    corpus_fingerprint: str | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> None:
    """Write a candidates file atomically: a header line, then one candidate per line."""
    target = Path(path)
    header: dict[str, Any] = {
        "kind": CANDIDATES_KIND,
        "schema_version": CANDIDATES_SCHEMA_VERSION,
        "spanchor_version": __version__,
    }
    if corpus_fingerprint is not None:
        header["corpus_fingerprint"] = corpus_fingerprint
    if parameters:
        header["parameters"] = dict(parameters)
    chunks = [json.dumps(header, ensure_ascii=False, allow_nan=False)]
    ids: set[str] = set()
    for candidate in candidates:
        if candidate.candidate_id in ids:
            raise GoldError(f"two candidates share the id {candidate.candidate_id!r}", path=target)
        ids.add(candidate.candidate_id)
        chunks.append(json.dumps(_candidate_json(candidate), ensure_ascii=False))
    atomic_write(target, "\n".join(chunks) + "\n", error=GoldError, what="candidates file")


def _read_candidate_file(path: Path) -> tuple[CandidatesHeader, list[Candidate]]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise GoldError(
            "candidates file does not exist", path=path, hint="check the path"
        ) from None
    except OSError as err:
        raise GoldError(f"cannot read candidates: {err.strerror or err}", path=path) from None
    header: CandidatesHeader | None = None
    found: list[Candidate] = []
    ids: dict[str, int] = {}
    for number, line in enumerate(raw.split(b"\n"), start=1):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as err:
            raise GoldError(
                f"not valid UTF-8 at byte {err.start} of the line", path=path, line=number
            ) from None
        if not text.strip():
            continue
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise GoldError(
                f"not valid JSON ({err.msg} at column {err.colno})",
                path=path,
                line=number,
                hint="each line must be one complete JSON object",
            ) from None
        except (ValueError, RecursionError) as err:
            raise GoldError(
                f"not valid JSON ({err or 'nested too deeply'})", path=path, line=number
            ) from None
        if not isinstance(data, dict):
            raise GoldError(
                f"expected a JSON object, found {type(data).__name__}", path=path, line=number
            )
        if header is None:
            header = _candidates_header(data, path, number)
            continue
        try:
            model = CandidateLine.model_validate(data)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise GoldError(
                f"field {where!r}: {first['msg']}" if where else str(first["msg"]),
                path=path,
                line=number,
                hint="fix the line or propose the candidates again",
            ) from None
        if model.candidate_id in ids:
            raise GoldError(
                f"candidate id {model.candidate_id!r} already used on line "
                f"{ids[model.candidate_id]}",
                path=path,
                line=number,
            )
        if model.end <= model.start or sha256_text(model.text) != model.hash:
            raise GoldError(
                f"candidate {model.candidate_id!r}: span [{model.start}, {model.end}) and "
                "text do not agree with the hash",
                path=path,
                line=number,
                hint="edit candidates with `spanchor gold review`, not by hand",
            )
        ids[model.candidate_id] = number
        found.append(
            Candidate(
                model.candidate_id,
                model.document_id,
                model.start,
                model.end,
                model.hash,
                model.text,
                CandidateStatus(model.status),
                model.question,
                model.reason,
                None if model.edited_from is None else (model.edited_from[0], model.edited_from[1]),
                number,
            )
        )
    if header is None:
        raise GoldError("empty candidates file", path=path, hint="run `spanchor gold extract`")
    return header, found


def _candidates_header(data: dict[str, Any], path: Path, line: int) -> CandidatesHeader:
    if data.get("kind") != CANDIDATES_KIND:
        legacy = "candidate_id" in data and data.get("schema_version") == "0.2.0"
        raise GoldError(
            "a spanchor 0.x candidates file (no offsets)" if legacy else "not a candidates file",
            path=path,
            line=line,
            hint="propose candidates again with `spanchor gold extract`"
            if legacy
            else f"the first line must be a header with kind {CANDIDATES_KIND!r}",
        )
    if data.get("schema_version") != CANDIDATES_SCHEMA_VERSION:
        raise GoldError(
            f"unsupported candidates schema_version {data.get('schema_version')!r}",
            path=path,
            line=line,
            hint="upgrade spanchor",
        )
    try:
        return CandidatesHeader.model_validate(data)
    except ValidationError as err:
        raise GoldError(f"bad header: {err.errors()[0]['msg']}", path=path, line=line) from None


def read_candidates(path: str | os.PathLike[str]) -> list[Candidate]:
    """Read a candidates file; GoldError ``path:line: ...`` for anything malformed.

    Each line is checked: known fields only, a non-empty span whose text hashes to
    ``hash``, ids unique.
    """
    return _read_candidate_file(Path(path))[1]


def _edited_span(
    candidate: Candidate,
    corpus: Corpus | None,
    edited_text: str | None,
    start: int | None,
    end: int | None,
    path: Path,
) -> tuple[int, int, str] | None:
    """New ``(start, end, text)`` of a candidate from the reviewer's edits, or None."""
    if (start is None) != (end is None):
        raise InputError("give both start and end of the edited span", path=path)
    doc_text = None
    if corpus is not None:
        if candidate.document_id not in corpus:
            raise GoldError(f"document {candidate.document_id!r} is not in the corpus", path=path)
        doc_text = corpus.text(candidate.document_id)
    if start is not None and end is not None:
        if not 0 <= start < end:
            raise InputError(f"span [{start}, {end}) is not a non-empty span", path=path)
        if candidate.start <= start and end <= candidate.end:
            text = candidate.text[start - candidate.start : end - candidate.start]
        elif doc_text is not None:
            if end > len(doc_text):
                raise InputError(
                    f"span [{start}, {end}) is past the end of {candidate.document_id!r} "
                    f"(length {len(doc_text)})",
                    path=path,
                )
            text = doc_text[start:end]
        else:
            raise InputError(
                "the edited span reaches outside the proposed text",
                path=path,
                hint="give the documents directory so the new span can be read and hashed",
            )
        if edited_text is not None and canonicalize(edited_text) != text:
            raise InputError(
                f"the edited text is not the text at [{start}, {end})",
                path=path,
                hint="give the span or the text, or make them agree",
            )
        return start, end, text
    if edited_text is None:
        return None
    needle = canonicalize(edited_text)
    if not needle.strip():
        raise InputError("the edited text is empty", path=path)
    inside = candidate.text.find(needle)
    if inside != -1:
        begin = candidate.start + inside
        return begin, begin + len(needle), needle
    if doc_text is None:
        raise InputError(
            "the edited text is not part of the proposed text",
            path=path,
            hint="give the documents directory to look for it in the whole document",
        )
    hits = [m.start() for m in re.finditer(re.escape(needle), doc_text)]
    if not hits:
        raise AnchorError(
            f"the edited text does not occur in {candidate.document_id!r}",
            path=path,
            hint="copy the evidence exactly from the document",
        )
    begin = min(hits, key=lambda h: (abs(h - candidate.start), h))
    return begin, begin + len(needle), needle


def review_candidate(
    path: str | os.PathLike[str],
    candidate_id: str,
    *,
    approve: bool = False,
    reject: bool = False,
    question: str | None = None,
    reason: str | None = None,
    edited_text: str | None = None,
    start: int | None = None,
    end: int | None = None,
    corpus: Corpus | None = None,
    output: str | os.PathLike[str] | None = None,
) -> Candidate:
    """Record a review decision for one candidate and save it (atomic rewrite).

    ``approve`` / ``reject`` set the status (not both); approving needs a question, given
    now or earlier. ``edited_text`` or ``start``/``end`` change the evidence span: text or
    span inside the proposed text needs nothing more; elsewhere in the document needs
    ``corpus`` (edited text then anchors at its occurrence nearest the proposal). An edit
    without ``approve`` puts the candidate back to pending, as in spanchor 0.x: the earlier
    approval was for other text. ``reason`` is kept as a note (why rejected); approving
    without one clears an earlier reason. The file is rewritten in place, or to
    ``output``. Returns the updated candidate.
    """
    source = Path(path)
    target = Path(output) if output is not None else source
    if approve and reject:
        raise InputError("approve and reject at once", hint="choose one")
    if not any(
        [approve, reject, question is not None, reason is not None, edited_text is not None]
    ) and (start is None and end is None):
        raise InputError(
            "nothing to record",
            hint="give --approve, --reject, --question, --reason, --edited-text or a span",
        )
    header, candidates = _read_candidate_file(source)
    position = next((i for i, c in enumerate(candidates) if c.candidate_id == candidate_id), None)
    if position is None:
        raise GoldError(
            f"no candidate {candidate_id!r}",
            path=source,
            hint="candidate ids look like '<document_id>#<n>'",
        )
    candidate = candidates[position]
    updated = candidate
    span = _edited_span(candidate, corpus, edited_text, start, end, source)
    if span is not None and (span[0], span[1]) != (candidate.start, candidate.end):
        new_start, new_end, text = span
        updated = replace(
            updated,
            start=new_start,
            end=new_end,
            text=text,
            hash=sha256_text(text),
            edited_from=candidate.edited_from or (candidate.start, candidate.end),
            status=CandidateStatus.PENDING,
        )
    if question is not None:
        if not question.strip():
            raise InputError("the question is empty", path=source)
        updated = replace(updated, question=question)
    if reason is not None:
        updated = replace(updated, reason=reason)
    if approve:
        if not (updated.question or "").strip():
            raise InputError(
                f"approving {candidate_id!r} needs a question",
                path=source,
                line=candidate.line,
                hint="give --question with the question this evidence answers",
            )
        updated = replace(
            updated,
            status=CandidateStatus.APPROVED,
            reason=reason,
        )
    elif reject:
        updated = replace(updated, status=CandidateStatus.REJECTED)
    candidates[position] = replace(updated, line=candidate.line)
    write_candidates(
        candidates,
        target,
        corpus_fingerprint=header.corpus_fingerprint,
        parameters=header.parameters,
    )
    return updated


# --------------------------------------------------------------------------- promote


@dataclass(frozen=True, slots=True)
class PromotionReport:
    """What :func:`promote_candidates` did with each approved candidate.

    ``added``: new gold queries (written). ``already``: candidate ids a gold query already
    records (``metadata["candidate_id"]``), skipped. ``stale``: ``(candidate, why)`` for
    approved candidates whose document no longer has their text at their span — review
    them again. ``missing_question``: approved without a question (hand-edited files).
    ``pending`` / ``rejected``: counts of candidates not approved.
    """

    added: tuple[GoldQuery, ...]
    already: tuple[str, ...]
    stale: tuple[tuple[Candidate, str], ...]
    missing_question: tuple[str, ...]
    pending: int
    rejected: int


def _stale_reason(candidate: Candidate, corpus: Corpus) -> str | None:
    if candidate.document_id not in corpus:
        return f"the corpus has no document {candidate.document_id!r}"
    text = corpus.text(candidate.document_id)
    if candidate.end > len(text):
        return f"{candidate.document_id!r} is now only {len(text)} characters long"
    if sha256_text(text[candidate.start : candidate.end]) != candidate.hash:
        return (
            f"the text of {candidate.document_id!r} at [{candidate.start}, {candidate.end}) changed"
        )
    return None


def promote_candidates(
    candidates_path: str | os.PathLike[str],
    corpus: Corpus,
    gold_path: str | os.PathLike[str],
    *,
    query_id_prefix: str = "q",
) -> PromotionReport:
    """Add every approved candidate that has a question to the gold set, one query each.

    Each candidate's span is re-hashed against ``corpus`` first: a candidate whose document
    changed is reported in ``stale`` and not promoted. A promoted query records
    ``metadata["candidate_id"]`` (where spanchor 0.x kept ``candidate_id`` too), so running
    this again skips what is already in the gold set: promotion is idempotent. New query
    ids are ``<prefix><n>`` with the smallest ``n >= 1`` not yet used, in candidate file
    order. The gold file is rewritten atomically once, only if something was added
    (created with our header if missing). The candidates file is not changed.
    """
    candidates = read_candidates(candidates_path)
    gold_file = Path(gold_path)
    gold = _read_gold_or_empty(gold_file)
    promoted = {
        str(query.metadata["candidate_id"])
        for query in gold.entries
        if "candidate_id" in query.metadata
    }
    used = {query.query_id for query in gold.entries}
    counter = 0
    added: list[GoldQuery] = []
    already: list[str] = []
    stale: list[tuple[Candidate, str]] = []
    missing: list[str] = []
    pending = rejected = 0
    for candidate in candidates:
        if candidate.status is CandidateStatus.PENDING:
            pending += 1
            continue
        if candidate.status is CandidateStatus.REJECTED:
            rejected += 1
            continue
        if candidate.candidate_id in promoted:
            already.append(candidate.candidate_id)
            continue
        if not (candidate.question or "").strip():
            missing.append(candidate.candidate_id)
            continue
        why = _stale_reason(candidate, corpus)
        if why is not None:
            stale.append((candidate, why))
            continue
        counter += 1
        while f"{query_id_prefix}{counter}" in used:
            counter += 1
        query_id = f"{query_id_prefix}{counter}"
        used.add(query_id)
        anchor = Anchor(candidate.document_id, candidate.start, candidate.end, candidate.hash)
        added.append(
            GoldQuery(
                query_id,
                candidate.question or "",
                (anchor,),
                metadata={"candidate_id": candidate.candidate_id},
            )
        )
        promoted.add(candidate.candidate_id)
    if added:
        write_gold(_rebuilt(gold, [*gold.entries, *added]), gold_file)
    return PromotionReport(
        tuple(added), tuple(already), tuple(stale), tuple(missing), pending, rejected
    )
