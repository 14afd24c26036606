"""What a comparison reads and what it returns: the metric-table protocols and the result types.

:class:`MetricTable` is all :func:`~spanchor_core.compare.compare` needs from an evaluation;
:class:`Comparison` (with its :class:`QueryChange`, :class:`AggregateChange` and
:class:`Finding` rows) is its result. Plain frozen data: no logic beyond lookups and counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Literal, Protocol

from spanchor_core import _display
from spanchor_core.exit_codes import ExitCode, combine_exit_codes
from spanchor_core.policy import AggregateGate, Direction, Policy

if TYPE_CHECKING:  # the diagnosis is computed above this layer and attached afterwards
    from spanchor_core.diagnosis.model import RegressionDiagnosis

__all__ = [
    "AggregateChange",
    "ChangeStatus",
    "Comparison",
    "Finding",
    "FlakyQuery",
    "MappingMetricTable",
    "MetricChange",
    "MetricTable",
    "MetricTableSettings",
    "NoiseSummary",
    "QueryChange",
    "Severity",
    "TableSettings",
]


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
    """``candidate - baseline``, or 0.0 when within the noise floor. With several baselines
    (:mod:`.noise`), ``baseline`` is the per-query mean and ``delta`` is measured from the
    nearest edge of the baselines' band (0.0 inside it)."""
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
        regressed = self.regressed
        if not regressed:
            return 0.0
        changes = self.changes
        if len(changes) == 1:  # one gated metric, the usual case: no list to build
            (change,) = changes
            return abs(change.delta) if change.metric in regressed else 0.0
        return max([abs(c.delta) for c in changes if c.metric in regressed], default=0.0)

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


BAD_INPUT_FINDINGS = frozenset({"settings_mismatch", "missing_metric", "no_policy", "empty_policy"})
"""Error findings that mean the comparison itself is invalid (exit 2), not that a run failed."""

UNTRUSTED_FINDINGS = frozenset(
    {
        "incomplete_run",
        "unmapped_rate",
        "no_results",
        "failed_retrievals",
        "stage_mismatch",
        "unmatched_repeats",
        "unmatched_askings",
        "same_recording",
        "group_emptied",
    }
)
"""Error findings that mean a side cannot be trusted (exit 3): see :mod:`.trust`."""

_VERDICTS = {
    ExitCode.PASS: "PASS",
    ExitCode.REGRESSION: "FAIL",
    ExitCode.BAD_INPUT: "INVALID",
    ExitCode.UNTRUSTED: "UNTRUSTED",
}


@dataclass(frozen=True, slots=True)
class Coverage:
    """How much of the gold set one side answered: ``covered`` of ``total`` queries."""

    covered: int
    total: int
    records: int | None = None
    unmapped_rate: float | None = None

    @property
    def rate(self) -> float:
        return self.covered / self.total if self.total else 1.0

    def __str__(self) -> str:
        text = f"{self.covered}/{self.total} gold queries recorded ({self.rate:.0%})"
        if self.records is not None:
            text += f", {self.records} record{'s' if self.records != 1 else ''}"
        return text


@dataclass(frozen=True, slots=True)
class FlakyQuery:
    """A query whose value of some gated metric differs between repeated baselines.

    ``bands`` holds ``(metric, low, high)`` for each gated metric that differs, by name.
    """

    query_id: str
    bands: tuple[tuple[str, float, float], ...]


@dataclass(frozen=True, slots=True)
class NoiseSummary:
    """What several baselines of one configuration say about the noise (:mod:`.noise`).

    ``mean_spread`` is, per gated metric, the largest minus the smallest of the baselines'
    means over the compared queries: how far the aggregate moves between identical runs.
    """

    baselines: int
    flaky: tuple[FlakyQuery, ...] = ()
    mean_spread: tuple[tuple[str, float], ...] = ()

    @property
    def flaky_ids(self) -> tuple[str, ...]:
        return tuple(row.query_id for row in self.flaky)


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
    baseline_coverage: Coverage | None = None
    candidate_coverage: Coverage | None = None
    noise: NoiseSummary | None = None
    """Set when the baseline was several repeated runs (:mod:`.noise`)."""
    diagnosis: RegressionDiagnosis | None = None
    """Why each regressed query regressed, when attached by
    :func:`spanchor_core.diagnosis.with_diagnosis` (the gate does); ``None`` otherwise."""

    @property
    def exit_code(self) -> ExitCode:
        """The CI verdict: 2 invalid comparison > 3 untrusted side > 1 failed gate > 0 pass."""
        codes = [ExitCode.PASS]
        for finding in self.errors:
            if finding.code in BAD_INPUT_FINDINGS:
                codes.append(ExitCode.BAD_INPUT)
            elif finding.code in UNTRUSTED_FINDINGS:
                codes.append(ExitCode.UNTRUSTED)
            else:
                codes.append(ExitCode.REGRESSION)
        return combine_exit_codes(*codes)

    @property
    def verdict(self) -> str:
        """The word every report prints, always in step with :attr:`exit_code`:
        ``PASS`` (0), ``FAIL`` (1), ``INVALID`` (2) or ``UNTRUSTED`` (3)."""
        return _VERDICTS[self.exit_code]

    @property
    def untrusted(self) -> tuple[Finding, ...]:
        """The error findings that make a side untrusted (the reason for exit code 3)."""
        return tuple(f for f in self.errors if f.code in UNTRUSTED_FINDINGS)

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

    def _repr_html_(self) -> str | None:
        """Rich notebook display: verdict, aggregates and the per-query delta plot
        (registered by :mod:`spanchor_core.render.html`)."""
        return _display.html_for(self)
