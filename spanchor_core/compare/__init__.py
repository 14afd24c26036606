"""Comparing a baseline evaluation with a candidate under a :class:`~spanchor_core.policy.Policy`.

``model`` holds what a comparison reads (:class:`MetricTable`) and returns
(:class:`Comparison`); ``classify`` holds :func:`compare`, the per-query classification,
findings and verdict; ``statistics`` the paired bootstrap and sign-flip test; ``file`` the
comparison file. Only ``file`` does I/O.
"""

from __future__ import annotations

from spanchor_core.compare.classify import compare
from spanchor_core.compare.file import (
    COMPARISON_KIND,
    COMPARISON_SCHEMA_VERSION,
    ComparisonFile,
    comparison_json_schema,
    read_comparison,
    write_comparison,
)
from spanchor_core.compare.model import (
    BAD_INPUT_FINDINGS,
    UNTRUSTED_FINDINGS,
    AggregateChange,
    ChangeStatus,
    Comparison,
    Coverage,
    Finding,
    MappingMetricTable,
    MetricChange,
    MetricTable,
    MetricTableSettings,
    QueryChange,
    Severity,
    TableSettings,
)
from spanchor_core.compare.statistics import PairedStatistics, paired_statistics

__all__ = [
    "BAD_INPUT_FINDINGS",
    "COMPARISON_KIND",
    "COMPARISON_SCHEMA_VERSION",
    "UNTRUSTED_FINDINGS",
    "AggregateChange",
    "ChangeStatus",
    "Comparison",
    "ComparisonFile",
    "Coverage",
    "Finding",
    "MappingMetricTable",
    "MetricChange",
    "MetricTable",
    "MetricTableSettings",
    "PairedStatistics",
    "QueryChange",
    "Severity",
    "TableSettings",
    "compare",
    "comparison_json_schema",
    "paired_statistics",
    "read_comparison",
    "write_comparison",
]
