"""The ``spanchor`` command line, a thin typer layer over the library.

``app`` gathers the commands (one module per group: ``corpus``, ``evaluation``, ``authoring``,
``importers``); ``main`` is the entry point (``spanchor = "spanchor_core.cli:main"``).
"""

from __future__ import annotations

from spanchor_core.cli.app import app, main

__all__ = ["app", "main"]
