"""Failures on N processes look as they do on one: the same one-line error, the same exit code;
a worker that dies is an error, never a partial evaluation or a pass."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from spanchor_core.cli import main
from spanchor_core.corpus import load_corpus
from spanchor_core.errors import InputError, RunError
from spanchor_core.evaluate import run_parts
from spanchor_core.exit_codes import ExitCode
from spanchor_core.locate import LocateRequest
from spanchor_core.parallel import ProcessLocator, WorkerError, run_tasks
from spanchor_core.pipeline import run_gate
from spanchor_core.settings import GateConfig
from tests.parallel.conftest import Case


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPANCHOR_INDEX_CACHE", str(tmp_path / "index-cache"))


def _broken_copy(run: Path, out: Path, line: int) -> Path:
    lines = run.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[line - 1] = '{"query": "broken", "results": [\n'
    out.write_text("".join(lines), encoding="utf-8")
    return out


def _gate_error(case: Case, baseline: Path, candidate: Path, jobs: int) -> str:
    config = GateConfig(
        docs=case.docs, gold=case.gold, baseline=baseline, candidate=candidate, jobs=jobs
    )
    with pytest.raises(RunError) as caught:
        run_gate(config)
    return str(caught.value)


@pytest.mark.parametrize("side", ["baseline", "candidate"])
def test_a_bad_run_line_is_the_same_error_on_two_processes(
    side: str, quickstart: Case, tmp_path: Path
) -> None:
    bad = _broken_copy(getattr(quickstart, side), tmp_path / f"{side}.jsonl", 4)
    sides = {"baseline": quickstart.baseline, "candidate": quickstart.candidate, side: bad}
    one = _gate_error(quickstart, sides["baseline"], sides["candidate"], 1)
    assert one.startswith(f"{bad}:4: ")
    for jobs in (2, 3):
        assert _gate_error(quickstart, sides["baseline"], sides["candidate"], jobs) == one


def test_when_both_sides_are_bad_the_baseline_is_reported_as_on_one_process(
    quickstart: Case, tmp_path: Path
) -> None:
    base = _broken_copy(quickstart.baseline, tmp_path / "b.jsonl", 3)
    cand = _broken_copy(quickstart.candidate, tmp_path / "c.jsonl", 2)
    assert _gate_error(quickstart, base, cand, 2) == _gate_error(quickstart, base, cand, 1)
    assert _gate_error(quickstart, base, cand, 2).startswith(f"{base}:3: ")


def _one_line_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == ExitCode.BAD_INPUT, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def test_cli_bad_run_line_exits_2_with_one_line(
    quickstart: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _broken_copy(quickstart.candidate, tmp_path / "cand.jsonl", 5)
    evaluate = ["evaluate", str(quickstart.docs), str(quickstart.gold), str(bad)]
    gate = [
        "gate",
        "--docs", str(quickstart.docs),
        "--gold", str(quickstart.gold),
        "--baseline", str(quickstart.baseline),
        "--candidate", str(bad),
    ]  # fmt: skip
    for argv in (evaluate, gate):
        one = _one_line_error([*argv, "--jobs", "1"], capsys)
        assert f"{bad}:5: " in one
        assert _one_line_error([*argv, "--jobs", "2"], capsys) == one


def _killed_in_a_worker(parent: int) -> int:
    if os.getpid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)  # what the out-of-memory killer does
    return 1


def test_a_killed_worker_is_an_error_not_a_partial_answer() -> None:
    parent = os.getpid()
    tasks = [lambda: _killed_in_a_worker(parent) for _ in range(3)]
    with pytest.raises(WorkerError, match="out-of-memory"):
        run_tasks(tasks, 2)


def test_a_killed_side_fails_the_gate_with_exit_2(
    quickstart: Case, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import spanchor_core.pipeline.sides as sides

    parent = os.getpid()
    real = sides._score_side

    def dying(*args: object, **kwargs: object) -> object:
        _killed_in_a_worker(parent)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sides, "_score_side", dying)
    config = str(quickstart.docs.parent / "spanchor.toml")
    line = _one_line_error(["gate", "--config", config, "--jobs", "2"], capsys)
    assert "worker process ended" in line


def test_jobs_and_ray_cannot_be_combined(
    quickstart: Case, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["evaluate", str(quickstart.docs), str(quickstart.gold), str(quickstart.candidate)]
    line = _one_line_error([*argv, "--jobs", "2", "--ray", "local"], capsys)
    assert "--jobs and --ray" in line


def test_negative_jobs_are_bad_input(quickstart: Case, capsys: pytest.CaptureFixture[str]) -> None:
    config = GateConfig(
        docs=quickstart.docs,
        gold=quickstart.gold,
        baseline=quickstart.baseline,
        candidate=quickstart.candidate,
    )
    with pytest.raises(InputError, match="jobs must be"):
        run_gate(config, jobs=-1)
    settings = str(quickstart.docs.parent / "spanchor.toml")
    assert "--jobs" in _one_line_error(["gate", "--config", settings, "--jobs", "-1"], capsys)


def _dying_part(requests: object) -> object:
    os.kill(os.getpid(), signal.SIGKILL)  # only ever called in a worker
    return requests


def test_a_killed_mapping_worker_fails_evaluate_with_exit_2(
    quickstart: Case, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("spanchor_core.parallel.locator._locate_part", _dying_part)
    corpus = load_corpus(quickstart.docs)
    with ProcessLocator(corpus, jobs=2, min_batch=0) as locator, pytest.raises(WorkerError):
        locator.locate_many([LocateRequest("some text to map, long enough")] * 4)
    argv = ["evaluate", str(quickstart.docs), str(quickstart.gold), str(quickstart.candidate)]
    # where the run cannot be read in parts on forked children (evaluate/run_parts: a child
    # that dies leaves its part to the driver), --jobs maps on a pool of workers
    monkeypatch.setattr(run_parts, "can_fork", lambda: False)
    assert "worker process ended" in _one_line_error([*argv, "--jobs", "2"], capsys)
