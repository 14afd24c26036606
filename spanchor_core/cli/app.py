"""The ``spanchor`` command: the typer app that gathers every command, and :func:`main`.

Each command parses its arguments, calls one library function and renders the result
(:mod:`spanchor_core.render.terminal`); :mod:`spanchor_core.cli.errors` turns what escapes it
into one line and an exit code.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Annotated

import typer

from spanchor_core._version import __version__
from spanchor_core.cli import authoring, chunks, corpus, evaluation
from spanchor_core.cli.errors import (
    error_exit_code,
    exit_status,
    is_usage_error,
    usage_error_exit_code,
    wants_debug,
)
from spanchor_core.cli.example import example_command
from spanchor_core.cli.help import CONTEXT_SETTINGS, SpanchorGroup
from spanchor_core.cli.importers import import_app
from spanchor_core.cli.index import index_app
from spanchor_core.cli.noise import noise_command
from spanchor_core.exit_codes import ExitCode

__all__ = ["app", "main"]

app = typer.Typer(
    name="spanchor",
    help="Regression-test RAG retrieval against source-document anchors.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=SpanchorGroup,
    context_settings=CONTEXT_SETTINGS,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"spanchor {__version__}")
        raise typer.Exit(ExitCode.PASS)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """``--debug`` is read by :func:`main` from the arguments, before anything runs."""


app.command()(corpus.info)
app.command()(corpus.validate)
app.command()(evaluation.evaluate)
app.command("compare")(evaluation.compare_command)
app.command()(evaluation.gate)
app.command("noise")(noise_command)
app.command()(authoring.locate)
app.add_typer(authoring.anchor_app, name="anchor")
app.add_typer(authoring.query_app, name="query")
app.command("check-corpus")(authoring.check_corpus_command)
app.add_typer(authoring.gold_app, name="gold")
app.add_typer(import_app, name="import")
app.add_typer(chunks.chunks_app, name="chunks")
app.add_typer(index_app, name="index")
app.command("example")(example_command)


def _raise_exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def _terminate_cleanly() -> Iterator[None]:
    """SIGTERM (a CI timeout, ``kill``) unwinds like Ctrl-C, so a write being made removes its
    temporary file instead of leaving it behind; a handler someone else installed is kept."""
    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield
        return
    signal.signal(signal.SIGTERM, _raise_exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app and turn what escapes it into one line and an exit code.

    A usage error (unknown option, missing argument, bad value) prints
    ``spanchor: usage error: ...; see spanchor CMD --help``; input errors raised by the
    library print ``spanchor: error: path:line: message``; both exit 2.
    """
    args = sys.argv[1:] if argv is None else argv
    debug = wants_debug(args)
    try:
        with _terminate_cleanly():
            result = app(args=args, prog_name="spanchor", standalone_mode=False)
    except SystemExit as done:
        return exit_status(done)
    except Exception as err:
        if is_usage_error(err):
            return usage_error_exit_code(err)
        if debug:
            raise
        return error_exit_code(err)
    return result if isinstance(result, int) else ExitCode.PASS
