"""``spanchor noise``: N repeats of one configuration scored, and how much they disagree."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from spanchor_core.compare.noise import (
    NoiseReport,
    measure_noise,
)
from spanchor_core.corpus import DEFAULT_GLOBS, load_corpus
from spanchor_core.errors import InputError
from spanchor_core.evaluate import (
    Evaluation,
)
from spanchor_core.gold import read_gold
from spanchor_core.pipeline.sides import SideProgress, load_labelled
from spanchor_core.policy import Policy, default_policy

__all__ = [
    "NoiseOutcome",
    "run_noise",
]

# -- noise: N repeats of one configuration -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NoiseOutcome:
    """What ``spanchor noise`` measured: the repeats (sorted by path) and their disagreement."""

    baselines: tuple[Evaluation, ...]
    report: NoiseReport
    policy: Policy
    """The policy the flaky queries and the floor are for: the given one, else the default."""

    @property
    def gated(self) -> tuple[str, ...]:
        """The metrics the policy gates (and that the repeats report)."""
        names = {row.metric for row in self.report.metrics}
        return tuple(name for name in self.policy.gated_metrics if name in names)

    @property
    def flaky_queries(self) -> tuple[str, ...]:
        """Queries flaky on a gated metric: what goes into the policy's ``flaky_queries``."""
        return self.report.flaky_queries(self.gated)

    @property
    def noise_floor(self) -> float:
        """The largest spread of a gated metric's mean between the repeats."""
        return self.report.noise_floor(self.gated)


def run_noise(
    baselines: Sequence[str | os.PathLike[str]],
    *,
    docs: str | os.PathLike[str] | None = None,
    gold: str | os.PathLike[str] | None = None,
    k: Sequence[int] | None = None,
    min_overlap: float | None = None,
    globs: Sequence[str] = DEFAULT_GLOBS,
    allow_mismatch: bool = False,
    group: str = "auto",
    policy: Policy | None = None,
    progress: SideProgress | None = None,
    jobs: int = 1,
) -> NoiseOutcome:
    """Score (or read) N repeated baselines and measure how much they disagree.

    Run files need ``docs`` and ``gold``; all baselines must be of one gold set and corpus
    (:class:`InputError` naming the odd file). Flakiness counts differences larger than the
    policy's noise floor. Without ``policy``, the default one (:func:`compare`'s) names the
    gated metrics. ``jobs`` (0: one per CPU) scores the runs concurrently, with the same
    outcome (:mod:`spanchor_core.parallel`).
    """
    paths = [Path(p) for p in baselines]
    corpus = load_corpus(docs, globs=tuple(globs)) if docs is not None else None
    gold_set = read_gold(gold) if gold is not None else None
    if len(paths) < 2:
        raise InputError(
            f"measuring noise needs at least two baselines, got {len(paths)}",
            hint="record the same configuration two or more times and give every run file",
        )
    loaded = load_labelled(
        [(f"baseline {path.name}", path) for path in paths],
        corpus=corpus,
        gold=gold_set,
        k=k,
        min_overlap=min_overlap,
        allow_mismatch=allow_mismatch,
        progress=progress,
        group=group,
        jobs=jobs,
    )
    labelled = sorted(zip(map(str, paths), loaded, strict=True), key=lambda pair: pair[0])
    if policy is None:
        policy = default_policy(labelled[0][1].metric_names)
    report = measure_noise(labelled, floor=policy.noise_floor)
    return NoiseOutcome(tuple(e for _, e in labelled), report, policy)
