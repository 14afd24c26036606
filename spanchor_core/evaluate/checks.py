"""The checks that must pass before scores mean anything: the gold set still matches the corpus
(:func:`check_gold`), and the run was recorded against these documents and this gold set
(:func:`check_run_provenance`).

Checking a gold set reads every anchor's text and hashes it (a tenth of a second at 10,000
queries); a command that scores several runs against one gold set checks it once, in
:func:`gold_checked`, and the checks inside that block find it done.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from spanchor_core.corpus import Corpus
from spanchor_core.errors import GoldError, RunError
from spanchor_core.gold import GoldSet, validate_gold
from spanchor_core.runs import Run, RunStream

__all__ = ["check_gold", "check_run_provenance", "gold_checked"]

# Gold problems that make scores meaningless: evidence that is not where the anchor says, or two
# queries under one id. Other problems (no anchors, an empty question) do not stop scoring.
_FATAL_GOLD_PROBLEMS = frozenset(
    {
        "duplicate_query_id",
        "unknown_document",
        "negative_offset",
        "inverted_span",
        "empty_span",
        "out_of_bounds",
        "hash_mismatch",
    }
)


_CHECKED: ContextVar[tuple[GoldSet, Corpus] | None] = ContextVar("gold_checked", default=None)
"""The gold set and corpus :func:`gold_checked` has checked, while its block runs."""


@contextmanager
def gold_checked(gold: GoldSet, corpus: Corpus) -> Iterator[None]:
    """:func:`check_gold` now, and not again for these two objects inside the block.

    Both are held (by identity) only while the block runs; nothing is cached beyond it.
    """
    check_gold(gold, corpus)
    token = _CHECKED.set((gold, corpus))
    try:
        yield
    finally:
        _CHECKED.reset(token)


def check_gold(gold: GoldSet, corpus: Corpus) -> None:
    """Raise :class:`GoldError` (with file and line) if ``gold`` cannot be scored on ``corpus``.

    An empty gold set, anchors in unknown documents, out of bounds, empty or inverted, or
    whose hash does not match the text: scores computed from them would mean nothing.
    Inside :func:`gold_checked` for the same two objects, returns at once (checked already).
    """
    checked = _CHECKED.get()
    if checked is not None and checked[0] is gold and checked[1] is corpus:
        return
    if not gold.entries:
        raise GoldError(
            "the gold set has no queries",
            path=gold.path,
            hint="add queries (`spanchor anchor add`) or point to the right file",
        )
    problems = [p for p in validate_gold(gold, corpus) if p.code in _FATAL_GOLD_PROBLEMS]
    if problems:
        first = problems[0]
        more = f" ({len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise GoldError(
            f"query {first.query_id!r}: {first.message}{more}",
            path=gold.path,
            line=first.line,
            hint="fix the gold set (`spanchor validate` lists every problem) or evaluate "
            "against the corpus it was written for",
        )


def check_run_provenance(run: Run | RunStream, corpus: Corpus, gold: GoldSet) -> None:
    """Raise :class:`RunError` if ``run`` says it was recorded against another corpus or gold set.

    :func:`evaluate` only warns about a mismatch (a notebook may compare on purpose); the CLI
    calls this first, because in CI such a run would gate on numbers that mean nothing.
    Runs that do not record a fingerprint or gold hash (spanchor 0.x files) pass. Only the
    header is read, so a :class:`~spanchor_core.runs.RunStream` (header read, records not yet)
    will do.
    """
    recorded = run.header.corpus_fingerprint
    if recorded is not None and recorded != corpus.fingerprint:
        raise RunError(
            f"the run was recorded against another corpus (fingerprint {recorded[:12]}…, "
            f"these documents are {corpus.fingerprint[:12]}…)",
            path=run.path,
            line=1,
            hint="re-record the run on these documents, or pass --allow-mismatch",
        )
    if run.header.gold_sha256 is not None and run.header.gold_sha256 != gold.sha256:
        raise RunError(
            f"the run was recorded for another version of the gold set "
            f"({run.header.gold_sha256[:12]}…, this one is {gold.sha256[:12]}…)",
            path=run.path,
            line=1,
            hint="re-record the run for this gold set, or pass --allow-mismatch",
        )
