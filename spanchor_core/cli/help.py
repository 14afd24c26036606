"""How every ``spanchor`` command presents itself: ``-h`` as well as ``--help``, flags shown
without a ``<bool>`` type, arguments shown by their upper-case names in usage lines, variadic
arguments by their metavar alone, and option values by a plain upper-case word.

typer 0.29 renders each option's type next to it (``--quiet <bool>``, ``--policy <path>``) and
wraps required arguments in braces in the usage line (``{DOCS}``), which reads like a set to
choose from; :class:`SpanchorGroup` walks the command tree once, when typer builds it, gives
each flag an empty metavar, each valued option a word (``PATH``, ``FLOAT``, ``INT``,
``TEXT``) and each argument its bare name (``DOCS``, or ``[DOCS]`` when optional), as click
itself writes them.
"""

from __future__ import annotations

import re
from typing import Any

from typer.core import TyperGroup

__all__ = ["CONTEXT_SETTINGS", "SpanchorGroup", "tidy_command"]

CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}
"""The root's context settings; every subcommand's context inherits its help options."""


def tidy_command(command: Any) -> None:
    """Give ``command`` and every command below it clean help: flags without a type, and
    arguments named in upper case (``DOCS`` rather than ``{docs}``)."""
    for param in command.params:
        if param.param_type_name == "argument" and param.nargs != 1:
            _tidy_variadic(param)
        elif param.param_type_name == "argument":
            _tidy_single(param)
        if param.metavar is not None:
            continue
        if param.param_type_name == "option" and (param.is_flag or param.count):
            param.metavar = ""
        elif param.param_type_name == "option":
            _tidy_valued(param)
        elif param.param_type_name == "argument" and param.name:
            param.metavar = param.name.upper()
    _tidy_help_option(command)
    for sub in getattr(command, "commands", {}).values():
        tidy_command(sub)


def _tidy_variadic(argument: Any) -> None:
    # A variadic argument's metavar says what it takes (``[QUESTION] DOCS TEXT``): the usage
    # line shows it as written, and the help shows no ``<list[str]>`` type next to it.
    if argument.metavar is not None:
        usage = argument.metavar
    else:
        name = (argument.name or "").upper()
        usage = f"{name}..." if argument.required else f"[{name}]..."
    argument.get_usage_pieces = lambda ctx: [usage]
    argument.display_type_rich = lambda ctx: None


def _tidy_single(argument: Any) -> None:
    # ``DOCS`` in the usage line (``[DOCS]`` when it may be left out), and no ``<path>`` type
    # beside the argument's name in the help: the name says what it is.
    def pieces(ctx: Any) -> list[str]:
        name = argument.metavar or (argument.name or "").upper()
        return [name if argument.required else f"[{name}]"]

    argument.get_usage_pieces = pieces
    argument.display_type_rich = lambda ctx: None


_TYPE_WORD = re.compile(r"<([a-z]+)")


def _tidy_valued(option: Any) -> None:
    # typer's label for the value is ``<path>``, ``<float>``, ``<int range>``: keep its first
    # word, upper-cased, the way click names a value (``PATH``, ``FLOAT``, ``INT``).
    shown = option.display_type_rich

    def word(ctx: Any) -> str | None:
        label = shown(ctx)
        if label is None:
            return None
        found = _TYPE_WORD.match(str(label))
        if found is None:
            return str(label)
        return "TEXT" if found.group(1) == "str" else found.group(1).upper()

    option.display_type_rich = word


def _tidy_help_option(command: Any) -> None:
    # the help option is made lazily, per command, from the context's help option names
    made = command.get_help_option

    def get_help_option(ctx: Any) -> Any:
        option = made(ctx)
        if option is not None and option.metavar is None:
            option.metavar = ""
        return option

    command.get_help_option = get_help_option


class SpanchorGroup(TyperGroup):
    """The root command group: tidies the help of every command it holds."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tidy_command(self)
