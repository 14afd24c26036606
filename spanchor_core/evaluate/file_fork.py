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
    """Whether work may go to a forked child: Linux, with two or more usable CPUs, and this
    process neither a worker of a :mod:`multiprocessing` pool nor one with workers alive
    (``--jobs N`` reads, maps and scores on N processes already: a child each would be more
    processes than CPUs)."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    try:
        if len(os.sched_getaffinity(0)) < 2:
            return False
    except OSError:  # pragma: no cover - no affinity to ask about
        return False
    pool = sys.modules.get("multiprocessing")  # never imported here for this question
    if pool is None:
        return True
    return pool.parent_process() is None and not pool.active_children()


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
                view = memoryview(len(payload).to_bytes(8, "little") + payload)
                del payload
                while view:
                    view = view[os.write(write, view) :]
                code = 0
            except BaseException:  # whatever it was, the parent does the work instead
                pass
            finally:
                os._exit(code)
        os.close(write)
        self._pid, self._read = pid, read
        _reap()

    def result(self) -> tuple[_T] | None:
        """``(what work returned,)``, or ``None`` when the child gave no whole answer.

        A whole answer (as long as it said it would be) is taken without waiting for the
        child to be gone (tearing down a copy of a large process takes tens of milliseconds):
        it is reaped now if it has left, else by a later :class:`Forked` or at exit."""
        if self._read < 0:
            return None
        payload = _read_payload(self._read)
        os.close(self._read)
        self._read = -1
        pid, self._pid = self._pid, 0
        if payload is None:
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
            return None
        _PENDING.append(pid)
        _reap()
        try:
            return (pickle.loads(payload),)
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


_PENDING: list[int] = []
"""Children that gave their whole answer and may not have left yet."""


def _reap() -> None:
    """Reap the children of :data:`_PENDING` that have left."""
    for pid in list(_PENDING):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except OSError:  # reaped by someone else
            done = pid
        if done:
            _PENDING.remove(pid)


def _read_into(fd: int, buffer: bytearray) -> bool:
    """Fill ``buffer`` from ``fd``; ``False`` when the pipe closed first."""
    view, at = memoryview(buffer), 0
    while at < len(buffer):
        got = os.readv(fd, [view[at:]])
        if got == 0:
            return False
        at += got
    return True


def _read_payload(fd: int) -> bytearray | None:
    """What the child wrote to ``fd``: its length (8 bytes), then itself, read into one
    buffer of that size; ``None`` when the pipe closed early."""
    try:
        head = bytearray(8)
        if not _read_into(fd, head):
            return None
        payload = bytearray(int.from_bytes(head, "little"))
        return payload if _read_into(fd, payload) else None
    except OSError:
        return None
