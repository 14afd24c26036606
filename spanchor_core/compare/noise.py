"""Several baseline runs of one configuration: the noise band of each query, and flaky queries.

Retrieval is often not repeatable (approximate-nearest-neighbour ties, non-deterministic
batching): two identical runs can give a query different scores. One baseline cannot tell that
noise from a regression; several can. :func:`repeated_baseline` turns N baselines (the same
gold set, documents, K and ``min_overlap``) into one :class:`RepeatedBaseline`, which
:func:`~spanchor_core.compare.compare` takes where it takes a baseline.

The rules:

* **Band.** Per query and metric, the band is ``[min, max]`` over the baselines that hold the
  query. A query whose band is wider than the policy's noise floor on some gated metric is
  **flaky** (:class:`~spanchor_core.compare.model.NoiseSummary`).
* **Classification.** A candidate value inside the band, widened by the policy's tolerance
  (``max_drop + noise_floor`` on the losing side, ``noise_floor`` on the winning side), is not
  a regression. Outside it, the delta is measured from the nearest band edge: with ``v`` the
  candidate value, ``delta = v - clip(v, min, max)`` — 0 inside the band, the distance to the
  edge it crossed outside — and that delta is classified exactly as with one baseline. So a
  query that scored 0.5 and 1.0 in two baselines regresses on a 0.4 only when ``max_drop`` is
  below 0.1, whereas against the 1.0 run alone it would have lost 0.6.
* **Reference value.** The per-query **mean** of the baselines is the baseline value a
  comparison shows (``MetricChange.baseline``) and the one the aggregate rows and the paired
  statistics use (``delta = candidate - mean``). The mean, not the median baseline, because it
  is the estimate of the expected baseline score with the smallest variance, it needs no choice
  of "which run" (the median of an even N is not a run either), and the aggregate baseline mean
  is then exactly the mean of the N runs' means. The bootstrap interval and the sign-flip test
  therefore ask whether the candidate differs from the *average* baseline, which is what a
  mean gate is about; the band, not the statistics, is what absorbs per-query noise.
* **Order.** Nothing depends on the order in which the baselines are given: members are sorted
  by their label (a file path in the pipeline), and per-query values are sorted before they are
  summed, so the mean is the same float in any order.

Pure logic over :class:`~spanchor_core.compare.model.MetricTable` objects; no file I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
from numpy.typing import NDArray

from spanchor_core.compare.model import (
    FlakyQuery,
    MetricTable,
    NoiseSummary,
    TableSettings,
)
from spanchor_core.errors import InputError

__all__ = [
    "MetricNoise",
    "NoiseReport",
    "RepeatedBaseline",
    "measure_noise",
    "repeated_baseline",
]


def _known_differs(left: object, right: object) -> bool:
    """Two recorded identity values that are both known, of one scheme, and not equal."""
    if left is None or right is None:
        return False
    if (
        isinstance(left, str)
        and isinstance(right, str)
        and left.startswith("sha256:") != right.startswith("sha256:")
    ):
        return False  # a 0.x hash and one of ours never match even for the same data
    return left != right


@dataclass(frozen=True, slots=True)
class RepeatedBaseline:
    """N baselines of one configuration as one :class:`MetricTable` (see the module doc).

    Iterating yields every query id any baseline holds (sorted); :meth:`metric` gives the
    per-query mean; :meth:`band` the per-query ``(min, max)``. ``members`` are the baselines
    with their labels, sorted by label.
    """

    members: tuple[tuple[str, MetricTable], ...]
    settings: TableSettings
    metric_names: tuple[str, ...]
    ids: tuple[str, ...]
    _index: Mapping[str, int]
    _mean: Mapping[str, NDArray[np.float64]]
    _low: Mapping[str, NDArray[np.float64]]
    _high: Mapping[str, NDArray[np.float64]]

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def size(self) -> int:
        """How many baselines."""
        return len(self.members)

    def metric(self, name: str) -> dict[str, float]:
        """``{query_id: mean over the baselines that hold it}``."""
        return dict(zip(self.ids, self._mean[name].tolist(), strict=True))

    def band(
        self, name: str, ids: Sequence[str]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The lowest and highest baseline value of ``name`` for each of ``ids``."""
        rows = np.fromiter((self._index[q] for q in ids), dtype=np.int64, count=len(ids))
        return self._low[name][rows], self._high[name][rows]

    def member_means(self, name: str, ids: Sequence[str]) -> list[float]:
        """Each baseline's mean of ``name`` over those of ``ids`` it holds (label order)."""
        means = []
        for _, table in self.members:
            column = table.metric(name)
            values = sorted(column[q] for q in ids if q in column)
            means.append(float(np.mean(values)) if values else float("nan"))
        return means

    def summary(self, metrics: Sequence[str], ids: Sequence[str], floor: float) -> NoiseSummary:
        """Flaky queries among ``ids`` (on any of ``metrics``) and each metric's mean spread."""
        flaky: dict[str, list[tuple[str, float, float]]] = {}
        spreads = []
        for name in sorted(metrics):
            low, high = self.band(name, ids)
            for i in np.flatnonzero(high - low > floor).tolist():
                flaky.setdefault(ids[i], []).append((name, float(low[i]), float(high[i])))
            means = [m for m in self.member_means(name, ids) if m == m]
            spreads.append((name, max(means) - min(means) if means else 0.0))
        rows = tuple(FlakyQuery(qid, tuple(flaky[qid])) for qid in sorted(flaky))
        return NoiseSummary(self.size, rows, tuple(spreads))


def repeated_baseline(
    baselines: Sequence[MetricTable] | Sequence[tuple[str, MetricTable]],
) -> RepeatedBaseline:
    """Combine baselines of one configuration; see the module docstring.

    Give ``(label, table)`` pairs (labels are file paths in the pipeline) so that errors name
    the file and the result does not depend on the order; bare tables are labelled
    ``baseline 1``, ``baseline 2``, ... in the given order. Baselines that differ in K,
    ``min_overlap``, corpus fingerprint or gold-set hash (where both know it) are an
    :class:`InputError` naming the odd one out: their scores do not measure the same thing.
    Metrics are those every baseline reports.
    """
    pairs: list[tuple[str, MetricTable]] = []
    for number, item in enumerate(baselines, start=1):
        if isinstance(item, tuple):
            label, table = cast("tuple[str, MetricTable]", item)
            pairs.append((str(label), table))
        else:
            pairs.append((f"baseline {number}", cast("MetricTable", item)))
    if not pairs:
        raise InputError("no baseline was given", hint="give at least one baseline")
    pairs.sort(key=lambda pair: pair[0])
    labels = [label for label, _ in pairs]
    for label in labels:
        if labels.count(label) > 1:
            raise InputError("is given more than once as a baseline", path=label)
    first_label, first = pairs[0]
    reference = TableSettings.of(first.settings)
    for label, table in pairs[1:]:
        settings = TableSettings.of(table.settings)
        for what, left, right in (
            ("gold-set hash", reference.gold_sha256, settings.gold_sha256),
            ("corpus fingerprint", reference.corpus_fingerprint, settings.corpus_fingerprint),
            ("K", reference.k, settings.k),
            ("min_overlap", reference.min_overlap, settings.min_overlap),
        ):
            if _known_differs(left, right):
                raise InputError(
                    f"this baseline's {what} is {right!r}, but {first_label}'s is {left!r}",
                    path=label,
                    hint="repeated baselines must be runs of the same gold set and documents, "
                    "scored with the same settings",
                )
    names = [n for n in first.metric_names if all(n in t.metric_names for _, t in pairs[1:])]
    ids = sorted({qid for _, table in pairs for qid in table})
    index = {qid: i for i, qid in enumerate(ids)}
    mean: dict[str, NDArray[np.float64]] = {}
    low: dict[str, NDArray[np.float64]] = {}
    high: dict[str, NDArray[np.float64]] = {}
    for name in names:
        grid = np.full((len(pairs), len(ids)), np.nan)
        for row, (label, table) in enumerate(pairs):
            column = table.metric(name)
            positions = np.fromiter((index[q] for q in column), dtype=np.int64, count=len(column))
            values = np.fromiter(column.values(), dtype=np.float64, count=len(column))
            if not np.all(np.isfinite(values)):
                qid = list(column)[int(np.flatnonzero(~np.isfinite(values))[0])]
                raise InputError(f"{name} of query {qid!r} is not a finite number", path=label)
            grid[row, positions] = values
        ordered = np.sort(grid, axis=0)  # NaN (absent) last; sorted values sum the same always
        counts = np.sum(~np.isnan(ordered), axis=0)
        mean[name] = np.nansum(ordered, axis=0) / np.maximum(counts, 1)
        low[name] = np.nanmin(grid, axis=0) if len(ids) else np.zeros(0)
        high[name] = np.nanmax(grid, axis=0) if len(ids) else np.zeros(0)
    return RepeatedBaseline(
        tuple(pairs), reference, tuple(names), tuple(ids), index, mean, low, high
    )


@dataclass(frozen=True, slots=True)
class MetricNoise:
    """The noise of one metric across repeated baselines.

    ``flaky`` are the queries whose value differs (by more than the floor), ``max_spread`` the
    widest per-query band, ``mean_spread`` the largest minus the smallest baseline mean over
    the queries every baseline holds.
    """

    metric: str
    flaky: tuple[str, ...]
    max_spread: float
    mean_spread: float


@dataclass(frozen=True, slots=True)
class NoiseReport:
    """:func:`measure_noise`'s result: per-metric noise over the queries all baselines hold."""

    baselines: tuple[str, ...]
    queries: int
    metrics: tuple[MetricNoise, ...]

    def flaky_queries(self, metrics: Sequence[str] | None = None) -> tuple[str, ...]:
        """Queries flaky on any of ``metrics`` (default: every metric), sorted."""
        chosen = None if metrics is None else set(metrics)
        found = {
            qid
            for row in self.metrics
            if chosen is None or row.metric in chosen
            for qid in row.flaky
        }
        return tuple(sorted(found))

    def noise_floor(self, metrics: Sequence[str] | None = None) -> float:
        """The largest mean spread among ``metrics`` (default: every metric); 0.0 if none."""
        chosen = None if metrics is None else set(metrics)
        return max(
            (row.mean_spread for row in self.metrics if chosen is None or row.metric in chosen),
            default=0.0,
        )


def measure_noise(
    baselines: Sequence[MetricTable] | Sequence[tuple[str, MetricTable]], *, floor: float = 1e-9
) -> NoiseReport:
    """How much N repeats of one configuration disagree, metric by metric.

    Only queries every baseline holds count (a query missing from one run says nothing about
    its noise). At least two baselines are needed; see :func:`repeated_baseline` for the rest.
    """
    if len(baselines) < 2:
        raise InputError(
            f"measuring noise needs at least two baselines, got {len(baselines)}",
            hint="record the same configuration two or more times",
        )
    combined = repeated_baseline(baselines)
    held = [set(table) for _, table in combined.members]
    shared = [qid for qid in combined.ids if all(qid in ids for ids in held)]
    rows = []
    for name in combined.metric_names:
        low, high = combined.band(name, shared)
        spread = high - low
        flaky = tuple(shared[i] for i in np.flatnonzero(spread > floor).tolist())
        means = [m for m in combined.member_means(name, shared) if m == m]
        rows.append(
            MetricNoise(
                name,
                flaky,
                float(spread.max()) if spread.size else 0.0,
                max(means) - min(means) if means else 0.0,
            )
        )
    return NoiseReport(tuple(label for label, _ in combined.members), len(shared), tuple(rows))
