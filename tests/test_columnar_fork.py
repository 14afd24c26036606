"""The columnar reader's second half matched on a forked child (``evaluate/file_fork``): the
same evaluation, the same refusals and the same errors as one process reading every line,
whether the child answers, declines, dies or is never started."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from spanchor_core.evaluate import (
    file_columns,
    file_fork,
    file_read,
    write_evaluation,
)
from spanchor_core.evaluate.file_fork import Forked, can_fork
from spanchor_core.evaluate.model import QueryTable
from tests.fork_spy import ForkSpy, count_forks
from tests.test_columnar_reader import _evaluation, _reads_edited_as_strict, _same, _strict

pytestmark = pytest.mark.skipif(not can_fork(), reason="needs fork and two CPUs")


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> ForkSpy:
    """Every buffer of query lines forked, however small; the children counted."""
    monkeypatch.setattr(file_columns, "_FORK_BYTES", 1)
    return count_forks(monkeypatch, file_columns)


@pytest.mark.parametrize("n", [3, 40, 1025, 2100])
def test_the_second_half_read_on_a_child_is_the_same_evaluation(
    tmp_path: Path, spy: ForkSpy, n: int
) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(n), path)
    read = file_read._read_fast(path)
    assert read is not None
    assert isinstance(read.queries, QueryTable)
    assert (spy.started, spy.answered) == (1, 1)
    _same(read, _strict(path))
    assert list(read.queries) == [f"q{i:03d}" for i in range(n)]


@pytest.mark.parametrize(
    "edit",
    [
        lambda text: text.replace('"query_id": "q035"', '"query_id": "q002"'),  # across halves
        lambda text: text.replace('"query_id": "q036"', '"query_id": "q031"'),  # in the second
        lambda text: text.replace('    {"query_id": "q033"', '\t{"query_id": "q033"'),
        lambda text: text.replace('    {"query_id": "q033"', '\n    {"query_id": "q033"'),
        lambda text: text.replace('"q034", ', '"q034" , ', 1),
        lambda text: text.replace('},\n    {"query_id": "q032"', '}\n    {"query_id": "q032"'),
        lambda text: text.replace("\n  ]\n}", ",\n  ]\n}"),
        lambda text: text.replace('"recall@1": 0.0', '"recall@1": true', 4),
        lambda text: text.replace('"mrr": 0.25', '"mrr": 0.25, "mrr": 0.5'),
    ],
)
def test_an_odd_line_in_either_half_reads_as_the_strict_path_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: ForkSpy, edit: object
) -> None:
    _reads_edited_as_strict(tmp_path / "e.json", monkeypatch, edit)
    assert spy.started >= 1


def test_a_child_that_dies_leaves_its_half_to_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: ForkSpy
) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(300), path)

    def dies(*_: object) -> None:
        os._exit(3)

    monkeypatch.setattr(file_columns, "_matched_part", dies)
    read = file_read._read_fast(path)
    assert read is not None
    assert isinstance(read.queries, QueryTable)
    assert (spy.started, spy.answered) == (1, 0)
    _same(read, _strict(path))


def test_a_child_whose_answer_cannot_be_pickled_gives_none() -> None:
    assert Forked(lambda: lambda: None).result() is None  # a lambda does not pickle
    assert Forked(lambda: 1 // 0).result() is None
    assert Forked(lambda: [1, "two", None]).result() == ([1, "two", None],)


def test_a_child_given_up_on_is_killed_and_reaped() -> None:
    forked = Forked(lambda: time.sleep(60))
    pid = forked._pid
    forked.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    assert forked.result() is None


def test_no_fork_below_the_size_or_on_one_cpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(40), path)

    def refuse(*_: object) -> None:
        raise AssertionError("forked")

    monkeypatch.setattr(file_columns, "Forked", refuse)
    assert file_read._read_fast(path) is not None  # 40 queries: far below _FORK_BYTES
    monkeypatch.setattr(file_columns, "_FORK_BYTES", 1)
    monkeypatch.setattr(file_columns, "can_fork", lambda: False)
    assert file_read._read_fast(path) is not None
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0})
    assert not file_fork.can_fork()


def test_children_that_answered_are_reaped_once_they_have_left() -> None:
    for _ in range(3):
        assert Forked(lambda: b"x" * 100_000).result() == (b"x" * 100_000,)
    time.sleep(0.2)
    Forked(lambda: None).close()  # any later child reaps the ones that left
    assert file_fork._PENDING == []


def test_no_fork_in_a_pool_worker_or_beside_live_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    import multiprocessing

    assert can_fork()
    monkeypatch.setattr(multiprocessing, "active_children", lambda: [object()])
    assert not can_fork()  # --jobs N: its workers have the other CPUs
    monkeypatch.setattr(multiprocessing, "active_children", list)
    monkeypatch.setattr(multiprocessing, "parent_process", object)
    assert not can_fork()  # a worker itself


def test_a_child_stuck_on_a_lock_held_at_fork_is_given_up_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: ForkSpy
) -> None:
    """Another thread holds a lock when the process forks; the child's copy of it stays held
    for ever. The child uses no CPU from then on: it is killed, reaped, and this process reads
    the child's half itself — the same evaluation, no hang."""
    monkeypatch.setattr(file_fork, "STALL_SECONDS", 0.5)
    held, release = threading.Lock(), threading.Event()

    def holder() -> None:
        with held:
            release.wait()

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        while not held.locked():
            time.sleep(0.01)

        def stuck(*_: object) -> None:
            with held:  # never acquired in the child
                pass

        monkeypatch.setattr(file_columns, "_matched_part", stuck)
        path = tmp_path / "e.json"
        write_evaluation(_evaluation(300), path)
        started = time.monotonic()
        read = file_read._read_fast(path)
        assert time.monotonic() - started < 30
        assert read is not None
        assert (spy.started, spy.answered) == (1, 0)
        _same(read, _strict(path))
    finally:
        release.set()
        thread.join()


def test_a_busy_child_is_waited_for_however_long_it_takes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A child that computes (uses CPU) for longer than the stall limit is not cut short."""
    monkeypatch.setattr(file_fork, "STALL_SECONDS", 0.3)

    def spin() -> int:
        stop, n = time.monotonic() + 1.5, 0
        while time.monotonic() < stop:
            n += 1
        return 7

    forked = Forked(spin)
    pid = forked._pid
    assert forked.result() == (7,)
    assert forked._pid == 0  # answered: handed to the reaper, not killed
    assert pid > 0
