"""The pydantic models of the evaluation file (``kind: spanchor.evaluation``): the one schema
its writer, its readers and the generated JSON Schema share."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt

from spanchor_core.evaluate.model import (
    EVALUATION_KIND,
    EVALUATION_SCHEMA_VERSION,
    QueryStatus,
)

__all__ = ["EvaluationFile", "evaluation_json_schema"]

_CURRENT_FORMAT = f"{EVALUATION_KIND}/{EVALUATION_SCHEMA_VERSION}"


class _Model(BaseModel):
    # built when first used: the writer validates only the head, the readers only a file
    # their fast path leaves to them (most of these models are never built in a process)
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class SpanModel(_Model):
    document_id: str
    start: int
    end: int


class LocatedResultModel(_Model):
    rank: int
    status: str
    document_id: str | None
    start: int | None
    end: int | None
    confidence: float
    hint_rejected: bool = False
    resolved_by: str | None = None
    reason: str | None = None


class MappingModel(_Model):
    counts: dict[str, int]
    hint_rejected: int = 0
    total: int
    unmapped_rate: float


class SummaryModel(_Model):
    mean: float | None
    std: float | None
    min: float | None
    max: float | None
    n: int


class TraceModel(_Model):
    trace_id: str | None
    records: int = Field(ge=0)
    sources: list[str] = Field(default_factory=list)
    stage: str | None = None
    error: str | None = None


class QueryModel(_Model):
    query_id: str
    status: QueryStatus
    error: str | None = None
    metrics: dict[str, float]
    gold: list[SpanModel]
    mapping: MappingModel
    results: list[LocatedResultModel]
    traces: list[TraceModel] = Field(default_factory=list)
    """What was scored when the run held several records for the query (absent otherwise)."""


class SettingsModel(_Model):
    k: list[int]
    min_overlap: float = Field(ge=0.0, le=1.0)
    corpus_fingerprint: str | None
    gold_sha256: str | None
    gold_path: str | None = None
    run_path: str | None = None
    run_header: dict[str, Any] | None = None
    source_format: str | None = None
    """The format the scores were first read from (``spanchor-0.x/<schema>`` for a rewritten
    0.x evaluation, which has no result spans); absent in older files: this file's format."""
    group: str = "auto"
    """The grouping rule for queries with several records (absent in older files: auto)."""


class EvaluationFile(_Model):
    """The evaluation file: one JSON object, ``kind`` and ``schema_version`` first."""

    kind: Literal["spanchor.evaluation"] = EVALUATION_KIND
    schema_version: Literal[1] = EVALUATION_SCHEMA_VERSION
    spanchor_version: str | None
    created_at: str | None
    settings: SettingsModel
    metric_names: list[str]
    aggregates: dict[str, SummaryModel]
    """Derived from ``queries``; written for readers of the file, recomputed when read."""
    mapping: MappingModel
    missing_in_run: list[str]
    not_in_gold: list[str]
    unresolved: list[str]
    duplicates: list[str]
    errors: list[str]
    skipped: dict[str, str]
    warnings: list[str]
    records: int | None = Field(default=None, ge=0)
    """Records the run held; absent in older files."""
    stages: dict[str, NonNegativeInt] | None = None
    """Scored askings per recording stage; absent in older files (unknown)."""
    divergent: list[str] | None = None
    """Repeated queries whose askings scored differently; written when the evaluation repeats
    some query (absent otherwise, and in older files: unknown where queries repeat)."""
    queries: list[QueryModel]


def evaluation_json_schema() -> dict[str, Any]:
    """JSON Schema of the evaluation file (``kind: spanchor.evaluation``, schema_version 1)."""
    return EvaluationFile.model_json_schema()
