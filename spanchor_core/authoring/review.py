"""Reviewing candidates: approve, reject, ask a question, move a span; saved in the
candidates file at once by appending the decision, so that reviewing thousands of candidates
does not rewrite the file each time.

:func:`review_candidate` records one decision (``spanchor gold review -c ID``);
:func:`review_candidates` a batch of :class:`ReviewDecision` (``gold review --decisions FILE``,
read by :mod:`.decisions_file`): every decision is checked first, and only when all are good
are they appended, in one write. Both apply a decision the same way (:func:`_decide`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from spanchor_core.authoring.candidates import Candidate, CandidateStatus
from spanchor_core.authoring.candidates_file import (
    append_revisions,
    read_candidates_revisions,
    write_candidates,
)
from spanchor_core.authoring.storable import lone_surrogate
from spanchor_core.corpus import Corpus, canonicalize, sha256_text
from spanchor_core.errors import AnchorError, GoldError, InputError

__all__ = ["BatchReview", "ReviewDecision", "review_candidate", "review_candidates"]


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


@dataclass(frozen=True, slots=True)
class ReviewDecision:
    """One review decision about one candidate.

    ``decision`` sets the status: ``"approve"`` (needs a question, given now or earlier),
    ``"reject"``, or ``"edit"`` to change only the question, the note or the span (a moved
    span puts the candidate back to pending, as the earlier approval was for other text).
    ``edited_text`` or ``start``/``end`` move the evidence (see :func:`review_candidate`).
    ``line`` is where the decision was read from, for error messages. ``listed_text`` is the
    candidate's text as the reviewer saw it (a ``gold list --json`` line made a decision): the
    decision is refused when the candidate's text is no longer that, rather than applied to
    evidence nobody read.
    """

    candidate_id: str
    decision: Literal["approve", "reject", "edit"] = "edit"
    question: str | None = None
    reason: str | None = None
    edited_text: str | None = None
    start: int | None = None
    end: int | None = None
    line: int | None = None
    listed_text: str | None = None


@dataclass(frozen=True, slots=True)
class _Words:
    """How a front end names what a decision lacks, for the hints of its errors."""

    anything: str
    question: str


_FLAGS = _Words(
    anything="give --approve, --reject, --question, --reason, --edited-text or a span",
    question="give --question with the question this evidence answers",
)
_FIELDS = _Words(
    anything="give a question, reason, edited_text or start and end with decision 'edit'",
    question="add the question this evidence answers in the line's question field",
)


def _check_given(decision: ReviewDecision, words: _Words) -> None:
    """InputError when ``decision`` records nothing or holds text UTF-8 cannot store."""
    given = (decision.question, decision.reason, decision.edited_text)
    if (
        decision.decision == "edit"
        and all(value is None for value in given)
        and decision.start is None
        and decision.end is None
    ):
        raise InputError("nothing to record", hint=words.anything)
    for name, value in zip(("question", "reason", "edited text"), given, strict=True):
        bad = None if value is None else lone_surrogate(value)
        if bad is not None:
            raise InputError(
                f"the {name} holds a lone surrogate {bad}, which UTF-8 cannot store",
                hint="give it as plain text",
            )


def _decide(
    candidate: Candidate,
    decision: ReviewDecision,
    corpus: Corpus | None,
    path: Path,
    words: _Words,
) -> Candidate:
    """``candidate`` with ``decision`` applied; InputError (naming ``path``) if it cannot be."""
    _check_given(decision, words)
    if decision.listed_text is not None and decision.listed_text != candidate.text:
        raise InputError(
            f"the text of {candidate.candidate_id!r} is not the listed text",
            path=path,
            hint="to move the evidence give edited_text and leave text as listed; else list "
            "the candidates again (`spanchor gold list --json`)",
        )
    question, reason, edited_text = decision.question, decision.reason, decision.edited_text
    start, end = decision.start, decision.end
    approve, reject = decision.decision == "approve", decision.decision == "reject"
    updated = candidate
    span = _edited_span(candidate, corpus, edited_text, start, end, path)
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
            raise InputError("the question is empty", path=path)
        updated = replace(updated, question=question)
    if reason is not None:
        updated = replace(updated, reason=reason)
    if approve:
        if not (updated.question or "").strip():
            raise InputError(
                f"approving {candidate.candidate_id!r} needs a question",
                path=path,
                line=candidate.line,
                hint=words.question,
            )
        updated = replace(updated, status=CandidateStatus.APPROVED, reason=reason)
    elif reject:
        updated = replace(updated, status=CandidateStatus.REJECTED)
    return updated


_NO_SUCH_HINT = "candidate ids look like '<document_id>#<n>' (see `spanchor gold list`)"


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
    """Record a review decision for one candidate and save it.

    ``approve`` / ``reject`` set the status (not both); approving needs a question, given
    now or earlier. ``edited_text`` or ``start``/``end`` change the evidence span: text or
    span inside the proposed text needs nothing more; elsewhere in the document needs
    ``corpus`` (edited text then anchors at its occurrence nearest the proposal). An edit
    without ``approve`` puts the candidate back to pending, as in spanchor 0.x: the earlier
    approval was for other text. ``reason`` is kept as a note (why rejected); approving
    without one clears an earlier reason. The decision is appended to the file as a
    revision of the candidate's line (the file is read but not rewritten); with ``output``
    the whole file, every decision folded in, is written there atomically instead.
    Returns the updated candidate.
    """
    source = Path(path)
    if approve and reject:
        raise InputError("approve and reject at once", hint="choose one")
    decision = ReviewDecision(
        candidate_id,
        "approve" if approve else "reject" if reject else "edit",
        question,
        reason,
        edited_text,
        start,
        end,
    )
    _check_given(decision, _FLAGS)  # the cheap refusals before reading a large file
    header, candidates, revisions = read_candidates_revisions(source)
    position = next((i for i, c in enumerate(candidates) if c.candidate_id == candidate_id), None)
    if position is None:
        raise GoldError(f"no candidate {candidate_id!r}", path=source, hint=_NO_SUCH_HINT)
    candidate = candidates[position]
    updated = _decide(candidate, decision, corpus, source, _FLAGS)
    if output is None:
        append_revisions([updated], source, revisions + 1)
        return updated
    candidates[position] = replace(updated, line=candidate.line)
    write_candidates(
        candidates,
        Path(output),
        corpus_fingerprint=header.corpus_fingerprint,
        parameters=header.parameters,
    )
    return updated


@dataclass(frozen=True, slots=True)
class BatchReview:
    """What :func:`review_candidates` did: the decided candidates as they now stand (each
    once, in the order first decided) and how many decisions went into them — or, when any
    decision was bad, one :class:`~spanchor_core.errors.GoldError` per bad decision (naming the
    decisions file and line) and nothing saved."""

    candidates: tuple[Candidate, ...]
    decisions: int
    problems: tuple[GoldError, ...] = ()

    @property
    def applied(self) -> bool:
        """Whether the decisions were saved (none was bad)."""
        return not self.problems


def review_candidates(
    path: str | os.PathLike[str],
    decisions: Sequence[ReviewDecision],
    *,
    corpus: Corpus | None = None,
    output: str | os.PathLike[str] | None = None,
    source: str | os.PathLike[str] | None = None,
    read_problems: Sequence[GoldError] = (),
) -> BatchReview:
    """Apply a batch of review decisions to a candidates file, all or nothing.

    Each decision is applied as :func:`review_candidate` would, in order (two decisions about
    one candidate apply one after the other). Every decision is checked before anything is
    saved: when any is bad, the result lists each bad one (``source``, the decisions file,
    and its line; what is wrong; what to do) and the file is untouched. ``read_problems``,
    the lines :func:`~.decisions_file.read_decisions` could not read, count as bad decisions
    too, so that one pass names every bad line (in line order). Otherwise each decided
    candidate's final state is appended as one revision line, all in one write (or, with
    ``output``, the whole file with every decision folded in is written there).
    """
    target = Path(path)
    where = Path(source) if source is not None else target
    header, candidates, revisions = read_candidates_revisions(target)
    position = {candidate.candidate_id: i for i, candidate in enumerate(candidates)}
    decided: dict[str, Candidate] = {}
    problems: list[GoldError] = []
    for decision in decisions:
        at = position.get(decision.candidate_id)
        try:
            if at is None:
                raise GoldError(f"no candidate {decision.candidate_id!r} in {target}")
            current = decided.get(decision.candidate_id, candidates[at])
            decided[decision.candidate_id] = _decide(current, decision, corpus, target, _FIELDS)
        except InputError as err:
            hint = _NO_SUCH_HINT if at is None else err.hint
            problems.append(GoldError(err.message, path=where, line=decision.line, hint=hint))
    if problems or read_problems:
        every = sorted([*read_problems, *problems], key=lambda err: err.line or 0)
        return BatchReview((), len(decisions), tuple(every))
    if not decisions:
        return BatchReview((), 0)
    if output is None:
        append_revisions(list(decided.values()), target, revisions + 1)
    else:
        for candidate_id, updated in decided.items():
            at = position[candidate_id]
            candidates[at] = replace(updated, line=candidates[at].line)
        write_candidates(
            candidates,
            Path(output),
            corpus_fingerprint=header.corpus_fingerprint,
            parameters=header.parameters,
        )
    return BatchReview(tuple(decided.values()), len(decisions))
