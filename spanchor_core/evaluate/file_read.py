"""Reading an evaluation file once it is parsed: the consistency checks, the strict path
(pydantic, which explains any problem) and the fast path that builds the model directly for
well-formed files (plain type checks; anything unusual falls back to the strict path)."""

from __future__ import annotations

import json
import operator
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
_RESULT_KEYS: Final = frozenset(LocatedResultModel.model_fields)
_RESULT_REQUIRED: Final = frozenset(
    name for name, field in LocatedResultModel.model_fields.items() if field.is_required()
)
_MAPPING_KEYS: Final = frozenset(MappingModel.model_fields)
_MAPPING_REQUIRED: Final = frozenset(
    name for name, field in MappingModel.model_fields.items() if field.is_required()
)
_TRACE_KEYS: Final = frozenset(TraceModel.model_fields)
_SPAN_KEYS: Final = frozenset(SpanModel.model_fields)
_STATUSES: Final = {status.value: status for status in QueryStatus}
_STR_OR_NONE: Final = frozenset({str, type(None)})
_INT_OR_NONE: Final = frozenset({int, type(None)})
_NUMBER: Final = frozenset({float, int})
_FLOAT: Final = {float}


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


def _trace_fast(t: Any, strings: list[str]) -> TraceSummary | None:
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
    strings.extend(x for x in (trace_id, stage, error, *sources) if x is not None)
    return TraceSummary(trace_id, records, tuple(sources), stage, error)


def _queries_fast(
    items: Any, names: tuple[str, ...], colons: int
) -> dict[str, QueryEvaluation] | None:
    """The queries of a well-formed file built directly, or ``None`` to let the model explain.

    Accepts exactly what :class:`QueryModel` and :func:`_check_consistent` accept, in the
    shapes our writer produces (ints where floats go allowed), and gives the same values.
    ``colons`` is what the raw text holds beyond the queries' members: since orjson keeps the
    last of two equal keys, a repeated key is caught by counting, every ``:`` of the text
    being either a member's or inside a string.
    """
    if type(items) is not list:
        return None
    wanted = frozenset(names)
    known_keys: tuple[str, ...] = ()
    known_cost = 0
    scores: operator.itemgetter[Any] | None = None
    known_counts: tuple[str, ...] = ()
    counts_cost = 0
    strings: list[str] = []
    pairs = 0
    queries: dict[str, QueryEvaluation] = {}
    items.reverse()  # popped from the end in file order: each parsed query freed once built
    while items:
        q = items.pop()
        if type(q) is not dict or not _QUERY_KEYS.issuperset(q) or not q.keys() >= _QUERY_REQUIRED:
            return None
        query_id, status, error = q["query_id"], q["status"], q.get("error")
        metrics, gold, mapping, results = q["metrics"], q["gold"], q["mapping"], q["results"]
        if (
            type(query_id) is not str
            or query_id in queries
            or type(status) is not str
            or status not in _STATUSES
            or type(error) not in _STR_OR_NONE
            or type(metrics) is not dict
            or type(gold) is not list
            or type(mapping) is not dict
            or type(results) is not list
        ):
            return None
        keys = tuple(metrics)
        if keys != known_keys:
            if not wanted.issubset(keys):
                return None
            known_keys, known_cost = keys, len(keys) + sum(key.count(":") for key in keys)
            positions = [i for i, key in enumerate(keys) if _is_score(key)]
            scores = operator.itemgetter(*positions, *positions[:1]) if positions else None
        pairs += len(q) + known_cost
        raw_values = tuple(metrics.values())
        types = set(map(type, raw_values))
        values: dict[str, float] = metrics
        if types != _FLOAT:
            if not types <= _NUMBER:
                return None
            values = {name: float(value) for name, value in metrics.items()}
            raw_values = tuple(values.values())
        if scores is not None:
            picked = scores(raw_values)
            if min(picked) < 0.0 or max(picked) > 1.0:
                return None
        spans = []
        for span in gold:
            if type(span) is not dict or span.keys() != _SPAN_KEYS:
                return None
            document_id, start, end = span["document_id"], span["start"], span["end"]
            if type(document_id) is not str or type(start) is not int or type(end) is not int:
                return None
            strings.append(document_id)
            spans.append(DocSpan(document_id, start, end))
        pairs += 3 * len(spans)
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
        count_keys = tuple(counts)
        if count_keys != known_counts:
            known_counts = count_keys
            counts_cost = len(count_keys) + sum(key.count(":") for key in count_keys)
        if any(type(n) is not int for n in counts.values()):
            return None
        pairs += len(mapping) + counts_cost
        located = []
        for r in results:
            if type(r) is not dict:
                return None
            if r.keys() != _RESULT_KEYS and (
                not _RESULT_KEYS.issuperset(r) or not r.keys() >= _RESULT_REQUIRED
            ):
                return None
            rank, result_status, document_id = r["rank"], r["status"], r["document_id"]
            start, end, confidence = r["start"], r["end"], r["confidence"]
            rejected = r.get("hint_rejected", False)
            resolved_by, reason = r.get("resolved_by"), r.get("reason")
            if (
                type(resolved_by) not in _STR_OR_NONE
                or type(reason) not in _STR_OR_NONE
                or type(rank) is not int
                or type(result_status) is not str
                or type(document_id) not in _STR_OR_NONE
                or type(start) not in _INT_OR_NONE
                or type(end) not in _INT_OR_NONE
                or type(confidence) not in _NUMBER
                or type(rejected) is not bool
            ):
                return None
            pairs += len(r)
            strings.append(result_status)
            if document_id is not None:
                strings.append(document_id)
            if resolved_by is not None:
                strings.append(resolved_by)
            if reason is not None:
                strings.append(reason)
            located.append(
                LocatedResult(
                    rank,
                    result_status,
                    document_id,
                    start,
                    end,
                    float(confidence),
                    rejected,
                    resolved_by,
                    reason,
                )
            )
        traces: list[TraceSummary] = []
        raw_traces = q.get("traces", [])
        if type(raw_traces) is not list:
            return None
        for t in raw_traces:
            trace = _trace_fast(t, strings)
            if trace is None:
                return None
            pairs += len(t)
            traces.append(trace)
        strings.append(query_id)
        strings.append(status)
        if error is not None:
            strings.append(error)
        queries[query_id] = QueryEvaluation(
            query_id=query_id,
            metrics=values,
            status=_STATUSES[status],
            gold=tuple(spans),
            results=tuple(located),
            mapping=MappingStats(dict(counts), hint_rejected),
            error=error,
            traces=tuple(traces),
        )
    if pairs + "\0".join(strings).count(":") != colons:
        return None  # a repeated key somewhere: the strict reader names it
    return queries


def _read_fast(path: Path) -> Evaluation | None:
    """The evaluation a well-formed file of the current format holds, or ``None``.

    orjson refuses what the strict reader refuses (NaN, Infinity, numbers beyond a float, lone
    surrogates, bad UTF-8) except repeated keys, which :func:`_queries_fast` counts. The small
    head is validated by the model; anything unusual is left to the strict path, which words
    the error.
    """
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    if b"\\u003a" in raw or b"\\u003A" in raw:
        return None  # an escaped ':' would upset the count of members
    colons = raw.count(b":")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    del raw  # the text is not kept beside what it parsed to
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
    colons -= _pairs_and_colons(data)
    queries = _queries_fast(items, tuple(head.metric_names), colons)
    if queries is None:
        return None
    return _evaluation_of(head, queries)
