"""How the ``spanchor`` command ends: errors become one line on stderr and an exit code.

Errors the user can fix (:class:`~spanchor_core.errors.SpanchorError`) and bugs of ours both
exit :attr:`~spanchor_core.exit_codes.ExitCode.BAD_INPUT` (a bug must never pass for a pass);
``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import typer

from spanchor_core.errors import SpanchorError
from spanchor_core.exit_codes import ExitCode

__all__ = [
    "error_exit_code",
    "exit_status",
    "is_usage_error",
    "usage_error_exit_code",
    "wants_debug",
]

_ROOT_FLAGS = frozenset({"--debug", "--version", "--help", "-h"})


def wants_debug(args: Sequence[str]) -> bool:
    """Whether ``--debug`` is among the root options (those before the command name)."""
    for arg in args:
        if arg not in _ROOT_FLAGS:
            return False
        if arg == "--debug":
            return True
    return False


def exit_status(done: SystemExit) -> int:
    """The exit code of a ``SystemExit`` raised by click (a message means a usage error)."""
    code = done.code
    if isinstance(code, int):
        return code
    return ExitCode.PASS if code is None else ExitCode.BAD_INPUT


def error_exit_code(err: Exception) -> ExitCode:
    """Print ``err`` as one line on stderr and return the exit code it stands for."""
    from spanchor_core._escape import escape_control

    if isinstance(err, SpanchorError):
        print(f"spanchor: error: {escape_control(str(err))}", file=sys.stderr)
    else:  # a bug of ours: still one line, and never mistaken for a pass
        print(
            f"spanchor: internal error: {type(err).__name__}: {escape_control(str(err))} "
            "(run again with --debug for the traceback, and please report it)",
            file=sys.stderr,
        )
    return ExitCode.BAD_INPUT


def is_usage_error(err: Exception) -> bool:
    """Whether ``err`` is the command line's own complaint (typer's usage errors, an abort)."""
    return isinstance(err, (typer.TyperException, typer.Abort))


def usage_error_exit_code(err: Exception) -> int:
    """Print a usage error as one line on stderr and return its exit code (2).

    Running a group with no arguments is not an error: its help is printed, as typer does.
    """
    if isinstance(err, typer.Abort):
        print("spanchor: aborted", file=sys.stderr)
        return ExitCode.BAD_INPUT
    ctx: Any = getattr(err, "ctx", None)
    if type(err).__name__ == "NoArgsIsHelpError":  # typer keeps this class private
        getattr(err, "show")()  # noqa: B009 - the help, on stderr, as typer prints it
        return ExitCode.BAD_INPUT
    if not isinstance(err, typer.TyperException):
        return error_exit_code(err)
    from spanchor_core._escape import escape_control

    message = " ".join(err.format_message().split()).rstrip(".")
    command = ctx.command_path if ctx is not None else "spanchor"
    print(
        f"spanchor: usage error: {escape_control(message)}; see {command} --help",
        file=sys.stderr,
    )
    code = getattr(err, "exit_code", ExitCode.BAD_INPUT)
    return code if isinstance(code, int) else ExitCode.BAD_INPUT
