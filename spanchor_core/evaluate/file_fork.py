"""A piece of pure computation on a forked child, its result handed back pickled: the reader
of a large evaluation file (:mod:`.file_columns`) matches the second half of its query lines
on the other core while this process matches the first, which is most of the wall time of a
``compare`` of two large files.

Only where it is cheap and safe: Linux (``fork`` copies nothing until written), at least two
CPUs this process may run on, and a caller that can do the work itself when the child gives
no answer (it died, was killed, or its result could not be pickled): :meth:`Forked.result`
says so with ``None`` and the caller computes the same thing in this process, so what the
reader returns never depends on whether or when the child ran.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import warnings
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Forked", "can_fork"]

_T = TypeVar("_T")
_READ_SIZE = 1 << 20


def can_fork() -> bool:
    """Whether work may go to a forked child: Linux, with two or more usable CPUs."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    try:
        return len(os.sched_getaffinity(0)) >= 2
    except OSError:  # pragma: no cover - no affinity to ask about
        return False


class Forked(Generic[_T]):
    """``work()`` started on a forked child; :meth:`result` waits for what it returned.

    The child runs ``work`` and writes its pickled result to a pipe, then leaves with
    ``os._exit`` (no ``atexit`` handler, no buffered output of this process written twice).
    Whatever goes wrong in it, the parent sees no result, never an exception of the child's.
    """

    def __init__(self, work: Callable[[], _T]) -> None:
        self._pid = 0
        self._read = -1
        read, write = os.pipe()
        with warnings.catch_warnings():
            # Python 3.12+ warns about forking a process with threads (a progress bar's): the
            # child takes no lock the parent's threads use; it computes, writes and exits
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # pragma: no cover - the child (coverage is not collected there)
            code = 1
            try:
                os.close(read)
                payload = pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL)
                view = memoryview(payload)
                while view:
                    view = view[os.write(write, view) :]
                code = 0
            except BaseException:  # whatever it was, the parent does the work instead
                pass
            finally:
                os._exit(code)
        os.close(write)
        self._pid, self._read = pid, read

    def result(self) -> tuple[_T] | None:
        """``(what work returned,)``, or ``None`` when the child gave no whole answer."""
        if self._read < 0:
            return None
        chunks: list[bytes] = []
        try:
            while chunk := os.read(self._read, _READ_SIZE):
                chunks.append(chunk)
        except OSError:
            chunks = []
        finally:
            os.close(self._read)
            self._read = -1
        pid, self._pid = self._pid, 0
        try:
            _, status = os.waitpid(pid, 0)  # the pipe is closed: it is leaving
        except OSError:
            return None
        if not chunks or os.waitstatus_to_exitcode(status) != 0:
            return None
        try:
            return (pickle.loads(b"".join(chunks)),)
        except Exception:  # a torn payload: the caller does the work
            return None

    def close(self) -> None:
        """Give up on the answer: the child is killed if still running, and reaped."""
        if self._read >= 0:
            os.close(self._read)
            self._read = -1
        if self._pid:
            pid, self._pid = self._pid, 0
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
