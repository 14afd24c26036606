"""``spanchor example NAME DIR``: copy a bundled example out of the installed package, so that
someone who installed only the wheel has something to run (``cd DIR && spanchor gate``).

The example has one source, ``examples/<name>/`` of the repository. A wheel carries it as
package data under ``spanchor_core/_examples/<name>/`` (the build maps the folder there, see
``[tool.hatch.build.targets.wheel.force-include]`` in ``pyproject.toml``); run from a checkout,
the command reads the repository's folder itself. Nothing is kept twice by hand.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated, Final

import typer

from spanchor_core.cli.console import out_console
from spanchor_core.errors import InputError

__all__ = ["EXAMPLES", "example_command", "example_source"]

EXAMPLES: Final[dict[str, str]] = {
    "quickstart": "a chunking change the gate catches: expect exit 1, a regression",
}
"""The examples the command can copy, with what each shows."""

_SKIPPED: Final = frozenset({"__pycache__", ".pytest_cache", ".spanchor"})


def example_source(name: str) -> Traversable | None:
    """Where example ``name`` lives in this installation: the wheel's package data, else the
    checkout's ``examples/`` folder; ``None`` when neither holds it."""
    packaged = files("spanchor_core") / "_examples" / name
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[2] / "examples" / name
    if (checkout / "spanchor.toml").is_file():
        return checkout
    return None


def _copy(source: Traversable, target: Path) -> int:
    count = 0
    for item in source.iterdir():
        if item.name in _SKIPPED:
            continue
        if item.is_dir():
            (target / item.name).mkdir()
            count += _copy(item, target / item.name)
        else:
            (target / item.name).write_bytes(item.read_bytes())
            count += 1
    return count


def example_command(
    name: Annotated[
        str, typer.Argument(metavar="NAME", help=f"The example: {', '.join(EXAMPLES)}.")
    ],
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="Where to copy it (must not exist yet).")
    ],
) -> None:
    """Copy a bundled example into DIR, ready to run.

    Example: spanchor example quickstart q && cd q && spanchor gate
    """
    from spanchor_core._escape import escape_control

    if name not in EXAMPLES:
        raise InputError(
            f"no example {name!r}", hint=f"choose one of: {', '.join(sorted(EXAMPLES))}"
        )
    source = example_source(name)
    if source is None:
        raise InputError(
            f"this installation does not carry the {name} example",
            hint="install spanchor from a wheel built from the repository, or copy "
            f"examples/{name} from a checkout",
        )
    target = Path(directory)
    if target.exists():
        raise InputError(
            "already exists", path=target, hint="give a directory that does not exist yet"
        )
    parent = target.absolute().parent
    if not parent.is_dir():
        raise InputError("no such directory", path=parent, hint="create it first")
    # copy into a hidden sibling, then rename: an interrupted copy leaves no half example
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=parent))
    try:
        count = _copy(source, staging)
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    console = out_console()
    console.print(
        escape_control(f"copied the {name} example to {target} ({count} files)"), markup=False
    )
    console.print(
        escape_control(f"next: cd {target} && spanchor gate   ({EXAMPLES[name]})"),
        markup=False,
    )
