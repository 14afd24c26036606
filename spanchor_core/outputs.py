"""No output may clobber an input: the check every command makes before it writes anything.

A command lists what it reads (files, a documents directory) and what it writes in an
:class:`OutputPlan`, then calls :meth:`OutputPlan.check` before reading or computing: an output
that is the same file as an input (same path once resolved, or the same inode through a link),
an existing document of a documents directory, the same path as another output, or not a
regular file at all (a symbolic link, a FIFO, a device, a directory) is refused with an
:class:`~spanchor_core.errors.InputError` naming both — one line, exit 2, nothing written.

An output also never replaces a spanchor file of another kind, input or not (``gold extract
-o gold.jsonl`` would turn the gold set into candidates): an existing file whose leading
``"kind"`` is ``spanchor.*`` may only be replaced by an output of that same kind.

A file a command edits in place (``anchor add`` on the gold file, ``gold review`` on its
candidates file) is declared with :meth:`OutputPlan.edit`: it may be rewritten, but must not be
any *other* input.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from spanchor_core._io import check_output_target
from spanchor_core._kind import leading_kind
from spanchor_core.errors import InputError

__all__ = ["OutputPlan"]


@dataclass(frozen=True, slots=True)
class _Input:
    path: Path
    role: str
    documents: tuple[str, ...] | None = None  # the globs, for a documents directory
    edited: bool = False


@dataclass(frozen=True, slots=True)
class _Output:
    path: Path
    option: str
    edit_of: Path | None = None
    kind: str | None = None


def _spanchor_kind(path: Path) -> str | None:
    """The ``spanchor.*`` kind an existing regular file starts with, if any."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except (OSError, ValueError):
        return None
    kind = leading_kind(head.decode("utf-8", errors="ignore"))
    return kind if isinstance(kind, str) and kind.startswith("spanchor.") else None


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except (OSError, ValueError):
        return None
    return (info.st_dev, info.st_ino)


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):
        return path.absolute()


def _is_document(output: Path, root: Path, globs: Sequence[str]) -> bool:
    """Whether the existing file ``output`` is one of the documents ``globs`` pick in ``root``
    (as :func:`spanchor_core.corpus.load_corpus` picks them: any depth, hidden files skipped)."""
    base = _resolved(root)
    target = _resolved(output)
    try:
        relative = PurePosixPath(target.relative_to(base).as_posix())
    except ValueError:
        return False
    if any(part.startswith(".") for part in relative.parts):
        return False
    for pattern in globs:
        try:
            if relative.match(pattern):
                return True
        except ValueError:
            continue
    return False


@dataclass
class OutputPlan:
    """What one command reads and writes, checked as a whole before anything is written."""

    inputs: list[_Input] = field(default_factory=list)
    outputs: list[_Output] = field(default_factory=list)

    def read(self, path: str | os.PathLike[str] | None, role: str) -> OutputPlan:
        """Declare an input file (``None`` is ignored); ``role`` names it: ``"the gold set"``."""
        if path is not None:
            self.inputs.append(_Input(Path(path), role))
        return self

    def read_documents(
        self, root: str | os.PathLike[str] | None, globs: Sequence[str], role: str = "a document"
    ) -> OutputPlan:
        """Declare a documents directory: each file ``globs`` pick in it is an input."""
        if root is not None:
            self.inputs.append(_Input(Path(root), role, documents=tuple(globs)))
        return self

    def write(
        self, path: str | os.PathLike[str] | None, option: str, kind: str | None = None
    ) -> OutputPlan:
        """Declare an output (``None`` is ignored); ``option`` is how it was given: ``"-o"``.

        ``kind`` is the spanchor file kind written (``"spanchor.evaluation"``); ``None`` for a
        report, which never replaces a spanchor file.
        """
        if path is not None:
            self.outputs.append(_Output(Path(path), option, kind=kind))
        return self

    def edit(
        self,
        path: str | os.PathLike[str],
        role: str,
        option: str,
        *,
        output: str | os.PathLike[str] | None = None,
    ) -> OutputPlan:
        """Declare a file read and then rewritten (an edit, not a clobber): in place, or to
        ``output`` when given (which may be the file itself)."""
        self.inputs.append(_Input(Path(path), role, edited=True))
        target = Path(path) if output is None else Path(output)
        self.outputs.append(
            _Output(target, option, edit_of=Path(path), kind=_spanchor_kind(Path(path)))
        )
        return self

    def check(self) -> None:
        """Raise :class:`~spanchor_core.errors.InputError` for the first output that would
        clobber an input or another output, or that is not a regular file."""
        seen: dict[Path, _Output] = {}
        for output in self.outputs:
            check_output_target(output.path, what=f"the {output.option} output")
            where = _resolved(output.path)
            earlier = seen.get(where)
            if earlier is not None and earlier.edit_of is None and output.edit_of is None:
                raise InputError(
                    f"given twice as an output ({earlier.option} and {output.option})",
                    path=output.path,
                    hint="give each output its own path",
                )
            seen[where] = output
            self._check_against_inputs(output, where)

    def _check_against_inputs(self, output: _Output, where: Path) -> None:
        identity = _identity(output.path)
        if identity is None:
            return  # nothing there yet: there is nothing to overwrite
        for source in self.inputs:
            if source.documents is not None:
                if _is_document(output.path, source.path, source.documents):
                    shown = f"{source.role} of {source.path}"
                    self._refuse(output, shown)
                continue
            if output.edit_of is not None and source.edited and source.path == output.edit_of:
                continue
            if _identity(source.path) == identity or _resolved(source.path) == where:
                shown = source.role
                if str(source.path) != str(output.path):
                    shown = f"{source.role}, {source.path}"
                self._refuse(output, shown)
        found = _spanchor_kind(output.path)
        if found is not None and found != output.kind:
            raise InputError(
                f"output would overwrite a {found} file with "
                + (f"a {output.kind} file" if output.kind else "a report"),
                path=output.path,
                hint=f"choose another {output.option} path",
            )

    @staticmethod
    def _refuse(output: _Output, shown: str) -> None:
        action = "would edit" if output.edit_of is not None else "would overwrite"
        raise InputError(
            f"output {action} an input ({shown})",
            path=output.path,
            hint=f"choose another {output.option} path",
        )
