"""Gold values: anchors (evidence spans of source text), gold queries and gold sets.

What each query should retrieve, as spans ``[start, end)`` of canonical document text, each
with the sha256 of its text so that an edited document is noticed rather than scored against
the wrong characters. No file I/O here: files are :mod:`spanchor_core.gold.file`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Final

from spanchor_core.corpus import Corpus, canonicalize, sha256_text
from spanchor_core.errors import GoldError
from spanchor_core.spans import DocSpan

__all__ = ["GOLD_KIND", "GOLD_SCHEMA_VERSION", "Anchor", "GoldQuery", "GoldSet", "query_to_json"]

GOLD_KIND: Final = "spanchor.gold"
GOLD_SCHEMA_VERSION: Final = 1


@dataclass(frozen=True, slots=True)
class Anchor:
    """A gold evidence span ``[start, end)`` of one document's canonical text.

    Not validated on construction: a gold file may hold bad anchors, and
    :func:`validate_gold` reports them all. Use :meth:`from_span` or
    :func:`anchor_from_text` to build anchors that are known to be good.
    """

    document_id: str
    start: int
    end: int
    hash: str

    @property
    def span(self) -> DocSpan:
        return DocSpan(self.document_id, self.start, self.end)

    @classmethod
    def from_span(cls, corpus: Corpus, document_id: str, start: int, end: int) -> Anchor:
        """An anchor over ``corpus`` text, hashed; GoldError if the span is not inside it."""
        if document_id not in corpus:
            raise GoldError(
                f"document {document_id!r} is not in the corpus",
                hint="use a document id the corpus has (its path without suffix)",
            )
        length = len(corpus[document_id])
        if not 0 <= start < end <= length:
            raise GoldError(
                f"span [{start}, {end}) is not a non-empty span of {document_id!r} "
                f"(length {length})",
                hint="give 0 <= start < end <= document length, in canonical code points",
            )
        return cls(document_id, start, end, sha256_text(corpus.text(document_id)[start:end]))


@dataclass(frozen=True, slots=True)
class GoldQuery:
    """One query and the evidence it should retrieve.

    ``line`` is the 1-based line it was read from (``None`` when built in memory); it is
    not part of equality, so a query read back from a rewritten file equals the original.
    """

    query_id: str
    question: str
    anchors: tuple[Anchor, ...]
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    line: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # accept lists from callers; the stored value is immutable
        if not isinstance(self.anchors, tuple):
            object.__setattr__(self, "anchors", tuple(self.anchors))
        if not isinstance(self.tags, tuple):
            object.__setattr__(self, "tags", tuple(self.tags))


_new: Final = object.__new__
_set_document_id, _set_start, _set_end, _set_hash = (
    getattr(Anchor, f.name).__set__ for f in fields(Anchor)
)
_set_query_id, _set_question, _set_anchors, _set_tags, _set_metadata, _set_line = (
    getattr(GoldQuery, f.name).__set__ for f in fields(GoldQuery)
)


def made_anchor(document_id: str, start: int, end: int, digest: str) -> Anchor:
    """``Anchor(document_id, start, end, digest)``, its slots set directly: a frozen dataclass's
    ``__init__`` sets each field through ``object.__setattr__``, a third of the cost of reading
    a plain gold line. For readers that make tens of thousands."""
    anchor = _new(Anchor)
    _set_document_id(anchor, document_id)
    _set_start(anchor, start)
    _set_end(anchor, end)
    _set_hash(anchor, digest)
    return anchor


def made_query(
    query_id: str,
    question: str,
    anchors: tuple[Anchor, ...],
    tags: tuple[str, ...],
    metadata: dict[str, Any],
    line: int | None,
) -> GoldQuery:
    """``GoldQuery(query_id, question, anchors, tags, metadata, line)`` for ``anchors`` and
    ``tags`` that are tuples already (all its ``__post_init__`` would do), its slots set
    directly (see :func:`made_anchor`)."""
    query = _new(GoldQuery)
    _set_query_id(query, query_id)
    _set_question(query, question)
    _set_anchors(query, anchors)
    _set_tags(query, tags)
    _set_metadata(query, metadata)
    _set_line(query, line)
    return query


def canonical_question(text: str) -> str:
    """A question as query ids are resolved by: canonical text, outer whitespace stripped."""
    return canonicalize(text).strip()


class GoldSet(Mapping[str, GoldQuery]):
    """Gold queries by id, in file order.

    ``entries`` keeps every query as read, duplicates included; the mapping keeps the first
    query of each id. ``sha256`` identifies the content independent of line order (see
    :meth:`content_sha256`), so a run can record which gold set it was made for.
    ``file_format`` is ``"spanchor.gold/1"`` or ``"spanchor-0.x"`` for a set read from a
    file, so callers can tell users that a 0.x file was converted.
    """

    __slots__ = (
        "_by_id",
        "_by_question",
        "_sha256",
        "corpus_fingerprint",
        "description",
        "entries",
        "file_format",
        "metadata",
        "path",
    )

    def __init__(
        self,
        queries: Iterable[GoldQuery] = (),
        *,
        path: Path | None = None,
        description: str | None = None,
        corpus_fingerprint: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        file_format: str | None = None,
    ) -> None:
        self.entries: tuple[GoldQuery, ...] = tuple(queries)
        self.path = path
        self.description = description
        self.corpus_fingerprint = corpus_fingerprint
        self.metadata: Mapping[str, Any] = dict(metadata or {})
        self.file_format = file_format
        by_id: dict[str, GoldQuery] = {}
        for query in self.entries:
            by_id.setdefault(query.query_id, query)
        self._by_id = by_id
        self._by_question: dict[str, GoldQuery | None] | None = None
        self._sha256: str | None = None

    def __getitem__(self, query_id: str) -> GoldQuery:
        return self._by_id[query_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_id)

    def __len__(self) -> int:
        return len(self._by_id)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GoldSet):
            return NotImplemented
        return (
            self.entries == other.entries
            and self.description == other.description
            and self.corpus_fingerprint == other.corpus_fingerprint
            and dict(self.metadata) == dict(other.metadata)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        where = f", path={str(self.path)!r}" if self.path else ""
        return f"GoldSet({len(self.entries)} queries{where})"

    @property
    def sha256(self) -> str:
        """Order-independent content hash; see :meth:`content_sha256`."""
        if self._sha256 is None:
            self._sha256 = self.content_sha256(self.entries)
        return self._sha256

    @staticmethod
    def content_sha256(queries: Iterable[GoldQuery]) -> str:
        """sha256 over the canonical JSON of the queries, sorted by id.

        Covers everything a query line holds (id, question, anchors, tags, metadata) and
        nothing about the file (line order, header, path), so reordering lines or rewriting
        a 0.x file in our format keeps the hash; editing any query changes it.
        """
        lines = sorted(map(_canonical_line, queries))
        digest = hashlib.sha256()
        digest.update(f"{GOLD_KIND}/{GOLD_SCHEMA_VERSION}\n".encode())
        lines.append("")  # each line ends in a newline, the last one too
        try:
            digest.update("\n".join(lines).encode("utf-8"))  # all at once: the same bytes
        except UnicodeEncodeError:  # a lone surrogate: the error of its own line, as it was
            for line in lines:
                line.encode("utf-8")
            raise
        return digest.hexdigest()

    @property
    def legacy_sha256(self) -> str:
        """The gold-set hash spanchor 0.x records in its runs (``"sha256:<hex>"``).

        0.x hashes only structure: query ids and anchor spans, sorted, without questions or
        text hashes. Lets a 0.x run's ``gold_set_hash`` be checked against this gold set.
        """
        queries = [
            {
                "query_id": query.query_id,
                "anchors": [
                    {"document_id": d, "start": s, "end": e}
                    for d, s, e in sorted((a.document_id, a.start, a.end) for a in query.anchors)
                ],
            }
            for query in sorted(self.entries, key=lambda q: q.query_id)
        ]
        body = {"schema": "spanchor_gold_set_0.1.0", "queries": queries}
        text = json.dumps(body, sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()

    def by_question(self, text: str) -> GoldQuery | None:
        """The query whose question equals ``text`` after canonicalising and stripping.

        ``None`` when no query has it, and also when several do (LLM-generated gold sets often
        repeat a question): a record found by such a text cannot tell which query it answered,
        so it stays unresolved rather than being scored against the first one.
        """
        return self._question_index().get(canonical_question(text))

    def duplicate_questions(self) -> dict[str, tuple[str, ...]]:
        """Question texts (canonical) shared by several queries, with their query ids."""
        ids: dict[str, list[str]] = {}
        for query in self.entries:
            ids.setdefault(canonical_question(query.question), []).append(query.query_id)
        return {text: tuple(found) for text, found in ids.items() if len(found) > 1}

    def _question_index(self) -> dict[str, GoldQuery | None]:
        if self._by_question is None:
            index: dict[str, GoldQuery | None] = {}
            for query in self.entries:
                key = canonical_question(query.question)
                index[key] = None if key in index else query
            self._by_question = index
        return self._by_question


_CANONICAL: Final = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))
"""``json.dumps(..., sort_keys=True, ensure_ascii=False, separators=(",", ":"))``, built once."""
_string: Final = json.encoder.encode_basestring  # the canonical encoder's own string writer


def _canonical_line(query: GoldQuery) -> str:
    """``query_to_json(query)`` as canonical JSON (sorted keys, no spaces, UTF-8 as is), the
    text :meth:`GoldSet.content_sha256` hashes. A query of plain strings and ints with no tags
    or metadata (the usual one) is written by one f-string per anchor, ``_CANONICAL``'s text
    without building the dict: the hash of a 10,000-query gold set is on the path of every
    evaluation (0.06 s this way, 0.015 s here)."""
    if query.tags or query.metadata or type(query.query_id) is not str:
        return _CANONICAL.encode(query_to_json(query))
    anchors = []
    for a in query.anchors:
        document_id, start, end, digest = a.document_id, a.start, a.end, a.hash
        if not (
            type(document_id) is str
            and type(start) is int
            and type(end) is int
            and type(digest) is str
        ):
            return _CANONICAL.encode(query_to_json(query))
        anchors.append(
            f'{{"document_id":{_string(document_id)},"end":{end},"hash":{_string(digest)},'
            f'"start":{start}}}'
        )
    question = query.question
    if type(question) is not str:
        return _CANONICAL.encode(query_to_json(query))
    return (
        f'{{"anchors":[{",".join(anchors)}],"query_id":{_string(query.query_id)},'
        f'"question":{_string(question)}}}'
    )


def query_to_json(query: GoldQuery) -> dict[str, Any]:
    """The JSON object of one query, as a gold line holds it and :attr:`GoldSet.sha256` hashes it.

    ``tags`` and ``metadata`` are present only when not empty.
    """
    line: dict[str, Any] = {
        "query_id": query.query_id,
        "question": query.question,
        "anchors": [
            {"document_id": a.document_id, "start": a.start, "end": a.end, "hash": a.hash}
            for a in query.anchors
        ],
    }
    if query.tags:
        line["tags"] = list(query.tags)
    if query.metadata:
        line["metadata"] = dict(query.metadata)
    return line
