"""Building the queries of an evaluation file from their parsed JSON, without pydantic: the
plain checks of the fast reader (:mod:`.file_read`), which accept exactly what the file model
and its consistency checks accept, in the shapes our writer produces, and decline anything
else so that the strict path explains it."""

from __future__ import annotations

import operator
from math import copysign
from typing import Any, Final

from spanchor_core.evaluate.file_models import (
    LocatedResultModel,
    MappingModel,
    QueryModel,
    SpanModel,
    TraceModel,
)
from spanchor_core.evaluate.model import (
    LocatedResult,
    MappingStats,
    QueryEvaluation,
    QueryStatus,
    TraceSummary,
)
from spanchor_core.spans import DocSpan

_SCORES: Final = frozenset(
    {"recall", "precision", "hit", "full_evidence", "iou", "mrr", "ndcg", "ap"}
)
"""The built-in metrics whose values are scores in [0, 1] (a value outside is refused)."""


def _is_score(name: str) -> bool:
    return name.partition("@")[0] in _SCORES


_QUERY_KEYS: Final = frozenset(QueryModel.model_fields)
_QUERY_REQUIRED: Final = frozenset(
    name for name, field in QueryModel.model_fields.items() if field.is_required()
)
_QUERY_ORDER: Final = ("query_id", "status", "error", "metrics", "gold", "mapping", "results")
"""The members of a query as our writer puts them (``traces`` after them when there are any)."""
_RESULT_KEYS: Final = frozenset(LocatedResultModel.model_fields)
_RESULT_REQUIRED: Final = frozenset(
    name for name, field in LocatedResultModel.model_fields.items() if field.is_required()
)
_RESULT_ORDER: Final = (
    "rank",
    "status",
    "document_id",
    "start",
    "end",
    "confidence",
    "hint_rejected",
)
_NONE: Final = type(None)
_RESULT_TYPES: Final = frozenset(
    (int, str, document, start, end, float, bool)
    for document in (str, _NONE)
    for start in (int, _NONE)
    for end in (int, _NONE)
)
"""The value types of a result in our writer's shape that need no conversion."""
_MAPPING_KEYS: Final = frozenset(MappingModel.model_fields)
_MAPPING_REQUIRED: Final = frozenset(
    name for name, field in MappingModel.model_fields.items() if field.is_required()
)
_TRACE_KEYS: Final = frozenset(TraceModel.model_fields)
_SPAN_KEYS: Final = frozenset(SpanModel.model_fields)
_STATUSES: Final = {status.value: status for status in QueryStatus}
_STR_OR_NONE: Final = frozenset({str, _NONE})
_INT_OR_NONE: Final = frozenset({int, _NONE})
_NUMBER: Final = frozenset({float, int})
_FLOAT: Final = {float}
_INT: Final = frozenset({int})
_ESCAPED_COLONS: Final = (b"\\u003a", b"\\u003A")
_JSON_SPACE: Final = b" \t\r\n"


def _pairs_and_colons(value: Any) -> int:
    """Members of every object in ``value`` plus the ``:`` inside its strings (keys included)."""
    count = 0
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            count += item.count(":")
        elif kind is dict:
            count += len(item)
            for key, member in item.items():
                count += key.count(":")
                stack.append(member)
        elif kind is list:
            stack.extend(item)
    return count


def _trace_fast(t: Any) -> TraceSummary | None:
    if type(t) is not dict or not _TRACE_KEYS.issuperset(t) or "records" not in t:
        return None
    if "trace_id" not in t:
        return None
    trace_id, records = t["trace_id"], t["records"]
    sources, stage, error = t.get("sources", []), t.get("stage"), t.get("error")
    if (
        type(trace_id) not in _STR_OR_NONE
        or type(records) is not int
        or records < 0
        or type(sources) is not list
        or any(type(source) is not str for source in sources)
        or type(stage) not in _STR_OR_NONE
        or type(error) not in _STR_OR_NONE
    ):
        return None
    return TraceSummary(trace_id, records, tuple(sources), stage, error)


def _result_checked(r: Any) -> LocatedResult | None:
    """A result in any shape :class:`LocatedResultModel` accepts without conversion but floats."""
    if type(r) is not dict or not _RESULT_KEYS.issuperset(r) or not r.keys() >= _RESULT_REQUIRED:
        return None
    rank, status, document_id = r["rank"], r["status"], r["document_id"]
    start, end, confidence = r["start"], r["end"], r["confidence"]
    rejected = r.get("hint_rejected", False)
    resolved_by, reason = r.get("resolved_by"), r.get("reason")
    if (
        type(resolved_by) not in _STR_OR_NONE
        or type(reason) not in _STR_OR_NONE
        or type(rank) is not int
        or type(status) is not str
        or type(document_id) not in _STR_OR_NONE
        or type(start) not in _INT_OR_NONE
        or type(end) not in _INT_OR_NONE
        or type(confidence) not in _NUMBER
        or type(rejected) is not bool
    ):
        return None
    return LocatedResult(
        rank, status, document_id, start, end, float(confidence), rejected, resolved_by, reason
    )


class _Builder:
    """The queries of a well-formed file built one parsed query at a time.

    Accepts exactly what :class:`QueryModel` and :func:`_check_consistent` accept, in the
    shapes our writer produces (ints where floats go allowed), and gives the same values; any
    other shape is declined (``None``) so that the strict path explains it. Repeated strings
    (statuses, document ids), metric values, confidences of 1 and identical mapping counts
    are shared between queries, which keeps two 100,000-query evaluations inside a gigabyte.
    """

    def __init__(self, names: tuple[str, ...]) -> None:
        self.wanted = frozenset(names)
        self.known_keys: tuple[str, ...] = ()
        self.known_cost = 0
        self.scores: operator.itemgetter[Any] | None = None
        self.queries: dict[str, QueryEvaluation] = {}
        self.strings: dict[str, tuple[str, int]] = {}
        self.stats: dict[tuple[Any, ...], MappingStats] = {}
        self.floats: dict[float, float] = {}

    def _metrics(self, metrics: Any) -> dict[str, float] | None:
        keys = tuple(metrics)
        if keys != self.known_keys:
            if not self.wanted.issubset(keys):
                return None
            self.known_keys = keys
            self.known_cost = len(keys) + sum(key.count(":") for key in keys)
            positions = [i for i, key in enumerate(keys) if _is_score(key)]
            self.scores = operator.itemgetter(*positions, *positions[:1]) if positions else None
        raw_values = tuple(metrics.values())
        types = set(map(type, raw_values))
        if types != _FLOAT:
            if not types <= _NUMBER:
                return None
            raw_values = tuple(map(float, raw_values))
        if self.scores is not None:
            picked = self.scores(raw_values)
            if min(picked) < 0.0 or max(picked) > 1.0:
                return None
        if 0.0 in raw_values and any(copysign(1.0, v) < 0.0 for v in raw_values if v == 0.0):
            return dict(zip(keys, raw_values, strict=True))  # -0.0 would be shared as 0.0
        # Metric values repeat a lot (0, 1, the same fractions): one float object each. The
        # rebuilt dict is also smaller than the parser's.
        share = self.floats.setdefault
        return dict(zip(keys, map(share, raw_values, raw_values), strict=True))

    def _mapping(self, mapping: Any) -> MappingStats | None:
        if type(mapping) is not dict:
            return None
        if not _MAPPING_KEYS.issuperset(mapping) or not mapping.keys() >= _MAPPING_REQUIRED:
            return None
        counts, hint_rejected = mapping["counts"], mapping.get("hint_rejected", 0)
        total, rate = mapping["total"], mapping["unmapped_rate"]
        if (
            type(counts) is not dict
            or type(hint_rejected) is not int
            or type(total) is not int
            or type(rate) not in _NUMBER
        ):
            return None
        numbers = tuple(counts.values())
        if not _INT.issuperset(map(type, numbers)):
            return None
        key = (tuple(counts), numbers, hint_rejected)
        stats = self.stats.get(key)
        if stats is None:
            stats = self.stats[key] = MappingStats(counts, hint_rejected)
        return stats

    def _shared(self, text: str) -> tuple[str, int]:
        """One copy of a repeated string, and the ``:`` it holds."""
        known = self.strings.get(text)
        if known is None:
            known = self.strings[text] = (text, text.count(":"))
        return known

    def parts(
        self, gold: Any, mapping: Any, results: Any
    ) -> tuple[tuple[DocSpan, ...], tuple[LocatedResult, ...], MappingStats, int] | None:
        """The gold spans, located results and mapping of one query, and their members'
        count (nested ones and the ``:`` inside document ids included), or ``None``."""
        stats = self._mapping(mapping)
        if stats is None or type(gold) is not list or type(results) is not list:
            return None
        pairs = len(mapping) + len(stats.counts)
        shared = self.strings.get
        spans = []
        for span in gold:
            if type(span) is not dict or span.keys() != _SPAN_KEYS:
                return None
            document_id, start, end = span["document_id"], span["start"], span["end"]
            if type(document_id) is not str or type(start) is not int or type(end) is not int:
                return None
            document_id, colons = shared(document_id) or self._shared(document_id)
            pairs += colons
            spans.append(DocSpan(document_id, start, end))
        pairs += 3 * len(spans)
        located = []
        for r in results:
            fields = tuple(r.values()) if type(r) is dict and tuple(r) == _RESULT_ORDER else ()
            if fields and tuple(map(type, fields)) in _RESULT_TYPES:
                rank, result_status, document_id, start, end, confidence, rejected = fields
                if document_id is not None:
                    document_id, colons = shared(document_id) or self._shared(document_id)
                    pairs += colons
                located.append(
                    LocatedResult(
                        rank,
                        (shared(result_status) or self._shared(result_status))[0],
                        document_id,
                        start,
                        end,
                        1.0 if confidence == 1.0 else confidence,  # one object: the usual value
                        rejected,
                    )
                )
                pairs += 7
                continue
            result = _result_checked(r)
            if result is None:
                return None
            pairs += len(r)
            located.append(result)
        return tuple(spans), tuple(located), stats, pairs

    def build(self, q: Any) -> tuple[QueryEvaluation, int] | None:
        """One parsed query built, and its members' count (nested ones included), or
        ``None``; whether its id is new is for the caller to check."""
        if type(q) is not dict:
            return None
        keys = tuple(q)
        if keys != _QUERY_ORDER and (
            not _QUERY_KEYS.issuperset(keys) or not _QUERY_REQUIRED.issubset(keys)
        ):
            return None
        query_id, status, error = q["query_id"], q["status"], q.get("error")
        metrics = q["metrics"]
        if (
            type(query_id) is not str
            or type(status) is not str
            or status not in _STATUSES
            or type(error) not in _STR_OR_NONE
            or type(metrics) is not dict
        ):
            return None
        values = self._metrics(metrics)
        parts = self.parts(q["gold"], q["mapping"], q["results"])
        if values is None or parts is None:
            return None
        spans, located, mapping, pairs = parts
        # members, plus the ``:`` inside the strings that often hold one (ids)
        pairs += len(keys) + self.known_cost + query_id.count(":")
        traces: list[TraceSummary] = []
        raw_traces = q.get("traces", [])
        if type(raw_traces) is not list:
            return None
        for t in raw_traces:
            trace = _trace_fast(t)
            if trace is None:
                return None
            pairs += len(t)
            traces.append(trace)
        query = QueryEvaluation(
            query_id, values, _STATUSES[status], spans, located, mapping, error, tuple(traces)
        )
        return query, pairs

    def add(self, q: Any) -> int | None:
        """Build one parsed query into :attr:`queries`; its members' count, or ``None``."""
        built = self.build(q)
        if built is None or built[0].query_id in self.queries:
            return None
        query, pairs = built
        self.queries[query.query_id] = query
        return pairs
