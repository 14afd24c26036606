"""The pydantic models of a run file's two line types, and their JSON Schemas.

:class:`RunHeader` (the first line; also kept on every :class:`~spanchor_core.runs.Run`) and
:class:`RetrievalRecordModel` with :class:`RetrievedResultModel` (each later line) say exactly
what a run file may hold; readers validate against them at the file edge only, and the
schema files in ``spanchor_core/schemas/`` are generated from them.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from spanchor_core._version import __version__
from spanchor_core.runs.encoding import json_native
from spanchor_core.runs.model import Stage

__all__ = [
    "RUN_KIND",
    "RUN_SCHEMA_VERSION",
    "RetrievalRecordModel",
    "RetrievedResultModel",
    "RetrieverInfo",
    "RunHeader",
    "check_timestamp",
    "run_file_schemas",
    "utc_now",
]

RUN_KIND: Final = "spanchor.run"
RUN_SCHEMA_VERSION: Final = 1


def utc_now() -> str:
    """The current time as the header writes it: ISO 8601, milliseconds, ``Z``."""
    now = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    return now.replace("+00:00", "Z")


def check_timestamp(value: str) -> str:
    """``value`` if it is an ISO 8601 timestamp with a time zone (the rule of every file
    header's ``created_at``); else ValueError, which pydantic reports as a field error."""
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"not an ISO 8601 timestamp: {value!r}") from None
    if parsed.tzinfo is None:
        raise ValueError(f"timestamp {value!r} has no time zone; write it in UTC ('Z')")
    return value


class RetrieverInfo(BaseModel):
    """What produced the run: a free-text description and the settings that matter."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)

    @field_validator("parameters", mode="after")
    @classmethod
    def _json_native(cls, value: dict[str, Any]) -> dict[str, Any]:
        # Parameters are provenance: keep what JSON can hold, convert the rest once, here.
        return json_native(value)


class RunHeader(BaseModel):
    """The first line of a run file: what the run is and where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    kind: Literal["spanchor.run"] = RUN_KIND
    schema_version: Literal[1] = RUN_SCHEMA_VERSION
    spanchor_version: str = Field(default_factory=lambda: __version__)
    created_at: str = Field(default_factory=utc_now)
    retriever: RetrieverInfo = Field(default_factory=RetrieverInfo)
    corpus_fingerprint: str | None = None
    gold_sha256: str | None = None
    tags: dict[str, Any] = Field(default_factory=dict)

    @field_validator("created_at", mode="after")
    @classmethod
    def _iso_8601_with_zone(cls, value: str) -> str:
        return check_timestamp(value)

    @field_validator("tags", mode="after")
    @classmethod
    def _json_native(cls, value: dict[str, Any]) -> dict[str, Any]:
        return json_native(value)


class RetrievedResultModel(BaseModel):
    """Schema of one result inside a run file record (validation at the file edge only)."""

    # built when first validated: lines are checked without it unless unusual
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, defer_build=True)

    rank: int | None = None
    text: str | None = None
    score: float | None = None
    document_id: str | None = None
    start: int | None = None
    end: int | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class RetrievalRecordModel(BaseModel):
    """Schema of one retrieval line of a run file (validation at the file edge only)."""

    # built when first validated: lines are checked without it unless unusual
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, defer_build=True)

    query_id: str | None = None
    query: str
    results: list[RetrievedResultModel]
    latency_ms: float | None = Field(default=None, ge=0)
    error: str | None = None
    source: str | None = None
    stage: Stage | None = None
    trace_id: str | None = None
    run_id: str | None = None
    parent_run_id: str | None = None
    sequence: int | None = Field(default=None, ge=0)
    metadata: dict[str, Any] = Field(default_factory=dict)


def run_file_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schemas of the two line types of a run file, keyed by a stable name."""
    return {
        "spanchor.run.header": RunHeader.model_json_schema(),
        "spanchor.run.record": RetrievalRecordModel.model_json_schema(),
    }
