"""The candidates file format (``kind: spanchor.candidates``): JSON Lines, a header line, then
one candidate per line; reading it strictly (``path:line`` errors) and writing it atomically.

A review decision is *appended* (:func:`append_revisions`, a batch of decisions in one write)
as the candidate's whole new line with ``"revision": n``; reading keeps the candidate's place
and takes its last revision, so a decision costs one read and one short append, not a rewrite
of the whole file.
:func:`write_candidates` writes each candidate once, without revisions (``gold review
--output FILE`` writes the file with every decision folded in).

Only this module knows the file's shape; the model is in
:mod:`~spanchor_core.authoring.candidates`. Lone surrogates (``"\\ud800"``) and numbers
out of range (``1e400``) anywhere in a line are refused on reading and on writing, so that a
file that reads can always be hashed and written back.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from spanchor_core._io import atomic_write, loads_strict
from spanchor_core._version import __version__
from spanchor_core.authoring.candidates import Candidate, CandidateStatus
from spanchor_core.authoring.storable import unstorable
from spanchor_core.corpus import sha256_text
from spanchor_core.errors import GoldError

__all__ = [
    "CANDIDATES_KIND",
    "CANDIDATES_SCHEMA_VERSION",
    "CandidateLine",
    "CandidatesHeader",
    "append_revisions",
    "read_candidates",
    "read_candidates_file",
    "write_candidates",
]

CANDIDATES_KIND: Final = "spanchor.candidates"
CANDIDATES_SCHEMA_VERSION: Final = 1


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
    revision: int | None = Field(default=None, ge=1)
    """Set on an appended review decision: it replaces the candidate's earlier line."""


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


def _encode(value: dict[str, Any], target: Path, what: str) -> str:
    """One line of the file; GoldError when ``value`` cannot be strict UTF-8 JSON."""
    problem = unstorable(value)
    if problem is None:
        try:
            return json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as err:
            problem = str(err) or "nested too deeply"
    raise GoldError(f"cannot write {what}: {problem}", path=target)


def write_candidates(
    candidates: Iterable[Candidate],
    path: str | os.PathLike[str],
    *,
    corpus_fingerprint: str | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> None:
    """Write a candidates file atomically: a header line, then one candidate per line.

    GoldError, and nothing written, for two candidates with one id or for values a strict
    UTF-8 JSON file cannot hold (a lone surrogate, a non-finite number).
    """
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
    chunks = [_encode(header, target, "the header")]
    ids: set[str] = set()
    for candidate in candidates:
        if candidate.candidate_id in ids:
            raise GoldError(f"two candidates share the id {candidate.candidate_id!r}", path=target)
        ids.add(candidate.candidate_id)
        chunks.append(
            _encode(_candidate_json(candidate), target, f"candidate {candidate.candidate_id!r}")
        )
    atomic_write(target, "\n".join(chunks) + "\n", error=GoldError, what="candidates file")


def append_revisions(
    candidates: Sequence[Candidate], path: str | os.PathLike[str], first_revision: int
) -> None:
    """Append each of ``candidates`` as a revision of its line (review decisions), numbered
    from ``first_revision``.

    All lines go in one ``write`` of a file opened for appending, flushed to disk, so an
    interrupted review loses at most this batch (reading then names the torn last line, to
    delete). Nothing is written when any line cannot be encoded. The file must already hold
    each candidate (see :func:`read_candidates_file`).
    """
    target = Path(path)
    lines = [
        _encode(
            {**_candidate_json(candidate), "revision": first_revision + offset},
            target,
            f"candidate {candidate.candidate_id!r}",
        )
        for offset, candidate in enumerate(candidates)
    ]
    if not lines:
        return
    encoded = ("\n".join(lines) + "\n").encode()
    try:
        with target.open("rb+") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() > 0:
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) != b"\n":
                    encoded = b"\n" + encoded
            handle.write(encoded)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as err:
        raise GoldError(f"cannot append: {err.strerror or err}", path=target) from None


# --------------------------------------------------------------------------- reading


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _parse_line(text: str, path: Path, line: int) -> dict[str, Any]:
    """One line as a JSON object that can be written back; GoldError ``path:line`` if not."""
    data = loads_strict(
        text,
        path=path,
        line=line,
        error=GoldError,
        hint="each line must be one complete JSON object",
    )
    if not isinstance(data, dict):
        raise GoldError(
            f"expected a JSON object, found {type(data).__name__}", path=path, line=line
        )
    # decoded UTF-8 holds no surrogate and loads_strict refuses non-finite numbers, so only a
    # \\uD800-style escape can make a line unstorable: walk the values only then (2x faster)
    problem = unstorable(data) if _SURROGATE_ESCAPE.search(text) else None
    if problem is not None:
        raise GoldError(
            problem,
            path=path,
            line=line,
            hint="fix the line or propose the candidates again",
        )
    return data


def _candidate(
    data: dict[str, Any], path: Path, line: int, ids: dict[str, int]
) -> tuple[Candidate, int | None]:
    """One candidate line and its revision; its id not in ``ids`` (id -> line) unless it is a
    revision, and then in it; GoldError ``path:line`` if bad."""
    try:
        model = CandidateLine.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise GoldError(
            f"field {where!r}: {first['msg']}" if where else str(first["msg"]),
            path=path,
            line=line,
            hint="fix the line or propose the candidates again",
        ) from None
    if model.revision is not None and model.candidate_id not in ids:
        raise GoldError(
            f"revision {model.revision} of candidate {model.candidate_id!r}, which no earlier "
            "line holds",
            path=path,
            line=line,
            hint="edit candidates with `spanchor gold review`, not by hand",
        )
    if model.revision is None and model.candidate_id in ids:
        raise GoldError(
            f"candidate id {model.candidate_id!r} already used on line {ids[model.candidate_id]}",
            path=path,
            line=line,
        )
    if model.end <= model.start or sha256_text(model.text) != model.hash:
        raise GoldError(
            f"candidate {model.candidate_id!r}: span [{model.start}, {model.end}) and "
            "text do not agree with the hash",
            path=path,
            line=line,
            hint="edit candidates with `spanchor gold review`, not by hand",
        )
    candidate = Candidate(
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
        line,
    )
    return candidate, model.revision


def read_candidates_file(path: Path) -> tuple[CandidatesHeader, list[Candidate]]:
    """The header and the candidates of a candidates file (see :func:`read_candidates`)."""
    header, found, _ = read_candidates_revisions(path)
    return header, found


def read_candidates_revisions(
    path: Path,
) -> tuple[CandidatesHeader, list[Candidate], int]:
    """The header, the candidates (each at its first line's place, as its last revision says)
    and how many revision lines the file holds."""
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
    raw = raw.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark is dropped, as by every reader
    place: dict[str, int] = {}
    revisions = 0
    for number, line in enumerate(raw.split(b"\n"), start=1):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as err:
            raise GoldError(
                f"not valid UTF-8 at byte {err.start} of the line", path=path, line=number
            ) from None
        if not text.strip():
            continue
        data = _parse_line(text, path, number)
        if header is None:
            header = _candidates_header(data, path, number)
            continue
        candidate, revision = _candidate(data, path, number, ids)
        if revision is None:
            ids[candidate.candidate_id] = number
            place[candidate.candidate_id] = len(found)
            found.append(candidate)
        else:
            revisions += 1
            found[place[candidate.candidate_id]] = candidate
    if header is None:
        raise GoldError("empty candidates file", path=path, hint="run `spanchor gold extract`")
    return header, found, revisions


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
    ``hash``, ids unique, text UTF-8 can hold.
    """
    return read_candidates_file(Path(path))[1]
