"""HTML reports: a comparison or an evaluation as one self-contained page (inline CSS and SVG,
no JavaScript, no external URL), and compact fragments for notebook display.

Modules: :mod:`.page` (skeleton and shared parts), :mod:`.svg` (charts), :mod:`.evidence`
(evidence in its source context), :mod:`.comparison` and :mod:`.evaluation` (the two pages).
"""

from __future__ import annotations

from spanchor_core.render.html.comparison import (
    DEFAULT_HTML_LIMIT,
    comparison_html,
    comparison_summary_html,
)
from spanchor_core.render.html.evaluation import evaluation_html, evaluation_summary_html
from spanchor_core.render.html.evidence import DEFAULT_CONTEXT_CHARS

__all__ = [
    "DEFAULT_CONTEXT_CHARS",
    "DEFAULT_HTML_LIMIT",
    "comparison_html",
    "comparison_summary_html",
    "evaluation_html",
    "evaluation_summary_html",
]
