"""Transitional: the gate moved to :mod:`spanchor_core.settings` (``[tool.spanchor]``) and
:mod:`spanchor_core.pipeline` (paths -> evaluations -> comparison -> exit code).

Kept so that code written against ``spanchor_core.gate`` keeps working; import from the new
modules instead.
"""

from __future__ import annotations

from spanchor_core.exit_codes import ExitCode
from spanchor_core.pipeline import BAD_INPUT_FINDINGS, GateOutcome, file_kind, load_side, run_gate
from spanchor_core.settings import GateConfig, gate_config_from_pyproject

__all__ = [
    "BAD_INPUT_FINDINGS",
    "EXIT_BAD_INPUT",
    "EXIT_OK",
    "EXIT_REGRESSION",
    "EXIT_UNMAPPED",
    "GateConfig",
    "GateOutcome",
    "file_kind",
    "gate_config_from_pyproject",
    "load_side",
    "run_gate",
]

# transitional: the old names of spanchor_core.exit_codes.ExitCode
EXIT_OK = ExitCode.PASS
EXIT_REGRESSION = ExitCode.REGRESSION
EXIT_BAD_INPUT = ExitCode.BAD_INPUT
EXIT_UNMAPPED = ExitCode.UNTRUSTED
