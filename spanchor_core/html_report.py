"""Transitional shim: the HTML report now lives in :mod:`spanchor_core.render.html` (pages,
SVG charts, evidence in context) and :mod:`spanchor_core.render.series` (the data behind the
charts). Import from there; this module goes away after issue 15.
"""

from __future__ import annotations

from spanchor_core.render.files import write_html
from spanchor_core.render.html import (
    DEFAULT_CONTEXT_CHARS,
    DEFAULT_HTML_LIMIT,
    comparison_html,
    comparison_summary_html,
    evaluation_html,
    evaluation_summary_html,
)
from spanchor_core.render.series import (
    DELTA_COLOURS,
    SERIES_COLOURS,
    DeltaKind,
    QueryDelta,
    metric_curve,
    primary_metric,
    query_deltas,
)

__all__ = [
    "DEFAULT_CONTEXT_CHARS",
    "DEFAULT_HTML_LIMIT",
    "DELTA_COLOURS",
    "SERIES_COLOURS",
    "DeltaKind",
    "QueryDelta",
    "comparison_html",
    "comparison_summary_html",
    "evaluation_html",
    "evaluation_summary_html",
    "metric_curve",
    "primary_metric",
    "query_deltas",
    "write_html",
]
