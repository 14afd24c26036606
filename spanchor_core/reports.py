"""Transitional shim: the Markdown, JUnit and plain-line reports now live in
:mod:`spanchor_core.render` (``render.markdown``, ``render.junit``, ``render.summary``,
``render.text``, ``render.files``). Import from there; this module goes away after issue 15.
"""

from __future__ import annotations

from spanchor_core.render.files import write_report
from spanchor_core.render.junit import comparison_junit
from spanchor_core.render.markdown import (
    DEFAULT_EXCERPT_CHARS,
    DEFAULT_LIST_LIMIT,
    comparison_markdown,
    evaluation_markdown,
)
from spanchor_core.render.summary import comparison_summary_lines, evaluation_summary_lines
from spanchor_core.render.text import lost_evidence, markdown_escape

__all__ = [
    "DEFAULT_EXCERPT_CHARS",
    "DEFAULT_LIST_LIMIT",
    "comparison_junit",
    "comparison_markdown",
    "comparison_summary_lines",
    "evaluation_markdown",
    "evaluation_summary_lines",
    "lost_evidence",
    "markdown_escape",
    "write_report",
]
