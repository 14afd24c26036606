"""Candidate evidence spans and their review state: the model of the candidate workflow.

Candidates are proposed by :mod:`~spanchor_core.authoring.proposing`, kept in a candidates
file (:mod:`~spanchor_core.authoring.candidates_file`), reviewed and promoted to gold queries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from spanchor_core.spans import DocSpan

__all__ = ["Candidate", "CandidateStatus"]


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
