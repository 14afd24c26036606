"""Reading an evaluation file: the consistency checks and conversion of the strict path
(pydantic, which explains any problem), and the fast path for well-formed files — our layout
read a query line at a time, any other parsed whole by orjson, a 0.x file handed to its reader
from that one parse — whose plain checks (:mod:`.file_queries`) decline anything unusual to the
strict path."""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Mapping
from itertools import repeat
from pathlib import Path
from typing import Any, Final

import orjson
from pydantic import ValidationError

from spanchor_core.errors import EvaluationFileError
from spanchor_core.evaluate.file_columns import _Columns
from spanchor_core.evaluate.file_models import (
    _CURRENT_FORMAT,
    EvaluationFile,
)
from spanchor_core.evaluate.file_pattern import PLAIN_LINE
from spanchor_core.evaluate.file_queries import (
    _ESCAPED_COLONS,
    _JSON_SPACE,
    _Builder,
    _is_score,
    _pairs_and_colons,
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
    QueryTable,
    TraceSummary,
)
from spanchor_core.spans import DocSpan


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


def _evaluation_of(model: EvaluationFile, queries: Mapping[str, QueryEvaluation]) -> Evaluation:
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
        stages=model.stages,
        divergent=_divergent_of(model, queries),
    )


def _divergent_of(
    model: EvaluationFile, queries: Mapping[str, QueryEvaluation]
) -> tuple[str, ...] | None:
    """The file's ``divergent``; absent, none when no query repeats, else unknown."""
    if model.divergent is not None:
        return tuple(model.divergent)
    if isinstance(queries, QueryTable):
        repeated = bool(queries.repeated)
    else:
        repeated = any(query.repeated for query in queries.values())
    return None if repeated else ()


# ------------------------------------------------------------------------ the fast path


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


_CHUNK: Final = 32
"""Parsed query lines checked together (:meth:`_Columns.add_chunk`)."""
_LINES: Final = 1024
"""Query lines matched and stored together (:meth:`_Columns.add_matched`)."""


def _store(
    columns: _Columns, chunk: list[Any], texts: list[bytes], ends: list[int], counts: list[int]
) -> bool:
    """Store a chunk of parsed query lines, together when they are all plain, else one by one;
    ``False`` to decline the file."""
    if columns.add_chunk(chunk, texts, ends, sum(counts)):
        return True
    for q, text, end, colons in zip(chunk, texts, ends, counts, strict=True):
        pairs = columns.add(q, text, end)
        if pairs is None:
            return False
        if colons != pairs and (
            _ESCAPED_COLONS[0] in text
            or _ESCAPED_COLONS[1] in text
            or _pairs_and_colons(q) != colons
        ):
            return False  # a repeated key: the strict reader names it
    return True


def _store_parsed(columns: _Columns, texts: list[bytes], ends: list[int]) -> bool:
    """Query lines parsed whole by orjson, in chunks of :data:`_CHUNK`, and stored; ``False``
    to decline the file, :class:`_Layout` for a line that is not a whole JSON value."""
    for at in range(0, len(texts), _CHUNK):
        part, part_ends = texts[at : at + _CHUNK], ends[at : at + _CHUNK]
        try:
            chunk = [orjson.loads(memoryview(t)[:e]) for t, e in zip(part, part_ends, strict=True)]
        except orjson.JSONDecodeError:
            raise _Layout from None  # a query over several lines, or broken JSON
        counts = [t.count(b":") for t in part]
        if not _store(columns, chunk, part, part_ends, counts):
            return False
    return True


def _store_lines(columns: _Columns, texts: list[bytes], ends: list[int]) -> bool:
    """Store query lines (``texts[i][:ends[i]]`` is each one's JSON): the runs of lines in our
    writer's usual shape (:data:`PLAIN_LINE`) without parsing what follows their metrics,
    any other line parsed whole; ``False`` to decline the file."""
    matches = list(map(PLAIN_LINE.fullmatch, texts, repeat(0), ends))
    at = 0
    while at < len(texts):
        plain = matches[at] is not None
        stop = at + 1
        while stop < len(texts) and (matches[stop] is not None) == plain:
            stop += 1
        run = [match for match in matches[at:stop] if match is not None]
        stored = bool(run) and columns.add_matched(run)
        if not stored and not _store_parsed(columns, texts[at:stop], ends[at:stop]):
            return False
        at = stop
    return True


def _read_buffer(rest: bytes, names: tuple[str, ...]) -> _Columns | None:
    """The queries of ``rest`` (a file from the line after ``"queries": [`` on) when every
    query line is in our writer's usual shape, a comma after each but the last, then ``]``
    on a line of its own and the closing ``}``: matched where they stand, the rest of each
    line kept in ``rest``; ``None`` otherwise."""
    close = rest.rfind(b"]")
    if close < 0:
        return None
    last = rest.rfind(b"\n", 0, close) + 1  # where the line of "]" starts
    after = rest.find(b"\n", close)
    if (
        last == 0
        or after < 0
        or rest[last:close].strip(_JSON_SPACE)
        or rest[close + 1 : after].strip(_JSON_SPACE)
        or rest[after:].strip(_JSON_SPACE) != b"}"
    ):
        return None
    columns = _Columns(names)
    return columns if columns.add_buffer(rest, last) else None


def _read_lines(path: Path) -> Evaluation | None:
    """Our writer's layout (the head, then one query per line) read a line at a time, so
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
        names = tuple(head.metric_names)
        position = handle.tell()
        # read in one piece of the known size (read() would join chunks: twice the memory)
        columns = _read_buffer(
            handle.read(max(0, os.fstat(handle.fileno()).st_size - position)), names
        )
        if columns is None:  # not the usual lines: read them one at a time
            handle.seek(position)
            columns = _Columns(names)
        else:
            table = columns.finish()
            return None if table is None else _evaluation_of(head, table)
        texts: list[bytes] = []
        ends: list[int] = []
        last = False  # the previous query had no comma after it: only "]" may follow
        for line in handle:
            text = line.strip(_JSON_SPACE)
            if not text:
                continue
            if text == b"]":
                if (len(columns) or texts) and not last:
                    return None  # a comma before "]"
                if texts and not _store_lines(columns, texts, ends):
                    return None
                break
            if last:  # another layout (a query over several lines: _Layout) or no comma
                _store_lines(columns, texts, ends)
                return None
            last = not text.endswith(b",")
            texts.append(text)
            ends.append(len(text) if last else len(text) - 1)
            if len(texts) == _LINES:
                if not _store_lines(columns, texts, ends):
                    return None
                texts, ends = [], []
        else:
            return None  # no "]": truncated
        if handle.read().strip(_JSON_SPACE) != b"}":
            raise _Layout
    table = columns.finish()
    return None if table is None else _evaluation_of(head, table)


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
    words the error. The collector is off meanwhile: the parsed lines are freed as they are
    stored and hold no cycles, so its passes over them (and over everything already alive)
    would find nothing.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _read_lines(path)
    except _Layout:
        return _read_whole(path)
    except (OSError, ValueError):
        return None
    finally:
        if collecting:
            gc.enable()
