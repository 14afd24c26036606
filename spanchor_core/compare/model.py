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
from typing import Literal, Protocol

from spanchor_core import _display
from spanchor_core.exit_codes import ExitCode
from spanchor_core.policy import AggregateGate, Direction, Policy

__all__ = [
    "AggregateChange",
    "ChangeStatus",
    "Comparison",
    "Finding",
    "MappingMetricTable",
    "MetricChange",
    "MetricTable",
    "MetricTableSettings",
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
    def exit_code(self) -> ExitCode:
        """:attr:`ExitCode.PASS` (0) when the gate passes, :attr:`ExitCode.REGRESSION` (1) when
        it fails (a regression or any other error finding): the numbers ``spanchor gate`` uses."""
        return ExitCode.PASS if self.passed else ExitCode.REGRESSION

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
