"""Candidate evidence spans and their review state: the model of the candidate workflow.

Candidates are proposed by :mod:`~spanchor_core.authoring.proposing`, kept in a candidates
file (:mod:`~spanchor_core.authoring.candidates_file`), reviewed and promoted to gold queries.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from spanchor_core.corpus import canonicalize
from spanchor_core.spans import DocSpan

__all__ = ["Candidate", "CandidateStatus", "select_candidates"]


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


def _folded(text: str) -> str:
    return " ".join(canonicalize(text).casefold().split())


def select_candidates(
    candidates: Iterable[Candidate],
    *,
    status: CandidateStatus | None = None,
    text: str | None = None,
    question: str | None = None,
    document_id: str | None = None,
) -> list[Candidate]:
    """The candidates (in their order) that match every filter given.

    ``text`` and ``question`` match a part of the candidate's text or question, ignoring
    case and runs of whitespace; ``question=""`` selects the candidates with no question
    yet. ``status`` and ``document_id`` match exactly.
    """
    needle = None if text is None else _folded(text)
    asked = None if question is None else _folded(question)
    chosen = []
    for candidate in candidates:
        if status is not None and candidate.status != status:
            continue
        if document_id is not None and candidate.document_id != document_id:
            continue
        if needle is not None and needle not in _folded(candidate.text):
            continue
        if asked is not None:
            own = candidate.question
            if asked == "" and own:
                continue
            if asked and (own is None or asked not in _folded(own)):
                continue
        chosen.append(candidate)
    return chosen
