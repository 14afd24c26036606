"""The ``spanchor`` command line: a thin typer layer over the library.

Each command parses its arguments, calls one library function and renders the result.
Errors the user can fix (:class:`~spanchor_core.errors.InputError`) become one line on
stderr and exit code 2; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from spanchor_core._version import __version__
from spanchor_core.corpus import DEFAULT_GLOBS, load_corpus
from spanchor_core.errors import SpanchorError

__all__ = ["EXIT_BAD_INPUT", "EXIT_OK", "EXIT_REGRESSION", "EXIT_UNMAPPED", "app", "main"]

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_BAD_INPUT = 2
EXIT_UNMAPPED = 3

app = typer.Typer(
    name="spanchor",
    help="Regression-test RAG retrieval against source-document anchors.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
_state = {"debug": False}


def _console() -> Console:
    return Console(highlight=False, soft_wrap=True)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"spanchor {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    _state["debug"] = debug


GlobOption = Annotated[
    list[str] | None,
    typer.Option("--glob", help="File pattern under DOCS (repeatable). Default: *.txt and *.md."),
]


@app.command()
def info(
    docs: Annotated[Path, typer.Argument(help="Directory of source documents.")],
    glob: GlobOption = None,
) -> None:
    """Load a corpus and print its documents, size and fingerprint.

    Example: spanchor info examples/quickstart/docs
    """
    corpus = load_corpus(docs, globs=tuple(glob) if glob else DEFAULT_GLOBS)
    console = _console()
    for document_id, doc in corpus.items():
        console.print(f"{document_id}\t{len(doc.text)} chars\t{doc.sha256[:12]}")
    console.print(
        f"{len(corpus)} documents, {corpus.total_chars} characters, "
        f"fingerprint {corpus.fingerprint}"
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app and turn spanchor errors into one line and an exit code.

    Usage errors are click's own (exit 2 with the usage line); input errors raised by the
    library are printed as ``spanchor: error: path:line: message`` and also exit 2.
    """
    try:
        app(args=argv, standalone_mode=True)
    except SystemExit as done:
        code = done.code
        return code if isinstance(code, int) else (0 if code is None else EXIT_BAD_INPUT)
    except SpanchorError as err:
        if _state["debug"]:
            raise
        print(f"spanchor: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
