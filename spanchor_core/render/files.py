"""The one place rendering touches the file system: writing a finished report, atomically.

Every renderer returns a string; these edge functions write it through
:func:`spanchor_core._io.atomic_write`, so a CI step that reads a report while it is being
written, or a job killed mid-write, sees the old report or the new one, never half of one.
"""

from __future__ import annotations

import os

from spanchor_core._io import atomic_write

__all__ = ["write_html", "write_report"]


def write_report(text: str, path: str | os.PathLike[str], *, what: str = "the report") -> None:
    """Write a rendered report (Markdown, JUnit XML, HTML) to ``path`` as UTF-8, atomically.

    ``what`` names the file in the error raised when it cannot be written.
    """
    atomic_write(path, text, what=what)


def write_html(text: str, path: str | os.PathLike[str]) -> None:
    """:func:`write_report` for an HTML page (the error says "the HTML report")."""
    write_report(text, path, what="the HTML report")
