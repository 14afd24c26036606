"""The exit codes of every spanchor command, and the one rule that combines them.

A CI job reads nothing but the exit code, so there is exactly one table and one precedence:
bad input or usage (2) outranks a run that cannot be trusted (3), which outranks a regression
(1), which outranks a pass (0). A verdict printed anywhere is derived from the same value.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode", "combine_exit_codes"]


class ExitCode(IntEnum):
    """What a command's exit status means (spanchor 0.x used the same numbers)."""

    PASS = 0
    """No regression, every input usable: the gate passes."""
    REGRESSION = 1
    """The candidate regressed (or another failing finding of the policy)."""
    BAD_INPUT = 2
    """Bad input or usage: a file, a flag, an invalid comparison."""
    UNTRUSTED = 3
    """A run cannot be trusted: incomplete, or too many results unmapped."""


# Higher number = wins when several outcomes apply at once.
_PRECEDENCE = {
    ExitCode.PASS: 0,
    ExitCode.REGRESSION: 1,
    ExitCode.UNTRUSTED: 2,
    ExitCode.BAD_INPUT: 3,
}


def combine_exit_codes(*codes: int) -> ExitCode:
    """The code a command exits with when several outcomes apply: 2 > 3 > 1 > 0.

    >>> combine_exit_codes(1, 3)
    <ExitCode.UNTRUSTED: 3>
    >>> combine_exit_codes()
    <ExitCode.PASS: 0>
    """
    if not codes:
        return ExitCode.PASS
    return max((ExitCode(code) for code in codes), key=_PRECEDENCE.__getitem__)
