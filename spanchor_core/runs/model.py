"""The in-memory run: ranked results, retrieval records, and a run with its header.

These are the values the rest of spanchor passes around (the recorder writes them, the readers
return them, evaluation scores them); they do no I/O. The header is the validated model of a
run file's first line (:mod:`spanchor_core.runs.file_models`), kept as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple

if TYPE_CHECKING:  # the header model validates Stage, so it is imported lazily here
    from spanchor_core.runs.file_models import RunHeader

__all__ = [
    "FORMAT_0X_JSON",
    "FORMAT_0X_JSONL",
    "FORMAT_0X_LIST",
    "FORMAT_OURS",
    "STAGES",
    "RecordFields",
    "RetrievalRecord",
    "RetrievedResult",
    "Run",
    "Stage",
]

Stage = Literal["retrieval", "postprocessed", "context"]
"""What a record's results are: ``retrieval`` the raw output of a retriever;
``postprocessed`` after node postprocessors or a reranker; ``context`` the final context
handed to the model (what evaluation prefers when a trace holds it)."""

STAGES: Final[tuple[Stage, ...]] = ("retrieval", "postprocessed", "context")

# Source formats a Run can come from (Run.source_format).
FORMAT_OURS: Final = "spanchor.run"
FORMAT_0X_JSON: Final = "spanchor-0.x-json"
FORMAT_0X_JSONL: Final = "spanchor-0.x-jsonl"
FORMAT_0X_LIST: Final = "spanchor-0.x-list"


@dataclass(frozen=True, slots=True)
class RetrievedResult:
    """One ranked item a retriever returned.

    ``text`` is what the retriever handed to the model; ``document_id``/``start``/``end``, when
    known, are hints or explicit spans that the locator verifies against ``text``.
    """

    rank: int
    text: str | None
    score: float | None = None
    document_id: str | None = None
    start: int | None = None
    end: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RetrievalRecord:
    """One retrieval: the query, its ranked results, and how it went.

    ``line`` is where the record was read from (1-based); it is provenance, not content, and is
    ignored by ``==`` so a written-then-read record equals the original.

    Where the retrieval came from, so that evaluation can group the several retrievals one
    question causes (hybrid retrievers, sub-questions, agent tool calls, fallbacks):
    ``source`` names the retriever, tool or graph node; ``stage`` says what the results are
    (see :data:`STAGES`); ``trace_id`` is the root run of the question's trace, ``run_id``
    and ``parent_run_id`` this retrieval's own run and its parent; ``sequence`` orders the
    retrievals of one trace as the recorder saw them start; ``metadata`` holds free-form
    provenance (tags, ``ls_retriever_name``, ...). All optional: files without them keep
    their meaning (one record = one retrieval of its own).
    """

    query_id: str | None
    query: str
    results: tuple[RetrievedResult, ...]
    latency_ms: float | None = None
    error: str | None = None
    source: str | None = None
    stage: Stage | None = None
    trace_id: str | None = None
    run_id: str | None = None
    parent_run_id: str | None = None
    sequence: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    line: int | None = field(default=None, compare=False)


@dataclass(slots=True)
class Run:
    """A run as read: its header, its records in file order, and what the reader noticed.

    ``source_format`` says which file shape it came from (``"spanchor.run"`` or one of the
    spanchor 0.x shapes), so reports can say that a header was synthesised.
    """

    header: RunHeader
    records: list[RetrievalRecord]
    path: Path | None = None
    warnings: list[str] = field(default_factory=list)
    source_format: str = FORMAT_OURS


class RecordFields(NamedTuple):
    """A record as scoring reads it: its provenance and, per result in rank order (a stable
    sort on ``rank``), ``(text, document_id, start, end)``.

    What :meth:`RunStream.fields <spanchor_core.runs.RunStream.fields>` yields instead of a
    :class:`RetrievalRecord`, so that evaluating a large run builds no object per result; the
    values are those of the record (:meth:`of`).
    """

    query_id: str | None
    query: str
    error: str | None
    source: str | None
    stage: str | None
    trace_id: str | None
    sequence: int | None
    line: int | None
    results: list[tuple[str | None, str | None, int | None, int | None]]

    @classmethod
    def of(cls, record: RetrievalRecord) -> RecordFields:
        ranked = sorted(record.results, key=_rank)
        return cls(
            record.query_id,
            record.query,
            record.error,
            record.source,
            record.stage,
            record.trace_id,
            record.sequence,
            record.line,
            [(r.text, r.document_id, r.start, r.end) for r in ranked],
        )


def _rank(result: RetrievedResult) -> int:
    return result.rank
