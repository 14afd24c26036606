"""The evaluation file (``kind: spanchor.evaluation``, schema_version 1): :func:`write_evaluation`
and :func:`read_evaluation` (models in :mod:`.file_models`, parsing in :mod:`.file_read`).

The file is read through the strict JSON layer (:mod:`spanchor_core._io`), dispatched on its
``kind``; files without one are spanchor 0.x evaluations (:mod:`spanchor_core.evaluate.legacy`).
"""

from __future__ import annotations

import gc
import itertools
import json
import math
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from pydantic import ValidationError

from spanchor_core._io import atomic_write, describe_validation_error, loads_strict
from spanchor_core.errors import EvaluationFileError
from spanchor_core.evaluate.file_models import (
    EvaluationFile,
    MappingModel,
    SettingsModel,
    SummaryModel,
    evaluation_json_schema,
)
from spanchor_core.evaluate.file_read import (
    _check_consistent,
    _from_file,
    _read_fast,
)
from spanchor_core.evaluate.file_text import BATCH, queries_text
from spanchor_core.evaluate.file_text_columns import scored_queries_text
from spanchor_core.evaluate.legacy import evaluation_from_0x, is_0x_evaluation
from spanchor_core.evaluate.model import (
    EVALUATION_KIND,
    EVALUATION_SCHEMA_VERSION,
    Evaluation,
    MappingStats,
    QueryTable,
    TraceSummary,
)
from spanchor_core.evaluate.scored_columns import ScoredQueries

__all__ = [
    "REDACTED",
    "EvaluationFile",
    "evaluation_json_schema",
    "read_evaluation",
    "redact_evaluation",
    "write_evaluation",
]

REDACTED = "[redacted]"
"""What stands in for a text left out by ``--redact``."""


def _redact_trace(trace: TraceSummary) -> TraceSummary:
    return trace if trace.error is None else replace(trace, error=REDACTED)


def redact_evaluation(evaluation: Evaluation) -> Evaluation:
    """``evaluation`` without the texts ``--redact`` keeps out of every output: retriever error
    messages (of queries and of their traces) and the query texts of unresolved records, each
    replaced by :data:`REDACTED` so that counts and statuses stay as they were.

    The evaluation file holds no question or evidence text otherwise (results are spans).
    """
    unresolved = tuple(REDACTED for _ in evaluation.unresolved)
    scored = _scored_columns(evaluation)
    if scored is not None:  # by column: no query built, the columns shared
        traces = {row: tuple(map(_redact_trace, t)) for row, t in scored.traces.items()}
        redacted = scored.with_texts(dict.fromkeys(scored.errors, REDACTED), traces)
        table = QueryTable(
            redacted.ids,
            redacted.metric_names,
            redacted.matrix,
            redacted,
            redacted.repeated(),
            redacted.merged(),
        )
        return replace(evaluation, queries=table, unresolved=unresolved)
    queries = {}
    for query_id, query in evaluation.queries.items():
        if query.error is not None or any(t.error is not None for t in query.traces):
            query = replace(
                query,
                error=None if query.error is None else REDACTED,
                traces=tuple(_redact_trace(t) for t in query.traces),
            )
        queries[query_id] = query
    return replace(evaluation, queries=queries, unresolved=unresolved)


def _scored_columns(evaluation: Evaluation) -> ScoredQueries | None:
    """The columns of a scored evaluation's queries, when it holds them (and nothing else)."""
    queries = evaluation.queries
    if isinstance(queries, QueryTable):
        builder = queries.builder
        if isinstance(builder, ScoredQueries) and list(queries) == builder.ids:
            return builder
    return None


def _mapping_model(stats: MappingStats) -> MappingModel:
    return MappingModel(
        counts=dict(stats.counts),
        hint_rejected=stats.hint_rejected,
        total=stats.total,
        unmapped_rate=stats.unmapped_rate,
    )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _divergent(evaluation: Evaluation) -> list[str] | None:
    """``divergent`` as written: only when known and some query is repeated (an evaluation
    without repeats reads back as ``()`` without it)."""
    if evaluation.divergent is None or not evaluation.repeated:
        return None
    return list(evaluation.divergent)


def _to_file(evaluation: Evaluation) -> EvaluationFile:
    """Everything of the evaluation file but its ``queries`` (validated: it is small).

    The queries, nearly all of the file, are converted by :mod:`.file_text` without building
    a model per result: at 100,000 results the models cost seconds.
    """
    s = evaluation.settings
    return EvaluationFile(
        spanchor_version=s.spanchor_version,
        created_at=s.created_at,
        settings=SettingsModel(
            k=list(s.k),
            min_overlap=s.min_overlap,
            corpus_fingerprint=s.corpus_fingerprint,
            gold_sha256=s.gold_sha256,
            gold_path=s.gold_path,
            run_path=s.run_path,
            run_header=None if s.run_header is None else dict(s.run_header),
            source_format=s.source_format,
            group=s.group,
        ),
        metric_names=list(evaluation.metric_names),
        aggregates={
            name: SummaryModel(
                mean=_finite(summary.mean),
                std=_finite(summary.std),
                min=_finite(summary.min),
                max=_finite(summary.max),
                n=summary.n,
            )
            for name, summary in evaluation.aggregates().items()
        },
        mapping=_mapping_model(evaluation.mapping),
        missing_in_run=list(evaluation.missing_in_run),
        not_in_gold=list(evaluation.not_in_gold),
        unresolved=list(evaluation.unresolved),
        duplicates=list(evaluation.duplicates),
        errors=list(evaluation.errors),
        skipped=dict(evaluation.skipped),
        warnings=list(evaluation.warnings),
        records=evaluation.records,
        stages=None if evaluation.stages is None else dict(evaluation.stages),
        divergent=_divergent(evaluation),
        queries=[],
    )


def _evaluation_json_parts(evaluation: Evaluation) -> Iterator[str]:
    """The evaluation file's text in pieces, ending with a newline.

    The settings and summary part is indented JSON; each query is one compact JSON object on
    a line of its own inside ``"queries"`` — still one JSON document, but one line per query
    diffs well and is written by the standard library's C encoder (``indent`` would force its
    pure-Python encoder, seconds for a large run). Written piece by piece so that the text of
    a large evaluation is never held in memory whole.
    """
    head = _to_file(evaluation).model_dump(mode="json")
    del head["queries"]
    if head["divergent"] is None:
        del head["divergent"]  # no repeated query (or unknown): the file as before the field
    head_text = json.dumps(head, indent=2, ensure_ascii=False, allow_nan=False)
    if not evaluation.queries:
        yield head_text[: -len("\n}")] + ',\n  "queries": []\n}\n'
        return
    scored = _scored_columns(evaluation)
    if scored is not None:  # written from the columns, no query built
        count = len(scored.ids)
        yield (
            head_text[: -len("\n}")]
            + ',\n  "queries": [\n    '
            + scored_queries_text(scored, 0, 1, "")
        )
        for start in range(1, count, BATCH):
            yield scored_queries_text(scored, start, min(start + BATCH, count), ",\n    ")
        yield "\n  ]\n}\n"
        return
    # a batch of queries at a time: an evaluation held by column builds each query when asked
    queries = iter(evaluation.queries.values())
    yield head_text[: -len("\n}")] + ',\n  "queries": [\n    ' + queries_text([next(queries)], "")
    while batch := list(itertools.islice(queries, BATCH)):
        yield queries_text(batch, ",\n    ")
    yield "\n  ]\n}\n"


def write_evaluation(
    evaluation: Evaluation, path: str | os.PathLike[str], *, redact: bool = False
) -> None:
    """Write ``evaluation`` as JSON, atomically (a temporary file, then a rename).

    ``redact`` leaves retriever error text and unresolved query text out
    (:func:`redact_evaluation`).

    The bytes depend only on the evaluation: keys in a fixed order, queries in gold order,
    floats in their shortest round-tripping form. Only ``created_at`` differs between two
    evaluations of the same inputs.
    """
    parts = _evaluation_json_parts(redact_evaluation(evaluation) if redact else evaluation)
    first = next(parts)  # the validated head: a bad evaluation fails before any file exists
    atomic_write(
        path, itertools.chain([first], parts), error=EvaluationFileError, what="the evaluation"
    )


def read_evaluation(path: str | os.PathLike[str]) -> Evaluation:
    """Read an evaluation file written by :func:`write_evaluation` or by spanchor 0.x.

    Dispatches on ``kind`` (0.x files have none and are recognised by ``per_query_metrics``).
    Raises :class:`EvaluationFileError`, naming the file, for anything else.
    """
    source = Path(path)
    collecting = gc.isenabled()
    gc.disable()  # hundreds of thousands of new objects, none cyclic: no collection passes
    try:
        fast = _read_fast(source)
    finally:
        if collecting:
            gc.enable()
    if fast is not None:
        return fast
    try:  # read again: what is wrong is worded by the strict path
        raw = source.read_bytes()
    except OSError as err:
        raise EvaluationFileError(f"cannot read: {err.strerror or err}", path=source) from None
    try:
        text = raw.decode("utf-8-sig")  # a byte-order mark is dropped, as by every reader
    except UnicodeDecodeError as err:
        raise EvaluationFileError(f"not UTF-8 at byte {err.start}", path=source) from None
    data = loads_strict(text, path=source, error=EvaluationFileError)
    if not isinstance(data, dict):
        raise EvaluationFileError("an evaluation file holds one JSON object", path=source)
    kind = data.get("kind")
    if kind is None:
        if is_0x_evaluation(data):
            return evaluation_from_0x(data, source)
        if "aggregate_metrics" in data:
            raise EvaluationFileError(
                "this file holds aggregate metrics only, no per-query metrics",
                path=source,
                hint="evaluate the run again to get a file that can be compared query by query",
            )
        raise EvaluationFileError(
            "not an evaluation file (no 'kind')",
            path=source,
            hint="pass a file written by `spanchor evaluate`",
        )
    if kind != EVALUATION_KIND:
        raise EvaluationFileError(f"this is a {kind!r} file, not an evaluation", path=source)
    version = data.get("schema_version")
    if version != EVALUATION_SCHEMA_VERSION:
        raise EvaluationFileError(
            f"evaluation schema_version {version!r} is not supported (this spanchor reads "
            f"{EVALUATION_SCHEMA_VERSION})",
            path=source,
            hint="upgrade spanchor" if isinstance(version, int) and version > 1 else None,
        )
    try:
        model = EvaluationFile.model_validate(data)
    except ValidationError as err:
        raise EvaluationFileError(describe_validation_error(err), path=source) from None
    _check_consistent(model, source, text)
    return _from_file(model)
