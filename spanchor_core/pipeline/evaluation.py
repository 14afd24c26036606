"""``spanchor evaluate``: one run scored, the checks CI relies on, and its exit code."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from spanchor_core.corpus import DEFAULT_GLOBS, Corpus, load_corpus
from spanchor_core.errors import InputError
from spanchor_core.evaluate import (
    Evaluation,
    ProgressCallback,
)
from spanchor_core.evaluate.checks import gold_checked
from spanchor_core.evaluate.run_parts import part_ranges
from spanchor_core.exit_codes import ExitCode
from spanchor_core.gold import GoldSet, read_gold
from spanchor_core.index_store import pipeline_locator
from spanchor_core.locate import Locator
from spanchor_core.metrics import DEFAULT_K, DEFAULT_MIN_OVERLAP
from spanchor_core.parallel import ProcessLocator, resolve_jobs
from spanchor_core.pipeline.sides import open_run, score_opened
from spanchor_core.runs import Run, RunStream

__all__ = [
    "EvaluationOutcome",
    "GoldHashPolicy",
    "run_evaluation",
]


class GoldHashPolicy(StrEnum):
    """What :func:`run_evaluation` does when the gold set's hash is not the expected one."""

    WARN = "warn"
    """Score anyway, and say so in :attr:`EvaluationOutcome.warnings`."""
    FAIL = "fail"
    """Refuse to score: :class:`InputError`."""
    IGNORE = "ignore"
    """Do not compare the hashes."""


# -- evaluate: one run, its checks and its exit code --------------------------------------------


@dataclass(frozen=True, slots=True)
class EvaluationOutcome:
    """One scored run, what was noticed on the way, and the exit code of ``spanchor evaluate``."""

    evaluation: Evaluation
    gold: GoldSet
    corpus: Corpus
    max_unmapped_rate: float | None
    warnings: tuple[str, ...] = ()
    """Problems noticed before scoring (a gold-set hash that is not the expected one)."""

    @property
    def unmapped_exceeded(self) -> bool:
        """More results than ``max_unmapped_rate`` allows could not be mapped."""
        limit = self.max_unmapped_rate
        return limit is not None and self.evaluation.mapping.unmapped_rate > limit

    @property
    def incomplete(self) -> bool:
        """Some gold queries have no record in the run."""
        return bool(self.evaluation.missing_in_run)

    @property
    def exit_code(self) -> ExitCode:
        """:attr:`ExitCode.UNTRUSTED` when the run is incomplete or too much is unmapped."""
        return ExitCode.UNTRUSTED if self.unmapped_exceeded or self.incomplete else ExitCode.PASS


def _gold_hash_warning(
    gold: GoldSet, expected: str | None, policy: GoldHashPolicy | str
) -> tuple[str, ...]:
    """Compare the gold set's hash (ours, 0.x's, or ``sha256:``-prefixed) with ``expected``."""
    try:
        policy = GoldHashPolicy(policy)
    except ValueError:
        raise InputError(
            f"the gold-hash policy must be warn, fail or ignore, not {policy!r}"
        ) from None
    if expected is None or policy is GoldHashPolicy.IGNORE:
        return ()
    if expected in {gold.sha256, gold.legacy_sha256, f"sha256:{gold.sha256}"}:
        return ()
    message = (
        f"the gold set's hash is {gold.sha256} (0.x form {gold.legacy_sha256}), not {expected}"
    )
    if policy is GoldHashPolicy.FAIL:
        raise InputError(message, path=gold.path, hint="evaluate against the expected gold set")
    return (message,)


def _in_parts(opened: Run | RunStream, jobs: int, locator: Locator | None) -> bool:
    """Whether ``jobs`` processes will read ``opened`` in parts (then no pool maps for them)."""
    return isinstance(opened, RunStream) and bool(part_ranges(jobs, opened, locator))


def run_evaluation(
    corpus: Corpus | str | os.PathLike[str],
    gold: GoldSet | str | os.PathLike[str],
    run: str | os.PathLike[str],
    *,
    k: Sequence[int] = DEFAULT_K,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    globs: Sequence[str] = DEFAULT_GLOBS,
    max_unmapped_rate: float | None = 0.1,
    allow_mismatch: bool = False,
    expected_gold_hash: str | None = None,
    gold_hash_policy: GoldHashPolicy | str = GoldHashPolicy.WARN,
    progress: ProgressCallback | None = None,
    group: str = "auto",
    locator: Locator | None = None,
    jobs: int | None = None,
) -> EvaluationOutcome:
    """Score one run file as ``spanchor evaluate`` does, with every check CI relies on.

    The gold set's hash is checked against ``expected_gold_hash`` (``gold_hash_policy``: warn,
    fail with :class:`InputError`, or ignore), then the gold set against the documents and the
    run's provenance (:func:`score_run`). A run none of whose records matches a gold query is
    an :class:`InputError`: scoring it would report a pass on nothing. ``locator`` (built on
    the same documents, e.g. a :class:`~spanchor_core.distributed.RayLocator`) maps the results;
    without one, ``jobs`` processes read, map and keep them (0: one per CPU), with the same
    evaluation as one: a run file cut into that many parts, each read on a forked process
    (:mod:`spanchor_core.evaluate.run_parts`), or, where that cannot be (not Linux, a 0.x
    file), the mapping shared out (:mod:`spanchor_core.parallel`). ``None`` (the default) reads
    a large run file in two parts where that is safe, else on this process alone; 1 always
    on this process alone.
    """
    if max_unmapped_rate is not None and not 0.0 <= max_unmapped_rate <= 1.0:
        raise InputError(f"max_unmapped_rate must be between 0 and 1, got {max_unmapped_rate}")
    documents = corpus if isinstance(corpus, Corpus) else load_corpus(corpus, globs=tuple(globs))
    gold_set = gold if isinstance(gold, GoldSet) else read_gold(gold)
    warnings = _gold_hash_warning(gold_set, expected_gold_hash, gold_hash_policy)
    count = None if jobs is None else resolve_jobs(jobs)
    with gold_checked(gold_set, documents):  # once, not again by open_run and the scorer
        opened = open_run(Path(run), corpus=documents, gold=gold_set, allow_mismatch=allow_mismatch)
        owned = None
        if locator is None:
            locator = pipeline_locator(documents)
            if count is not None and count > 1 and not _in_parts(opened, count, locator):
                locator = owned = ProcessLocator(documents, jobs=count, base=locator)
        try:
            evaluation = score_opened(
                opened,
                documents,
                gold_set,
                k=k,
                min_overlap=min_overlap,
                locator=locator,
                progress=progress,
                group=group,
                jobs=count,
            )
        finally:
            if owned is not None:
                owned.close()
    records = opened.records_read if isinstance(opened, RunStream) else len(opened.records)
    if records and len(evaluation.missing_in_run) == len(evaluation):
        where = gold_set.path if gold_set.path is not None else "the gold set"
        raise InputError(
            f"none of the run's {records} records matches a query of {where}",
            path=Path(run),
            hint="check that the run was recorded for this gold set",
        )
    return EvaluationOutcome(evaluation, gold_set, documents, max_unmapped_rate, warnings)
