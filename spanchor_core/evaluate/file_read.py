"""Reading an evaluation file once it is parsed: the consistency checks, the strict path
(pydantic, which explains any problem) and the fast path that builds the model directly for
well-formed files (plain type checks; anything unusual falls back to the strict path)."""

from __future__ import annotations

import json
import operator
from math import copysign
from pathlib import Path
from typing import Any, Final

import orjson
from pydantic import ValidationError

from spanchor_core.errors import EvaluationFileError
from spanchor_core.evaluate.file_models import (
    _CURRENT_FORMAT,
    EvaluationFile,
    LocatedResultModel,
    MappingModel,
    QueryModel,
    SpanModel,
    TraceModel,
)
from spanchor_core.evaluate.legacy import evaluation_from_0x, is_0x_evaluation
from spanchor_core.evaluate.model import (
    EVALUATION_KIND,
    EVALUATION_SCHEMA_VERSION,
    Evaluation,
    EvaluationSettings,
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


def _line_of_query(text: str, query_id: str) -> int | None:
    """The line the query's ``query_id`` is written on (one query per line in our files)."""
    position = text.find(f'"query_id": {json.dumps(query_id, ensure_ascii=False)}')
    return None if position < 0 else text.count("\n", 0, position) + 1


def _shown_name(name: str) -> str:
    """A metric name as an error message shows it: quoted when it holds unprintable characters,
    so that the message stays one line."""
    return name if name.isprintable() else repr(name)


def _check_consistent(model: EvaluationFile, path: Path, text: str) -> None:
    """A hand-edited or truncated file must fail here, not later inside a comparison."""
    seen: set[str] = set()
    names = list(model.metric_names)
    for index, q in enumerate(model.queries):
        if q.query_id in seen:
            raise EvaluationFileError(
                f"query {q.query_id!r} appears twice (queries[{index}])", path=path
            )
        seen.add(q.query_id)
        absent = [name for name in names if name not in q.metrics]
        if absent:
            raise EvaluationFileError(
                f"query {q.query_id!r} lacks {', '.join(map(_shown_name, absent))} "
                f"(queries[{index}])",
                path=path,
                hint="write evaluation files with spanchor evaluate -o",
            )
        for name, value in q.metrics.items():
            if not 0.0 <= value <= 1.0 and _is_score(name):
                raise EvaluationFileError(
                    f"query {q.query_id!r}: {_shown_name(name)} is {value!r}, outside [0, 1] "
                    f"(queries[{index}].metrics)",
                    path=path,
                    line=_line_of_query(text, q.query_id),
                    hint="scores of the built-in metrics lie in [0, 1]",
                )


def _from_file(model: EvaluationFile) -> Evaluation:
    queries: dict[str, QueryEvaluation] = {}
    for q in model.queries:
        results = tuple(
            LocatedResult(
                rank=r.rank,
                status=r.status,
                document_id=r.document_id,
                start=r.start,
                end=r.end,
                confidence=r.confidence,
                hint_rejected=r.hint_rejected,
                resolved_by=r.resolved_by,
                reason=r.reason,
            )
            for r in q.results
        )
        queries[q.query_id] = QueryEvaluation(
            query_id=q.query_id,
            metrics=dict(q.metrics),
            status=q.status,
            gold=tuple(DocSpan(s.document_id, s.start, s.end) for s in q.gold),
            results=results,
            mapping=MappingStats(dict(q.mapping.counts), q.mapping.hint_rejected),
            error=q.error,
            traces=tuple(
                TraceSummary(t.trace_id, t.records, tuple(t.sources), t.stage, t.error)
                for t in q.traces
            ),
        )
    return _evaluation_of(model, queries)


def _evaluation_of(model: EvaluationFile, queries: dict[str, QueryEvaluation]) -> Evaluation:
    s = model.settings
    return Evaluation(
        queries=queries,
        settings=EvaluationSettings(
            k=tuple(s.k),
            min_overlap=s.min_overlap,
            corpus_fingerprint=s.corpus_fingerprint,
            gold_sha256=s.gold_sha256,
            gold_path=s.gold_path,
            run_path=s.run_path,
            run_header=s.run_header,
            spanchor_version=model.spanchor_version,
            created_at=model.created_at,
            source_format=_CURRENT_FORMAT if s.source_format is None else s.source_format,
            group=s.group,
        ),
        metric_names=tuple(model.metric_names),
        missing_in_run=tuple(model.missing_in_run),
        not_in_gold=tuple(model.not_in_gold),
        unresolved=tuple(model.unresolved),
        duplicates=tuple(model.duplicates),
        errors=tuple(model.errors),
        skipped=dict(model.skipped),
        mapping=MappingStats(dict(model.mapping.counts), model.mapping.hint_rejected),
        warnings=tuple(model.warnings),
        records=model.records,
    )


# ------------------------------------------------------------------------ the fast path

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

    def add(self, q: Any) -> int | None:
        """Build one parsed query; its members' count (nested ones included), or ``None``."""
        if type(q) is not dict:
            return None
        keys = tuple(q)
        if keys != _QUERY_ORDER and (
            not _QUERY_KEYS.issuperset(keys) or not _QUERY_REQUIRED.issubset(keys)
        ):
            return None
        query_id, status, error = q["query_id"], q["status"], q.get("error")
        metrics, gold, results = q["metrics"], q["gold"], q["results"]
        if (
            type(query_id) is not str
            or query_id in self.queries
            or type(status) is not str
            or status not in _STATUSES
            or type(error) not in _STR_OR_NONE
            or type(metrics) is not dict
            or type(gold) is not list
            or type(results) is not list
        ):
            return None
        values = self._metrics(metrics)
        mapping = self._mapping(q["mapping"])
        if values is None or mapping is None:
            return None
        # members, plus the ``:`` inside the strings that often hold one (ids)
        pairs = len(keys) + self.known_cost + len(q["mapping"]) + len(mapping.counts)
        pairs += query_id.count(":")
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
        self.queries[query_id] = QueryEvaluation(
            query_id,
            values,
            _STATUSES[status],
            tuple(spans),
            tuple(located),
            mapping,
            error,
            tuple(traces),
        )
        return pairs


def _parsed(raw: bytes) -> tuple[Any, int] | None:
    """``raw`` parsed by orjson, and its ``:`` count; ``None`` when orjson refuses it.

    orjson refuses what the strict reader refuses (NaN, Infinity, numbers beyond a float, bad
    UTF-8), and more (lone surrogates, huge integers: the strict path decides), except repeated
    keys, which are caught by counting: every ``:`` of the text is a member's or inside a
    string (a text with an escaped one is declined).
    """
    if _ESCAPED_COLONS[0] in raw or _ESCAPED_COLONS[1] in raw:
        return None
    colons = raw.count(b":")
    try:
        return orjson.loads(raw), colons
    except orjson.JSONDecodeError:
        return None


def _head(data: Any, colons: int) -> tuple[EvaluationFile, Any, int] | None:
    """The validated head of a parsed evaluation, its parsed ``queries`` and the ``:`` of the
    text that are neither the head's members nor inside the head's strings; ``None`` to
    decline."""
    if (
        type(data) is not dict
        or data.get("kind") != EVALUATION_KIND
        or type(data.get("schema_version")) is not int
        or data.get("schema_version") != EVALUATION_SCHEMA_VERSION
        or "queries" not in data
    ):
        return None
    items = data["queries"]
    data["queries"] = []
    try:
        head = EvaluationFile.model_validate(data)
    except ValidationError:
        return None
    return head, items, colons - _pairs_and_colons(data)


_HEAD_LIMIT: Final = 64 * 1024 * 1024
"""The most the part before ``"queries"`` may hold for the line-by-line reader."""
_QUERIES_LINE: Final = b'"queries": ['


class _Layout(Exception):
    """The file is not laid out as our writer lays it out: try the whole-file parse."""


def _read_lines(path: Path) -> Evaluation | None:
    """Our writer's layout (the head, then one query per line) parsed a line at a time, so
    that no parsed copy of the whole file is ever alive; raises :class:`_Layout` otherwise.

    Lines split on ``\\n`` are whole JSON values, since no JSON string holds a raw newline;
    the head is parsed with an empty ``queries`` list put in its place, which is valid JSON
    only when that member closes the top-level object.
    """
    with path.open("rb") as handle:
        head_lines: list[bytes] = []
        size = 0
        for line in handle:
            if line.strip(_JSON_SPACE) == _QUERIES_LINE:
                break
            head_lines.append(line)
            size += len(line)
            if size > _HEAD_LIMIT:
                raise _Layout
        else:
            raise _Layout
        opening = _parsed(b"".join(head_lines) + b'"queries": []}')
        del head_lines
        parsed = None if opening is None else _head(*opening)
        if parsed is None:
            raise _Layout
        head, _, extra = parsed
        if extra != 0:
            return None  # a repeated key in the head
        builder = _Builder(tuple(head.metric_names))
        last = False  # the previous query had no comma after it: only "]" may follow
        for line in handle:
            text = line.strip(_JSON_SPACE)
            if not text:
                continue
            if text == b"]":
                if builder.queries and not last:
                    return None  # a comma before "]"
                break
            if last:
                return None
            last = not text.endswith(b",")
            try:
                q = orjson.loads(text if last else memoryview(text)[:-1])
            except orjson.JSONDecodeError:
                raise _Layout from None  # a query over several lines, or broken JSON
            pairs = builder.add(q)
            if pairs is None:
                return None
            colons = text.count(b":")
            if colons != pairs and (
                _ESCAPED_COLONS[0] in text
                or _ESCAPED_COLONS[1] in text
                or _pairs_and_colons(q) != colons
            ):
                return None  # a repeated key: the strict reader names it
        else:
            return None  # no "]": truncated
        if handle.read().strip(_JSON_SPACE) != b"}":
            raise _Layout
    return _evaluation_of(head, builder.queries)


def _read_whole(path: Path) -> Evaluation | None:
    """Any other layout, and spanchor 0.x evaluations: the whole file parsed by orjson, each
    parsed query freed once built (a 0.x file goes to its reader from this one parse)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    text = _parsed(raw)
    del raw  # the text is not kept beside what it parsed to
    if text is None:
        return None
    data, colons = text
    if type(data) is dict and "kind" not in data and is_0x_evaluation(data):
        if _pairs_and_colons(data) != colons:
            return None  # a repeated key: the strict reader names it
        return evaluation_from_0x(data, path)
    parsed = _head(data, colons)
    del data
    if parsed is None:
        return None
    head, items, colons = parsed
    if type(items) is not list:
        return None
    builder = _Builder(tuple(head.metric_names))
    items.reverse()  # popped from the end in file order: each parsed query freed once built
    while items:
        pairs = builder.add(items.pop())
        if pairs is None:
            return None
        colons -= pairs
    if colons != 0:
        return None  # a repeated key, or ':' inside strings: the strict reader decides
    return _evaluation_of(head, builder.queries)


def _read_fast(path: Path) -> Evaluation | None:
    """The evaluation a well-formed file of the current format holds, or ``None``.

    Our own files are read a line at a time (:func:`_read_lines`), anything else whole
    (:func:`_read_whole`); whatever either finds unusual is left to the strict path, which
    words the error.
    """
    try:
        return _read_lines(path)
    except _Layout:
        return _read_whole(path)
    except (OSError, ValueError):
        return None
