"""HTML reports: a comparison or an evaluation as one self-contained page (inline CSS and SVG,
no JavaScript, no external URL), and compact fragments for notebook display.

Modules: :mod:`.page` (skeleton and shared parts), :mod:`.svg` (charts), :mod:`.evidence`
(evidence in its source context), :mod:`.comparison` and :mod:`.evaluation` (the two pages).
Importing this package registers the notebook fragments (:mod:`spanchor_core._display`) that
``Evaluation._repr_html_`` and ``Comparison._repr_html_`` show.
"""

from __future__ import annotations

from spanchor_core import _display
from spanchor_core.compare import Comparison
from spanchor_core.evaluate import Evaluation
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

_display.register(Evaluation, evaluation_summary_html)
_display.register(Comparison, comparison_summary_html)
