"""Authoring gold sets: find text, add anchors, repair anchors after edits, propose evidence.

The library functions behind the authoring commands of the CLI, one module each:

* :mod:`.occurrences` — :func:`locate_text`: where does this text occur? (``spanchor locate``)
* :mod:`.anchoring` — :func:`add_anchor`: append one verified anchor to a gold file
  (``spanchor anchor add``)
* :mod:`.removal` — :func:`remove_anchor` / :func:`remove_query`: take an anchor or a query
  out of a gold file (``spanchor anchor remove`` / ``spanchor query remove``)
* :mod:`.replacement` — :func:`replace_anchor`: put other evidence in an anchor's place,
  keeping the query (``spanchor anchor replace``)
* :mod:`.corpus_check` (with :mod:`.hash_search`) — :func:`check_corpus` / :func:`fix_gold`:
  which anchors an edited corpus broke, where their text went, and the gold set with moved
  anchors rewritten (``spanchor check-corpus``)
* the candidate workflow — :mod:`.candidates` (the model, :func:`select_candidates`),
  :mod:`.proposing` (:func:`propose_candidates`), :mod:`.candidates_file` (:func:`write_candidates`,
  :func:`read_candidates`), :mod:`.review` (:func:`review_candidate`) and :mod:`.promotion`
  (:func:`promote_candidates`): propose sentence-level evidence spans, record each review
  decision in the candidates file, and promote approved candidates with a question into the
  gold set (``spanchor gold extract`` / ``gold review`` / ``gold promote``).

Every file is written atomically (temporary file, fsync, rename), so an interrupted command
leaves the old file or the new one. Everything here is linear in the corpus size except the
hash search of :func:`check_corpus`, whose cost is bounded and reported (see there).
Occurrences are numbered from 1.
"""

from spanchor_core.authoring.anchoring import add_anchor
from spanchor_core.authoring.candidates import Candidate, CandidateStatus, select_candidates
from spanchor_core.authoring.candidates_file import (
    CANDIDATES_KIND,
    CANDIDATES_SCHEMA_VERSION,
    CandidateLine,
    CandidatesHeader,
    read_candidates,
    write_candidates,
)
from spanchor_core.authoring.corpus_check import (
    AnchorCheck,
    AnchorFate,
    CorpusCheck,
    check_corpus,
    fix_gold,
)
from spanchor_core.authoring.decisions_file import read_decisions
from spanchor_core.authoring.occurrences import Occurrence, locate_text
from spanchor_core.authoring.promotion import PromotionReport, promote_candidates
from spanchor_core.authoring.proposing import propose_candidates
from spanchor_core.authoring.removal import RemovedAnchor, remove_anchor, remove_query
from spanchor_core.authoring.replacement import ReplacedAnchor, replace_anchor
from spanchor_core.authoring.review import (
    BatchReview,
    ReviewDecision,
    review_candidate,
    review_candidates,
)

__all__ = [
    "CANDIDATES_KIND",
    "CANDIDATES_SCHEMA_VERSION",
    "AnchorCheck",
    "AnchorFate",
    "BatchReview",
    "Candidate",
    "CandidateLine",
    "CandidateStatus",
    "CandidatesHeader",
    "CorpusCheck",
    "Occurrence",
    "PromotionReport",
    "RemovedAnchor",
    "ReplacedAnchor",
    "ReviewDecision",
    "add_anchor",
    "check_corpus",
    "fix_gold",
    "locate_text",
    "promote_candidates",
    "propose_candidates",
    "read_candidates",
    "read_decisions",
    "remove_anchor",
    "remove_query",
    "replace_anchor",
    "review_candidate",
    "review_candidates",
    "select_candidates",
    "write_candidates",
]
