"""Reading spanchor 0.x evaluations (the ``Run`` file of schema 0.1.0 / 0.2.0 and its JSON
report) into an :class:`~spanchor_core.evaluate.model.Evaluation`.

0.x kept per-query metrics but no result spans; the evaluation read here says so in its
``settings.source_format`` (``spanchor-0.x/<schema>``), which survives a rewrite.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from spanchor_core._io import describe_validation_error
from spanchor_core.errors import EvaluationFileError, InputError
from spanchor_core.evaluate.model import (
    _STATUSES,
    Evaluation,
    EvaluationSettings,
    MappingStats,
    QueryEvaluation,
)
from spanchor_core.locate import MatchStatus
from spanchor_core.metrics import DEFAULT_K, DEFAULT_MIN_OVERLAP, check_k, check_min_overlap
from spanchor_core.spans import DocSpan

__all__ = ["LEGACY_FORMAT_PREFIX", "evaluation_from_0x", "is_0x_evaluation"]

LEGACY_FORMAT_PREFIX = "spanchor-0.x/"
"""``settings.source_format`` of an evaluation read from a spanchor 0.x file."""


def is_0x_evaluation(data: Mapping[str, Any]) -> bool:
    """Whether a JSON object without ``kind`` is a 0.x evaluation (it has per-query metrics)."""
    return "per_query_metrics" in data and "schema_version" in data


# spanchor 0.x wrote its mapper statuses in capitals; these are the same outcomes.
_OLD_STATUSES = {
    "MAPPED_EXACT": MatchStatus.EXACT.value,
    "MAPPED_NORMALIZED": MatchStatus.NORMALISED.value,
    "MAPPED_FUZZY": MatchStatus.FUZZY.value,
    "AMBIGUOUS": MatchStatus.AMBIGUOUS.value,
    "UNMAPPED": MatchStatus.UNMAPPED.value,
}


class _OldAnchor(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)  # built for 0.x files only
    document_id: str
    start: int
    end: int


class _OldQuery(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)  # built for 0.x files only
    query_id: str
    anchors: list[_OldAnchor] = []


class _OldEvaluation(BaseModel):
    """spanchor 0.x evaluation (``Run``) file, schema 0.1.0 / 0.2.0, and its JSON report."""

    model_config = ConfigDict(extra="ignore", defer_build=True)  # built for 0.x files only
    schema_version: str
    timestamp: str | None = None
    queries: list[_OldQuery] = []
    per_query_metrics: dict[str, dict[str, Any]]
    config: dict[str, Any] = {}
    mapper_stats: dict[str, int] = {}
    corpus_hash: str | None = None
    gold_set_hash: str | None = None


def _old_metrics(qid: str, raw: Mapping[str, Any], path: Path) -> dict[str, float]:
    # The 0.x JSON report nests the values under "metrics"; the Run file does not.
    values = raw["metrics"] if isinstance(raw.get("metrics"), dict) else raw
    metrics: dict[str, float] = {}
    for name, value in values.items():
        if name == "question":
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise EvaluationFileError(
                f"per_query_metrics[{qid!r}][{name!r}] is not a number", path=path
            )
        metrics[name] = float(value)
    return metrics


def evaluation_from_0x(data: Mapping[str, Any], path: Path) -> Evaluation:
    """The evaluation a parsed 0.x file holds; :class:`EvaluationFileError` naming ``path``."""
    try:
        old = _OldEvaluation.model_validate(data)
    except ValidationError as err:
        raise EvaluationFileError(
            f"not a valid spanchor 0.x evaluation: {describe_validation_error(err)}", path=path
        ) from None
    gold = {
        q.query_id: tuple(DocSpan(a.document_id, a.start, a.end) for a in q.anchors)
        for q in old.queries
    }
    counts = dict.fromkeys(_STATUSES, 0)
    for name, n in old.mapper_stats.items():
        status = _OLD_STATUSES.get(name, name.lower())
        counts[status] = counts.get(status, 0) + n
    queries: dict[str, QueryEvaluation] = {}
    names: dict[str, None] = {}  # every name any query has, in first-seen order
    for qid, raw in old.per_query_metrics.items():
        metrics = _old_metrics(qid, raw, path)
        if len(metrics) != len(names) or not names.keys() <= metrics.keys():
            names.update(dict.fromkeys(metrics))
        queries[qid] = QueryEvaluation(query_id=qid, metrics=metrics, gold=gold.get(qid, ()))
    for qid, query in queries.items():
        if len(query.metrics) >= len(names) and names.keys() <= query.metrics.keys():
            continue
        absent = [name for name in names if name not in query.metrics]
        if absent:
            raise EvaluationFileError(f"query {qid!r} lacks {', '.join(absent)}", path=path)
    config = old.config
    raw_k = config.get("k_values", config.get("k", DEFAULT_K))
    try:
        ks = check_k([raw_k] if isinstance(raw_k, int) else list(raw_k))
        overlap = check_min_overlap(config.get("min_overlap", DEFAULT_MIN_OVERLAP))
    except (InputError, TypeError, ValueError) as err:
        raise EvaluationFileError(
            f"bad config in spanchor 0.x evaluation: {err}", path=path
        ) from None
    return Evaluation(
        queries=queries,
        settings=EvaluationSettings(
            k=ks,
            min_overlap=overlap,
            corpus_fingerprint=old.corpus_hash,
            gold_sha256=old.gold_set_hash,
            spanchor_version=None,
            created_at=old.timestamp,
            source_format=f"{LEGACY_FORMAT_PREFIX}{old.schema_version}",
        ),
        metric_names=tuple(names),
        mapping=MappingStats(counts),  # 0.x kept run-wide counts only, none per query
        warnings=(
            "read from a spanchor 0.x evaluation: its recall, precision, hit and IoU compared "
            "offsets across documents; evaluate the run again to compare like with like",
        ),
    )
