"""Promoting approved candidates into the gold set, one query each (``spanchor gold promote``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from spanchor_core.authoring.candidates import Candidate, CandidateStatus
from spanchor_core.authoring.candidates_file import read_candidates
from spanchor_core.authoring.gold_edits import read_gold_or_empty, rebuilt
from spanchor_core.corpus import Corpus, sha256_text
from spanchor_core.gold import Anchor, GoldQuery, write_gold

__all__ = ["PromotionReport", "promote_candidates"]


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
    gold = read_gold_or_empty(gold_file)
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
        write_gold(rebuilt(gold, [*gold.entries, *added]), gold_file)
    return PromotionReport(
        tuple(added), tuple(already), tuple(stale), tuple(missing), pending, rejected
    )
