"""Reviewing one candidate: approve, reject, ask a question, move its span; saved in the
candidates file at once (:func:`review_candidate`, ``spanchor gold review``) by appending the
decision, so that reviewing thousands of candidates does not rewrite the file each time.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

from spanchor_core.authoring.candidates import Candidate, CandidateStatus
from spanchor_core.authoring.candidates_file import (
    append_revision,
    read_candidates_revisions,
    write_candidates,
)
from spanchor_core.authoring.storable import lone_surrogate
from spanchor_core.corpus import Corpus, canonicalize, sha256_text
from spanchor_core.errors import AnchorError, GoldError, InputError

__all__ = ["review_candidate"]


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
    without one clears an earlier reason. The decision is appended to the file as a
    revision of the candidate's line (the file is read but not rewritten); with ``output``
    the whole file, every decision folded in, is written there atomically instead.
    Returns the updated candidate.
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
    for name, given in (("question", question), ("reason", reason), ("edited text", edited_text)):
        bad = None if given is None else lone_surrogate(given)
        if bad is not None:
            raise InputError(
                f"the {name} holds a lone surrogate {bad}, which UTF-8 cannot store",
                hint="give it as plain text",
            )
    header, candidates, revisions = read_candidates_revisions(source)
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
    if output is None:
        append_revision(updated, source, revisions + 1)
        return updated
    candidates[position] = replace(updated, line=candidate.line)
    write_candidates(
        candidates,
        target,
        corpus_fingerprint=header.corpus_fingerprint,
        parameters=header.parameters,
    )
    return updated
