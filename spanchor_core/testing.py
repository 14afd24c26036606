"""pytest support: retrieval regression tests written as ordinary pytest tests.

This module is the ``pytest11`` plugin of the distribution (entry point ``spanchor``) and the
one module of ``spanchor_core`` that imports pytest; ``import spanchor_core`` never does.

Assertion helpers (usable with or without the plugin's fixtures):

* :func:`assert_no_regression` compares a candidate with a baseline under a policy and raises
  :class:`RetrievalRegression` (an ``AssertionError``) whose message a reviewer can act on from
  the CI log: the verdict, each regressed query worst first with its question, the metrics that
  fell and the gold evidence text the candidate stopped retrieving, then the other errors.
* :func:`assert_evaluation` checks absolute floors (mean metric values, unmapped rate) and
  raises :class:`RetrievalBelowFloor`.

Fixtures (session-scoped), each configured by a command-line option, an ini key, or a key of
the ``[tool.spanchor]`` table that ``spanchor gate`` reads — first found wins, in that order:

* ``spanchor_corpus``: ``--spanchor-docs`` / ``spanchor_docs`` / ``docs``;
* ``spanchor_gold``: ``--spanchor-gold`` / ``spanchor_gold`` / ``gold``;
* ``spanchor_baseline`` (an :class:`Evaluation`; a run file is scored once):
  ``--spanchor-baseline`` / ``spanchor_baseline`` / ``baseline``;
* ``spanchor_policy``: ``--spanchor-policy`` / ``spanchor_policy`` / ``policy``.

``--spanchor-config`` / ``spanchor_config`` names the TOML file holding ``[tool.spanchor]``
(default: ``pyproject.toml`` in the rootdir); ``k``, ``min_overlap``, ``globs``,
``max_unmapped_rate``, ``seed`` and ``allow_mismatch`` are read from that table only. Ini and
``[tool.spanchor]`` paths are relative to the file that holds them, option paths to the
directory pytest was started in.

``spanchor_evaluate(run)`` evaluates a run (a :class:`~spanchor_core.runs.Run` or a run file)
against the configured corpus and gold set with one :class:`~spanchor_core.locate.Locator`
built once per session; ``spanchor_assert_no_regression(candidate)`` is
:func:`assert_no_regression` against the configured baseline and policy.

A test that asks for a fixture whose setting is missing errors at setup with a message naming
the option, the ini key and the ``[tool.spanchor]`` key to set. It is not skipped: a skipped
regression test is a gate that always passes. Nothing happens at configure time, so projects
that have the plugin installed but do not use it are never affected.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, NoReturn, ParamSpec, Protocol, TypeAlias, TypeVar

import pytest

from spanchor_core.compare import Comparison, QueryChange, compare
from spanchor_core.corpus import DEFAULT_GLOBS, Corpus, load_corpus
from spanchor_core.errors import EvaluationFileError, InputError, SpanchorError
from spanchor_core.evaluate import (
    Evaluation,
    QueryStatus,
    check_run_provenance,
    evaluate,
    read_evaluation,
)
from spanchor_core.gate import GateConfig, file_kind, gate_config_from_pyproject
from spanchor_core.gold import GoldSet, read_gold
from spanchor_core.locate import Locator
from spanchor_core.metrics import DEFAULT_K, DEFAULT_MIN_OVERLAP, metric_parts
from spanchor_core.policy import Policy, load_policy, policy_from_mapping
from spanchor_core.reports import lost_evidence
from spanchor_core.runs import Run, read_run
from spanchor_core.spans import DocSpan

__all__ = [
    "DEFAULT_EXCERPT_CHARS",
    "DEFAULT_LIMIT",
    "AssertNoRegression",
    "EvaluateRun",
    "RetrievalBelowFloor",
    "RetrievalRegression",
    "SpanchorConfig",
    "assert_evaluation",
    "assert_no_regression",
    "evaluation_floor_failures",
    "regression_message",
]

DEFAULT_LIMIT: Final = 10
"""Regressed (or below-floor) queries shown in full before the rest are only counted."""
DEFAULT_EXCERPT_CHARS: Final = 160
"""Characters of one piece of lost evidence shown before it is cut with "…"."""
_PIECES: Final = 3
"""Pieces of lost evidence shown per query; the rest are counted."""
_IDS_AFTER_LIMIT: Final = 20
"""Ids named after the detailed list before the remainder is only a number."""
_QUESTION_CHARS: Final = 120

PathLike: TypeAlias = str | os.PathLike[str]
EvaluationSource: TypeAlias = Evaluation | Run | str | os.PathLike[str]
"""An evaluation, an evaluation file, or a run (object or file) to score."""
PolicySource: TypeAlias = Policy | Mapping[str, Any] | str | os.PathLike[str]
_P = ParamSpec("_P")
_T = TypeVar("_T")


# -- failures ---------------------------------------------------------------------------------


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


# -- plain text for a CI log --------------------------------------------------------------------

# Control characters left after whitespace is collapsed are shown escaped: a query id or an
# evidence excerpt carrying an ESC sequence must not be able to rewrite the log around it.
_CONTROL: Final[dict[int, str]] = {
    code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))
}


def _one_line(text: str, limit: int | None = None) -> str:
    flat = " ".join(text.split()).translate(_CONTROL)
    if limit is not None and len(flat) > limit:
        return flat[:limit].rstrip() + "…"
    return flat


def _quoted(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return f"“{flat.translate(_CONTROL)}”"
    cut = flat[:limit].rstrip().translate(_CONTROL)
    return f"“{cut}…” ({limit} of {len(flat)} characters)"


def _number(value: float) -> str:
    return f"{value:.3f}" if math.isfinite(value) else str(value)


def _ids(ids: Sequence[str]) -> str:
    shown = ", ".join(_one_line(qid) for qid in ids[:_IDS_AFTER_LIMIT])
    rest = len(ids) - _IDS_AFTER_LIMIT
    return shown if rest <= 0 else f"{shown} and {rest} more"


def _check_limit(value: int, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{name} must be a whole number of at least 1, not {value!r}")


# -- loading inputs -----------------------------------------------------------------------------


def _as_path(value: object, what: str) -> Path:
    if isinstance(value, str | os.PathLike):
        return Path(value)
    raise TypeError(f"{what} must be a path, not {type(value).__name__}")


def _as_corpus(corpus: Corpus | PathLike | None) -> Corpus | None:
    if corpus is None or isinstance(corpus, Corpus):
        return corpus
    return load_corpus(_as_path(corpus, "corpus"))


def _as_gold(gold: GoldSet | PathLike | None) -> GoldSet | None:
    if gold is None or isinstance(gold, GoldSet):
        return gold
    return read_gold(_as_path(gold, "gold"))


def _as_policy(policy: PolicySource | None) -> Policy | None:
    if policy is None or isinstance(policy, Policy):
        return policy
    if isinstance(policy, Mapping):
        return policy_from_mapping(policy)
    return load_policy(_as_path(policy, "policy"))


def _evaluation_or_run(source: EvaluationSource, side: str) -> Evaluation | Run:
    if isinstance(source, Evaluation | Run):
        return source
    path = _as_path(source, side)
    if file_kind(path) == "evaluation":
        return read_evaluation(path)
    return read_run(path)


def _evaluate_run(
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


def _load_pair(
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
    sides = [_evaluation_or_run(baseline, "baseline"), _evaluation_or_run(candidate, "candidate")]
    reference = next((side for side in sides if isinstance(side, Evaluation)), None)
    k = DEFAULT_K if reference is None else reference.settings.k
    overlap = DEFAULT_MIN_OVERLAP if reference is None else reference.settings.min_overlap
    locator = None
    if corpus is not None and sum(isinstance(side, Run) for side in sides) == 2:
        locator = Locator(corpus)  # index the corpus once for both runs
    out = [
        side
        if isinstance(side, Evaluation)
        else _evaluate_run(
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


# -- the regression message ---------------------------------------------------------------------


def _evidence_depth(row: QueryChange, candidate: Evaluation) -> int | None:
    """The K at which lost evidence is judged: the deepest K among the regressed metrics.

    A whole-list metric (``mrr``) has no K; the evaluation's deepest K, the depth the user
    asked to be scored, stands in. ``None`` (no K anywhere) means the whole ranked list.
    """
    for names in (row.regressed, candidate.metric_names):
        cutoffs = [cut for name in names if (cut := metric_parts(name)[1]) is not None]
        if cutoffs:
            return max(cutoffs)
    return None


def _lost_lines(
    row: QueryChange,
    baseline: Evaluation,
    candidate: Evaluation,
    gold: GoldSet | None,
    corpus: Corpus | None,
    excerpt_chars: int,
) -> list[str]:
    qid = row.query_id
    if qid not in baseline or qid not in candidate:
        return []
    before, after = baseline[qid], candidate[qid]
    note = ""
    if after.status is QueryStatus.MISSING_IN_RUN:
        note = " (the candidate run has no record for this query)"
    elif after.status is QueryStatus.ERROR:
        note = f" (the candidate's retrieval failed: {_one_line(after.error or '', 120)})"
    if baseline.settings.source_format.startswith("spanchor-0.x"):
        return [f"lost evidence unknown: the baseline is a spanchor 0.x evaluation{note}"]
    anchors = None
    if gold is not None and qid in gold:
        anchors = [anchor.span for anchor in gold[qid].anchors]
    k = _evidence_depth(row, candidate)
    depth = "the ranked list" if k is None else f"the top {k}"
    lost = lost_evidence(before, after, k=k, gold=anchors)
    if not lost:
        return [f"no gold characters lost from {depth}{note}"]
    total = sum(span.length for span in lost)
    lines = [f"lost {total} gold characters from {depth}{note}:"]
    for span in lost[:_PIECES]:
        lines.append("  " + _piece(span, corpus, excerpt_chars))
    if len(lost) > _PIECES:
        lines.append(f"  … and {len(lost) - _PIECES} more pieces")
    return lines


def _piece(span: DocSpan, corpus: Corpus | None, excerpt_chars: int) -> str:
    where = f"{_one_line(span.document_id)}[{span.start}:{span.end}]"
    if corpus is None or span.document_id not in corpus:
        return where
    text = corpus.text(span.document_id)[span.start : span.end]
    return f"{where} {_quoted(text, excerpt_chars)}"


def _policy_line(policy: Policy) -> str:
    parts = []
    if policy.max_drop:
        drops = ", ".join(f"{name} {drop:g}" for name, drop in sorted(policy.max_drop.items()))
        parts.append(f"max drop per query: {drops}")
    if policy.aggregate:
        gates = ", ".join(
            f"{name} {gate.max_drop:g} ({gate.basis.replace('_', ' ')})"
            for name, gate in sorted(policy.aggregate.items())
        )
        parts.append(f"max drop of the mean: {gates}")
    return "policy: " + ("; ".join(parts) if parts else "gates nothing")


def _verdict_line(comparison: Comparison, unmapped_failure: str | None) -> str:
    c = comparison.counts
    verdict = "PASS" if comparison.passed and unmapped_failure is None else "FAIL"
    return (
        f"spanchor retrieval gate: {verdict} — {c['regressed']} of {c['compared']} compared "
        f"queries regressed, {c['improved']} improved, {c['unchanged']} unchanged"
    )


def regression_message(
    comparison: Comparison,
    baseline: Evaluation,
    candidate: Evaluation,
    *,
    gold: GoldSet | None = None,
    corpus: Corpus | None = None,
    limit: int = DEFAULT_LIMIT,
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS,
    unmapped_failure: str | None = None,
) -> str:
    """The text of a :class:`RetrievalRegression`: plain lines for a CI log.

    The verdict first; then up to ``limit`` regressed queries, worst first, each with its
    question (when ``gold`` is given), the regressed metrics ``baseline → candidate (delta)``
    and the gold evidence covered in the baseline's top K but not in the candidate's (K is the
    deepest cutoff of the regressed metrics), as text when ``corpus`` is given and cut at
    ``excerpt_chars``; then the error findings that are not per query (settings mismatch,
    missing queries, too few queries, aggregate gates), the warnings and the gated means.
    """
    _check_limit(limit, "limit")
    _check_limit(excerpt_chars, "excerpt_chars")
    lines = [_verdict_line(comparison, unmapped_failure), _policy_line(comparison.policy)]
    regressed = comparison.regressions(include_flaky=False)
    if regressed:
        lines.append("regressed queries, worst first:")
    for row in regressed[:limit]:
        question = ""
        if gold is not None and row.query_id in gold:
            question = f" {_quoted(gold[row.query_id].question, _QUESTION_CHARS)}"
        lines.append(f"  {_one_line(row.query_id)}{question}")
        width = max(len(name) for name in row.regressed)
        for name in row.regressed:
            change = row.change(name)
            lines.append(
                f"    {name:<{width}}  {_number(change.baseline)} → "
                f"{_number(change.candidate)} ({change.delta:+.3f})"
            )
        lines.extend(
            "    " + line
            for line in _lost_lines(row, baseline, candidate, gold, corpus, excerpt_chars)
        )
    if len(regressed) > limit:
        rest = [row.query_id for row in regressed[limit:]]
        lines.append(f"  … and {len(rest)} more regressed queries: {_ids(rest)}")
    if regressed and corpus is None:
        lines.append("  (pass corpus= to see the text of the lost evidence)")
    others = [f for f in comparison.errors if f.code != "regression"]
    if unmapped_failure is not None or others:
        lines.append("errors:")
        lines.extend(f"  {f.code}: {_one_line(f.message)}" for f in others)
        if unmapped_failure is not None:
            lines.append(f"  unmapped_rate: {unmapped_failure}")
    if comparison.warnings:
        lines.append("warnings:")
        lines.extend(f"  {f.code}: {_one_line(f.message)}" for f in comparison.warnings)
    for agg in comparison.aggregates:
        if agg.delta is None or agg.baseline_mean is None or agg.candidate_mean is None:
            continue
        extra = ""
        if agg.ci_low is not None and agg.ci_high is not None:
            level = comparison.policy.bootstrap.confidence
            extra = f", {level:.0%} CI [{agg.ci_low:+.3f}, {agg.ci_high:+.3f}]"
        if agg.p_value is not None:
            extra += f", p = {agg.p_value:.3g}"
        lines.append(
            f"mean {agg.metric}: {_number(agg.baseline_mean)} → {_number(agg.candidate_mean)} "
            f"({agg.delta:+.3f}{extra})"
        )
    return "\n".join(lines)


def _unmapped_failure(
    evaluation: Evaluation, max_unmapped_rate: float | None, whose: str
) -> str | None:
    if max_unmapped_rate is None:
        return None
    stats = evaluation.mapping
    if stats.unmapped_rate <= max_unmapped_rate:
        return None
    return (
        f"{stats.unmapped_rate:.1%} of {whose} results ({stats.unmapped} of "
        f"{stats.total}) could not be mapped onto the corpus; at most {max_unmapped_rate:.1%} "
        "is allowed"
    )


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
    corpus_ = _as_corpus(corpus)
    gold_ = _as_gold(gold)
    before, after = _load_pair(baseline, candidate, corpus=corpus_, gold=gold_)
    comparison = compare(before, after, _as_policy(policy), seed=seed)
    unmapped = _unmapped_failure(after, max_unmapped_rate, "the candidate's")
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
    _check_limit(limit, "limit")
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
                question = f" {_quoted(gold[qid].question, _QUESTION_CHARS)}"
            lines.append(f"  {_one_line(qid)}  {_number(value)}{question}")
        if len(below) > limit:
            lines.append(
                f"  … and {len(below) - limit} more: {_ids([q for _, q in below[limit:]])}"
            )
        failures.append("\n".join(lines))
    unmapped = _unmapped_failure(evaluation, max_unmapped_rate, "the")
    if unmapped is not None:
        failures.append(unmapped)
    return failures


def _floor_notes(evaluation: Evaluation) -> list[str]:
    notes = []
    if evaluation.missing_in_run:
        notes.append(
            f"{len(evaluation.missing_in_run)} gold queries have no record in the run and "
            f"score 0: {_ids(evaluation.missing_in_run)}"
        )
    if evaluation.errors:
        notes.append(
            f"{len(evaluation.errors)} retrievals failed and score 0: {_ids(evaluation.errors)}"
        )
    if evaluation.skipped:
        notes.append(
            f"{len(evaluation.skipped)} gold queries without anchors were not scored: "
            f"{_ids(sorted(evaluation.skipped))}"
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
    gold_ = _as_gold(gold)
    loaded = _evaluation_or_run(evaluation, "evaluation")
    if isinstance(loaded, Run):
        loaded = _evaluate_run(
            loaded,
            corpus=_as_corpus(corpus),
            gold=gold_,
            locator=None,
            k=DEFAULT_K,
            min_overlap=DEFAULT_MIN_OVERLAP,
            allow_mismatch=False,
        )
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


# -- configuration ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SpanchorConfig:
    """What the fixtures were configured with; ``None`` for a setting nobody gave."""

    docs: Path | None = None
    gold: Path | None = None
    baseline: Path | None = None
    policy: Policy | None = None
    k: tuple[int, ...] = DEFAULT_K
    min_overlap: float = DEFAULT_MIN_OVERLAP
    globs: tuple[str, ...] = DEFAULT_GLOBS
    max_unmapped_rate: float | None = None
    seed: int | None = None
    allow_mismatch: bool = False
    config_file: Path | None = None
    """The TOML file whose ``[tool.spanchor]`` table was read, if it has one."""


@dataclass(frozen=True, slots=True)
class _Setting:
    option: str
    ini: str
    table_key: str
    what: str


_SETTINGS: Final = {
    "docs": _Setting("--spanchor-docs", "spanchor_docs", "docs", "the documents directory"),
    "gold": _Setting("--spanchor-gold", "spanchor_gold", "gold", "the gold set (JSONL)"),
    "baseline": _Setting(
        "--spanchor-baseline",
        "spanchor_baseline",
        "baseline",
        "the baseline run or evaluation file",
    ),
    "policy": _Setting("--spanchor-policy", "spanchor_policy", "policy", "the policy file"),
}
_CONFIG = _Setting(
    "--spanchor-config", "spanchor_config", "", "the TOML file with a [tool.spanchor] table"
)
_UNSET: Final = Path("\0spanchor-unset")
"""Stands in for the gate-only keys a pytest-only ``[tool.spanchor]`` table may leave out."""
_CONFIG_KEY = pytest.StashKey[SpanchorConfig]()


_INI_STRING: Final = "string"
"""pytest's ini value type (a named constant: mypy misreads a bare "string" literal there)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the plugin's options and ini keys (see the module documentation)."""
    group = parser.getgroup("spanchor", "spanchor retrieval regression tests")
    for name, setting in (*_SETTINGS.items(), ("config", _CONFIG)):
        group.addoption(
            setting.option,
            dest=f"spanchor_{name}",
            default=None,
            metavar="PATH",
            help=f"{setting.what} (overrides the ini key {setting.ini})",
        )
        parser.addini(
            setting.ini,
            help=f"spanchor: {setting.what}, relative to the ini file",
            type=_INI_STRING,
            default="",
        )


def _usage_error(message: str) -> NoReturn:
    """Error the requesting test at setup with ``message`` alone, without a traceback."""
    __tracebackhide__ = True
    pytest.fail(f"spanchor: {message}", pytrace=False)


def _given(config: pytest.Config, name: str, setting: _Setting) -> Path | None:
    """The path from the command line (relative to the start directory) or the ini file."""
    option = config.getoption(f"spanchor_{name}")
    if option:
        return config.invocation_params.dir / str(option)
    value = config.getini(setting.ini)
    if isinstance(value, str) and value.strip():
        base = config.inipath.parent if config.inipath is not None else config.rootpath
        return base / value.strip()
    return None


def _table_config(file: Path) -> tuple[GateConfig, frozenset[str]] | None:
    """``[tool.spanchor]`` of ``file`` validated as ``spanchor gate`` does, and its keys."""
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise EvaluationFileError(f"cannot read the TOML file: {err}", path=file) from None
    tool = data.get("tool")
    table = tool.get("spanchor") if isinstance(tool, dict) else None
    if not isinstance(table, dict):
        return None
    keys = frozenset(table)
    # GateConfig requires both runs of a gate; a table written for pytest may name only the
    # baseline, so the missing ones get a placeholder that is never used.
    unset = {key: _UNSET for key in ("baseline", "candidate") if key not in keys}
    return gate_config_from_pyproject(file, **unset), keys


def _read_config(config: pytest.Config) -> SpanchorConfig:
    explicit = _given(config, "config", _CONFIG)
    if explicit is not None and not explicit.is_file():
        raise InputError(
            "the spanchor config file does not exist",
            path=explicit,
            hint=f"fix {_CONFIG.option} / the {_CONFIG.ini} ini key",
        )
    if explicit is not None:
        file = explicit
    elif config.inipath is not None and config.inipath.name == "pyproject.toml":
        file = config.inipath
    else:
        file = config.rootpath / "pyproject.toml"
    found = _table_config(file) if file.is_file() else None
    if found is None and explicit is not None:
        raise EvaluationFileError("has no [tool.spanchor] table", path=file)
    gate, keys = found if found is not None else (None, frozenset[str]())

    def path(name: str) -> Path | None:
        given = _given(config, name, _SETTINGS[name])
        if given is not None or gate is None or name not in keys:
            return given
        value = getattr(gate, name)
        return value if isinstance(value, Path) and value != _UNSET else None

    policy_path = _given(config, "policy", _SETTINGS["policy"])
    policy = load_policy(policy_path) if policy_path is not None else None
    if policy is None and gate is not None:
        policy = gate.resolved_policy(file)
    if gate is None:
        return SpanchorConfig(
            docs=path("docs"), gold=path("gold"), baseline=path("baseline"), policy=policy
        )
    return SpanchorConfig(
        docs=path("docs"),
        gold=path("gold"),
        baseline=path("baseline"),
        policy=policy,
        k=gate.k,
        min_overlap=gate.min_overlap,
        globs=gate.globs,
        max_unmapped_rate=gate.max_unmapped_rate,
        seed=gate.seed,
        allow_mismatch=gate.allow_mismatch,
        config_file=file,
    )


def _required(config: SpanchorConfig, name: str, needed_by: str) -> Path:
    value: Path | None = getattr(config, name)
    if value is not None:
        return value
    setting = _SETTINGS[name]
    where = (
        f"[tool.spanchor] of {config.config_file}"
        if config.config_file is not None
        else "[tool.spanchor] of pyproject.toml (or the file named by --spanchor-config)"
    )
    _usage_error(
        f"{needed_by} needs {setting.what}, and none is configured. Set the ini key "
        f"`{setting.ini} = PATH` (in [pytest] or [tool.pytest.ini_options]), pass "
        f'`{setting.option} PATH`, or set `{setting.table_key} = "PATH"` in {where}.'
    )


def _load(config: pytest.Config) -> SpanchorConfig:
    __tracebackhide__ = True
    cached = config.stash.get(_CONFIG_KEY, None)
    if cached is None:
        try:
            cached = _read_config(config)
        except SpanchorError as err:
            _usage_error(f"bad configuration: {err}")
        config.stash[_CONFIG_KEY] = cached
    return cached


# -- fixtures -----------------------------------------------------------------------------------


class EvaluateRun(Protocol):
    """The type of the ``spanchor_evaluate`` fixture, for annotating tests."""

    def __call__(
        self,
        run: Run | PathLike,
        *,
        k: Sequence[int] | None = None,
        min_overlap: float | None = None,
    ) -> Evaluation: ...


class AssertNoRegression(Protocol):
    """The type of the ``spanchor_assert_no_regression`` fixture, for annotating tests."""

    def __call__(
        self,
        candidate: EvaluationSource,
        *,
        policy: PolicySource | None = None,
        seed: int | None = None,
    ) -> Comparison: ...


@pytest.fixture(scope="session")
def spanchor_config(pytestconfig: pytest.Config) -> SpanchorConfig:
    """The plugin's settings, from options, ini keys and ``[tool.spanchor]``."""
    return _load(pytestconfig)


def _guarded(what: str, load: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """``load(...)``, with a spanchor input error turned into a setup error naming ``what``."""
    __tracebackhide__ = True
    try:
        return load(*args, **kwargs)
    except SpanchorError as err:
        _usage_error(f"cannot load {what}: {err}")


@pytest.fixture(scope="session")
def spanchor_corpus(spanchor_config: SpanchorConfig) -> Corpus:
    """The configured documents, loaded once per session."""
    docs = _required(spanchor_config, "docs", "the spanchor_corpus fixture")
    corpus: Corpus = _guarded("the documents", load_corpus, docs, globs=spanchor_config.globs)
    return corpus


@pytest.fixture(scope="session")
def spanchor_gold(spanchor_config: SpanchorConfig) -> GoldSet:
    """The configured gold set, read once per session."""
    gold: GoldSet = _guarded(
        "the gold set", read_gold, _required(spanchor_config, "gold", "the spanchor_gold fixture")
    )
    return gold


@pytest.fixture(scope="session")
def spanchor_locator(spanchor_corpus: Corpus) -> Locator:
    """One :class:`Locator` over the configured corpus: its index is built once per session."""
    return Locator(spanchor_corpus)


@pytest.fixture(scope="session")
def spanchor_policy(spanchor_config: SpanchorConfig) -> Policy | None:
    """The configured policy, or ``None`` for :func:`compare`'s default."""
    return spanchor_config.policy


@pytest.fixture(scope="session")
def spanchor_evaluate(
    spanchor_config: SpanchorConfig,
    spanchor_corpus: Corpus,
    spanchor_gold: GoldSet,
    spanchor_locator: Locator,
) -> EvaluateRun:
    """``spanchor_evaluate(run) -> Evaluation``: score a run (object or file) against the
    configured corpus and gold set, reusing the session's locator."""

    def evaluate_run(
        run: Run | PathLike,
        *,
        k: Sequence[int] | None = None,
        min_overlap: float | None = None,
    ) -> Evaluation:
        loaded = run if isinstance(run, Run) else read_run(_as_path(run, "run"))
        return _evaluate_run(
            loaded,
            corpus=spanchor_corpus,
            gold=spanchor_gold,
            locator=spanchor_locator,
            k=spanchor_config.k if k is None else k,
            min_overlap=spanchor_config.min_overlap if min_overlap is None else min_overlap,
            allow_mismatch=spanchor_config.allow_mismatch,
        )

    return evaluate_run


@pytest.fixture(scope="session")
def spanchor_baseline(
    spanchor_config: SpanchorConfig, request: pytest.FixtureRequest
) -> Evaluation:
    """The configured baseline as an :class:`Evaluation`: an evaluation file as it is, a run
    file scored once per session (which then needs the documents and the gold set too)."""
    path = _required(spanchor_config, "baseline", "the spanchor_baseline fixture")
    kind = _guarded("the baseline", file_kind, path)
    if kind == "evaluation":
        evaluation: Evaluation = _guarded("the baseline", read_evaluation, path)
        return evaluation
    evaluate_run: EvaluateRun = request.getfixturevalue("spanchor_evaluate")
    scored: Evaluation = _guarded("the baseline", evaluate_run, path)
    return scored


@pytest.fixture(scope="session")
def spanchor_assert_no_regression(
    spanchor_config: SpanchorConfig, spanchor_baseline: Evaluation, request: pytest.FixtureRequest
) -> AssertNoRegression:
    """``spanchor_assert_no_regression(candidate)``: :func:`assert_no_regression` against the
    configured baseline, policy, seed and ``max_unmapped_rate``, with the configured gold set
    and corpus (when set) for the message. ``candidate`` may be a run, which is scored with the
    session's locator."""
    config = spanchor_config
    corpus: Corpus | None = None
    gold: GoldSet | None = None
    evaluate_run: EvaluateRun | None = None
    if config.docs is not None and config.gold is not None:
        corpus = request.getfixturevalue("spanchor_corpus")
        gold = request.getfixturevalue("spanchor_gold")
        evaluate_run = request.getfixturevalue("spanchor_evaluate")

    def check(
        candidate: EvaluationSource,
        *,
        policy: PolicySource | None = None,
        seed: int | None = None,
    ) -> Comparison:
        __tracebackhide__ = True
        loaded = _evaluation_or_run(candidate, "candidate")
        if isinstance(loaded, Run):
            if evaluate_run is None:
                _required(
                    config, "docs" if config.docs is None else "gold", "a run as the candidate"
                )
            else:
                loaded = evaluate_run(
                    loaded,
                    k=spanchor_baseline.settings.k,
                    min_overlap=spanchor_baseline.settings.min_overlap,
                )
        return assert_no_regression(
            spanchor_baseline,
            loaded,
            config.policy if policy is None else policy,
            seed=config.seed if seed is None else seed,
            gold=gold,
            corpus=corpus,
            max_unmapped_rate=config.max_unmapped_rate,
        )

    return check
