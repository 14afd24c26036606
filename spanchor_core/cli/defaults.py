"""The values the command line shows before any command runs: option defaults and choices.

typer reads every command's annotations and defaults when it builds the app, so whatever they
name must be importable without the library (numpy, pydantic and the models cost most of a
second, which ``spanchor --help`` should not pay). The library's own constants live in
modules that bring those in; this module restates the few the options need, and
``tests/test_cli_startup.py`` checks that each equals the library's.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = ["CANDIDATE_STATUSES", "DEFAULT_K_TEXT", "DEFAULT_MIN_OVERLAP", "GoldHashChoice"]

DEFAULT_K_TEXT: Final = "1,3,5,10"
"""The default of ``--k``, as it is typed: :data:`spanchor_core.metrics.DEFAULT_K`."""

DEFAULT_MIN_OVERLAP: Final = 0.5
"""The default of ``--min-overlap``: :data:`spanchor_core.metrics.DEFAULT_MIN_OVERLAP`."""

CANDIDATE_STATUSES: Final = ("pending", "approved", "rejected")
"""The values of :class:`spanchor_core.authoring.CandidateStatus`, in their order."""


class GoldHashChoice(StrEnum):
    """``--corpus-mismatch-policy``: the values of :class:`spanchor_core.pipeline.GoldHashPolicy`
    (the command turns the choice into the library's enum before it calls the pipeline)."""

    WARN = "warn"
    FAIL = "fail"
    IGNORE = "ignore"
