"""The in-memory result of scoring a run: :class:`Evaluation` and the per-query, per-result and
summary values it is made of.

Kept apart from the scoring (:mod:`spanchor_core.evaluate.scoring`) and the file format
(:mod:`spanchor_core.evaluate.file`) so that reports and comparisons depend on the model alone.
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import repeat
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from spanchor_core import _display
from spanchor_core._version import __version__
from spanchor_core.locate import MatchStatus
from spanchor_core.metrics import DEFAULT_K, DEFAULT_MIN_OVERLAP
from spanchor_core.spans import DocSpan

__all__ = [
    "EVALUATION_KIND",
    "EVALUATION_SCHEMA_VERSION",
    "Evaluation",
    "EvaluationSettings",
    "LocatedResult",
    "MappingStats",
    "MetricRow",
    "MetricSummary",
    "ProgressCallback",
    "QueryEvaluation",
    "QueryStatus",
    "QueryTable",
    "TraceSummary",
]

ProgressCallback = Callable[[str, int, int], None]
"""``progress(phase, done, total)``: see :func:`spanchor_core.evaluate.evaluate`."""

EVALUATION_KIND: Final = "spanchor.evaluation"
EVALUATION_SCHEMA_VERSION: Final = 1

_STATUSES: tuple[str, ...] = tuple(status.value for status in MatchStatus)
_FAILED: frozenset[str] = frozenset({MatchStatus.UNMAPPED.value, MatchStatus.INVALID.value})


class QueryStatus(StrEnum):
    """Why a query has the scores it has."""

    SCORED = "scored"
    """Its record was mapped and scored."""
    MISSING_IN_RUN = "missing_in_run"
    """The run has no record for it: scored as an empty retrieval."""
    ERROR = "error"
    """Its record carries an error: scored as an empty retrieval."""


@dataclass(frozen=True, slots=True)
class LocatedResult:
    """Where one retrieved result landed in the corpus (kept so reports can show lost evidence)."""

    rank: int
    status: str
    document_id: str | None
    start: int | None
    end: int | None
    confidence: float
    hint_rejected: bool = False
    resolved_by: str | None = None
    """Which rule chose among several places (``document_id``, ``nearest_hint``, ``gold``,
    ``first``), for ambiguous results."""
    reason: str | None = None
    """Why the result is ambiguous or unmapped, in words."""

    @property
    def span(self) -> DocSpan | None:
        if self.status in _FAILED or self.document_id is None:
            return None
        if self.start is None or self.end is None:
            return None
        return DocSpan(self.document_id, self.start, self.end)


@dataclass(frozen=True, slots=True)
class MappingStats:
    """How the results of a query (or of a whole run) were mapped onto the corpus."""

    counts: Mapping[str, int]
    """Results per :class:`~spanchor_core.locate.MatchStatus` value, every status present."""
    hint_rejected: int = 0
    """Results whose offsets (or document id) did not match their text and were ignored."""

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def unmapped(self) -> int:
        """Results that got no span: ``unmapped`` plus ``invalid``."""
        return sum(self.counts.get(status, 0) for status in _FAILED)

    @property
    def unmapped_rate(self) -> float:
        """``unmapped / total``; 0.0 when nothing was mapped."""
        return self.unmapped / self.total if self.total else 0.0

    @classmethod
    def of(cls, results: Sequence[LocatedResult]) -> MappingStats:
        counts = dict.fromkeys(_STATUSES, 0)
        others: Counter[str] = Counter()
        rejected = 0
        for result in results:  # one pass, no Counter for the known statuses: once per query
            status = result.status
            if status in counts:
                counts[status] += 1
            else:
                others[status] += 1
            if result.hint_rejected:
                rejected += 1
        if others:
            counts.update(sorted(others.items()))
        return cls(counts, rejected)

    @classmethod
    def combine(cls, parts: Sequence[MappingStats]) -> MappingStats:
        counts = dict.fromkeys(_STATUSES, 0)
        for part in parts:
            for status, n in part.counts.items():
                counts[status] = counts.get(status, 0) + n
        return cls(counts, sum(part.hint_rejected for part in parts))


@dataclass(frozen=True, slots=True)
class TraceSummary:
    """One asking of a query, as scored: the records merged into it and where they came from.

    Written to evaluation files for queries with more than one record, so a reader can see what
    was merged (:mod:`spanchor_core.grouping` has the rule). Nothing here depends on line order.
    """

    trace_id: str | None
    records: int
    sources: tuple[str, ...] = ()
    stage: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class QueryEvaluation(Mapping[str, float]):
    """One query's scores, addressable by metric name: ``query_eval["recall@5"]``.

    ``traces`` lists what was scored when the run held several records for the query (empty
    for the ordinary one record); a query asked in several traces has the mean of their scores
    as ``metrics`` and the first trace's ``results``.
    """

    query_id: str
    metrics: Mapping[str, float]
    status: QueryStatus = QueryStatus.SCORED
    gold: tuple[DocSpan, ...] = ()
    results: tuple[LocatedResult, ...] = ()
    mapping: MappingStats = field(default_factory=lambda: MappingStats.of(()))
    error: str | None = None
    traces: tuple[TraceSummary, ...] = ()

    @property
    def repeated(self) -> bool:
        """The question was asked in more than one trace (its scores are their mean)."""
        return len(self.traces) > 1

    @property
    def merged(self) -> bool:
        """Some asking was scored from several records merged into one list."""
        return any(trace.records > 1 for trace in self.traces)

    def __getitem__(self, name: str) -> float:
        try:
            return self.metrics[name]
        except KeyError:
            raise KeyError(
                f"{self.query_id!r} has no metric {name!r}; known: {', '.join(self.metrics)}"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.metrics)

    def __len__(self) -> int:
        return len(self.metrics)


class MetricRow(Mapping[str, float]):
    """One query's metric values as a read-only mapping over a row of a :class:`QueryTable`'s
    matrix: no dict of ~40 floats per query for a file of 100,000 queries."""

    __slots__ = ("_index", "_names", "_row")

    def __init__(
        self, names: tuple[str, ...], index: Mapping[str, int], row: NDArray[np.float64]
    ) -> None:
        self._names = names
        self._index = index
        self._row = row

    def __getitem__(self, name: str) -> float:
        return float(self._row[self._index[name]])

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __repr__(self) -> str:
        return repr(dict(self.items()))


class QueryTable(Mapping[str, QueryEvaluation]):
    """The queries of an evaluation stored by column: the metric values of every query in one
    ``queries x metrics`` float matrix, each :class:`QueryEvaluation` built when it is asked
    for (``build(row)``; never kept), so that comparing two 100,000-query evaluations reads
    columns instead of holding millions of Python objects.

    ``build`` must give the same query each time; ``repeated`` lists the ids of the queries
    asked in more than one trace, ``merged`` those with an asking scored from several records
    merged into one list, each in table order.
    """

    __slots__ = (
        "_build",
        "_ids",
        "_index",
        "_merged",
        "_names",
        "_position",
        "_repeated",
        "_values",
    )

    def __init__(
        self,
        ids: Sequence[str],
        names: tuple[str, ...],
        values: NDArray[np.float64],
        build: Callable[[int], QueryEvaluation],
        repeated: tuple[str, ...] = (),
        merged: tuple[str, ...] = (),
    ) -> None:
        if values.shape != (len(ids), len(names)):
            raise ValueError(f"values of shape {values.shape} for {len(ids)} x {len(names)}")
        self._ids = list(ids)
        self._position = {qid: row for row, qid in enumerate(self._ids)}
        self._names = names
        self._index = {name: column for column, name in enumerate(names)}
        self._values = values
        self._build = build
        self._repeated = repeated
        self._merged = merged

    def __getitem__(self, query_id: str) -> QueryEvaluation:
        return self._build(self._position[query_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, query_id: object) -> bool:
        return query_id in self._position

    @property
    def repeated(self) -> tuple[str, ...]:
        return self._repeated

    @property
    def merged(self) -> tuple[str, ...]:
        return self._merged

    @property
    def builder(self) -> Callable[[int], QueryEvaluation]:
        """The ``build`` given (a writer that knows it writes from its columns instead)."""
        return self._build

    def row(self, row: int) -> MetricRow:
        """The metric values of the query at ``row`` (for ``build``)."""
        return MetricRow(self._names, self._index, self._values[row])

    def column(self, name: str) -> list[float] | None:
        """One metric's values in table order, as Python floats (bit for bit); ``None`` for a
        name the table has no column of."""
        column = self._index.get(name)
        if column is None:
            return None
        return self._values[:, column].tolist()  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class MetricSummary:
    """Macro statistics of one metric over the scored queries (``std``: population, ÷ n)."""

    mean: float
    std: float
    min: float
    max: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> MetricSummary:
        if not values:
            return cls(math.nan, math.nan, math.nan, math.nan, 0)
        n = len(values)
        mean = math.fsum(values) / n
        # (value - mean) ** 2 for each value, the same operations, iterated in C
        squares = map(operator.pow, map(operator.sub, values, repeat(mean)), repeat(2))
        variance = math.fsum(squares) / n
        return cls(mean, math.sqrt(variance), min(values), max(values), n)


@dataclass(frozen=True, slots=True)
class EvaluationSettings:
    """What an evaluation was computed from and with, so two evaluations can be compared."""

    k: tuple[int, ...] = DEFAULT_K
    min_overlap: float = DEFAULT_MIN_OVERLAP
    corpus_fingerprint: str | None = None
    gold_sha256: str | None = None
    gold_path: str | None = None
    run_path: str | None = None
    run_header: Mapping[str, Any] | None = None
    spanchor_version: str | None = __version__
    created_at: str | None = None
    source_format: str = f"{EVALUATION_KIND}/{EVALUATION_SCHEMA_VERSION}"
    """The file format this evaluation came from (``spanchor-0.x/<schema>`` for old files)."""
    group: str = "auto"
    """The rule that turned several records of a query into what was scored
    (:func:`spanchor_core.grouping.parse_group_rule`)."""


@dataclass(frozen=True, slots=True, eq=False)
class Evaluation(Mapping[str, QueryEvaluation]):
    """Per-query scores of one run against one gold set, plus everything needed to trust them.

    A mapping from query id (gold order) to :class:`QueryEvaluation`, so
    ``evaluation["q1"]["recall@5"]`` reads one value; :meth:`metric` reads a metric for every
    query and :meth:`aggregate` summarises it.
    """

    queries: Mapping[str, QueryEvaluation]
    settings: EvaluationSettings
    metric_names: tuple[str, ...]
    missing_in_run: tuple[str, ...] = ()
    emptied: tuple[str, ...] = ()
    """Recorded queries whose every record the grouping rule (``settings.group``) left out
    (``--group source:NAME`` naming a retriever some questions never used): scored as an empty
    retrieval, as a missing query is, and untrusted alike by a comparison. Known for
    evaluations scored in this process; not written to evaluation files (``spanchor evaluate``
    scores with the ``auto`` rule, which never leaves a query empty)."""
    not_in_gold: tuple[str, ...] = ()
    unresolved: tuple[str, ...] = ()
    """Query texts of run records whose id could not be resolved against the gold set."""
    duplicates: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    skipped: Mapping[str, str] = field(default_factory=dict)
    """Gold queries that could not be scored, with the reason."""
    mapping: MappingStats = field(default_factory=lambda: MappingStats.of(()))
    """Mapping statistics over every scored query."""
    warnings: tuple[str, ...] = ()
    records: int | None = None
    """Records the run held (None when unknown, as for spanchor 0.x evaluation files)."""
    stages: Mapping[str, int] | None = None
    """How many scored askings were scored at each recording stage (``retrieval``,
    ``postprocessed``, ``context``; a record without a stage is a retrieval), stage names in
    order. A comparison refuses to trust two sides scored at different stages: a baseline
    recorded after a reranker and a candidate recorded before it measure different steps of
    the app (:mod:`spanchor_core.compare.trust`). None when unknown (older files, 0.x)."""
    divergent: tuple[str, ...] | None = None
    """The repeated queries (asked in several traces) whose askings did not all score the same,
    in gold order: their mean is a mean of different retrievals. A comparison against a side
    that asked them once cannot trust it (a second recording appended to a run file looks like
    this); askings that agree are a deterministic retriever asked again. None when unknown
    (older files, evaluations built from :class:`QueryEvaluation` objects)."""
    _aggregates: dict[str, MetricSummary] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    """:meth:`aggregates` once computed: the terminal table, the report and the writer each
    ask for them, and at 10,000 queries one computation costs 0.25-0.35 s."""

    @property
    def repeated(self) -> tuple[str, ...]:
        """Queries asked in more than one trace, in gold order."""
        if isinstance(self.queries, QueryTable):
            return self.queries.repeated
        return tuple(qid for qid, query in self.queries.items() if query.repeated)

    @property
    def merged(self) -> tuple[str, ...]:
        """Queries with an asking scored from several records merged into one list (a hybrid,
        several tool calls: :mod:`spanchor_core.grouping`), in gold order."""
        if isinstance(self.queries, QueryTable):
            return self.queries.merged
        return tuple(qid for qid, query in self.queries.items() if query.merged)

    @property
    def covered(self) -> int:
        """Gold queries (scored ones) that the run holds a record for."""
        return len(self.queries) - len(self.missing_in_run)

    @property
    def coverage(self) -> float:
        """``covered / queries``: the share of the gold set the run answered (1.0 when empty)."""
        return self.covered / len(self.queries) if self.queries else 1.0

    def __getitem__(self, query_id: str) -> QueryEvaluation:
        try:
            return self.queries[query_id]
        except KeyError:
            reason = self.skipped.get(query_id)
            detail = f" (skipped: {reason})" if reason else ""
            raise KeyError(f"no scored query {query_id!r}{detail}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.queries)

    def __len__(self) -> int:
        return len(self.queries)

    def __repr__(self) -> str:
        return f"Evaluation({len(self)} queries, k={list(self.settings.k)})"

    def _repr_html_(self) -> str | None:
        """Rich notebook display: headline means by K, a recall-vs-K curve, mapping health
        (registered by :mod:`spanchor_core.render.html`)."""
        return _display.html_for(self)

    @property
    def has_result_spans(self) -> bool:
        """False for evaluations read from spanchor 0.x files, which stored no result spans."""
        return self.settings.source_format.startswith(EVALUATION_KIND)

    def _check_name(self, name: str) -> None:
        if name not in self.metric_names:
            raise KeyError(f"unknown metric {name!r}; known: {', '.join(self.metric_names)}")

    def metric(self, name: str) -> dict[str, float]:
        """``{query_id: value}`` of one metric, in gold order."""
        self._check_name(name)
        column = self.queries.column(name) if isinstance(self.queries, QueryTable) else None
        if column is not None:
            return dict(zip(self.queries, column, strict=True))
        return {qid: query.metrics[name] for qid, query in self.queries.items()}

    def aggregate(self, name: str) -> MetricSummary:
        """Mean, population std, min, max and n of one metric over the scored queries."""
        self._check_name(name)
        if self._aggregates is not None:
            return self._aggregates[name]
        column = self.queries.column(name) if isinstance(self.queries, QueryTable) else None
        if column is not None:
            return MetricSummary.of(column)
        return MetricSummary.of([query.metrics[name] for query in self.queries.values()])

    def mean(self, name: str) -> float:
        return self.aggregate(name).mean

    def aggregates(self) -> dict[str, MetricSummary]:
        """:meth:`aggregate` for every metric, in metric order (computed once per evaluation).

        Queries held as a dictionary are read in one pass (``tuple(metrics.values())`` per
        query rather than a look-up per query and metric); the same :meth:`MetricSummary.of`
        of the same values in the same order, so the same numbers.
        """
        if self._aggregates is None:
            object.__setattr__(self, "_aggregates", self._summarise())
        assert self._aggregates is not None
        return dict(self._aggregates)

    def _summarise(self) -> dict[str, MetricSummary]:
        names = self.metric_names
        if not names or not self.queries or isinstance(self.queries, QueryTable):
            return {name: self.aggregate(name) for name in names}
        rows = []
        for query in self.queries.values():
            metrics = query.metrics
            if tuple(metrics) != names:  # not in metric order: one metric at a time
                return {name: self.aggregate(name) for name in names}
            rows.append(tuple(metrics.values()))
        return {
            name: MetricSummary.of(column)
            for name, column in zip(names, zip(*rows, strict=True), strict=True)
        }
