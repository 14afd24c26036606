"""Run-file safety (issue 12): torn tails, one strictness, bounded records, many writers, crashes.

The multi-process tests use real processes and bounded work, and assert on what the files hold,
never on timings. ``SPANCHOR_CRASH_KILLS`` sets how many times the crash test kills a recording
process (30 by default).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from spanchor_core import _io
from spanchor_core.errors import RecorderError, RunError
from spanchor_core.runs import (
    RetrievalRecord,
    RetrievedResult,
    Run,
    RunHeader,
    RunRecorder,
    iter_run,
    read_run,
    write_run,
)

ROOT = Path(__file__).resolve().parents[1]
HEADER = json.dumps(
    {
        "kind": "spanchor.run",
        "schema_version": 1,
        "spanchor_version": "0.5.0",
        "created_at": "2025-01-02T03:04:05.000Z",
    }
)
MIXED = "naïve café 漢字 🙂 ünïcödé "


def _record(query_id: str, text: str = "x", **fields: Any) -> str:
    line = {"query_id": query_id, "query": "q", "results": [{"rank": 1, "text": text}]}
    line.update(fields)
    return json.dumps(line, ensure_ascii=False)


def _both(path: Path) -> tuple[Run, list[RetrievalRecord], list[str]]:
    run = read_run(path)
    stream = iter_run(path)
    records = list(stream)
    assert records == run.records
    assert stream.warnings == run.warnings
    return run, records, stream.warnings


# -- torn tails ---------------------------------------------------------------------------------


@pytest.mark.parametrize("zero_x", [False, True], ids=["ours", "0.x"])
def test_a_last_line_torn_inside_a_multibyte_character_is_skipped_with_one_warning(
    tmp_path: Path, zero_x: bool
) -> None:
    path = tmp_path / "r.jsonl"
    if zero_x:
        lines = [
            json.dumps(
                {"query_id": f"q{i}", "question": MIXED, "retrieved": [{"text": "t"}]},
                ensure_ascii=False,
            )
            for i in range(3)
        ]
    else:
        lines = [HEADER] + [_record(f"q{i}", MIXED * 5) for i in range(3)]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    last_start = data.rindex(b"\n", 0, len(data) - 1) + 1
    cuts = [
        i
        for i in range(last_start + 1, len(data) - 1)
        if 0x80 <= data[i] < 0xC0  # mid-character
    ]
    assert len(cuts) > 5
    for cut in cuts[:: max(1, len(cuts) // 8)]:
        path.write_bytes(data[:cut])
        _, records, warnings = _both(path)
        assert [r.query_id for r in records] == ["q0", "q1"]
        (warning,) = warnings
        assert warning.startswith(f"{path}:{len(lines)}: incomplete last line skipped")


def test_invalid_utf8_inside_a_complete_line_is_still_an_error(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(f"{HEADER}\n".encode() + _record("q0").encode()[:-5] + b"\xff\xfe" + b"}\n")
    for read in (read_run, lambda p: list(iter_run(p))):
        with pytest.raises(RunError, match=r"r\.jsonl:2: not UTF-8"):
            read(path)


# -- one strictness -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"query": "q", "query": "r", "results": []}', r":3: the key 'query' appears twice"),
        (_record("q", metadata={"a": 1}).replace('"a": 1', '"a": 1, "a": 2'), r":3: the key 'a'"),
        (_record("q").replace('"text"', '"score": 1e400, "text"'), r":3: the number 1e400 is too"),
        ('{"query": "q", "results": [], "metadata": {"x": -1e999}}', r":3: the number -1e999"),
        (
            '{"query": "q", "results": [], "latency_ms": -0.5}',
            r":3: bad record: field 'latency_ms'",
        ),
        ('{"query": "q", "results": [], "latency_ms": 1' + "0" * 400 + "}", r":3: bad record"),
        (_record("q").replace('"text"', '"score": 1' + "0" * 400 + ', "text"'), r":3: bad record"),
    ],
)
def test_our_files_refuse_duplicates_non_finite_numbers_and_negative_latency(
    tmp_path: Path, line: str, message: str
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(f"{HEADER}\n{_record('q0')}\n{line}\n", "utf-8")
    for read in (read_run, lambda p: list(iter_run(p))):
        with pytest.raises(RunError, match=message) as info:
            read(path)
        assert info.value.line == 3


def test_headers_are_as_strict(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(HEADER.replace('"kind"', '"tags": {"a": 1e400}, "kind"') + "\n", "utf-8")
    with pytest.raises(RunError, match=r":1: the number 1e400"):
        read_run(path)
    path.write_text(HEADER[:-1] + ', "kind": "spanchor.run"}\n', "utf-8")
    with pytest.raises(RunError, match=r":1: the key 'kind' appears twice"):
        iter_run(path)


def test_0x_files_are_lenient_about_numbers_but_not_about_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    path.write_text(
        '{"q1": [{"text": "x", "score": 1e400}, {"text": "y", "score": 1' + "0" * 400 + "}]}",
        "utf-8",
    )
    assert [r.score for r in read_run(path).records[0].results] == [None, None]
    path.write_text('{"q1": [{"text": "x"}], "q1": []}', "utf-8")
    with pytest.raises(RunError, match="the key 'q1' appears twice"):
        read_run(path)
    line = json.dumps({"query_id": "q", "question": "a", "retrieved": [], "latency_ms": -3})
    path.write_text(line + "\n", "utf-8")
    with pytest.raises(RunError, match=r"old\.json:1: record: latency_ms -3\.0 is negative"):
        read_run(path)


def test_a_byte_order_mark_is_accepted_in_every_run_shape(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    for text in (
        f"{HEADER}\n{_record('q0')}\n",
        '{"q0": [{"text": "x"}]}',
        json.dumps({"query_id": "q0", "question": "a", "retrieved": []}) + "\n",
    ):
        path.write_bytes(b"\xef\xbb\xbf" + text.encode())
        assert [r.query_id for r in _both(path)[1]] == ["q0"]


def test_negative_and_non_finite_latencies_are_written_as_unknown(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with RunRecorder(path, strict=True) as recorder:
        for latency in (-1.0, float("nan"), float("inf"), 2**2000, 3.5):
            recorder.record("q", [], latency_ms=latency)
    assert [r.latency_ms for r in read_run(path).records] == [None, None, None, None, 3.5]


# -- bounded records ------------------------------------------------------------------------------


def test_records_over_the_line_limit_are_refused_on_both_sides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_io, "MAX_LINE_BYTES", 4096)
    path = tmp_path / "r.jsonl"
    with RunRecorder(path) as recorder:
        recorder.record("small", [RetrievedResult(1, "x" * 1000)])
        recorder.record("big text", [RetrievedResult(1, "x" * 5000)])  # refused before encoding
        recorder.record("big line", [RetrievedResult(1, "é" * 1500, metadata={"m": "é" * 600})])
    assert (recorder.records, recorder.failures) == (1, 2)
    assert "over the 0.00390625 MiB a run file line may hold" in str(recorder.last_error)
    assert [r.query for r in read_run(path).records] == ["small"]
    strict = RunRecorder(tmp_path / "s.jsonl", strict=True)
    with pytest.raises(RecorderError, match="bytes encoded, over the"):
        strict.record("big line", [RetrievedResult(1, "é" * 1500, metadata={"m": "é" * 600})])
    strict.close()
    header = RunHeader(created_at="2025-01-02T03:04:05.000Z")
    big = RetrievalRecord("q", "q", (RetrievedResult(1, "x" * 5000),))
    with pytest.raises(RunError, match="record 1 cannot be written: the record holds 5,001"):
        write_run(Run(header, [big]), tmp_path / "w.jsonl")
    path.write_text(f"{HEADER}\n{_record('q0')}\n{_record('q1', 'x' * 5000)}\n", "utf-8")
    for read in (read_run, lambda p: list(iter_run(p))):
        with pytest.raises(RunError, match=r"r\.jsonl:3: the line is longer than 0 MiB"):
            read(path)


# -- many processes, one file ---------------------------------------------------------------------

# One interpreter forks the writers (real processes, no start-up cost each) and releases them
# together through a pipe, so that they open and write at the same moments.
_WRITERS = """
import os, sys
from spanchor_core.runs import RetrievedResult, RunRecorder

def together(jobs):
    gate_read, gate_write = os.pipe()
    pids = []
    for job in jobs:
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                os.close(gate_write)
                os.read(gate_read, 1)
                job()
                status = 0
            finally:
                os._exit(status)
        pids.append(pid)
    os.write(gate_write, b"x" * len(jobs))
    failed = sum(os.waitpid(pid, 0)[1] != 0 for pid in pids)
    os.close(gate_read)
    os.close(gate_write)
    if failed:
        sys.exit(f"{failed} writers failed")

def appender(path, name, count):
    text = "é漢🙂 " * 100
    def job():
        n = 0
        for part in range(2):  # reopen halfway: the open (and its tail check) races the writes
            with RunRecorder(path, mode="a", retriever=name, strict=True) as recorder:
                for _ in range(count // 2):
                    query_id = f"{name}-{n}"
                    recorder.record(name, [RetrievedResult(1, text, 0.5)], query_id=query_id)
                    n += 1
    return job

def creator(path, name):
    def job():
        with RunRecorder(path, mode="a", retriever=name, strict=True) as recorder:
            recorder.record(f"from {name}", [], query_id=name)
    return job

mode, target = sys.argv[1], sys.argv[2]
if mode == "append":
    together([appender(target, name, 2000) for name in "abcd"])
else:
    for trial in range(5):
        together([creator(f"{target}/trial{trial}.jsonl", f"p{i}") for i in range(8)])
"""


def _start(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def _finish(processes: list[subprocess.Popen[str]]) -> None:
    try:
        for process in processes:
            assert process.wait(timeout=300) == 0
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    pipe.close()


_POSIX = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork (POSIX)")


@_POSIX
def test_four_processes_appending_to_one_new_file_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    _finish([_start(_WRITERS, "append", str(path))])
    lines = path.read_bytes().split(b"\n")
    assert sum(b'"kind"' in line[:30] for line in lines) == 1
    _, records, warnings = _both(path)
    assert warnings == []
    assert len(records) == 8000
    for name in "abcd":
        mine = [r.query_id for r in records if r.query == name]
        assert mine == [f"{name}-{n}" for n in range(2000)]
    assert all(r.results[0].text == "é漢🙂 " * 100 for r in records)


@_POSIX
def test_processes_creating_one_missing_file_at_once_write_one_header(tmp_path: Path) -> None:
    _finish([_start(_WRITERS, "create", str(tmp_path))])
    for trial in range(5):
        path = tmp_path / f"trial{trial}.jsonl"
        assert sum('"kind"' in line for line in path.read_text("utf-8").splitlines()) == 1
        assert sorted(r.query_id or "" for r in read_run(path).records) == [
            f"p{i}" for i in range(8)
        ]


def test_a_torn_header_left_by_a_crash_is_started_again(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"kind": "spanchor.ru', "utf-8")
    with RunRecorder(path, mode="a", retriever="again") as recorder:
        recorder.record("q", [])
    assert read_run(path).header.retriever.description == "again"
    path.write_text('{"kind": "spanchor.gold"', "utf-8")  # not ours: left alone
    with pytest.raises(RecorderError, match="not a spanchor run file"):
        RunRecorder(path, mode="a")
    assert path.read_text("utf-8") == '{"kind": "spanchor.gold"'


# -- killed at random moments ------------------------------------------------------------------

# One long-lived helper forks a recording child per round (cheap, no interpreter start-up),
# kills it with SIGKILL after a random pause and reports how many records the child had
# completed: each record is written to the round's own file and to one shared file appended to
# (mode "a") across rounds, then one byte is written to a pipe.
_KILLER = """
import json, os, random, signal, sys, time
from spanchor_core.runs import RetrievedResult, RunRecorder
directory, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
text = ("é漢🙂 naïve " * 3000)
for line in sys.stdin:
    name = line.strip()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            own = RunRecorder(f"{directory}/{name}.jsonl", strict=True)
            shared = RunRecorder(f"{directory}/shared.jsonl", mode="a", strict=True)
            n = 0
            while True:
                for recorder in (own, shared):
                    recorder.record(name, [RetrievedResult(1, text, 0.5)], query_id=f"{name}-{n}")
                os.write(write_end, b"x")
                n += 1
        finally:
            os._exit(1)
    os.close(write_end)
    first = os.read(read_end, 1)
    time.sleep(rng.uniform(0, 0.01))
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    completed = len(first)
    while chunk := os.read(read_end, 65536):
        completed += len(chunk)
    os.close(read_end)
    killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    print(json.dumps({"completed": completed, "killed": killed}), flush=True)
"""
_KILLED_TEXT = "é漢🙂 naïve " * 3000


def _check_killed_file(path: Path, name: str, completed: int) -> bool:
    """The file is readable and lost at most the line being written; True if it was torn."""
    _, records, warnings = _both(path)
    assert completed <= len(records) <= completed + 1
    assert [r.query_id for r in records] == [f"{name}-{n}" for n in range(len(records))]
    assert all(r.results[0].text == _KILLED_TEXT for r in records)
    assert len(warnings) <= 1
    return bool(warnings)


@_POSIX
def test_recording_processes_killed_at_random_moments_leave_readable_files(
    tmp_path: Path,
) -> None:
    kills = int(os.environ.get("SPANCHOR_CRASH_KILLS", "30"))
    helper = _start(_KILLER, str(tmp_path), "12")
    assert helper.stdin is not None
    assert helper.stdout is not None
    torn = 0
    expected_shared: list[tuple[str, int]] = []
    try:
        for round_number in range(kills):
            name = f"round{round_number}"
            helper.stdin.write(f"{name}\n")
            helper.stdin.flush()
            report = json.loads(helper.stdout.readline())
            assert report["killed"]
            assert report["completed"] >= 1
            torn += _check_killed_file(tmp_path / f"{name}.jsonl", name, report["completed"])
            (tmp_path / f"{name}.jsonl").unlink()
            expected_shared.append((name, report["completed"]))
        helper.stdin.close()
    finally:
        _finish([helper])
    shared = tmp_path / "shared.jsonl"
    _, records, warnings = _both(shared)
    assert len(warnings) <= 1  # only the last round's tail can still be torn
    by_round: dict[str, list[str]] = {}
    for record in records:
        by_round.setdefault(record.query, []).append(record.query_id or "")
    for name, completed in expected_shared:
        ids = by_round.get(name, [])
        assert completed <= len(ids) <= completed + 1
        assert ids == [f"{name}-{n}" for n in range(len(ids))]
    with RunRecorder(shared, mode="a") as recorder:  # appending repairs the last tail
        recorder.record("after", [])
    assert read_run(shared).warnings == []
    print(f"{kills} kills, {torn} own files torn mid-line")


# -- a torn line in the middle, glued to the next writer's line ---------------------------------


def _glued(path: Path, prefix_of_torn: str) -> tuple[Path, list[str]]:
    """A run of four records written by the recorder, its second line torn (``prefix_of_torn``
    decides what is left of it) with the third written right after it on the same line: what
    a process killed inside its write leaves while another process goes on appending."""
    source = path.with_suffix(".source.jsonl")
    with RunRecorder(source) as recorder:
        for number in range(1, 5):
            recorder.record(
                f"question {number}", [{"text": f"text {number}"}], query_id=f"q{number}"
            )
    header, *lines = source.read_text(encoding="utf-8").splitlines()
    torn = prefix_of_torn or lines[1][: len(lines[1]) // 2]
    path.write_text("\n".join([header, lines[0], torn + lines[2], lines[3]]) + "\n", "utf-8")
    return path, lines


def test_a_torn_line_glued_to_the_next_record_loses_only_itself(tmp_path: Path) -> None:
    path, _ = _glued(tmp_path / "glued.jsonl", "")
    _, records, warnings = _both(path)
    assert [r.query_id for r in records] == ["q1", "q3", "q4"]
    assert [r.results[0].text for r in records] == ["text 1", "text 3", "text 4"]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"{path}:3: a torn record skipped (")
    # a few bytes of the torn line are enough to know it for one of ours
    _, records, _ = _both(_glued(tmp_path / "short.jsonl", '{"que')[0])
    assert [r.query_id for r in records] == ["q1", "q3", "q4"]


@pytest.mark.parametrize("prefix", ["garbage ", '{"query": "hand-written", '])
def test_anything_else_before_a_record_is_still_an_error(tmp_path: Path, prefix: str) -> None:
    path, _ = _glued(tmp_path / "bad.jsonl", prefix)
    with pytest.raises(RunError, match=r"bad\.jsonl:3: "):
        read_run(path)
    with pytest.raises(RunError, match=r"bad\.jsonl:3: "):
        list(iter_run(path))
