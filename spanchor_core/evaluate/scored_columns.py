"""A scored evaluation held by column: :class:`ResultColumns` (every located result) and
:class:`ScoredQueries` (each query's parts), behind a
:class:`~spanchor_core.evaluate.model.QueryTable`.

Why: an evaluation of 100,000 queries x 10 results held as objects — a
:class:`~spanchor_core.evaluate.model.LocatedResult` with its ints per result, a dict of ~40
floats per query — costs ~600 MB, more than a sharded Ray driver holds of the corpus itself
(issue 17: 1,086 MB at 1 GB). By column it is ~40 bytes per result and one float matrix;
each :class:`~spanchor_core.evaluate.model.QueryEvaluation` is built when asked for, with the
same values (of the same types) as the objects scoring used to keep, so every writer and
reader sees the same evaluation, byte for byte.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Final

import numpy as np
from numpy.typing import NDArray

from spanchor_core.evaluate.model import (
    LocatedResult,
    MappingStats,
    QueryEvaluation,
    QueryStatus,
    TraceSummary,
)
from spanchor_core.locate import Location
from spanchor_core.spans import DocSpan

__all__ = ["NONE_OFFSET", "ResultColumns", "ScoredQueries"]

NONE_OFFSET: Final = -(2**63)
"""Where an offset is ``None`` (no offset is negative)."""
_NONE: Final = NONE_OFFSET


class ResultColumns:
    """Every located result in the order added, column by column: rank, status, document,
    offsets, confidence, ``hint_rejected``, ``resolved_by`` (codes into small tables) and the
    rare ``reason`` texts by position; :meth:`results` gives them back as
    :class:`~spanchor_core.evaluate.model.LocatedResult` objects equal to those added."""

    __slots__ = (
        "_codes",
        "_mappings",
        "confidences",
        "documents",
        "ends",
        "names",
        "ranks",
        "reasons",
        "rejected",
        "resolved",
        "starts",
        "statuses",
    )

    def __init__(self) -> None:
        self.names: list[str | None] = [None]
        """Statuses, document ids and ``resolved_by`` values; code 0 is ``None``."""
        self._codes: dict[str | None, int] = {None: 0}
        self.ranks = array("q")
        self.statuses = array("i")
        self.documents = array("i")
        self.starts = array("q")
        self.ends = array("q")
        self.confidences = array("d")
        self.rejected = array("b")
        self.resolved = array("i")
        self.reasons: dict[int, str] = {}
        self._mappings: dict[tuple[object, ...], MappingStats] = {}

    def __len__(self) -> int:
        return len(self.ranks)

    def __getstate__(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state: dict[str, object]) -> None:
        for name, value in state.items():
            setattr(self, name, value)

    def _code(self, value: str | None) -> int:
        code = self._codes.get(value)
        if code is None:
            code = self._codes[value] = len(self.names)
            self.names.append(value)
        return code

    def add_located(
        self, ranks: Sequence[int], statuses: Sequence[str], locations: Sequence[Location]
    ) -> int:
        """Append mapped results (rank, status value, location); where they start."""
        first = len(self.ranks)
        code = self._codes.get
        new = self._code
        self.ranks.extend(ranks)
        self.statuses.extend([code(s) or new(s) for s in statuses])
        self.documents.extend([code(x.document_id) or new(x.document_id) for x in locations])
        self.starts.extend([_NONE if x.start is None else x.start for x in locations])
        self.ends.extend([_NONE if x.end is None else x.end for x in locations])
        self.confidences.extend([x.confidence for x in locations])
        self.rejected.extend([bool(x.hint_rejected) for x in locations])
        self.resolved.extend([code(x.resolved_by) or new(x.resolved_by) for x in locations])
        for index, location in enumerate(locations, start=first):
            if location.reason is not None:
                self.reasons[index] = location.reason
        return first

    def add_results(self, results: Sequence[LocatedResult]) -> int:
        """Append results as they are; where they start."""
        first = len(self.ranks)
        for index, r in enumerate(results, start=first):
            self.ranks.append(r.rank)
            self.statuses.append(self._code(r.status))
            self.documents.append(self._code(r.document_id))
            self.starts.append(_NONE if r.start is None else r.start)
            self.ends.append(_NONE if r.end is None else r.end)
            self.confidences.append(r.confidence)
            self.rejected.append(bool(r.hint_rejected))
            self.resolved.append(self._code(r.resolved_by))
            if r.reason is not None:
                self.reasons[index] = r.reason
        return first

    def absorb(self, other: ResultColumns) -> int:
        """Append every result of ``other`` (the results of a later part of a run, collected
        on another process); where they start. ``other``'s codes are translated into this
        table's (a code only stands for its value: nothing read or written depends on which
        number a value got, and the order they are given in depends on the mapping batches
        anyway)."""
        first = len(self.ranks)
        table = np.array([self._code(name) for name in other.names], dtype=np.int64)

        def coded(column: array[int]) -> array[int]:
            recoded = array(column.typecode)
            if len(column):
                values = table[np.frombuffer(column, dtype=np.int32)].astype(np.int32)
                recoded.frombytes(values.tobytes())
            return recoded

        self.ranks.extend(other.ranks)
        self.statuses.extend(coded(other.statuses))
        self.documents.extend(coded(other.documents))
        self.starts.extend(other.starts)
        self.ends.extend(other.ends)
        self.confidences.extend(other.confidences)
        self.rejected.extend(other.rejected)
        self.resolved.extend(coded(other.resolved))
        for index, reason in other.reasons.items():
            self.reasons[first + index] = reason
        return first

    def status(self, index: int) -> str:
        return self.names[self.statuses[index]]  # type: ignore[return-value]

    def results(self, first: int, count: int) -> tuple[LocatedResult, ...]:
        """The ``count`` results from ``first``, as objects."""
        end = first + count
        names, reasons = self.names, self.reasons
        return tuple(
            LocatedResult(
                rank,
                names[status],
                names[doc],
                None if start == _NONE else start,
                None if stop == _NONE else stop,
                confidence,
                rejected == 1,
                names[resolved],
                reasons.get(index),
            )
            for index, rank, status, doc, start, stop, confidence, rejected, resolved in zip(
                range(first, end),
                self.ranks[first:end],
                self.statuses[first:end],
                self.documents[first:end],
                self.starts[first:end],
                self.ends[first:end],
                self.confidences[first:end],
                self.rejected[first:end],
                self.resolved[first:end],
                strict=True,
            )
        )

    def mapping(self, first: int, count: int) -> MappingStats:
        """``MappingStats.of(self.results(first, count))``, one object per distinct answer."""
        end = first + count
        key = (*sorted(self.statuses[first:end]), sum(self.rejected[first:end]))
        stats = self._mappings.get(key)
        if stats is None:
            stats = self._mappings[key] = MappingStats.of(self.results(first, count))
        return stats


class ScoredQueries:
    """The ``build(row)`` of a scored evaluation's
    :class:`~spanchor_core.evaluate.model.QueryTable`: each query from its columns (picklable:
    an evaluation scored in a worker process travels back to the driver)."""

    __slots__ = (
        "errors",
        "firsts",
        "golds",
        "ids",
        "mappings",
        "matrix",
        "metric_names",
        "results",
        "sizes",
        "statuses",
        "traces",
    )

    def __init__(
        self, ids: Sequence[str], metric_names: tuple[str, ...], results: ResultColumns
    ) -> None:
        self.ids = list(ids)
        self.metric_names = metric_names
        self.results = results
        self.golds: list[tuple[DocSpan, ...]] = []
        self.statuses: list[QueryStatus] = []
        self.firsts = array("q")
        self.sizes = array("q")
        self.mappings: list[MappingStats] = []
        self.errors: dict[int, str] = {}
        self.traces: dict[int, tuple[TraceSummary, ...]] = {}
        self.matrix: NDArray[np.float64] = np.zeros((0, len(metric_names)))

    def __getstate__(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state: dict[str, object]) -> None:
        for name, value in state.items():
            setattr(self, name, value)

    def add(
        self,
        gold: tuple[DocSpan, ...],
        status: QueryStatus,
        first: int,
        size: int,
        mapping: MappingStats,
        error: str | None,
        traces: tuple[TraceSummary, ...],
    ) -> None:
        """The next query's parts: its results are ``size`` results from ``first``."""
        row = len(self.golds)
        self.golds.append(gold)
        self.statuses.append(status)
        self.firsts.append(first)
        self.sizes.append(size)
        self.mappings.append(mapping)
        if error is not None:
            self.errors[row] = error
        if traces:
            self.traces[row] = traces

    def with_texts(
        self, errors: dict[int, str], traces: dict[int, tuple[TraceSummary, ...]]
    ) -> ScoredQueries:
        """These queries with other ``errors`` and ``traces`` (by row), the columns shared."""
        copy = ScoredQueries.__new__(ScoredQueries)
        copy.__setstate__({**self.__getstate__(), "errors": errors, "traces": traces})
        return copy

    def repeated(self) -> tuple[str, ...]:
        """Ids of the queries asked in more than one trace, in order."""
        return tuple(self.ids[row] for row, traces in sorted(self.traces.items()) if traces[1:])

    def merged(self) -> tuple[str, ...]:
        """Ids of the queries with an asking scored from several records merged, in order."""
        return tuple(
            self.ids[row]
            for row, traces in sorted(self.traces.items())
            if any(trace.records > 1 for trace in traces)
        )

    def __call__(self, row: int) -> QueryEvaluation:
        return QueryEvaluation(
            query_id=self.ids[row],
            metrics=dict(zip(self.metric_names, self.matrix[row].tolist(), strict=True)),
            status=self.statuses[row],
            gold=self.golds[row],
            results=self.results.results(self.firsts[row], self.sizes[row]),
            mapping=self.mappings[row],
            error=self.errors.get(row),
            traces=self.traces.get(row, ()),
        )
