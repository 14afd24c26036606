"""Every flag a message of spanchor names exists: a hint may not send a user to an option
that no command has (issue 14: "pass --allow-mismatch" to a ``gate`` without it)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer.main

from spanchor_core.cli import app
from spanchor_core.testing.config import CONFIG, SETTINGS

PACKAGE = Path(__file__).resolve().parents[1] / "spanchor_core"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


def _options(command: Any) -> Iterator[str]:
    # typer 0.29 vendors click (typer._click), so the tree is walked by its attributes
    for param in command.params:
        if param.param_type_name == "option":
            yield from param.opts
            yield from param.secondary_opts
    for sub in getattr(command, "commands", {}).values():
        yield from _options(sub)


def cli_flags() -> frozenset[str]:
    """Every long option of every ``spanchor`` command (and of the root)."""
    return frozenset(flag for flag in _options(typer.main.get_command(app)) if flag[:2] == "--")


def _literals(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def named_flags() -> Iterator[tuple[str, str]]:
    """``(where, flag)`` for each ``--flag`` in a string literal of spanchor_core."""
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, text in _literals(ast.parse(path.read_text(encoding="utf-8"))):
            for flag in FLAG.findall(text):
                yield f"{path.relative_to(PACKAGE.parent)}:{line}", flag


def test_the_scan_sees_the_messages() -> None:
    flags = {flag for _, flag in named_flags()}
    assert {"--allow-mismatch", "--occurrence", "--glob", "--debug"} <= flags


def test_every_flag_a_message_names_exists() -> None:
    known = cli_flags() | {"--help"} | {s.option for s in SETTINGS.values()} | {CONFIG.option}
    missing = sorted({f"{where}: {flag}" for where, flag in named_flags() if flag not in known})
    assert not missing, "messages name flags that no command has:\n" + "\n".join(missing)


def test_gate_and_compare_take_allow_mismatch() -> None:
    commands = getattr(typer.main.get_command(app), "commands", {})
    for name in ("gate", "compare", "evaluate"):
        assert "--allow-mismatch" in set(_options(commands[name]))
