"""What the assertions accept as a side, turned into evaluations: objects or paths of
evaluations, runs, gold sets, corpora and policies.

One small module on purpose: :func:`load_pair` ("paths -> evaluations") is the step the shared
:mod:`spanchor_core.pipeline` takes over, so that the plugin, ``spanchor gate`` and the CLI
score runs by one rule.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

from spanchor_core.corpus import Corpus, load_corpus
from spanchor_core.errors import InputError
from spanchor_core.evaluate import Evaluation, check_run_provenance, evaluate, read_evaluation
from spanchor_core.gate import file_kind
from spanchor_core.gold import GoldSet, read_gold
from spanchor_core.locate import Locator
from spanchor_core.metrics import DEFAULT_K, DEFAULT_MIN_OVERLAP
from spanchor_core.policy import Policy, load_policy, policy_from_mapping
from spanchor_core.runs import Run, read_run

__all__ = [
    "EvaluationSource",
    "PathLike",
    "PolicySource",
    "as_corpus",
    "as_gold",
    "as_path",
    "as_policy",
    "evaluation_or_run",
    "load_pair",
    "score_run",
]

PathLike: TypeAlias = str | os.PathLike[str]
EvaluationSource: TypeAlias = Evaluation | Run | str | os.PathLike[str]
"""An evaluation, an evaluation file, or a run (object or file) to score."""
PolicySource: TypeAlias = Policy | Mapping[str, Any] | str | os.PathLike[str]


def as_path(value: object, what: str) -> Path:
    """``value`` as a path; anything else is an :class:`InputError` naming ``what``."""
    if isinstance(value, str | os.PathLike):
        return Path(value)
    raise InputError(f"{what} must be an object of its type or a path, not {type(value).__name__}")


def as_corpus(corpus: Corpus | PathLike | None) -> Corpus | None:
    if corpus is None or isinstance(corpus, Corpus):
        return corpus
    return load_corpus(as_path(corpus, "corpus"))


def as_gold(gold: GoldSet | PathLike | None) -> GoldSet | None:
    if gold is None or isinstance(gold, GoldSet):
        return gold
    return read_gold(as_path(gold, "gold"))


def as_policy(policy: PolicySource | None) -> Policy | None:
    if policy is None or isinstance(policy, Policy):
        return policy
    if isinstance(policy, Mapping):
        return policy_from_mapping(policy)
    return load_policy(as_path(policy, "policy"))


def evaluation_or_run(source: EvaluationSource, side: str) -> Evaluation | Run:
    if isinstance(source, Evaluation | Run):
        return source
    path = as_path(source, side)
    if file_kind(path) == "evaluation":
        return read_evaluation(path)
    return read_run(path)


def score_run(
    run: Run,
    *,
    corpus: Corpus | None,
    gold: GoldSet | None,
    locator: Locator | None,
    k: Sequence[int],
    min_overlap: float,
    allow_mismatch: bool,
) -> Evaluation:
    if corpus is None or gold is None:
        raise InputError(
            "is a run; scoring a run needs the documents and the gold set",
            path=run.path or "run",
            hint="pass corpus= and gold=, or pass an evaluation instead",
        )
    if not allow_mismatch:
        check_run_provenance(run, corpus, gold)
    return evaluate(corpus, gold, run, k=k, min_overlap=min_overlap, locator=locator)


def load_pair(
    baseline: EvaluationSource,
    candidate: EvaluationSource,
    *,
    corpus: Corpus | None,
    gold: GoldSet | None,
) -> tuple[Evaluation, Evaluation]:
    """Both sides as evaluations; runs are scored with the other side's K and min_overlap.

    Scoring a run with the settings of the evaluation it is compared with is the only choice
    that can make the two comparable; with two runs, the library defaults apply to both.
    """
    sides = [evaluation_or_run(baseline, "baseline"), evaluation_or_run(candidate, "candidate")]
    reference = next((side for side in sides if isinstance(side, Evaluation)), None)
    k = DEFAULT_K if reference is None else reference.settings.k
    overlap = DEFAULT_MIN_OVERLAP if reference is None else reference.settings.min_overlap
    locator = None
    if corpus is not None and sum(isinstance(side, Run) for side in sides) == 2:
        locator = Locator(corpus)  # index the corpus once for both runs
    out = [
        side
        if isinstance(side, Evaluation)
        else score_run(
            side,
            corpus=corpus,
            gold=gold,
            locator=locator,
            k=k,
            min_overlap=overlap,
            allow_mismatch=False,
        )
        for side in sides
    ]
    return out[0], out[1]
