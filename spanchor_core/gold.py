"""Gold anchors and gold sets: the evidence each query should retrieve, as source spans.

A gold set is a JSONL file, one query per line, after a header line that says what the file
is::

    {"kind": "spanchor.gold", "schema_version": 1, "spanchor_version": "0.5.0"}
    {"query_id": "q1", "question": "What is RAG?", "anchors": [{"document_id": "intro",
     "start": 0, "end": 142, "hash": "d683b9..."}], "tags": ["smoke"]}

``hash`` is the sha256 hex of the anchor's canonical text (:func:`spanchor_core.sha256_text`),
so an edited document is noticed rather than scored against the wrong characters.
spanchor 0.x gold files (no header; every line carries ``"schema_version": "0.1.0"`` and
anchors carry ``expected_text_hash``) are read as they are; 0.x hashed the same canonical text
the same way, so their hashes validate unchanged. ``tags`` and ``metadata`` are written only
when not empty.

Reading is strict about *shape* and lenient about *meaning*: a line that is not JSON, a
missing or mistyped field, an unknown ``kind`` or ``schema_version`` raise :class:`GoldError`
at once (``path:line: what; what to do``). Duplicate query ids, empty or inverted spans,
queries without anchors and empty questions are kept, so that :func:`validate_gold` can
report every one of them together with bounds and hash checks against a corpus.
:attr:`GoldSet.entries` holds every query line in file order; the mapping view keeps the
first query of each id.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from spanchor_core._io import atomic_write, describe_validation_error, loads_strict
from spanchor_core._version import __version__
from spanchor_core.corpus import Corpus, canonicalize, sha256_text
from spanchor_core.errors import AnchorError, GoldError
from spanchor_core.spans import DocSpan

__all__ = [
    "GOLD_KIND",
    "GOLD_SCHEMA_VERSION",
    "PROBLEM_CODES",
    "Anchor",
    "GoldHeader",
    "GoldProblem",
    "GoldQuery",
    "GoldQueryLine",
    "GoldSet",
    "anchor_from_text",
    "gold_json_schemas",
    "read_gold",
    "validate_gold",
    "write_gold",
]

GOLD_KIND: Final = "spanchor.gold"
GOLD_SCHEMA_VERSION: Final = 1
LEGACY_SCHEMA_VERSIONS = frozenset({"0.1.0"})
"""Gold-line ``schema_version`` values spanchor 0.x wrote (0.1 through 0.4 all write 0.1.0)."""

_SHA256_HEX = r"^[0-9a-f]{64}$"


# --------------------------------------------------------------------------- values


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


def _canonical_question(text: str) -> str:
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
        self._by_question: dict[str, GoldQuery] | None = None
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
        lines = sorted(
            json.dumps(
                _query_to_json(query), sort_keys=True, ensure_ascii=False, separators=(",", ":")
            )
            for query in queries
        )
        digest = hashlib.sha256()
        digest.update(f"{GOLD_KIND}/{GOLD_SCHEMA_VERSION}\n".encode())
        for line in lines:
            digest.update(line.encode("utf-8"))
            digest.update(b"\n")
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
        """The first query whose question equals ``text`` after canonicalising and stripping."""
        if self._by_question is None:
            index: dict[str, GoldQuery] = {}
            for query in self.entries:
                index.setdefault(_canonical_question(query.question), query)
            self._by_question = index
        return self._by_question.get(_canonical_question(text))


# --------------------------------------------------------------------------- file models


class GoldHeader(BaseModel):
    """First line of a gold set file: what it is and who wrote it."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    kind: Literal["spanchor.gold"] = GOLD_KIND
    schema_version: Literal[1] = GOLD_SCHEMA_VERSION
    spanchor_version: str | None = None
    description: str | None = None
    corpus_fingerprint: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class GoldAnchorLine(BaseModel):
    """An anchor as written in a gold line."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    document_id: str
    start: int
    end: int
    hash: str = Field(pattern=_SHA256_HEX, description="sha256 hex of the canonical span text")


class GoldQueryLine(BaseModel):
    """One query line of a gold set file (every line after the header)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    query_id: str
    question: str
    anchors: list[GoldAnchorLine]
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class _LegacyAnchorLine(BaseModel):
    # spanchor 0.x anchor: read as 0.x wrote it, unknown keys ignored as 0.x ignored them
    model_config = ConfigDict(frozen=True, extra="ignore", strict=True)

    document_id: str
    start: int
    end: int
    expected_text_hash: str
    schema_version: str | None = None


class _LegacyQueryLine(BaseModel):
    # spanchor 0.x gold line; extra keys are kept (into metadata) rather than dropped
    model_config = ConfigDict(frozen=True, extra="allow", strict=True)

    schema_version: str
    query_id: str
    question: str
    anchors: list[_LegacyAnchorLine]
    candidate_id: str | None = None


def gold_json_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schemas of the gold file's header line and query line, by name."""
    return {
        "gold-header": GoldHeader.model_json_schema(),
        "gold-query": GoldQueryLine.model_json_schema(),
    }


def _query_to_json(query: GoldQuery) -> dict[str, Any]:
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


# --------------------------------------------------------------------------- reading


def _parse_line(text: str, path: Path, line: int) -> dict[str, Any]:
    data = loads_strict(
        text,
        path=path,
        line=line,
        error=GoldError,
        hint="each line must be one complete JSON object",
    )
    if not isinstance(data, dict):
        raise GoldError(
            f"expected a JSON object, found {type(data).__name__}",
            path=path,
            line=line,
            hint="each line must be one JSON object",
        )
    return data


def _iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Non-blank lines with their 1-based numbers; GoldError for missing or non-UTF-8 files."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise GoldError("gold set file does not exist", path=path, hint="check the path") from None
    except OSError as err:
        raise GoldError(f"cannot read gold set: {err.strerror or err}", path=path) from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise GoldError(
                    f"not valid UTF-8 at byte {err.start} of the line",
                    path=path,
                    line=number,
                    hint="save the gold set as UTF-8",
                ) from None
            if text.strip():
                yield number, text


def _read_header(data: dict[str, Any], path: Path, line: int) -> GoldHeader:
    kind = data.get("kind")
    if kind != GOLD_KIND:
        raise GoldError(
            f"this is a {kind!r} file, not a gold set",
            path=path,
            line=line,
            hint=f"pass a file whose header line has kind {GOLD_KIND!r}",
        )
    version = data.get("schema_version")
    if version != GOLD_SCHEMA_VERSION or isinstance(version, bool):
        raise GoldError(
            f"unsupported gold schema_version {version!r} (this spanchor reads "
            f"{GOLD_SCHEMA_VERSION})",
            path=path,
            line=line,
            hint="upgrade spanchor to read newer gold sets",
        )
    try:
        return GoldHeader.model_validate(data)
    except ValidationError as err:
        raise GoldError(
            f"bad header: {describe_validation_error(err)}",
            path=path,
            line=line,
            hint="fix the header line",
        ) from None


def _read_query(data: dict[str, Any], path: Path, line: int) -> GoldQuery:
    if "kind" in data:
        raise GoldError(
            f"unexpected {data['kind']!r} header in the middle of a gold set",
            path=path,
            line=line,
            hint="a gold set has one header, on its first line; do not concatenate files",
        )
    try:
        model = GoldQueryLine.model_validate(data)
    except ValidationError as err:
        raise GoldError(
            describe_validation_error(err),
            path=path,
            line=line,
            hint="fix the line or regenerate the gold set",
        ) from None
    return GoldQuery(
        model.query_id,
        model.question,
        tuple(Anchor(a.document_id, a.start, a.end, a.hash) for a in model.anchors),
        tuple(model.tags),
        dict(model.metadata),
        line,
    )


def _read_legacy_query(data: dict[str, Any], path: Path, line: int) -> GoldQuery:
    version = data.get("schema_version")
    if version not in LEGACY_SCHEMA_VERSIONS:
        if "kind" in data:
            raise GoldError(
                f"unexpected {data['kind']!r} header in the middle of a spanchor 0.x gold set",
                path=path,
                line=line,
                hint="do not mix formats in one file",
            )
        raise GoldError(
            f"unknown gold schema_version {version!r}",
            path=path,
            line=line,
            hint="spanchor 0.x gold lines carry schema_version '0.1.0'; "
            f"our gold sets start with a {GOLD_KIND!r} header line",
        )
    try:
        model = _LegacyQueryLine.model_validate(data)
    except ValidationError as err:
        raise GoldError(
            f"spanchor 0.x gold line: {describe_validation_error(err)}",
            path=path,
            line=line,
            hint="fix the line or regenerate the gold set",
        ) from None
    metadata: dict[str, Any] = dict(model.model_extra or {})
    if model.candidate_id is not None:
        metadata["candidate_id"] = model.candidate_id
    anchors = tuple(
        Anchor(a.document_id, a.start, a.end, a.expected_text_hash) for a in model.anchors
    )
    return GoldQuery(model.query_id, model.question, anchors, (), metadata, line)


def read_gold(path: str | os.PathLike[str]) -> GoldSet:
    """Read a gold set: ours (header line first) or a spanchor 0.x gold file.

    The format is decided by the first non-blank line, never by the file name: a header
    with ``kind`` means ours, a query line with a 0.x ``schema_version`` means 0.x. A file
    with no non-blank lines is an empty gold set. Blank lines are skipped everywhere.
    Raises :class:`GoldError` naming path and line for anything it cannot read; see the
    module docs for what is left to :func:`validate_gold`.
    """
    source = Path(path)
    lines = _iter_lines(source)
    first = next(lines, None)
    if first is None:
        return GoldSet(path=source)
    number, text = first
    data = _parse_line(text, source, number)
    if "kind" in data:
        header = _read_header(data, source, number)
        queries = [_read_query(_parse_line(t, source, n), source, n) for n, t in lines]
        return GoldSet(
            queries,
            path=source,
            description=header.description,
            corpus_fingerprint=header.corpus_fingerprint,
            metadata=header.metadata,
            file_format=f"{GOLD_KIND}/{GOLD_SCHEMA_VERSION}",
        )
    if isinstance(data.get("schema_version"), str):
        queries = [_read_legacy_query(data, source, number)]
        queries.extend(_read_legacy_query(_parse_line(t, source, n), source, n) for n, t in lines)
        return GoldSet(queries, path=source, file_format="spanchor-0.x")
    raise GoldError(
        "not a spanchor gold set: the first line has no 'kind'",
        path=source,
        line=number,
        hint=f"start the file with a header line such as "
        f'{{"kind": "{GOLD_KIND}", "schema_version": {GOLD_SCHEMA_VERSION}}}',
    )


# --------------------------------------------------------------------------- writing


def write_gold(gold: GoldSet | Iterable[GoldQuery], path: str | os.PathLike[str]) -> None:
    """Write ``gold`` as a gold set file, atomically.

    The file is written next to its destination, flushed and fsynced, then renamed over
    it, so a reader sees the old file or the new one, never half of one. Every query line
    is checked against the line model first: a gold set that could not be read back is
    not written. Output is deterministic (entries in order, keys in a fixed order).
    """
    target = Path(path)
    gold_set = gold if isinstance(gold, GoldSet) else GoldSet(gold)
    header: dict[str, Any] = {
        "kind": GOLD_KIND,
        "schema_version": GOLD_SCHEMA_VERSION,
        "spanchor_version": __version__,
    }
    if gold_set.description is not None:
        header["description"] = gold_set.description
    if gold_set.corpus_fingerprint is not None:
        header["corpus_fingerprint"] = gold_set.corpus_fingerprint
    if gold_set.metadata:
        header["metadata"] = dict(gold_set.metadata)
    try:
        GoldHeader.model_validate(header)
        chunks = [json.dumps(header, ensure_ascii=False, allow_nan=False)]
    except (ValidationError, ValueError, TypeError) as err:
        detail = describe_validation_error(err) if isinstance(err, ValidationError) else str(err)
        raise GoldError(f"cannot write the header: {detail}", path=target) from None
    for index, query in enumerate(gold_set.entries):
        line = _query_to_json(query)
        try:
            GoldQueryLine.model_validate(line)
            text = json.dumps(line, ensure_ascii=False, allow_nan=False)
        except (ValidationError, ValueError, TypeError) as err:
            detail = (
                describe_validation_error(err) if isinstance(err, ValidationError) else str(err)
            )
            raise GoldError(
                f"cannot write query {query.query_id!r} (entry {index}): {detail}",
                path=target,
                hint="metadata must be JSON; anchor hashes must be sha256 hex",
            ) from None
        chunks.append(text)
    data = ("\n".join(chunks) + "\n").encode("utf-8")
    atomic_write(target, data, error=GoldError, what="gold set")


# --------------------------------------------------------------------------- validation

PROBLEM_CODES: dict[str, str] = {
    "duplicate_query_id": "a query id used on an earlier line (the mapping keeps the first)",
    "empty_query_id": "the query id is empty",
    "empty_question": "the question is empty or only whitespace",
    "no_anchors": "the query has no anchors, so no retrieval can be scored against it",
    "unknown_document": "the anchor names a document the corpus does not have",
    "negative_offset": "start or end is negative",
    "inverted_span": "start is after end",
    "empty_span": "start equals end: the anchor covers no text",
    "out_of_bounds": "end is past the end of the document",
    "hash_mismatch": "the text at the span no longer hashes to the anchor's hash",
}
"""Every :attr:`GoldProblem.code` with what it means."""


@dataclass(frozen=True, slots=True)
class GoldProblem:
    """One thing wrong with a gold set, located by line, query and anchor."""

    line: int | None
    query_id: str
    code: str
    message: str
    anchor: int | None = None
    """0-based index of the anchor in its query, when the problem is about one anchor."""

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        return f"{where}{self.query_id!r}: {self.message} [{self.code}]"


def _preview(text: str, limit: int = 40) -> str:
    if len(text) <= limit:
        return repr(text)
    half = (limit - 1) // 2
    return repr(text[:half]) + "…" + repr(text[-half:])


def _anchor_problems(anchor: Anchor, corpus: Corpus) -> Iterator[tuple[str, str]]:
    where = f"anchor [{anchor.start}, {anchor.end}) in {anchor.document_id!r}"
    if anchor.start < 0 or anchor.end < 0:
        yield "negative_offset", f"{where}: offsets must not be negative"
        return
    if anchor.start > anchor.end:
        yield "inverted_span", f"{where}: start is after end"
        return
    if anchor.start == anchor.end:
        yield "empty_span", f"{where}: empty span covers no text"
    if anchor.document_id not in corpus:
        yield "unknown_document", f"{where}: the corpus has no document {anchor.document_id!r}"
        return
    text = corpus.text(anchor.document_id)
    # spanchor 0.x kept a leading byte-order mark as a character; our corpus drops it, so
    # 0.x anchors into such files sit one character late: say so when that explains it
    bom_note = ""
    earlier = text[anchor.start - 1 : anchor.end - 1] if anchor.start > 0 else None
    if earlier is not None and anchor.end <= len(text) + 1 and sha256_text(earlier) == anchor.hash:
        bom_note = (
            "; the text one character earlier matches: if spanchor 0.x made this anchor "
            "on a file starting with a byte-order mark, subtract 1 from start and end"
        )
    if anchor.end > len(text):
        yield (
            "out_of_bounds",
            f"{where}: the document is only {len(text)} characters long{bom_note}",
        )
        return
    actual = text[anchor.start : anchor.end]
    actual_hash = sha256_text(actual)
    if actual_hash != anchor.hash and anchor.start != anchor.end:
        yield (
            "hash_mismatch",
            f"{where}: text changed: expected hash {anchor.hash[:12]}, the text there now is "
            f"{_preview(actual)} (hash {actual_hash[:12]}){bom_note}",
        )


def validate_gold(gold: GoldSet, corpus: Corpus) -> list[GoldProblem]:
    """Every problem of ``gold`` against ``corpus`` at once, sorted by line.

    Checks each query line (duplicate or empty id, empty question, no anchors) and each
    anchor (negative, inverted or empty span, unknown document, out of bounds, hash
    mismatch with a preview of the text now at the span). An empty list means every anchor
    points at the text it was made from. Codes and their meaning: :data:`PROBLEM_CODES`.
    """
    found: list[tuple[tuple[int, int, int, int], GoldProblem]] = []

    def add(index: int, query: GoldQuery, code: str, message: str, anchor: int | None) -> None:
        line = query.line
        key = (
            0 if line is not None else 1,
            line if line is not None else index,
            -1 if anchor is None else anchor,
            list(PROBLEM_CODES).index(code),
        )
        found.append((key, GoldProblem(line, query.query_id, code, message, anchor)))

    first_line: dict[str, int | None] = {}
    for index, query in enumerate(gold.entries):
        if query.query_id in first_line:
            earlier = first_line[query.query_id]
            at = f"line {earlier}" if earlier is not None else "an earlier entry"
            message = f"query id {query.query_id!r} already used on {at}"
            add(index, query, "duplicate_query_id", message, None)
        else:
            first_line[query.query_id] = query.line
        if not query.query_id.strip():
            add(index, query, "empty_query_id", "the query id is empty", None)
        if not query.question.strip():
            add(index, query, "empty_question", "the question is empty", None)
        if not query.anchors:
            add(index, query, "no_anchors", "the query has no anchors", None)
        for position, anchor in enumerate(query.anchors):
            for code, message in _anchor_problems(anchor, corpus):
                add(index, query, code, message, position)
    found.sort(key=lambda item: item[0])
    return [problem for _, problem in found]


# --------------------------------------------------------------------------- authoring


def anchor_from_text(
    corpus: Corpus,
    text: str,
    *,
    document_id: str | None = None,
    occurrence: int | None = None,
) -> Anchor:
    """The anchor of ``text`` (canonicalised first) in ``corpus``.

    Text that occurs more than once is ambiguous: name the ``document_id``, or pick the
    ``occurrence`` (0-based, in document id then offset order, counted within
    ``document_id`` when given). Raises :class:`AnchorError` when the text is absent or
    ambiguous, listing where it occurs.
    """
    if document_id is not None and document_id not in corpus:
        raise AnchorError(
            f"document {document_id!r} is not in the corpus",
            hint="use a document id the corpus has (its path without suffix)",
        )
    if not canonicalize(text):
        raise AnchorError("cannot anchor empty text", hint="give the evidence text to anchor")
    matches = corpus.find_all(text, document_id)
    scope = "the corpus" if document_id is None else f"document {document_id!r}"
    if not matches:
        raise AnchorError(
            f"text {_preview(canonicalize(text))} does not occur in {scope}",
            hint="copy the evidence exactly from the document; whitespace and case matter",
        )
    if occurrence is not None:
        if not 0 <= occurrence < len(matches):
            raise AnchorError(
                f"occurrence {occurrence} asked for, but the text occurs {len(matches)} "
                f"time{'s' if len(matches) > 1 else ''} in {scope}",
                hint=f"occurrence is 0-based: use 0 to {len(matches) - 1}",
            )
        chosen = matches[occurrence]
    elif len(matches) > 1:
        shown = ", ".join(f"{m.document_id}[{m.start}:{m.end}]" for m in matches[:5])
        more = f" and {len(matches) - 5} more" if len(matches) > 5 else ""
        raise AnchorError(
            f"text occurs {len(matches)} times in {scope}: {shown}{more}",
            hint="name a document_id or an occurrence (0-based) to choose one",
        )
    else:
        chosen = matches[0]
    return Anchor.from_span(corpus, chosen.document_id, chosen.start, chosen.end)
