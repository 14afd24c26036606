"""Help and usage: ``-h`` everywhere, flags without ``<bool>``, lists with a metavar, and
usage errors in one line."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import typer.main

from spanchor_core.cli import app, main


def _paths(command: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield prefix
    for name, sub in getattr(command, "commands", {}).items():
        yield from _paths(sub, (*prefix, name))


COMMANDS = sorted(_paths(typer.main.get_command(app)))


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "spanchor")
def test_every_command_takes_dash_h_and_renders_clean_help(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*path, "-h"]) == 0
    out = capsys.readouterr().out
    assert "Usage: spanchor" in out
    assert "<bool>" not in out
    assert "<list[" not in out
    usage = next(line for line in out.splitlines() if "Usage: spanchor" in line)
    assert "{" not in usage, usage  # typer's braces around required arguments
    for typed in ("<path>", "<float>", "<int", "<str>"):
        assert typed not in out, typed
    assert main([*path, "--help"]) == 0
    assert capsys.readouterr().out == out


def test_usage_names_arguments_plainly_and_options_by_a_word(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["compare", "-h"]) == 0
    out = capsys.readouterr().out
    assert "Usage: spanchor compare [OPTIONS] BASELINE CANDIDATE" in out
    assert main(["anchor", "add", "-h"]) == 0
    out = capsys.readouterr().out
    assert "QUERY_ID [QUESTION] DOCS TEXT" in out
    assert "--occurrence          INT" in out
    assert "--doc                 ID" in out
    assert main(["locate", "-h"]) == 0
    out = capsys.readouterr().out
    assert "--context          INT" in out  # an option without a metavar of its own


def test_list_options_have_a_metavar(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", "-h"]) == 0
    out = capsys.readouterr().out
    assert "PATTERN" in out
    assert "K,..." in out


@pytest.mark.parametrize(
    ("argv", "fragment", "command"),
    [
        (["evaluate", "--bogus", "a", "b", "c"], "No such option: --bogus", "spanchor evaluate"),
        (["evaluate", "docs"], "Missing argument 'GOLD'", "spanchor evaluate"),
        (["bogus"], "No such command 'bogus'", "spanchor"),
        (["anchor", "add"], "Missing argument 'QUERY_ID'", "spanchor anchor add"),
        (["evaluate", "a", "b", "c", "--k", "0"], "K values must be positive", "spanchor evaluate"),
    ],
)
def test_a_usage_error_is_one_line_and_exit_2(
    argv: list[str], fragment: str, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("spanchor: usage error: ")
    assert fragment in lines[0]
    assert lines[0].endswith(f"; see {command} --help")


def test_no_arguments_prints_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    out, err = capsys.readouterr()
    assert "Usage: spanchor" in out + err


def _commands_and_params() -> Iterator[tuple[str, str]]:
    def walk(command: Any, path: tuple[str, ...]) -> Iterator[tuple[str, str]]:
        for param in command.params:
            yield " ".join(path), str(param.name)
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, (*path, name))

    return walk(typer.main.get_command(app), ())


def test_every_option_and_argument_of_every_command_has_help() -> None:
    root = typer.main.get_command(app)
    missing = []
    for path, name in _commands_and_params():
        command: Any = root
        for part in path.split():
            command = command.commands[part]
        param = next(p for p in command.params if p.name == name)
        if not (getattr(param, "help", None) or "").strip():
            missing.append(f"{path} {name}")
    assert missing == []
    assert ("gold review", "edited_text") in set(_commands_and_params())


def test_gold_review_help_describes_each_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gold", "review", "-h"]) == 0
    out = capsys.readouterr().out
    for fragment in (
        "The question this evidence answers",
        "Approve it (needs a question)",
        "Why (kept as a note)",
        "New start offset",
        "New end offset",
        "instead of appending the decision",
    ):
        assert fragment in out
