"""Comparing a baseline evaluation with a candidate under a :class:`~spanchor_core.policy.Policy`.

:func:`compare` returns a :class:`Comparison`: a verdict and exit code, one row per query,
aggregate rows with confidence intervals and p-values, and findings. A failed gate is a result
(``exit_code == 1``), never an exception; only unusable input (a non-finite or missing metric
value) raises :class:`~spanchor_core.errors.InputError`.

The rules, in the order they are applied:

* **Comparability.** When both sides know them, different K lists, ``min_overlap`` values,
  corpus fingerprints or gold-set hashes are error findings: those scores do not measure the same
  thing. A gated metric absent from either side is an error finding, never a silent pass.
* **Queries.** Only queries present in both evaluations are compared. The others are listed
  (``only_in_baseline``, ``only_in_candidate``) and are an error or a warning per
  ``policy.on_missing`` (a warning for allow-listed flaky queries). Fewer compared queries than
  ``policy.min_queries`` is an error.
* **Per query, per metric.** ``delta = candidate - baseline``; ``|delta| <= noise_floor`` counts
  as 0. A metric in ``policy.max_drop`` regresses when it moves the wrong way (down for
  higher-is-better metrics, up for lower-is-better ones) by more than ``max_drop + noise_floor``
  — exactly ``max_drop`` is allowed, and float noise such as ``0.8 - 0.75 = 0.05000000000000004``
  cannot flip it (spanchor 0.x rounded deltas to 10 decimals instead). It improves when it moves
  the right way by more than the noise floor (spanchor 0.x asked for more than ``max_drop``, so
  small real gains were invisible). A query is REGRESSION if any per-query gated metric
  regressed, else IMPROVED if any improved, else UNCHANGED. Metrics gated only on their mean
  carry deltas but no per-query status. Regressions of allow-listed flaky queries are warnings.
* **Aggregates**, for every gated metric over the compared queries: means, the mean delta, a
  paired percentile-bootstrap confidence interval of it and a paired sign-flip permutation
  p-value (two-sided; ``(1 + #{|flipped sum| >= |observed sum|}) / (1 + resamples)``, so never
  below ``1 / (1 + n_resamples)``; exact, over every sign pattern, when
  ``2**n <= n_resamples``). Both depend only on the seed and the data: rows are sorted by query
  id first, and the generators are local ``numpy.random.Generator(PCG64(seed))`` streams
  (the sign flips use the same seed's ``jumped()`` stream). All metrics share the resampled
  indices, so adding a metric to a policy leaves the others' intervals unchanged.
  A sign-flip test was chosen over Wilcoxon because it needs numpy only, tests the mean itself
  (the quantity the gates use) and handles the many ties of 0/1 metrics without corrections.
* **Verdict.** ``passed`` is true when no finding is an error; ``exit_code`` is 0 or 1.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Final, Literal, Protocol, cast

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, ValidationError

from spanchor_core._io import atomic_write, loads_strict
from spanchor_core._version import __version__
from spanchor_core.errors import EvaluationFileError, InputError
from spanchor_core.policy import AggregateGate, Direction, Policy, default_policy

__all__ = [
    "COMPARISON_KIND",
    "COMPARISON_SCHEMA_VERSION",
    "AggregateChange",
    "ChangeStatus",
    "Comparison",
    "ComparisonFile",
    "Finding",
    "MappingMetricTable",
    "MetricChange",
    "MetricTable",
    "MetricTableSettings",
    "PairedStatistics",
    "QueryChange",
    "TableSettings",
    "compare",
    "comparison_json_schema",
    "paired_statistics",
    "read_comparison",
    "write_comparison",
]

COMPARISON_KIND: Final = "spanchor.comparison"
COMPARISON_SCHEMA_VERSION: Final = 1

_CHUNK_ELEMENTS = 1 << 22
"""Resample indices drawn per block (32 MiB of int64): bounds memory for any number of queries."""
_LISTED = 10
"""How many query ids a finding's message names before it says "and N more"."""


# -- what compare() needs from an evaluation -----------------------------------------------------


class MetricTableSettings(Protocol):
    """What an evaluation was computed with; ``None`` means unknown (and is never a mismatch)."""

    @property
    def k(self) -> Sequence[int] | None: ...
    @property
    def min_overlap(self) -> float | None: ...
    @property
    def corpus_fingerprint(self) -> str | None: ...
    @property
    def gold_sha256(self) -> str | None: ...


class MetricTable(Protocol):
    """Per-query metric values, as :func:`compare` reads them.

    Iterating yields the query ids; :meth:`metric` gives ``{query_id: value}`` for one of
    ``metric_names``. :class:`spanchor_core.evaluate.Evaluation` fits as it is; for plain
    dictionaries use :meth:`MappingMetricTable.from_mapping`.
    """

    @property
    def metric_names(self) -> Sequence[str]: ...
    @property
    def settings(self) -> MetricTableSettings: ...
    def __iter__(self) -> Iterator[str]: ...
    def metric(self, name: str) -> Mapping[str, float]: ...


@dataclass(frozen=True, slots=True)
class TableSettings:
    """A plain :class:`MetricTableSettings`, also what a :class:`Comparison` records per side."""

    k: tuple[int, ...] | None = None
    min_overlap: float | None = None
    corpus_fingerprint: str | None = None
    gold_sha256: str | None = None

    @classmethod
    def of(cls, settings: MetricTableSettings | None) -> TableSettings:
        """Copy the four identity fields of any settings object (missing fields are unknown)."""
        if settings is None:
            return cls()
        k = getattr(settings, "k", None)
        overlap = getattr(settings, "min_overlap", None)
        return cls(
            k=None if k is None else tuple(sorted({int(v) for v in k})),
            min_overlap=None if overlap is None else float(overlap),
            corpus_fingerprint=getattr(settings, "corpus_fingerprint", None),
            gold_sha256=getattr(settings, "gold_sha256", None),
        )


@dataclass(frozen=True, slots=True)
class MappingMetricTable:
    """A :class:`MetricTable` over ``{query_id: {metric: value}}`` (tests, scripts, other tools)."""

    values: Mapping[str, Mapping[str, float]]
    settings: TableSettings = field(default_factory=TableSettings)
    metric_names: tuple[str, ...] = ()

    @classmethod
    def from_mapping(
        cls,
        values: Mapping[str, Mapping[str, float]],
        *,
        settings: MetricTableSettings | None = None,
    ) -> MappingMetricTable:
        """Wrap ``values``; metric names are every name any query has, in first-seen order."""
        names: dict[str, None] = {}
        for row in values.values():
            names.update(dict.fromkeys(row))
        frozen = {qid: dict(row) for qid, row in values.items()}
        return cls(frozen, TableSettings.of(settings), tuple(names))

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def metric(self, name: str) -> dict[str, float]:
        """``{query_id: value}`` for the queries that have ``name``."""
        return {qid: row[name] for qid, row in self.values.items() if name in row}


# -- results ----------------------------------------------------------------------------------


class ChangeStatus(StrEnum):
    """How one query (or one of its metrics) moved; the values are spanchor 0.x's."""

    IMPROVED = "IMPROVED"
    UNCHANGED = "UNCHANGED"
    REGRESSION = "REGRESSION"


Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Finding:
    """Something the verdict depends on. Any ``error`` fails the comparison.

    ``code`` is stable for programs: ``settings_mismatch``, ``missing_metric``,
    ``missing_queries``, ``too_few_queries``, ``no_policy``, ``empty_policy``, ``regression``,
    ``flaky_regression``, ``aggregate_gate``.
    """

    severity: Severity
    code: str
    message: str
    metric: str | None = None
    query_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MetricChange:
    """One metric of one query. ``status`` is ``None`` for metrics not gated per query."""

    metric: str
    baseline: float
    candidate: float
    delta: float
    """``candidate - baseline``, or 0.0 when within the noise floor."""
    status: ChangeStatus | None


@dataclass(frozen=True, slots=True)
class QueryChange:
    """One compared query: its status, the metrics that regressed, every gated metric's change."""

    query_id: str
    status: ChangeStatus
    changes: tuple[MetricChange, ...]
    regressed: tuple[str, ...] = ()
    flaky: bool = False

    @property
    def severity(self) -> float:
        """The largest drop among the regressed metrics (0.0 if none): how to rank regressions."""
        regressed = set(self.regressed)
        drops = [abs(c.delta) for c in self.changes if c.metric in regressed]
        return max(drops, default=0.0)

    def change(self, metric: str) -> MetricChange:
        for item in self.changes:
            if item.metric == metric:
                return item
        raise KeyError(f"query {self.query_id!r} has no compared metric {metric!r}")


@dataclass(frozen=True, slots=True)
class AggregateChange:
    """A gated metric over the compared queries; statistics are ``None`` when not computed."""

    metric: str
    direction: Direction
    n: int
    baseline_mean: float | None
    candidate_mean: float | None
    delta: float | None
    """Mean of the per-query deltas (each within the noise floor counted as 0)."""
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    gate: AggregateGate | None = None
    gate_passed: bool | None = None


@dataclass(frozen=True, slots=True)
class Comparison:
    """The outcome of :func:`compare`. Queries are sorted by id, aggregates by metric name."""

    passed: bool
    queries: tuple[QueryChange, ...]
    aggregates: tuple[AggregateChange, ...]
    findings: tuple[Finding, ...]
    only_in_baseline: tuple[str, ...]
    only_in_candidate: tuple[str, ...]
    policy: Policy
    seed: int
    baseline_settings: TableSettings = field(default_factory=TableSettings)
    candidate_settings: TableSettings = field(default_factory=TableSettings)

    @property
    def exit_code(self) -> int:
        """0 when the gate passes, 1 when it fails (regression or any other error finding)."""
        return 0 if self.passed else 1

    @property
    def counts(self) -> dict[str, int]:
        """Queries per status, plus flaky regressions, one-sided queries and errors/warnings."""
        statuses = Counter(row.status for row in self.queries)
        severities = Counter(finding.severity for finding in self.findings)
        return {
            "compared": len(self.queries),
            "improved": statuses[ChangeStatus.IMPROVED],
            "unchanged": statuses[ChangeStatus.UNCHANGED],
            "regressed": statuses[ChangeStatus.REGRESSION],
            "flaky_regressed": sum(
                1 for row in self.queries if row.flaky and row.status is ChangeStatus.REGRESSION
            ),
            "only_in_baseline": len(self.only_in_baseline),
            "only_in_candidate": len(self.only_in_candidate),
            "errors": severities["error"],
            "warnings": severities["warning"],
        }

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == "error")

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == "warning")

    def regressions(self, *, include_flaky: bool = True) -> list[QueryChange]:
        """Regressed queries, the largest drop first (ties by query id): the order for reports."""
        rows = [
            row
            for row in self.queries
            if row.status is ChangeStatus.REGRESSION and (include_flaky or not row.flaky)
        ]
        return sorted(rows, key=lambda row: (-row.severity, row.query_id))

    def query(self, query_id: str) -> QueryChange:
        for row in self.queries:
            if row.query_id == query_id:
                return row
        raise KeyError(f"query {query_id!r} was not compared")

    def aggregate(self, metric: str) -> AggregateChange:
        for row in self.aggregates:
            if row.metric == metric:
                return row
        raise KeyError(f"metric {metric!r} has no aggregate row")

    def _repr_html_(self) -> str:
        """Rich notebook display: verdict, aggregates and the per-query delta plot."""
        from spanchor_core.html_report import comparison_summary_html  # lazy: light import

        return comparison_summary_html(self)


# -- statistics -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PairedStatistics:
    """Per-metric bootstrap interval bounds of the mean delta and sign-flip p-values."""

    ci_low: NDArray[np.float64]
    ci_high: NDArray[np.float64]
    p_value: NDArray[np.float64]


def paired_statistics(
    deltas: NDArray[np.float64], *, n_resamples: int, confidence: float, seed: int
) -> PairedStatistics:
    """Bootstrap intervals and sign-flip p-values for each row of ``deltas`` (metrics x queries).

    Columns are paired queries, already in a canonical order. Every row is resampled with the
    same query indices. Vectorised in blocks of about four million draws.
    """
    m, n = deltas.shape
    if n == 0 or n_resamples < 1:
        raise InputError("paired statistics need at least one query and one resample")
    rows = max(1, _CHUNK_ELEMENTS // n)
    constant = np.all(deltas == deltas[:, :1], axis=1)

    boot = np.random.Generator(np.random.PCG64(seed))
    sums = np.zeros((m, n_resamples))
    varying = np.flatnonzero(~constant)
    if varying.size:
        for start in range(0, n_resamples, rows):
            stop = min(n_resamples, start + rows)
            index = boot.integers(0, n, size=(stop - start, n))
            for j in varying:
                sums[j, start:stop] = deltas[j][index].sum(axis=1)
    means = sums / n
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail], axis=1)
    # A constant row resamples to itself: its interval is that value, exactly.
    low[constant] = deltas[constant, 0]
    high[constant] = deltas[constant, 0]

    totals = deltas.sum(axis=1)
    observed = np.abs(totals)
    # Sums of the same numbers in another order differ in the last bits; such ties must count.
    tolerance = 1e-9 * np.abs(deltas).sum(axis=1)
    extreme = np.zeros(m, dtype=np.int64)
    p_value: NDArray[np.float64]
    if 2**n <= n_resamples:
        # Few queries: every sign pattern can be tried, which gives the exact p-value.
        patterns = np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)
        signs = (patterns & 1).astype(np.float64) * 2.0 - 1.0
        extreme += (np.abs(signs @ deltas.T) >= observed - tolerance).sum(axis=0)
        p_value = extreme.astype(np.float64) / 2.0**n
    else:
        flips = np.random.Generator(np.random.PCG64(seed).jumped())
        for start in range(0, n_resamples, rows):
            count = min(n_resamples, start + rows) - start
            raw = flips.bytes((count * n + 7) // 8)
            bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8))[: count * n]
            kept = bits.reshape(count, n).astype(np.float64)
            # sum(s_i d_i) with s_i = 2 b_i - 1 is 2 (b . d) - sum(d): one pass fewer.
            flipped = np.abs(2.0 * (kept @ deltas.T) - totals)
            extreme += (flipped >= observed - tolerance).sum(axis=0)
        p_value = (1.0 + extreme.astype(np.float64)) / (1.0 + n_resamples)
    p_value[np.all(deltas == 0.0, axis=1)] = 1.0
    return PairedStatistics(low, high, p_value)


# -- compare ----------------------------------------------------------------------------------


def _queries_are(count: int) -> str:
    return "query is" if count == 1 else "queries are"


def _listed(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:_LISTED])
    return shown if len(ids) <= _LISTED else f"{shown} and {len(ids) - _LISTED} more"


_NUMBER_TYPES = (int, float, np.integer, np.floating)


def _values(table: MetricTable, side: str, metric: str, ids: Sequence[str]) -> NDArray[np.float64]:
    column = table.metric(metric)
    try:
        raw = [column[qid] for qid in ids]
    except KeyError:
        qid = next(q for q in ids if q not in column)
        raise InputError(f"the {side} has no {metric} value for query {qid!r}") from None
    for kind in {type(value) for value in raw}:
        if kind is bool or not issubclass(kind, _NUMBER_TYPES):
            value = next(v for v in raw if type(v) is kind)
            qid = ids[raw.index(value)]
            raise InputError(f"the {side}'s {metric} for query {qid!r} is not a number: {value!r}")
    out = np.array(raw, dtype=np.float64).reshape(len(ids))
    bad = np.flatnonzero(~np.isfinite(out))
    if bad.size:
        raise InputError(
            f"the {side}'s {metric} for query {ids[bad[0]]!r} is {float(out[bad[0]])!r}"
        )
    return out


def _same_scheme(left: object, right: object) -> bool:
    """Whether two recorded values can be compared at all.

    Unknown values (None) cannot. spanchor 0.x wrote its corpus and gold-set hashes as
    ``"sha256:<hex>"`` over different content than ours (bare hex): a 0.x evaluation and
    one of ours never share a hash even for the same corpus, so only like is compared
    with like.
    """
    if left is None or right is None:
        return False
    if isinstance(left, str) and isinstance(right, str):
        return left.startswith("sha256:") == right.startswith("sha256:")
    return True


def _settings_findings(base: TableSettings, cand: TableSettings) -> list[Finding]:
    findings = []
    checks: tuple[tuple[str, object, object], ...] = (
        ("K", base.k, cand.k),
        ("min_overlap", base.min_overlap, cand.min_overlap),
        ("corpus fingerprint", base.corpus_fingerprint, cand.corpus_fingerprint),
        ("gold-set hash", base.gold_sha256, cand.gold_sha256),
    )
    for label, left, right in checks:
        if _same_scheme(left, right) and left != right:
            findings.append(
                Finding(
                    "error",
                    "settings_mismatch",
                    f"the evaluations differ in {label}: baseline {left!r}, candidate {right!r}; "
                    "their scores are not comparable",
                )
            )
    return findings


def _missing_findings(
    only_base: Sequence[str], only_cand: Sequence[str], policy: Policy
) -> list[Finding]:
    findings = []
    flaky = set(policy.flaky_queries)
    for side, ids in (("baseline", only_base), ("candidate", only_cand)):
        strict = [q for q in ids if q not in flaky]
        lenient = [q for q in ids if q in flaky]
        severity: Severity = "error" if policy.on_missing == "fail" else "warning"
        if strict:
            findings.append(
                Finding(
                    severity,
                    "missing_queries",
                    f"{len(strict)} {_queries_are(len(strict))} only in the {side}: "
                    f"{_listed(strict)}",
                    query_ids=tuple(strict),
                )
            )
        if lenient:
            findings.append(
                Finding(
                    "warning",
                    "missing_queries",
                    f"{len(lenient)} allow-listed flaky {_queries_are(len(lenient))} only in the "
                    f"{side}: {_listed(lenient)}",
                    query_ids=tuple(lenient),
                )
            )
    return findings


def _gate_fails(
    gate: AggregateGate, row: AggregateChange, direction: Direction, noise_floor: float
) -> bool:
    if row.delta is None:
        return True  # nothing was compared: a gate cannot pass on no evidence
    sign = 1.0 if direction == "higher" else -1.0
    improvement = sign * row.delta
    if gate.basis == "mean":
        measured = improvement
    else:
        if row.ci_low is None or row.ci_high is None:
            return True  # no interval, no confidence: a gate that asks for one fails closed
        ends = sorted((sign * row.ci_low, sign * row.ci_high))
        measured = ends[1] if gate.basis == "ci_upper" else ends[0]
    fails = -measured > gate.max_drop + noise_floor
    if gate.alpha is not None:
        fails = fails and row.p_value is not None and row.p_value < gate.alpha
    return fails


def compare(
    baseline: MetricTable,
    candidate: MetricTable,
    policy: Policy | None = None,
    *,
    seed: int | None = None,
) -> Comparison:
    """Compare ``candidate`` with ``baseline`` under ``policy``; see the module docstring.

    Without a policy, :func:`spanchor_core.policy.default_policy` applies (recall at the largest
    common K may not drop). ``seed`` overrides ``policy.bootstrap.seed``.
    """
    findings: list[Finding] = []
    base_settings = TableSettings.of(baseline.settings)
    cand_settings = TableSettings.of(candidate.settings)
    findings.extend(_settings_findings(base_settings, cand_settings))

    base_metrics = set(baseline.metric_names)
    cand_metrics = set(candidate.metric_names)
    if policy is None:
        common_metrics = [name for name in baseline.metric_names if name in cand_metrics]
        try:
            policy = default_policy(common_metrics)
        except InputError as err:
            policy = Policy()
            findings.append(Finding("error", "no_policy", err.message))
    elif not policy.max_drop and not policy.aggregate:
        findings.append(
            Finding("error", "empty_policy", "the policy gates no metric: nothing could fail")
        )
    noise = policy.noise_floor
    chosen_seed = policy.bootstrap.seed if seed is None else seed

    base_ids = list(dict.fromkeys(baseline))
    cand_ids = list(dict.fromkeys(candidate))
    cand_set, base_set = set(cand_ids), set(base_ids)
    common = sorted(base_set & cand_set)
    only_base = sorted(base_set - cand_set)
    only_cand = sorted(cand_set - base_set)
    findings.extend(_missing_findings(only_base, only_cand, policy))
    if len(common) < policy.min_queries:
        findings.append(
            Finding(
                "error",
                "too_few_queries",
                f"{len(common)} {_queries_are(len(common))} in both "
                f"evaluations; the policy needs at least {policy.min_queries}",
            )
        )

    metrics: list[str] = []
    for name in policy.gated_metrics:
        absent = [
            side
            for side, names in (("baseline", base_metrics), ("candidate", cand_metrics))
            if name not in names
        ]
        if absent:
            findings.append(
                Finding(
                    "error",
                    "missing_metric",
                    f"the policy gates {name}, which the {' and the '.join(absent)} "
                    f"do{'es' if len(absent) == 1 else ''} not report",
                    metric=name,
                )
            )
        else:
            metrics.append(name)

    directions = {name: policy.direction(name) for name in metrics}
    deltas = np.zeros((len(metrics), len(common)))
    base_values: list[list[float]] = []
    cand_values: list[list[float]] = []
    base_means: list[float] = []
    cand_means: list[float] = []
    regress = np.zeros((len(metrics), len(common)), dtype=bool)
    improve = np.zeros((len(metrics), len(common)), dtype=bool)
    per_query = np.zeros(len(metrics), dtype=bool)
    for j, name in enumerate(metrics):
        before = _values(baseline, "baseline", name, common)
        after = _values(candidate, "candidate", name, common)
        delta = after - before
        delta[np.abs(delta) <= noise] = 0.0
        deltas[j] = delta
        base_values.append(before.tolist())
        cand_values.append(after.tolist())
        base_means.append(float(before.mean()) if common else math.nan)
        cand_means.append(float(after.mean()) if common else math.nan)
        improvement = delta if directions[name] == "higher" else -delta
        if name in policy.max_drop:
            per_query[j] = True
            regress[j] = -improvement > policy.max_drop[name] + noise
            improve[j] = improvement > 0.0

    flaky = set(policy.flaky_queries)
    rows: list[QueryChange] = []
    delta_lists: list[list[float]] = deltas.tolist()
    regress_lists: list[list[bool]] = regress.tolist()
    improve_lists: list[list[bool]] = improve.tolist()
    any_regress = cast(list[bool], regress.any(axis=0).tolist())
    any_improve = cast(list[bool], improve.any(axis=0).tolist())
    for i, qid in enumerate(common):
        changes = []
        regressed = []
        for j, name in enumerate(metrics):
            status: ChangeStatus | None = None
            if per_query[j]:
                if regress_lists[j][i]:
                    status = ChangeStatus.REGRESSION
                    regressed.append(name)
                elif improve_lists[j][i]:
                    status = ChangeStatus.IMPROVED
                else:
                    status = ChangeStatus.UNCHANGED
            changes.append(
                MetricChange(name, base_values[j][i], cand_values[j][i], delta_lists[j][i], status)
            )
        if any_regress[i]:
            overall = ChangeStatus.REGRESSION
        elif any_improve[i]:
            overall = ChangeStatus.IMPROVED
        else:
            overall = ChangeStatus.UNCHANGED
        rows.append(QueryChange(qid, overall, tuple(changes), tuple(regressed), qid in flaky))

    findings.extend(_regression_findings(rows))

    aggregates = _aggregates(
        metrics, directions, deltas, base_means, cand_means, policy, chosen_seed
    )
    for row in aggregates:
        if row.gate is not None and row.gate_passed is False:
            findings.append(
                Finding(
                    "error",
                    "aggregate_gate",
                    _gate_message(row, row.gate),
                    metric=row.metric,
                )
            )
    return Comparison(
        passed=not any(f.severity == "error" for f in findings),
        queries=tuple(rows),
        aggregates=tuple(aggregates),
        findings=tuple(findings),
        only_in_baseline=tuple(only_base),
        only_in_candidate=tuple(only_cand),
        policy=policy,
        seed=chosen_seed,
        baseline_settings=base_settings,
        candidate_settings=cand_settings,
    )


def _regression_findings(rows: Sequence[QueryChange]) -> list[Finding]:
    findings = []
    for flaky in (False, True):
        hit = sorted(
            (r for r in rows if r.status is ChangeStatus.REGRESSION and r.flaky is flaky),
            key=lambda r: (-r.severity, r.query_id),
        )
        if not hit:
            continue
        per_metric = Counter(name for r in hit for name in r.regressed)
        by_metric = ", ".join(f"{name}: {n}" for name, n in sorted(per_metric.items()))
        ids = [r.query_id for r in hit]
        noun = "query" if len(hit) == 1 else "queries"
        if flaky:
            message = f"{len(hit)} allow-listed flaky {noun} regressed ({by_metric}): "
        else:
            message = f"{len(hit)} {noun} regressed ({by_metric}): "
        findings.append(
            Finding(
                "warning" if flaky else "error",
                "flaky_regression" if flaky else "regression",
                message + _listed(ids),
                query_ids=tuple(ids),
            )
        )
    return findings


def _aggregates(
    metrics: Sequence[str],
    directions: Mapping[str, Direction],
    deltas: NDArray[np.float64],
    base_means: Sequence[float],
    cand_means: Sequence[float],
    policy: Policy,
    seed: int,
) -> list[AggregateChange]:
    n = deltas.shape[1]
    stats: PairedStatistics | None = None
    if n and metrics and policy.bootstrap.n_resamples:
        stats = paired_statistics(
            deltas,
            n_resamples=policy.bootstrap.n_resamples,
            confidence=policy.bootstrap.confidence,
            seed=seed,
        )
    rows = []
    for j, name in enumerate(metrics):
        gate = policy.aggregate.get(name)
        if n == 0:
            rows.append(
                AggregateChange(
                    name, directions[name], 0, None, None, None, gate=gate, gate_passed=None
                )
            )
            continue
        row = AggregateChange(
            name,
            directions[name],
            n,
            base_means[j],
            cand_means[j],
            float(deltas[j].mean()),
            None if stats is None else float(stats.ci_low[j]),
            None if stats is None else float(stats.ci_high[j]),
            None if stats is None else float(stats.p_value[j]),
            gate,
        )
        if gate is not None:
            passed = not _gate_fails(gate, row, directions[name], policy.noise_floor)
            row = dataclasses.replace(row, gate_passed=passed)
        rows.append(row)
    return rows


def _gate_message(row: AggregateChange, gate: AggregateGate) -> str:
    interval = ""
    if row.ci_low is not None and row.ci_high is not None:
        interval = f", CI [{row.ci_low:+.4f}, {row.ci_high:+.4f}]"
    p = "" if row.p_value is None else f", p = {row.p_value:.4g}"
    rule = f"max drop {gate.max_drop:g} on the {gate.basis.replace('_', ' ')}"
    if gate.alpha is not None:
        rule += f" at alpha {gate.alpha:g}"
    change = "was not measured" if row.delta is None else f"changed by {row.delta:+.4f}"
    return f"mean {row.metric} {change}{interval}{p}; the gate allows {rule}"


# -- the comparison file ----------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _SettingsModel(_Model):
    k: list[int] | None
    min_overlap: float | None
    corpus_fingerprint: str | None
    gold_sha256: str | None


class _FindingModel(_Model):
    severity: Severity
    code: str
    message: str
    metric: str | None = None
    query_ids: list[str] = []


class _MetricModel(_Model):
    baseline: float
    candidate: float
    delta: float
    status: ChangeStatus | None


class _QueryModel(_Model):
    query_id: str
    status: ChangeStatus
    flaky: bool
    regressed: list[str]
    metrics: dict[str, _MetricModel]


class _AggregateModel(_Model):
    metric: str
    direction: Direction
    n: int
    baseline_mean: float | None
    candidate_mean: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    gate: AggregateGate | None
    gate_passed: bool | None


class ComparisonFile(_Model):
    """The comparison file: one JSON object, ``kind`` and ``schema_version`` first."""

    kind: Literal["spanchor.comparison"] = COMPARISON_KIND
    schema_version: Literal[1] = COMPARISON_SCHEMA_VERSION
    spanchor_version: str | None
    passed: bool
    exit_code: int
    seed: int
    counts: dict[str, int]
    """Derived from the rest; written for readers of the file."""
    policy: Policy
    baseline: _SettingsModel
    candidate: _SettingsModel
    findings: list[_FindingModel]
    only_in_baseline: list[str]
    only_in_candidate: list[str]
    aggregates: list[_AggregateModel]
    queries: list[_QueryModel]


def comparison_json_schema() -> dict[str, Any]:
    """JSON Schema of the comparison file (``kind: spanchor.comparison``, schema_version 1)."""
    return ComparisonFile.model_json_schema()


def _settings_model(settings: TableSettings) -> _SettingsModel:
    return _SettingsModel(
        k=None if settings.k is None else list(settings.k),
        min_overlap=settings.min_overlap,
        corpus_fingerprint=settings.corpus_fingerprint,
        gold_sha256=settings.gold_sha256,
    )


def _to_file(comparison: Comparison) -> ComparisonFile:
    return ComparisonFile(
        spanchor_version=__version__,
        passed=comparison.passed,
        exit_code=comparison.exit_code,
        seed=comparison.seed,
        counts=comparison.counts,
        policy=comparison.policy,
        baseline=_settings_model(comparison.baseline_settings),
        candidate=_settings_model(comparison.candidate_settings),
        findings=[
            _FindingModel(
                severity=f.severity,
                code=f.code,
                message=f.message,
                metric=f.metric,
                query_ids=list(f.query_ids),
            )
            for f in comparison.findings
        ],
        only_in_baseline=list(comparison.only_in_baseline),
        only_in_candidate=list(comparison.only_in_candidate),
        aggregates=[_AggregateModel(**_aggregate_dict(row)) for row in comparison.aggregates],
        queries=[
            _QueryModel(
                query_id=row.query_id,
                status=row.status,
                flaky=row.flaky,
                regressed=list(row.regressed),
                metrics={
                    c.metric: _MetricModel(
                        baseline=c.baseline, candidate=c.candidate, delta=c.delta, status=c.status
                    )
                    for c in row.changes
                },
            )
            for row in comparison.queries
        ],
    )


def _aggregate_dict(row: AggregateChange) -> dict[str, Any]:
    return {f.name: getattr(row, f.name) for f in dataclasses.fields(row)}


def _from_file(model: ComparisonFile) -> Comparison:
    def settings(s: _SettingsModel) -> TableSettings:
        return TableSettings(
            None if s.k is None else tuple(s.k), s.min_overlap, s.corpus_fingerprint, s.gold_sha256
        )

    return Comparison(
        passed=model.passed,
        queries=tuple(
            QueryChange(
                q.query_id,
                q.status,
                tuple(
                    MetricChange(name, m.baseline, m.candidate, m.delta, m.status)
                    for name, m in q.metrics.items()
                ),
                tuple(q.regressed),
                q.flaky,
            )
            for q in model.queries
        ),
        aggregates=tuple(
            AggregateChange(
                **{f.name: getattr(a, f.name) for f in dataclasses.fields(AggregateChange)}
            )
            for a in model.aggregates
        ),
        findings=tuple(
            Finding(f.severity, f.code, f.message, f.metric, tuple(f.query_ids))
            for f in model.findings
        ),
        only_in_baseline=tuple(model.only_in_baseline),
        only_in_candidate=tuple(model.only_in_candidate),
        policy=model.policy,
        seed=model.seed,
        baseline_settings=settings(model.baseline),
        candidate_settings=settings(model.candidate),
    )


def write_comparison(comparison: Comparison, path: str | os.PathLike[str]) -> None:
    """Write ``comparison`` as JSON, atomically (a temporary file, then a rename).

    The bytes depend only on the comparison: fixed key order, queries sorted by id, floats in
    their shortest round-tripping form, no timestamp.
    """
    target = Path(path)
    text = json.dumps(
        _to_file(comparison).model_dump(mode="json"), indent=2, ensure_ascii=False, allow_nan=False
    )
    atomic_write(target, text + "\n", error=EvaluationFileError, what="the comparison")


def read_comparison(path: str | os.PathLike[str]) -> Comparison:
    """Read a file written by :func:`write_comparison`."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise EvaluationFileError(f"cannot read the comparison: {err}", path=source) from None
    data = loads_strict(text, path=source, error=EvaluationFileError)
    if not isinstance(data, dict) or data.get("kind") != COMPARISON_KIND:
        kind = data.get("kind") if isinstance(data, dict) else None
        raise EvaluationFileError(
            f"not a comparison file (kind {kind!r}, expected {COMPARISON_KIND!r})", path=source
        )
    if data.get("schema_version") != COMPARISON_SCHEMA_VERSION:
        raise EvaluationFileError(
            f"unsupported comparison schema_version {data.get('schema_version')!r}",
            path=source,
            hint=f"this spanchor reads schema_version {COMPARISON_SCHEMA_VERSION}",
        )
    try:
        model = ComparisonFile.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise EvaluationFileError(f"{where}: {first['msg']}", path=source) from None
    return _from_file(model)
