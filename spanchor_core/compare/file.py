"""The comparison file (``kind: spanchor.comparison``): its pydantic model, JSON Schema, reader
and writer.

The only part of :mod:`spanchor_core.compare` that touches files: :func:`write_comparison`
turns a :class:`~spanchor_core.compare.model.Comparison` into deterministic JSON and
:func:`read_comparison` reads it back strictly, every problem an
:class:`~spanchor_core.errors.EvaluationFileError` naming the file.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from spanchor_core._io import atomic_write, loads_strict
from spanchor_core._version import __version__
from spanchor_core.compare.model import (
    AggregateChange,
    ChangeStatus,
    Comparison,
    Finding,
    FlakyQuery,
    MetricChange,
    NoiseSummary,
    QueryChange,
    Severity,
    TableSettings,
)
from spanchor_core.errors import EvaluationFileError
from spanchor_core.evaluate.file_fork import Forked, can_fork
from spanchor_core.policy import AggregateGate, Direction, Policy

if TYPE_CHECKING:
    from spanchor_core.diagnosis.model import RegressionDiagnosis

__all__ = [
    "COMPARISON_KIND",
    "COMPARISON_SCHEMA_VERSION",
    "ComparisonFile",
    "comparison_json_schema",
    "read_comparison",
    "write_comparison",
]

COMPARISON_KIND: Final = "spanchor.comparison"
COMPARISON_SCHEMA_VERSION: Final = 2
"""Version 2 added ``diagnosis`` (the causes of each regression); version 1 files still read."""
_READABLE_VERSIONS: Final = (1, 2)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _SettingsModel(_Model):
    k: list[int] | None
    min_overlap: float | None
    corpus_fingerprint: str | None
    gold_sha256: str | None


class _FindingModel(_Model):
    severity: Severity
    code: str
    message: str
    metric: str | None = None
    query_ids: list[str] = []


class _MetricModel(_Model):
    baseline: float
    candidate: float
    delta: float
    status: ChangeStatus | None


class _QueryModel(_Model):
    query_id: str
    status: ChangeStatus
    flaky: bool
    regressed: list[str]
    metrics: dict[str, _MetricModel]


class _AggregateModel(_Model):
    metric: str
    direction: Direction
    n: int
    baseline_mean: float | None
    candidate_mean: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    gate: AggregateGate | None
    gate_passed: bool | None


class _FlakyModel(_Model):
    query_id: str
    bands: dict[str, tuple[float, float]]
    """Gated metric -> ``[lowest, highest]`` value over the baselines."""


class _NoiseModel(_Model):
    """Written only when the baseline was several repeated runs (``compare/noise.py``)."""

    baselines: int
    mean_spread: dict[str, float]
    flaky_queries: list[_FlakyModel]


CauseName = Literal["missing", "unmapped", "split", "rank", "dropped"]


class _CauseBase(_Model):
    cause: CauseName
    """Which cause (each subclass fixes it); written first."""
    document_id: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    """The lost gold characters ``[start, end)``."""
    k: int = Field(ge=1)
    """The cutoff the piece was lost at."""
    rank_before: int = Field(ge=1)
    """The baseline's first rank (``<= k``) overlapping the piece."""


class _MissingCauseModel(_CauseBase):
    cause: Literal["missing"]
    reason: Literal["missing_in_run", "error"]
    error: str | None
    also: list[CauseName]


class _UnmappedCauseModel(_CauseBase):
    cause: Literal["unmapped"]
    unmapped_before: int = Field(ge=0)
    unmapped_after: int = Field(ge=0)
    ranks: list[int]
    also: list[CauseName]


class _SpanModel(_Model):
    document_id: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)


class _SplitCauseModel(_CauseBase):
    cause: Literal["split"]
    evidence: _SpanModel
    """The gold piece the lost characters belong to."""
    boundaries: list[int]
    """Offsets inside the evidence where a candidate result starts or ends."""
    coverage_before: float = Field(ge=0.0, le=1.0)
    coverage_after: float = Field(ge=0.0, le=1.0)
    rank_after: int | None
    also: list[CauseName]


class _RankCauseModel(_CauseBase):
    cause: Literal["rank"]
    rank_after: int = Field(ge=1)
    also: list[CauseName]


class _DroppedCauseModel(_CauseBase):
    cause: Literal["dropped"]
    results: int = Field(ge=0)
    indexed: float | None = Field(ge=0.0, le=1.0)
    also: list[CauseName]


_CauseModel = Annotated[
    _MissingCauseModel
    | _UnmappedCauseModel
    | _SplitCauseModel
    | _RankCauseModel
    | _DroppedCauseModel,
    Field(discriminator="cause"),
]


class _QueryDiagnosisModel(_Model):
    query_id: str
    k: int = Field(ge=1)
    causes: list[_CauseModel]


class _CauseCountsModel(_Model):
    missing: int = Field(ge=0)
    unmapped: int = Field(ge=0)
    split: int = Field(ge=0)
    rank: int = Field(ge=0)
    dropped: int = Field(ge=0)


class _CauseSummaryModel(_Model):
    regressed: int = Field(ge=0)
    queries: _CauseCountsModel
    """Regressed queries by their primary cause."""
    pieces: _CauseCountsModel
    """Every cause of every regressed query."""
    unexplained: int = Field(ge=0)


class _SplitQueryModel(_Model):
    query_id: str
    baseline: float
    candidate: float
    oracle_baseline: float
    oracle_candidate: float


class _MetricSplitModel(_Model):
    metric: str
    n: int = Field(ge=0)
    baseline: float | None
    candidate: float | None
    delta: float | None
    oracle_baseline: float | None
    oracle_candidate: float | None
    chunking: float | None
    """The oracle's change: what the chunking did."""
    ranking: float | None
    """The rest of the change: what the ranking did."""
    queries: list[_SplitQueryModel]


class _DiagnosisModel(_Model):
    summary: _CauseSummaryModel
    note: str | None
    splits: list[_MetricSplitModel]
    queries: list[_QueryDiagnosisModel]


class ComparisonFile(_Model):
    """The comparison file: one JSON object, ``kind`` and ``schema_version`` first."""

    kind: Literal["spanchor.comparison"] = COMPARISON_KIND
    schema_version: Literal[1, 2] = COMPARISON_SCHEMA_VERSION
    spanchor_version: str | None
    passed: bool
    exit_code: int
    seed: int
    counts: dict[str, int]
    """Derived from the rest; written for readers of the file."""
    policy: Policy
    baseline: _SettingsModel
    candidate: _SettingsModel
    findings: list[_FindingModel]
    only_in_baseline: list[str]
    only_in_candidate: list[str]
    aggregates: list[_AggregateModel]
    noise: _NoiseModel | None = None
    """Several baselines: their count, each gated metric's mean spread, the flaky queries."""

    diagnosis: _DiagnosisModel | None = None
    """Why each regressed query regressed (schema_version 2; absent: not diagnosed)."""
    queries: list[_QueryModel]


def comparison_json_schema() -> dict[str, Any]:
    """JSON Schema of the comparison file (``kind: spanchor.comparison``, schema_version 2)."""
    return ComparisonFile.model_json_schema()


def _settings_model(settings: TableSettings) -> _SettingsModel:
    return _SettingsModel(
        k=None if settings.k is None else list(settings.k),
        min_overlap=settings.min_overlap,
        corpus_fingerprint=settings.corpus_fingerprint,
        gold_sha256=settings.gold_sha256,
    )


def _to_file(comparison: Comparison, *, with_queries: bool = True) -> ComparisonFile:
    return ComparisonFile(
        spanchor_version=__version__,
        passed=comparison.passed,
        exit_code=comparison.exit_code,
        seed=comparison.seed,
        counts=comparison.counts,
        policy=comparison.policy,
        baseline=_settings_model(comparison.baseline_settings),
        candidate=_settings_model(comparison.candidate_settings),
        findings=[
            _FindingModel(
                severity=f.severity,
                code=f.code,
                message=f.message,
                metric=f.metric,
                query_ids=list(f.query_ids),
            )
            for f in comparison.findings
        ],
        only_in_baseline=list(comparison.only_in_baseline),
        only_in_candidate=list(comparison.only_in_candidate),
        aggregates=[_AggregateModel(**_aggregate_dict(row)) for row in comparison.aggregates],
        noise=_noise_model(comparison.noise),
        diagnosis=_diagnosis_model(comparison.diagnosis),
        queries=[
            _QueryModel(
                query_id=row.query_id,
                status=row.status,
                flaky=row.flaky,
                regressed=list(row.regressed),
                metrics={
                    c.metric: _MetricModel(
                        baseline=c.baseline, candidate=c.candidate, delta=c.delta, status=c.status
                    )
                    for c in row.changes
                },
            )
            for row in (comparison.queries if with_queries else ())
        ],
    )


def _noise_model(noise: NoiseSummary | None) -> _NoiseModel | None:
    if noise is None:
        return None
    return _NoiseModel(
        baselines=noise.baselines,
        mean_spread=dict(noise.mean_spread),
        flaky_queries=[
            _FlakyModel(query_id=row.query_id, bands={name: (lo, hi) for name, lo, hi in row.bands})
            for row in noise.flaky
        ],
    )


def _noise_summary(model: _NoiseModel | None) -> NoiseSummary | None:
    if model is None:
        return None
    return NoiseSummary(
        model.baselines,
        tuple(
            FlakyQuery(row.query_id, tuple((n, lo, hi) for n, (lo, hi) in row.bands.items()))
            for row in model.flaky_queries
        ),
        tuple(model.mean_spread.items()),
    )


def _diagnosis_model(diagnosis: RegressionDiagnosis | None) -> _DiagnosisModel | None:
    if diagnosis is None:
        return None
    return _DiagnosisModel.model_validate(diagnosis.to_json())


def _aggregate_dict(row: AggregateChange) -> dict[str, Any]:
    return {f.name: getattr(row, f.name) for f in dataclasses.fields(row)}


def _from_file(model: ComparisonFile) -> Comparison:
    def settings(s: _SettingsModel) -> TableSettings:
        return TableSettings(
            None if s.k is None else tuple(s.k), s.min_overlap, s.corpus_fingerprint, s.gold_sha256
        )

    return Comparison(
        passed=model.passed,
        queries=tuple(
            QueryChange(
                q.query_id,
                q.status,
                tuple(
                    MetricChange(name, m.baseline, m.candidate, m.delta, m.status)
                    for name, m in q.metrics.items()
                ),
                tuple(q.regressed),
                q.flaky,
            )
            for q in model.queries
        ),
        aggregates=tuple(
            AggregateChange(
                **{f.name: getattr(a, f.name) for f in dataclasses.fields(AggregateChange)}
            )
            for a in model.aggregates
        ),
        findings=tuple(
            Finding(f.severity, f.code, f.message, f.metric, tuple(f.query_ids))
            for f in model.findings
        ),
        only_in_baseline=tuple(model.only_in_baseline),
        only_in_candidate=tuple(model.only_in_candidate),
        policy=model.policy,
        seed=model.seed,
        baseline_settings=settings(model.baseline),
        candidate_settings=settings(model.candidate),
        noise=_noise_summary(model.noise),
        diagnosis=_read_diagnosis(model.diagnosis),
    )


def _read_diagnosis(model: _DiagnosisModel | None) -> RegressionDiagnosis | None:
    if model is None:
        return None
    # Imported here: the diagnosis package imports this one (it diagnoses comparisons).
    from spanchor_core.diagnosis.model import diagnosis_from_json

    return diagnosis_from_json(model.model_dump(mode="json"))


_string = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) uses


def _number(value: float) -> str:
    """A float as ``json.dumps`` writes one (``float.__repr__``), non-finite refused alike."""
    number = float(value)
    if number != number or number in (math.inf, -math.inf):
        raise ValueError(f"Out of range float values are not JSON compliant: {number!r}")
    return repr(number)


_STATUS_TEXT = {status: _string(status.value) for status in ChangeStatus}
_NAME_TEXT: dict[str, str] = {}
"""Metric names -> their JSON text (the same few on every query)."""
_float_repr = float.__repr__


_FLOAT_TEXT: dict[float, str] = {}
"""Non-zero floats -> their text: the same few hundred values recur over 100,000 queries, and
``repr`` of a float is a shortest-round-trip search (zeros are not kept: 0.0 == -0.0)."""


def _float_text(value: float) -> str:
    """:func:`_number`, with one ``type`` check for the usual finite float."""
    if type(value) is float and value - value == 0.0:  # finite (inf - inf and nan are nan)
        text = _FLOAT_TEXT.get(value)
        if text is None:
            text = _float_repr(value)
            if value and len(_FLOAT_TEXT) < 65536:
                _FLOAT_TEXT[value] = text
        return text
    return _number(value)


def _change_text(change: MetricChange) -> str:
    name = _NAME_TEXT.get(change.metric)
    if name is None:
        name = _string(change.metric)
        if len(_NAME_TEXT) < 1024:
            _NAME_TEXT[change.metric] = name
    status = change.status
    return (
        f"{name}: {{\n"
        f'          "baseline": {_float_text(change.baseline)},\n'
        f'          "candidate": {_float_text(change.candidate)},\n'
        f'          "delta": {_float_text(change.delta)},\n'
        f'          "status": {"null" if status is None else _STATUS_TEXT[status]}\n'
        "        }"
    )


def _query_text(row: QueryChange) -> str:
    """One query as ``json.dumps(..., indent=2)`` writes it inside ``"queries"`` (depth 2).

    Written by hand because ``indent`` makes the standard library use its pure-Python encoder,
    seconds at 100,000 queries; the bytes are the same (checked by the tests).
    """
    if row.regressed:
        regressed = (
            "[\n        "
            + ",\n        ".join(_string(name) for name in row.regressed)
            + "\n      ]"
        )
    else:
        regressed = "[]"
    changes = row.changes
    if len(changes) == 1:
        metrics = "{\n        " + _change_text(changes[0]) + "\n      }"
    elif changes:
        metrics = (
            "{\n        "
            + ",\n        ".join(map(_change_text, {c.metric: c for c in changes}.values()))
            + "\n      }"
        )
    else:
        metrics = "{}"
    return (
        "{\n"
        f'      "query_id": {_string(row.query_id)},\n'
        f'      "status": {_STATUS_TEXT[row.status]},\n'
        f'      "flaky": {"true" if row.flaky else "false"},\n'
        f'      "regressed": {regressed},\n'
        f'      "metrics": {metrics}\n'
        "    }"
    )


def write_comparison(comparison: Comparison, path: str | os.PathLike[str]) -> None:
    """Write ``comparison`` as JSON, atomically (a temporary file, then a rename).

    The bytes depend only on the comparison: fixed key order, queries sorted by id, floats in
    their shortest round-tripping form, no timestamp. Everything but the queries goes through
    the file model; the queries, nearly all of a large file, are written by
    :func:`_query_text` in the same bytes ``json.dumps(indent=2)`` gives them.
    """
    collecting = gc.isenabled()
    gc.disable()  # the texts of every query and the head's model, none cyclic
    try:
        text = _comparison_text(comparison)
    finally:
        if collecting:
            gc.enable()
    atomic_write(Path(path), text, error=EvaluationFileError, what="the comparison")


def _comparison_text(comparison: Comparison) -> str:
    """The file's text. Of many queries, their text is written on a forked child while this
    process writes the head (:mod:`~spanchor_core.evaluate.file_fork`); here instead when
    the child gives no answer: the same text either way."""
    queries = comparison.queries
    helper = (
        Forked(functools.partial(_queries_text, queries))
        if len(queries) >= _FORK_QUERIES and can_fork()
        else None
    )
    try:
        data = _to_file(comparison, with_queries=False).model_dump(mode="json")
        head = json.dumps(
            data,
            indent=2,
            ensure_ascii=False,
            allow_nan=False,
        )
        answer = None if helper is None else helper.result()
        helper = None
    finally:
        if helper is not None:
            helper.close()
    if not queries:
        return head + "\n"
    tail = '"queries": []\n}'
    if not head.endswith(tail):  # pragma: no cover - the model puts queries last
        raise AssertionError("the comparison model no longer ends with its queries")
    rows = _queries_text(queries) if answer is None else answer[0]
    return "".join((head[: -len(tail)], '"queries": [\n    ', rows, "\n  ]\n}\n"))


_FORK_QUERIES: Final = 20_000
"""Queries from which their text is written on a forked child."""


def _queries_text(queries: Sequence[QueryChange]) -> str:
    """The queries' objects inside ``"queries": [...]``, one after the other."""
    return ",\n    ".join(map(_query_text, queries))


def read_comparison(path: str | os.PathLike[str]) -> Comparison:
    """Read a file written by :func:`write_comparison`."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise EvaluationFileError(f"cannot read the comparison: {err}", path=source) from None
    data = loads_strict(text, path=source, error=EvaluationFileError)
    if not isinstance(data, dict) or data.get("kind") != COMPARISON_KIND:
        kind = data.get("kind") if isinstance(data, dict) else None
        raise EvaluationFileError(
            f"not a comparison file (kind {kind!r}, expected {COMPARISON_KIND!r})", path=source
        )
    version = data.get("schema_version")
    if type(version) is not int or version not in _READABLE_VERSIONS:
        raise EvaluationFileError(
            f"unsupported comparison schema_version {version!r}",
            path=source,
            hint=f"this spanchor reads schema_version {' and '.join(map(str, _READABLE_VERSIONS))}",
        )
    if version == 1 and "diagnosis" in data:
        raise EvaluationFileError(
            "diagnosis: not part of schema_version 1 (it came with version 2)", path=source
        )
    try:
        model = ComparisonFile.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise EvaluationFileError(f"{where}: {first['msg']}", path=source) from None
    except UnicodeEncodeError as err:  # pydantic cannot report a value UTF-8 cannot hold
        raise EvaluationFileError(
            f"holds a lone surrogate U+{ord(err.object[err.start]):04X}, which UTF-8 cannot hold",
            path=source,
            hint="write comparison files with spanchor compare -o",
        ) from None
    return _from_file(model)
