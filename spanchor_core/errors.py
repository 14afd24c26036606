"""The one exception tree of spanchor.

::

    SpanchorError                      root: catch this to catch everything we raise
    ├── InputError (ValueError)        bad input: a file, a field, an argument; CLI exit code 2
    │   ├── CorpusError                documents: unreadable, not UTF-8, id clash, path escapes root
    │   ├── GoldError                  gold sets: malformed lines, bad anchors
    │   ├── RunError                   run files: malformed lines, unknown kinds
    │   ├── EvaluationFileError        evaluation / comparison / policy files
    │   └── AnchorError (LookupError)  text that cannot be anchored: absent or ambiguous
    └── RecorderError (RuntimeError)   a recorder failed while ``strict=True``

Input errors carry the file and line they refer to so that every message reads
``path:line: what is wrong, what to do`` — the one line the CLI prints.
"""

from __future__ import annotations

import os

__all__ = [
    "AnchorError",
    "CorpusError",
    "EvaluationFileError",
    "GoldError",
    "InputError",
    "RecorderError",
    "RunError",
    "SpanchorError",
]


class SpanchorError(Exception):
    """Root of every exception spanchor raises on purpose."""


class InputError(SpanchorError, ValueError):
    """Bad input. ``str(err)`` is the single line shown to users.

    ``path`` and ``line`` (1-based) locate the problem when it lives in a file;
    ``hint`` says what to do about it.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | os.PathLike[str] | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.path = None if path is None else os.fspath(path)
        self.line = line
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
        text = f"{where}{self.message}"
        if self.hint:
            text = f"{text}; {self.hint}"
        return text


class CorpusError(InputError):
    """A document or corpus directory cannot be used."""


class GoldError(InputError):
    """A gold set file or gold anchor is malformed."""


class RunError(InputError):
    """A run or results file is malformed."""


class EvaluationFileError(InputError):
    """An evaluation, comparison or policy file is malformed."""


class AnchorError(InputError, LookupError):
    """Text could not be turned into exactly one anchor (absent, or ambiguous)."""


class RecorderError(SpanchorError, RuntimeError):
    """A recorder failed and was asked to be strict about it."""
