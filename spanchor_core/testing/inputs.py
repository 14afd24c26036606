"""What the assertions accept as a side, turned into objects: evaluations, runs, gold sets,
corpora and policies, given as objects or as paths.

Turning sides into evaluations is :mod:`spanchor_core.pipeline`'s (:func:`load_pair`,
:func:`load_side`, :func:`score_run`), so the plugin, ``spanchor gate`` and the CLI score runs
by one rule; this module only checks that what is not an object is a path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeAlias

from spanchor_core.corpus import Corpus, load_corpus
from spanchor_core.errors import InputError
from spanchor_core.evaluate import Evaluation, read_evaluation
from spanchor_core.gold import GoldSet, read_gold
from spanchor_core.pipeline import file_kind
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
    "as_side",
    "evaluation_or_run",
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


def as_side(source: EvaluationSource, side: str) -> Evaluation | Run | Path:
    """``source`` as it is if it is an object, else as a path (:func:`as_path`)."""
    return source if isinstance(source, Evaluation | Run) else as_path(source, side)


def evaluation_or_run(source: EvaluationSource, side: str) -> Evaluation | Run:
    """``source`` as an object: an evaluation file read, a run file read whole."""
    path = as_side(source, side)
    if not isinstance(path, Path):
        return path
    if file_kind(path) == "evaluation":
        return read_evaluation(path)
    return read_run(path)
