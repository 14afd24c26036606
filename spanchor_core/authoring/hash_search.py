"""The window-hash search of :func:`~spanchor_core.authoring.check_corpus`.

A gold anchor keeps the sha256 of its text, not the text: when the corpus changed, its text
is found again by hashing every window of the anchor's length, nearest places first, within
a budget of hashes. The search order and its costs are described at ``check_corpus``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from spanchor_core.corpus import Corpus, sha256_text
from spanchor_core.gold import Anchor
from spanchor_core.spans import DocSpan

__all__ = ["HashSearch", "digest", "nearest", "scan_windows"]


def digest(hex_hash: str) -> bytes | None:
    """The bytes of a hex sha256, or None when it is not hex (then nothing can match it)."""
    try:
        return bytes.fromhex(hex_hash)
    except ValueError:
        return None


def nearest(spans: Iterable[DocSpan], start: int) -> DocSpan:
    """The span starting nearest ``start`` (ties: the earlier one)."""
    return min(spans, key=lambda span: (abs(span.start - start), span.start))


class HashSearch:
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
            target = digest(anchor.hash)
            if target is not None:
                self.targets.setdefault(anchor.end - anchor.start, {})[target] = None
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
            self.results[key] = scan_windows(
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
                starts = found.get(digest(anchor.hash) or b"", [])
                if starts:
                    own_spans = [DocSpan(own, s, s + length) for s in starts]
                    self._hit(anchor, nearest(own_spans, anchor.start))
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
            starts = found.get(digest(anchor.hash) or b"", [])
            spans.extend(DocSpan(doc_id, s, s + length) for s in starts)
        if len(spans) == 1:
            self._hit(anchor, spans[0])
        return spans, "corpus" if complete else "partial", None


def scan_windows(text: str, length: int, targets: Mapping[bytes, object]) -> dict[bytes, list[int]]:
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
