"""What every command shares: the consoles it prints to, progress bars, and the options and
argument parsers used by several commands (``--glob``, ``--k``).

Light to import, like every module of the command line: rich and the library are imported
when a command first needs them, so that ``spanchor --help`` does not load them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from spanchor_core.cli.defaults import DEFAULT_K_TEXT

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import TaskID

    from spanchor_core.corpus import Corpus
    from spanchor_core.evaluate import ProgressCallback

__all__ = [
    "DEFAULT_K_TEXT",
    "AllowMismatchOption",
    "GlobOption",
    "err_console",
    "globs",
    "load_docs",
    "out_console",
    "parse_k",
    "progress_bars",
    "writing_step",
]

GlobOption = Annotated[
    list[str] | None,
    typer.Option(
        "--glob",
        metavar="PATTERN",
        help="File pattern under DOCS (repeatable). Default: *.txt and *.md.",
    ),
]


AllowMismatchOption = Annotated[
    bool,
    typer.Option(
        "--allow-mismatch",
        help="Score run files recorded against another corpus or gold-set version.",
    ),
]
"""``--allow-mismatch`` of the commands that score several run files (compare, noise)."""


def out_console() -> Console:
    """Standard output, printed as it is (no highlighting, no emoji codes, no hard wraps)."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True, emoji=False)


def err_console() -> Console:
    """Standard error, like :func:`out_console`."""
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)


def globs(glob: list[str] | None) -> tuple[str, ...]:
    """The ``--glob`` patterns given, or the default ones."""
    from spanchor_core.corpus import DEFAULT_GLOBS

    return tuple(glob) if glob else DEFAULT_GLOBS


def load_docs(docs: Path, glob: list[str] | None) -> Corpus:
    """The corpus under ``docs``, read with the ``--glob`` patterns."""
    from spanchor_core.corpus import load_corpus

    return load_corpus(docs, globs=globs(glob))


def parse_k(value: str) -> tuple[int, ...]:
    """``--k``: one K or a comma-separated list, sorted and without repeats."""
    try:
        ks = tuple(int(part) for part in value.replace(" ", "").split(",") if part)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a K or a comma-separated list of K") from None
    if not ks or any(k < 1 for k in ks):
        raise typer.BadParameter("K values must be positive integers, e.g. --k 5 or --k 1,3,5,10")
    return tuple(sorted(set(ks)))


def _verb(phase: str, done: int) -> str:
    """What a progress bar says its phase is doing."""
    if phase == "read":
        return "reading the run"
    if phase == "map":
        # the locator builds its index before the first result is mapped: until one is, say
        # so, rather than sit silent at 0/?
        return "indexing the documents, then mapping results" if done == 0 else "mapping results"
    return "scoring queries"


def _amount(phase: str, done: int, total: int) -> str:
    """``done/total`` as a bar shows it: megabytes for ``"read"``, counts otherwise."""
    if phase == "read":
        return f"{done / 1e6:.1f}/{total / 1e6:.1f} MB" if total else f"{done / 1e6:.1f} MB"
    return f"{done}/{total}" if total else f"{done}/?"


@contextmanager
def progress_bars(quiet: bool) -> Iterator[Callable[[str], ProgressCallback | None]]:
    """Progress bars on stderr for long evaluations; nothing unless stderr is a terminal.

    Yields ``for_side(label)``, which gives the progress callback for scoring one run. Each
    phase gets a bar: ``"read"`` (bytes of the run file against its size, so a streamed run
    has a real bar and a time left), ``"map"`` (results, a total only when the run was in
    memory) and ``"score"`` (queries).
    """
    if quiet:  # before any console: ``-q`` never imports rich (1.5 MiB of the peak)
        yield lambda label: None
        return
    err = err_console()
    if not err.is_terminal:
        yield lambda label: None
        return
    from rich.progress import (
        BarColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[amount]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
    ) as bars:

        def for_side(label: str) -> ProgressCallback:
            tasks: dict[str, TaskID] = {}

            def update(phase: str, done: int, total: int) -> None:
                description = f"{label}: {_verb(phase, done)}"
                amount = _amount(phase, done, total)
                if phase not in tasks:
                    tasks[phase] = bars.add_task(description, total=total or None, amount=amount)
                bars.update(
                    tasks[phase],
                    completed=done,
                    total=total or None,
                    description=description,
                    amount=amount,
                )

            return update

        yield for_side


@contextmanager
def writing_step(quiet: bool, what: str = "writing reports") -> Iterator[None]:
    """A spinner on stderr saying ``what`` while the block runs (reports of a large comparison
    take seconds); nothing unless stderr is a terminal."""
    err = err_console()
    if quiet or not err.is_terminal:
        yield
        return
    with err.status(what):
        yield
