"""The assertion helpers: :func:`assert_no_regression` against a baseline and
:func:`assert_evaluation` against absolute floors, usable with or without the plugin.

Both raise an ``AssertionError`` subclass, so pytest reports the test as failed (not errored),
and keep the objects behind the message on the exception for code that catches it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from spanchor_core.compare import Comparison, compare
from spanchor_core.corpus import Corpus
from spanchor_core.errors import InputError
from spanchor_core.evaluate import Evaluation
from spanchor_core.gold import GoldSet
from spanchor_core.pipeline import load_pair, load_side
from spanchor_core.render.text import check_count, one_line
from spanchor_core.testing.inputs import (
    EvaluationSource,
    PathLike,
    PolicySource,
    as_corpus,
    as_gold,
    as_policy,
    as_side,
)
from spanchor_core.testing.messages import (
    DEFAULT_EXCERPT_CHARS,
    DEFAULT_LIMIT,
    QUESTION_CHARS,
    format_number,
    listed_ids,
    quoted,
    regression_message,
    unmapped_failure,
)

__all__ = [
    "RetrievalBelowFloor",
    "RetrievalRegression",
    "assert_evaluation",
    "assert_no_regression",
    "evaluation_floor_failures",
]


class RetrievalRegression(AssertionError):
    """A candidate failed the comparison with its baseline; the message lists what it lost.

    An ``AssertionError``, so pytest reports the test as failed (not errored) and shows the
    message as it is. The objects behind the message stay available to code that catches it.
    """

    def __init__(
        self, message: str, comparison: Comparison, baseline: Evaluation, candidate: Evaluation
    ) -> None:
        super().__init__(message)
        self.comparison = comparison
        self.baseline = baseline
        self.candidate = candidate


class RetrievalBelowFloor(AssertionError):
    """An evaluation is below an absolute floor set by :func:`assert_evaluation`."""

    def __init__(self, message: str, evaluation: Evaluation, failures: Sequence[str]) -> None:
        super().__init__(message)
        self.evaluation = evaluation
        self.failures = tuple(failures)


def _check_rate(value: float | None, name: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InputError(f"{name} must be a number from 0 to 1, not {value!r}")


def assert_no_regression(
    baseline: EvaluationSource,
    candidate: EvaluationSource,
    policy: PolicySource | None = None,
    *,
    seed: int | None = None,
    gold: GoldSet | PathLike | None = None,
    corpus: Corpus | PathLike | None = None,
    max_unmapped_rate: float | None = None,
    limit: int = DEFAULT_LIMIT,
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS,
) -> Comparison:
    """Compare ``candidate`` with ``baseline``; raise :class:`RetrievalRegression` if it fails.

    Each side is an :class:`Evaluation`, an evaluation file, or a run (object or file) that is
    scored here against ``corpus`` and ``gold`` with the other side's K and min_overlap.
    ``policy`` is a :class:`Policy`, a policy file or a mapping in a policy file's form; without
    one, :func:`spanchor_core.compare.compare`'s default applies (recall at the deepest K may
    not drop). ``max_unmapped_rate`` also fails the assertion when more of the candidate's
    results than that could not be mapped (``spanchor gate``'s exit code 3).

    ``gold`` adds each regressed query's question to the message and ``corpus`` the text of
    the evidence it lost (see :func:`regression_message`). Returns the comparison when it passes.
    Unusable input raises :class:`~spanchor_core.errors.InputError`, not an assertion error:
    a test that cannot compare is broken, not red.
    """
    __tracebackhide__ = True
    _check_rate(max_unmapped_rate, "max_unmapped_rate")
    corpus_ = as_corpus(corpus)
    gold_ = as_gold(gold)
    before, after = load_pair(
        as_side(baseline, "baseline"), as_side(candidate, "candidate"), corpus=corpus_, gold=gold_
    )
    comparison = compare(before, after, as_policy(policy), seed=seed)
    unmapped = unmapped_failure(after, max_unmapped_rate, "the candidate's")
    if comparison.passed and unmapped is None:
        return comparison
    message = regression_message(
        comparison,
        before,
        after,
        gold=gold_,
        corpus=corpus_,
        limit=limit,
        excerpt_chars=excerpt_chars,
        unmapped_failure=unmapped,
    )
    raise RetrievalRegression(message, comparison, before, after)


# -- absolute floors ----------------------------------------------------------------------------


def evaluation_floor_failures(
    evaluation: Evaluation,
    *,
    min_mean: Mapping[str, float] | None = None,
    max_unmapped_rate: float | None = None,
    gold: GoldSet | None = None,
    limit: int = DEFAULT_LIMIT,
) -> list[str]:
    """The floors ``evaluation`` misses, one text block each (empty when it meets them all).

    For a mean below its floor, the queries scoring below the floor are listed lowest first
    (at most ``limit``), with their questions when ``gold`` is given.
    """
    check_count(limit, "limit")
    _check_rate(max_unmapped_rate, "max_unmapped_rate")
    floors = dict(min_mean or {})
    if not floors and max_unmapped_rate is None:
        raise InputError(
            "nothing to assert: give min_mean and/or max_unmapped_rate",
            hint='e.g. min_mean={"recall@5": 0.8}',
        )
    unknown = [name for name in floors if name not in evaluation.metric_names]
    if unknown:
        raise InputError(
            f"the evaluation has no metric {', '.join(map(repr, unknown))}",
            hint=f"known: {', '.join(evaluation.metric_names)}",
        )
    failures: list[str] = []
    for name, floor in floors.items():
        if (
            isinstance(floor, bool)
            or not isinstance(floor, int | float)
            or not math.isfinite(floor)
        ):
            raise InputError(f"min_mean[{name!r}] must be a finite number, not {floor!r}")
        summary = evaluation.aggregate(name)
        if summary.n == 0:
            failures.append(f"mean {name} cannot be computed: no query was scored")
            continue
        if summary.mean >= floor:
            continue
        values = evaluation.metric(name)
        below = sorted((v, qid) for qid, v in values.items() if v < floor)
        lines = [
            f"mean {name} = {summary.mean:.3f} over {summary.n} queries, below the floor "
            f"{floor:g}; {len(below)} queries score below it, lowest first:"
        ]
        for value, qid in below[:limit]:
            question = ""
            if gold is not None and qid in gold:
                question = f" {quoted(gold[qid].question, QUESTION_CHARS)}"
            lines.append(f"  {one_line(qid)}  {format_number(value)}{question}")
        if len(below) > limit:
            lines.append(
                f"  … and {len(below) - limit} more: {listed_ids([q for _, q in below[limit:]])}"
            )
        failures.append("\n".join(lines))
    unmapped = unmapped_failure(evaluation, max_unmapped_rate, "the")
    if unmapped is not None:
        failures.append(unmapped)
    return failures


def _floor_notes(evaluation: Evaluation) -> list[str]:
    notes = []
    if evaluation.missing_in_run:
        notes.append(
            f"{len(evaluation.missing_in_run)} gold queries have no record in the run and "
            f"score 0: {listed_ids(evaluation.missing_in_run)}"
        )
    if evaluation.errors:
        notes.append(
            f"{len(evaluation.errors)} retrievals failed and score 0: "
            f"{listed_ids(evaluation.errors)}"
        )
    if evaluation.skipped:
        notes.append(
            f"{len(evaluation.skipped)} gold queries without anchors were not scored: "
            f"{listed_ids(sorted(evaluation.skipped))}"
        )
    return notes


def assert_evaluation(
    evaluation: EvaluationSource,
    *,
    min_mean: Mapping[str, float] | None = None,
    max_unmapped_rate: float | None = None,
    gold: GoldSet | PathLike | None = None,
    corpus: Corpus | PathLike | None = None,
    limit: int = DEFAULT_LIMIT,
) -> Evaluation:
    """Assert absolute floors: ``min_mean={"recall@5": 0.8}``, ``max_unmapped_rate=0.05``.

    ``evaluation`` is an :class:`Evaluation`, an evaluation file, or a run (scored here against
    ``corpus`` and ``gold`` with the default K and min_overlap). Raises
    :class:`RetrievalBelowFloor` listing every missed floor and the queries below it; a metric
    the evaluation does not report, or no floor at all, is an
    :class:`~spanchor_core.errors.InputError` (a check that checks nothing always passes).
    Returns the evaluation.
    """
    __tracebackhide__ = True
    gold_ = as_gold(gold)
    loaded = load_side(as_side(evaluation, "evaluation"), corpus=as_corpus(corpus), gold=gold_)
    failures = evaluation_floor_failures(
        loaded, min_mean=min_mean, max_unmapped_rate=max_unmapped_rate, gold=gold_, limit=limit
    )
    if not failures:
        return loaded
    checks = len(min_mean or {}) + (max_unmapped_rate is not None)
    lines = [f"retrieval below its floor: {len(failures)} of {checks} checks failed"]
    lines += failures
    lines += [f"note: {note}" for note in _floor_notes(loaded)]
    raise RetrievalBelowFloor("\n".join(lines), loaded, failures)
