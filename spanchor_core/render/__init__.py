"""Rendering: evaluations and comparisons as Markdown, JUnit XML, plain summary lines, HTML
pages (with inline SVG charts) and optional matplotlib figures, over shared text helpers.

Every renderer is a pure function returning a string; the ``write_*`` functions of
:mod:`.files` are the only ones that touch a file. Modules: :mod:`.text` (the helpers every
format shares: escaping, formatting, the lost-evidence rule, the metric × K grid),
:mod:`.markdown`, :mod:`.junit`, :mod:`.summary`, :mod:`.html` (a package), :mod:`.series`
(the data behind the charts), :mod:`.plots` (matplotlib, imported only when called) and
:mod:`.files`. Rendering imports the models (evaluate, compare); the models never import it.

The names are imported from their modules when first used (PEP 562 ``__getattr__``): the
terminal table of ``spanchor evaluate`` (:mod:`.terminal`) loads no HTML, JUnit or
comparison renderer.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spanchor_core.render.files import write_html, write_report
    from spanchor_core.render.html import (
        DEFAULT_CONTEXT_CHARS,
        DEFAULT_HTML_LIMIT,
        comparison_html,
        comparison_summary_html,
        evaluation_html,
        evaluation_summary_html,
    )
    from spanchor_core.render.junit import comparison_junit
    from spanchor_core.render.markdown import (
        DEFAULT_EXCERPT_CHARS,
        DEFAULT_LIST_LIMIT,
        comparison_markdown,
        evaluation_markdown,
    )
    from spanchor_core.render.plots import plot_query_deltas, plot_recall_at_k
    from spanchor_core.render.series import (
        DELTA_COLOURS,
        SERIES_COLOURS,
        DeltaKind,
        QueryDelta,
        metric_curve,
        primary_metric,
        query_deltas,
    )
    from spanchor_core.render.summary import comparison_summary_lines, evaluation_summary_lines
    from spanchor_core.render.text import (
        RegressionEvidence,
        escape_control,
        evidence_depth,
        lost_evidence,
        markdown_escape,
        regression_evidence,
    )

__all__ = [
    "DEFAULT_CONTEXT_CHARS",
    "DEFAULT_EXCERPT_CHARS",
    "DEFAULT_HTML_LIMIT",
    "DEFAULT_LIST_LIMIT",
    "DELTA_COLOURS",
    "SERIES_COLOURS",
    "DeltaKind",
    "QueryDelta",
    "RegressionEvidence",
    "comparison_html",
    "comparison_junit",
    "comparison_markdown",
    "comparison_summary_html",
    "comparison_summary_lines",
    "escape_control",
    "evaluation_html",
    "evaluation_markdown",
    "evaluation_summary_html",
    "evaluation_summary_lines",
    "evidence_depth",
    "lost_evidence",
    "markdown_escape",
    "metric_curve",
    "plot_query_deltas",
    "plot_recall_at_k",
    "primary_metric",
    "query_deltas",
    "regression_evidence",
    "write_html",
    "write_report",
]

_EXPORTS: dict[str, str] = {
    "spanchor_core.render.files": "write_html write_report",
    "spanchor_core.render.html": (
        "DEFAULT_CONTEXT_CHARS DEFAULT_HTML_LIMIT comparison_html comparison_summary_html "
        "evaluation_html evaluation_summary_html"
    ),
    "spanchor_core.render.junit": "comparison_junit",
    "spanchor_core.render.markdown": (
        "DEFAULT_EXCERPT_CHARS DEFAULT_LIST_LIMIT comparison_markdown evaluation_markdown"
    ),
    "spanchor_core.render.plots": "plot_query_deltas plot_recall_at_k",
    "spanchor_core.render.series": (
        "DELTA_COLOURS SERIES_COLOURS DeltaKind QueryDelta metric_curve primary_metric query_deltas"
    ),
    "spanchor_core.render.summary": "comparison_summary_lines evaluation_summary_lines",
    "spanchor_core.render.text": (
        "RegressionEvidence escape_control evidence_depth lost_evidence markdown_escape "
        "regression_evidence"
    ),
}
_MODULE_OF: dict[str, str] = {
    name: module for module, names in _EXPORTS.items() for name in names.split()
}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        if not name.startswith("__"):  # a module of this package, as when it imported them all
            try:
                return importlib.import_module(f"{__name__}.{name}")
            except ModuleNotFoundError as err:
                if err.name != f"{__name__}.{name}":
                    raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
