"""The one property of the fuzz suite: a reader given any bytes returns, or raises an error of
the project's tree (``InputError`` for bad input) whose message is one line. Anything else is an
internal error, a bug.

``KNOWN`` lists internal errors already found in modules being rewritten by others at the time of
writing; each is tracked by a strict-xfail case in ``test_regressions.py`` (which turns red once it
is fixed: delete both the xfail and the entry here then). A fuzz test tolerates only the entries
it names, and only when the exception's last frame inside ``spanchor_core`` is in that module.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from spanchor_core.errors import InputError


@dataclass(frozen=True)
class Known:
    """An internal error already tracked by a strict xfail in ``test_regressions.py``."""

    exception: type[BaseException]
    module: str
    """Where its last ``spanchor_core`` frame is, e.g. ``"spanchor_core/gold.py"``."""
    regression: str
    """The id of the regression case that tracks it."""

    def matches(self, err: BaseException) -> bool:
        if not isinstance(err, self.exception):
            return False
        ours = [
            f for f in traceback.extract_tb(err.__traceback__) if "spanchor_core/" in f.filename
        ]
        return bool(ours) and ours[-1].filename.endswith(self.module)


KNOWN: dict[str, Known] = {}
"""Internal errors still tolerated by the fuzz tests (each tracked by a strict xfail in
``test_regressions.py``): none left — every issue-12 site is fixed."""


def known(*names: str) -> tuple[Known, ...]:
    return tuple(KNOWN[name] for name in names)


def only_input_errors(
    call: Callable[[], Any], tolerated: Iterable[Known] = ()
) -> InputError | None:
    """Run ``call``; return the InputError it raised (None if it returned). Any other exception
    propagates (the fuzz test fails), unless it is one of ``tolerated``."""
    try:
        call()
    except InputError as err:
        message = str(err)
        one_line = message.strip() and not any(c in message for c in "\n\r\u2028\u2029")
        if not one_line and not any(entry.matches(err) for entry in tolerated):
            raise AssertionError(f"not a one-line message: {message!r}") from err
        return err
    except Exception as err:
        if any(entry.matches(err) for entry in tolerated):
            return None
        raise
    return None
