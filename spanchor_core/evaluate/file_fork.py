"""A piece of pure computation on a forked child, its result handed back pickled: the reader
of a large evaluation file (:mod:`.file_columns`) matches the second half of its query lines
on the other core while this process matches the first, which is most of the wall time of a
``compare`` of two large files.

Only where it is cheap and safe: Linux (``fork`` copies nothing until written), at least two
CPUs this process may run on, and a caller that can do the work itself when the child gives
no answer (it died, was killed, or its result could not be pickled): :meth:`Forked.result`
says so with ``None`` and the caller computes the same thing in this process, so what the
reader returns never depends on whether or when the child ran.

A child that stops making progress is given up on too: forking copies the locks of this
process's other threads (a progress bar's, a finaliser's) as they are, and a child that needs
one held at that moment would wait for ever, and this process with it. While waiting for an
answer the parent reads the child's CPU time from ``/proc``; when it has not moved for
:data:`STALL_SECONDS` (a running child, even on a loaded machine, gets some CPU in that time),
the child is killed and the caller does the work itself.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import sys
import time
import warnings
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["STALL_SECONDS", "Forked", "can_fork"]

_T = TypeVar("_T")
_READ_SIZE = 1 << 20
STALL_SECONDS = 10.0
"""How long a child may use no CPU at all while the parent waits for it before it is given up
on (see the module docstring)."""
_POLL_SECONDS = 0.25


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
        payload = _read_payload(self._read, self._pid)
        if payload is None:  # died, or stalled: killed (a no-op if it has left) and reaped
            self.close()
            return None
        os.close(self._read)
        self._read = -1
        pid, self._pid = self._pid, 0
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


def _cpu_ticks(pid: int) -> int | None:
    """The CPU time (user + system, in clock ticks) process ``pid`` has used, from
    ``/proc/PID/stat``; ``None`` when it cannot be read (then a wait is never cut short)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
        return int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of stat
    except (OSError, ValueError, IndexError):
        return None


class _Watch:
    """Whether a child still makes progress: its CPU time, sampled while the parent waits."""

    __slots__ = ("_pid", "_since", "_ticks")

    def __init__(self, pid: int) -> None:
        self._pid = pid
        self._ticks = _cpu_ticks(pid)
        self._since = time.monotonic()

    def stalled(self) -> bool:
        ticks = _cpu_ticks(self._pid)
        now = time.monotonic()
        if ticks is None or ticks != self._ticks:
            self._ticks, self._since = ticks, now
            return False
        return now - self._since >= STALL_SECONDS


def _read_into(fd: int, buffer: bytearray, watch: _Watch) -> bool:
    """Fill ``buffer`` from ``fd``; ``False`` when the pipe closed first or the child stalled."""
    view, at = memoryview(buffer), 0
    while at < len(buffer):
        ready, _, _ = select.select([fd], [], [], _POLL_SECONDS)
        if not ready:
            if watch.stalled():
                return False
            continue
        got = os.readv(fd, [view[at:]])
        if got == 0:
            return False
        at += got
    return True


def _read_payload(fd: int, pid: int) -> bytearray | None:
    """What the child wrote to ``fd``: its length (8 bytes), then itself, read into one
    buffer of that size; ``None`` when the pipe closed early or the child stalled."""
    try:
        watch = _Watch(pid)
        head = bytearray(8)
        if not _read_into(fd, head, watch):
            return None
        payload = bytearray(int.from_bytes(head, "little"))
        return payload if _read_into(fd, payload, watch) else None
    except OSError:
        return None
