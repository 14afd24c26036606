"""Classifying a candidate against its baseline under a :class:`~spanchor_core.policy.Policy`.

:func:`compare` returns a :class:`~spanchor_core.compare.model.Comparison`: a verdict and exit
code, one row per query, aggregate rows with confidence intervals and p-values, and findings. A
failed gate is a result (``exit_code == ExitCode.REGRESSION``), never an exception; only
unusable input (a non-finite or missing metric value) raises
:class:`~spanchor_core.errors.InputError`.

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
* **Several baselines.** Given a :class:`~spanchor_core.compare.noise.RepeatedBaseline`, a
  query's delta is measured from the nearest edge of its band ``[min, max]`` over the
  baselines (0 inside), the shown baseline value and the aggregates use the per-query mean,
  each baseline is checked for trust on its own, and ``Comparison.noise`` lists the flaky
  queries (:mod:`spanchor_core.compare.noise`).
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
* **Trust.** Each side that knows its coverage (an :class:`~spanchor_core.evaluate.Evaluation`)
  is checked first: missing gold queries and, when a limit is given, the unmapped rate
  (:mod:`spanchor_core.compare.trust`).
* **Verdict.** ``passed`` is true when no finding is an error. ``exit_code`` follows the one
  precedence (:func:`~spanchor_core.exit_codes.combine_exit_codes`): an invalid comparison
  (different settings, documents or gold sets; a gated metric missing; no usable policy) is 2,
  an untrusted side is 3, any other error finding (a regression, too few queries, an aggregate
  gate) is 1, else 0. ``verdict`` is the word every report prints for it.
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import math
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from spanchor_core._fill import fill, slot_setters
from spanchor_core.compare.model import (
    AggregateChange,
    ChangeStatus,
    Comparison,
    Coverage,
    Finding,
    MetricChange,
    MetricTable,
    QueryChange,
    Severity,
    TableSettings,
)
from spanchor_core.compare.noise import RepeatedBaseline
from spanchor_core.compare.same_recording import recording_findings
from spanchor_core.compare.statistics import PairedStatistics, paired_statistics
from spanchor_core.compare.trust import (
    coverage_of,
    merge_findings,
    repeat_findings,
    stage_findings,
    trust_findings,
)
from spanchor_core.errors import InputError
from spanchor_core.policy import AggregateGate, Direction, Policy, default_policy

__all__ = ["compare"]

_LISTED = 10
"""How many query ids a finding's message names before it says "and N more"."""


def _queries_are(count: int) -> str:
    return "query is" if count == 1 else "queries are"


def _listed(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:_LISTED])
    return shown if len(ids) <= _LISTED else f"{shown} and {len(ids) - _LISTED} more"


_NUMBER_TYPES = (int, float, np.integer, np.floating)
_FLOAT_ONLY = {float}


def _values(table: MetricTable, side: str, metric: str, ids: Sequence[str]) -> NDArray[np.float64]:
    column = table.metric(metric)
    try:
        raw = list(map(column.__getitem__, ids))
    except KeyError:
        qid = next(q for q in ids if q not in column)
        raise InputError(f"the {side} has no {metric} value for query {qid!r}") from None
    kinds = set(map(type, raw))
    if kinds == _FLOAT_ONLY:  # the usual case: no per-value checks but finiteness
        out = np.fromiter(raw, dtype=np.float64, count=len(raw))
        bad = np.flatnonzero(~np.isfinite(out))
        if bad.size:
            raise InputError(
                f"the {side}'s {metric} for query {ids[bad[0]]!r} is {float(out[bad[0]])!r}"
            )
        return out
    for kind in kinds:
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


def _group_findings(baseline: object, candidate: object) -> list[Finding]:
    """A ``settings_mismatch`` when the two evaluations were scored under different grouping
    rules (``--group``) and either holds a query with several records, the only queries a rule
    changes; plain tables and older files (no rule recorded) are not checked."""
    rules = [getattr(getattr(t, "settings", None), "group", None) for t in (baseline, candidate)]
    if None in rules or rules[0] == rules[1]:
        return []
    merged = 0
    for table in (baseline, candidate):
        queries = getattr(table, "queries", None)
        if isinstance(queries, Mapping):
            merged += sum(1 for query in queries.values() if getattr(query, "traces", ()))
    if not merged:
        return []
    return [
        Finding(
            "error",
            "settings_mismatch",
            f"the evaluations differ in grouping rule: baseline {rules[0]!r}, candidate "
            f"{rules[1]!r}, and {merged} scored {'query holds' if merged == 1 else 'queries hold'} "
            "several records; their scores are not comparable (score both with one --group)",
        )
    ]


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
    max_unmapped_rate: float | None = None,
) -> Comparison:
    """Compare ``candidate`` with ``baseline`` under ``policy``; see the module docstring.

    Without a policy, :func:`spanchor_core.policy.default_policy` applies (recall at the largest
    common K may not drop). ``seed`` overrides ``policy.bootstrap.seed`` and, like it, must be a
    whole number of at least 0 (:class:`InputError` otherwise). Both sides are checked for
    completeness, and for their unmapped rate when ``max_unmapped_rate`` is given
    (:mod:`spanchor_core.compare.trust`): an untrusted side makes the exit code 3.
    """
    collecting = gc.isenabled()
    gc.disable()  # one or more rows per query, none cyclic: no collection passes over them
    try:
        return _compare(baseline, candidate, policy, seed=seed, max_unmapped_rate=max_unmapped_rate)
    finally:
        if collecting:
            gc.enable()


def _compare(
    baseline: MetricTable,
    candidate: MetricTable,
    policy: Policy | None,
    *,
    seed: int | None,
    max_unmapped_rate: float | None,
) -> Comparison:
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise InputError(
            f"the bootstrap seed must be a whole number of at least 0, got {seed!r}",
            hint="use 0 or another non-negative integer",
        )
    findings: list[Finding] = []
    base_settings = TableSettings.of(baseline.settings)
    cand_settings = TableSettings.of(candidate.settings)
    findings.extend(_settings_findings(base_settings, cand_settings))
    findings.extend(_group_findings(baseline, candidate))

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
    repeated = baseline if isinstance(baseline, RepeatedBaseline) else None
    if repeated is None:
        findings.extend(trust_findings("baseline", baseline, policy, max_unmapped_rate))
    else:  # each repeat is checked on its own, named by its label (its file)
        for label, member in repeated.members:
            findings.extend(trust_findings(f"baseline {label}", member, policy, max_unmapped_rate))
    findings.extend(trust_findings("candidate", candidate, policy, max_unmapped_rate))
    sides = (
        [("baseline", baseline)]
        if repeated is None
        else [(f"baseline {label}", member) for label, member in repeated.members]
    )
    findings.extend(stage_findings(sides, candidate))
    findings.extend(repeat_findings(sides, candidate))
    findings.extend(merge_findings(sides, candidate))
    findings.extend(recording_findings(sides, candidate))
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
    query_deltas = deltas if repeated is None else np.zeros((len(metrics), len(common)))
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
        if repeated is not None:  # per query: from the nearest edge of the baselines' band
            low, high = repeated.band(name, common)
            delta = after - np.clip(after, low, high)
            delta[np.abs(delta) <= noise] = 0.0
            query_deltas[j] = delta
        improvement = delta if directions[name] == "higher" else -delta
        if name in policy.max_drop:
            per_query[j] = True
            regress[j] = -improvement > policy.max_drop[name] + noise
            improve[j] = improvement > 0.0

    rows = _rows(
        common,
        metrics,
        base_values,
        cand_values,
        query_deltas,
        regress,
        improve,
        per_query,
        set(policy.flaky_queries),
    )

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
        baseline_coverage=_baseline_coverage(baseline),
        candidate_coverage=coverage_of(candidate),
        noise=None if repeated is None else repeated.summary(metrics, common, noise),
    )


_STATUS_OF = (ChangeStatus.UNCHANGED, ChangeStatus.IMPROVED, ChangeStatus.REGRESSION)
# A row per compared query and metric: filled through the slots' setters (a frozen
# dataclass's __init__ is about 3 us an object, seconds at 100,000 queries).
_METRIC_CHANGE_SETTERS = slot_setters(
    MetricChange, ("metric", "baseline", "candidate", "delta", "status")
)
_QUERY_CHANGE_SETTERS = slot_setters(
    QueryChange, ("query_id", "status", "changes", "regressed", "flaky")
)


def _rows(
    common: Sequence[str],
    metrics: Sequence[str],
    base_values: Sequence[list[float]],
    cand_values: Sequence[list[float]],
    deltas: NDArray[np.float64],
    regress: NDArray[np.bool_],
    improve: NDArray[np.bool_],
    per_query: NDArray[np.bool_],
    flaky: set[str],
) -> list[QueryChange]:
    """One :class:`QueryChange` per compared query, built column by column (a Python loop
    per query and metric costs seconds at 100,000 queries).

    A metric gated per query has a status (REGRESSION over IMPROVED over UNCHANGED), the
    others ``None``; a query's status is REGRESSION if any metric regressed, else IMPROVED if
    any improved; ``regressed`` names the regressed metrics in metric order.
    """
    n = len(common)
    codes = np.where(regress, 2, np.where(improve, 1, 0))
    columns = []
    for j, name in enumerate(metrics):
        statuses = (
            list(map(_STATUS_OF.__getitem__, codes[j].tolist()))
            if per_query[j]
            else itertools.repeat(None, n)
        )
        columns.append(
            fill(
                MetricChange,
                _METRIC_CHANGE_SETTERS,
                (
                    itertools.repeat(name, n),
                    base_values[j],
                    cand_values[j],
                    deltas[j].tolist(),
                    statuses,
                ),
                n,
            )
        )
    changes = list(zip(*columns, strict=True)) if metrics else [()] * n
    overall = codes.max(axis=0) if metrics else np.zeros(n, dtype=np.int64)
    regressed: list[tuple[str, ...]] = [()] * n
    for i in np.flatnonzero(regress.any(axis=0)).tolist():
        regressed[i] = tuple(name for j, name in enumerate(metrics) if regress[j, i])
    return fill(
        QueryChange,
        _QUERY_CHANGE_SETTERS,
        (
            common,
            map(_STATUS_OF.__getitem__, overall.tolist()),
            changes,
            regressed,
            [qid in flaky for qid in common] if flaky else itertools.repeat(False, n),
        ),
        n,
    )


def _baseline_coverage(baseline: MetricTable) -> Coverage | None:
    """The baseline's coverage; of several baselines, the least complete (the strictest)."""
    if not isinstance(baseline, RepeatedBaseline):
        return coverage_of(baseline)
    known = [c for _, m in baseline.members if (c := coverage_of(m)) is not None]
    return min(known, key=lambda c: (c.rate, c.covered), default=None)


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
