"""Scoring a run against a gold set, and the evaluation that results.

``model`` holds :class:`Evaluation` and its parts; ``checks`` and ``scoring`` the logic (no file
I/O); ``run_file`` scores a run file as it is read; ``file`` is the evaluation file format and
``legacy`` the spanchor 0.x evaluation reader. The rules of scoring are in
:mod:`spanchor_core.evaluate.scoring`.
"""

from __future__ import annotations

from spanchor_core.evaluate.checks import check_gold, check_run_provenance
from spanchor_core.evaluate.file import (
    EvaluationFile,
    evaluation_json_schema,
    read_evaluation,
    write_evaluation,
)
from spanchor_core.evaluate.model import (
    EVALUATION_KIND,
    EVALUATION_SCHEMA_VERSION,
    Evaluation,
    EvaluationSettings,
    LocatedResult,
    MappingStats,
    MetricSummary,
    ProgressCallback,
    QueryEvaluation,
    QueryStatus,
)
from spanchor_core.evaluate.run_file import evaluate_file
from spanchor_core.evaluate.scoring import evaluate, evaluate_stream

__all__ = [
    "EVALUATION_KIND",
    "EVALUATION_SCHEMA_VERSION",
    "Evaluation",
    "EvaluationFile",
    "EvaluationSettings",
    "LocatedResult",
    "MappingStats",
    "MetricSummary",
    "ProgressCallback",
    "QueryEvaluation",
    "QueryStatus",
    "check_gold",
    "check_run_provenance",
    "evaluate",
    "evaluate_file",
    "evaluate_stream",
    "evaluation_json_schema",
    "read_evaluation",
    "write_evaluation",
]
