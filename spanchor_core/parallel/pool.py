"""Worker processes on this machine: how many, how they start, and how their answers come back.

Two ways of using them, both with answers identical to one process:

* :class:`WorkerPool`, a pool that lives as long as its owner (the
  :class:`~spanchor_core.parallel.ProcessLocator` maps every batch of a run on it), each
  worker set up once by an initializer;
* :func:`run_tasks`, a few independent tasks (the sides of a gate) run concurrently, the
  driver taking its share, the answers given back in task order.

On Linux the workers are forked (``fork``) once the driver holds everything they need —
the corpus, its index — so they share those pages copy-on-write and nothing is pickled on the
way in. Elsewhere (macOS, Windows: ``spawn``) what they need is pickled to them and the index
comes from the persistent cache's memory-mapped files (:mod:`spanchor_core.index_store`).

Failures look as they do in one process: an exception raised in a worker is raised again in
the driver (the same class and message, so a bad run line is still ``path:line: ...`` and exit
2), and when several tasks fail, the one that comes first in task order wins — the one a single
process would have met first. A worker that dies without an answer (the out-of-memory killer,
a signal) is a :class:`WorkerError`: never a partial result, never a hang.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Final, Literal, TypeVar

from spanchor_core.errors import InputError, SpanchorError

__all__ = [
    "StartMethod",
    "WorkerError",
    "WorkerPool",
    "can_start_workers",
    "default_start_method",
    "resolve_jobs",
    "run_tasks",
]

StartMethod = Literal["fork", "spawn", "forkserver"]
"""How worker processes start (:mod:`multiprocessing` start methods)."""

_T = TypeVar("_T")

_DIED: Final = (
    "a worker process ended without giving its answer (killed by a signal, perhaps by the "
    "out-of-memory killer); nothing was scored from it"
)
_DIED_HINT: Final = "run with fewer jobs (--jobs 1 maps everything in this process)"


class WorkerError(SpanchorError, RuntimeError):
    """A worker process died before answering (e.g. killed by the out-of-memory killer)."""

    def __init__(self, message: str = f"{_DIED}; {_DIED_HINT}") -> None:
        super().__init__(message)


def resolve_jobs(jobs: int) -> int:
    """The number of processes ``jobs`` asks for: itself, or every CPU for 0."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 0:
        raise InputError(
            f"jobs must be a whole number, 0 or more, got {jobs!r}",
            hint="give 1 for one process, N for N processes, 0 for one per CPU",
        )
    return jobs if jobs > 0 else os.cpu_count() or 1


def default_start_method() -> StartMethod:
    """``fork`` where it is safe and available (Linux), else ``spawn``."""
    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "spawn"


def can_start_workers() -> bool:
    """Whether this process may have worker processes: a daemonic one (a worker of someone
    else's :mod:`multiprocessing` pool) may not, and then everything runs in it instead."""
    return not multiprocessing.current_process().daemon


def _fresh_stderr() -> None:
    """In a forked child: stderr on a new buffer, so a lock another thread of the parent held
    at the fork (a progress bar refreshing) cannot block it."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115 - lives as long as the child


def _initialise(setup: Callable[..., None] | None, args: tuple[Any, ...]) -> None:
    _fresh_stderr()
    if setup is not None:
        setup(*args)


class WorkerPool:
    """``workers`` processes started on first use, each set up once by ``setup(*args)``.

    With ``fork`` nothing is pickled to start them (they inherit ``args``); with ``spawn``
    ``args`` are pickled. :meth:`submit` sends a call; :meth:`result` waits for its answer,
    raising what the worker raised or a :class:`WorkerError` when one died.
    """

    def __init__(
        self,
        workers: int,
        *,
        setup: Callable[..., None] | None = None,
        args: tuple[Any, ...] = (),
        start_method: StartMethod | None = None,
    ) -> None:
        if workers < 1:
            raise InputError(f"a worker pool needs 1 or more workers, got {workers}")
        self.workers = workers
        self.start_method: StartMethod = start_method or default_start_method()
        self._setup = setup
        self._args = args
        self._executor: ProcessPoolExecutor | None = None

    def _started(self) -> ProcessPoolExecutor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context(self.start_method),
                initializer=_initialise,
                initargs=(self._setup, self._args),
            )
        return self._executor

    def submit(self, function: Callable[..., _T], *args: Any) -> Future[_T]:
        """Run ``function(*args)`` on a worker (``function`` and ``args`` are pickled)."""
        try:
            return self._started().submit(function, *args)
        except BrokenProcessPool:
            self.close(kill=True)
            raise WorkerError() from None

    def result(self, future: Future[_T]) -> _T:
        """The answer of a submitted call; a dead worker is a :class:`WorkerError`."""
        try:
            return future.result()
        except BrokenProcessPool:
            self.close(kill=True)
            raise WorkerError() from None

    def close(self, *, kill: bool = False) -> None:
        """Stop the workers (at once with ``kill``: a failed run waits for no one)."""
        executor, self._executor = self._executor, None
        if executor is None:
            return
        if kill:  # the executor has no public way to end a running call
            processes: dict[int, Any] = getattr(executor, "_processes", None) or {}
            for process in list(processes.values()):
                with contextlib.suppress(OSError, AttributeError, ValueError):
                    process.kill()
        executor.shutdown(wait=not kill, cancel_futures=True)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(kill=exc[0] is not None)


# -- independent tasks, run concurrently ----------------------------------------------------------

_TASKS: Sequence[Callable[[], Any]] = ()
"""The tasks of the :func:`run_tasks` call under way, inherited by its forked workers."""


def _run_inherited(index: int) -> Any:
    return _TASKS[index]()


def _run_given(task: Callable[[], _T]) -> _T:
    return task()


def run_tasks(
    tasks: Sequence[Callable[[], _T]],
    jobs: int,
    *,
    start_method: StartMethod | None = None,
) -> list[_T]:
    """``[task() for task in tasks]``, on up to ``jobs`` processes, the driver one of them.

    The driver runs every ``jobs``-th task itself (the first among them, so a progress bar
    of the first task is drawn by the process that owns the terminal) and workers run the
    rest. Answers come back in task order; the first task (in that order) that failed raises
    its exception, as it would have in one process. With ``fork`` the tasks are inherited
    (closures are fine); with ``spawn`` they are pickled (use module-level functions, or
    :func:`functools.partial` of them).
    """
    global _TASKS
    count = min(resolve_jobs(jobs), len(tasks))
    if count <= 1 or not can_start_workers():
        return [task() for task in tasks]
    method = start_method or default_start_method()
    mine = [index for index in range(len(tasks)) if index % count == 0]
    theirs = [index for index in range(len(tasks)) if index % count != 0]
    _TASKS = tasks
    try:
        with WorkerPool(count - 1, start_method=method) as pool:
            futures: dict[int, Future[_T]] = {
                index: pool.submit(_run_inherited, index)
                if method == "fork"
                else pool.submit(_run_given, tasks[index])
                for index in theirs
            }
            done: dict[int, _T | BaseException] = {}
            for index in mine:
                try:
                    done[index] = tasks[index]()
                except Exception as err:  # reported in task order below
                    done[index] = err
                    if index == 0:  # nothing can come before it: stop the others now
                        raise
            answers: list[_T] = []
            for index in range(len(tasks)):
                if index in futures:
                    answers.append(pool.result(futures[index]))
                    continue
                answer = done[index]
                if isinstance(answer, BaseException):
                    raise answer
                answers.append(answer)
            return answers
    finally:
        _TASKS = ()
