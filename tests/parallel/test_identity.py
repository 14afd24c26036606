"""``jobs`` N gives the bytes of one process: evaluate and gate, quickstart and a generated case."""

from __future__ import annotations

import functools
import multiprocessing
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spanchor_core.cli.app import app
from spanchor_core.compare import write_comparison
from spanchor_core.corpus import load_corpus
from spanchor_core.errors import InputError
from spanchor_core.evaluate import write_evaluation
from spanchor_core.gold import read_gold
from spanchor_core.locate import LocateRequest, Locator
from spanchor_core.parallel import ProcessLocator, resolve_jobs, run_tasks
from spanchor_core.parallel.pool import can_start_workers
from spanchor_core.pipeline import run_evaluation, run_gate, run_noise
from spanchor_core.settings import GateConfig
from tests.parallel.conftest import Case, without_timestamp

CASES = ["quickstart", "generated"]


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPANCHOR_INDEX_CACHE", str(tmp_path / "index-cache"))


def _evaluation_bytes(case: Case, jobs: int, out: Path) -> bytes:
    outcome = run_evaluation(case.docs, case.gold, case.candidate, jobs=jobs)
    write_evaluation(outcome.evaluation, out)
    return without_timestamp(out)


@pytest.mark.parametrize("name", CASES)
def test_evaluate_is_byte_identical_on_1_2_3_processes(
    name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    case: Case = request.getfixturevalue(name)
    one = _evaluation_bytes(case, 1, tmp_path / "1.json")
    assert b'"status": "exact"' in one  # mapped results, not an empty evaluation
    for jobs in (2, 3):
        assert _evaluation_bytes(case, jobs, tmp_path / f"{jobs}.json") == one


def _gate_bytes(case: Case, jobs: int, out: Path) -> tuple[bytes, int]:
    config = GateConfig(
        docs=case.docs,
        gold=case.gold,
        baseline=case.baseline,
        candidate=case.candidate,
        jobs=jobs,
    )
    outcome = run_gate(config)
    write_comparison(outcome.comparison, out)
    return without_timestamp(out), int(outcome.exit_code)


@pytest.mark.parametrize("name", CASES)
def test_gate_is_byte_identical_on_1_2_3_processes(
    name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    case: Case = request.getfixturevalue(name)
    one = _gate_bytes(case, 1, tmp_path / "1.json")
    for jobs in (2, 3):
        assert _gate_bytes(case, jobs, tmp_path / f"{jobs}.json") == one


def test_gate_with_one_side_an_evaluation_maps_the_run_on_processes(
    generated: Case, tmp_path: Path
) -> None:
    base = run_evaluation(generated.docs, generated.gold, generated.baseline).evaluation
    write_evaluation(base, tmp_path / "base.json")
    outs = []
    for jobs in (1, 2):
        config = GateConfig(
            docs=generated.docs,
            gold=generated.gold,
            baseline=tmp_path / "base.json",
            candidate=generated.candidate,
            jobs=jobs,
        )
        write_comparison(run_gate(config).comparison, tmp_path / f"{jobs}.json")
        outs.append(without_timestamp(tmp_path / f"{jobs}.json"))
    assert outs[0] == outs[1]


def test_noise_of_three_runs_is_the_same_on_two_processes(generated: Case, tmp_path: Path) -> None:
    again = tmp_path / "baseline-again.jsonl"
    again.write_bytes(generated.baseline.read_bytes())
    runs = [generated.baseline, generated.candidate, again]
    one = run_noise(runs, docs=generated.docs, gold=generated.gold, jobs=1)
    two = run_noise(runs, docs=generated.docs, gold=generated.gold, jobs=2)
    assert two.report == one.report
    assert two.flaky_queries == one.flaky_queries


def test_cli_evaluate_and_gate_with_jobs(quickstart: Case, tmp_path: Path) -> None:
    runner = CliRunner()
    args = [str(quickstart.docs), str(quickstart.gold), str(quickstart.candidate)]
    outputs = []
    for jobs in ("1", "2", "0"):
        out = tmp_path / f"e{jobs}.json"
        done = runner.invoke(app, ["evaluate", *args, "-q", "--jobs", jobs, "-o", str(out)])
        assert done.exit_code == 0, done.output
        outputs.append(without_timestamp(out))
    assert outputs[0] == outputs[1] == outputs[2]
    gates = []
    for jobs in ("1", "2"):
        out = tmp_path / f"g{jobs}.json"
        argv = ["gate", "--config", str(quickstart.docs.parent / "spanchor.toml")]
        done = runner.invoke(app, [*argv, "-q", "--jobs", jobs, "-o", str(out)])
        assert done.exit_code == 1, done.output  # the quickstart's candidate regresses
        gates.append(without_timestamp(out))
    assert gates[0] == gates[1]


def test_spawned_workers_map_the_same(generated: Case) -> None:
    corpus = load_corpus(generated.docs)
    texts = [corpus.text(doc_id) for doc_id in corpus]
    requests = [LocateRequest(text[i : i + 90]) for text in texts for i in range(0, 2000, 400)]
    requests += [LocateRequest(texts[0][5:200].upper()), LocateRequest("absent " * 9)]
    expected = Locator(corpus).locate_many(requests)
    with ProcessLocator(corpus, jobs=2, start_method="spawn", min_batch=0) as locator:
        assert locator.start_method == "spawn"
        assert locator.locate_many(requests) == expected


def test_gate_with_spawned_workers_is_the_same(
    quickstart: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = _gate_bytes(quickstart, 1, tmp_path / "1.json")
    monkeypatch.setattr("spanchor_core.pipeline.sides.default_start_method", lambda: "spawn")
    monkeypatch.setattr("spanchor_core.parallel.pool.default_start_method", lambda: "spawn")
    assert _gate_bytes(quickstart, 2, tmp_path / "2.json") == one


def _square(n: int) -> tuple[int, int]:
    return n * n, os.getpid()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_run_tasks_keeps_task_order_and_uses_other_processes(method: str) -> None:
    tasks = [functools.partial(_square, n) for n in range(7)]
    answers = run_tasks(tasks, 3, start_method=method)  # type: ignore[arg-type]
    assert [value for value, _ in answers] == [n * n for n in range(7)]
    pids = [pid for _, pid in answers]
    # the driver runs every third task (0, 3, 6); the pool's workers the others — which worker
    # takes which is the pool's choice, so only "not the driver" is certain
    assert [pid == os.getpid() for pid in pids] == [n % 3 == 0 for n in range(7)]


def test_process_locator_workers_really_map(generated: Case) -> None:
    corpus = load_corpus(generated.docs)
    gold = read_gold(generated.gold)
    requests = [
        LocateRequest(None, a.document_id, a.start, a.end)
        for query in gold.entries
        for a in query.anchors
    ]
    with ProcessLocator(corpus, jobs=3, min_batch=0) as locator:
        assert locator.locate_many(requests) == Locator(corpus).locate_many(requests)
        assert locator._pool is not None
        assert locator._pool._executor is not None  # the workers were started


def test_zero_jobs_is_one_per_cpu() -> None:
    assert resolve_jobs(0) == (os.cpu_count() or 1)
    assert resolve_jobs(3) == 3


def _pids_of_tasks_in_a_daemon() -> set[int]:
    answers = run_tasks([functools.partial(_square, n) for n in range(3)], 2)
    return {pid for _, pid in answers}


def test_a_daemonic_process_runs_the_tasks_itself() -> None:
    with multiprocessing.get_context("fork").Pool(1) as pool:  # its worker is daemonic
        pids = pool.apply(_pids_of_tasks_in_a_daemon)
    assert len(pids) == 1
    assert os.getpid() not in pids


def test_two_evaluation_files_are_read_on_two_processes(
    generated: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import spanchor_core.pipeline.sides as sides

    paths = []
    for name, run in (("base", generated.baseline), ("cand", generated.candidate)):
        evaluation = run_evaluation(generated.docs, generated.gold, run).evaluation
        write_evaluation(evaluation, tmp_path / f"{name}.json")
        paths.append(tmp_path / f"{name}.json")
    readers = tmp_path / "readers"
    from spanchor_core.evaluate import read_evaluation as real

    def noted(path: Path) -> object:
        with readers.open("a") as out:  # the worker's calls are not in this process's memory
            out.write(f"{os.getpid()} {Path(path).name}\n")
        return real(path)

    monkeypatch.setattr(sides, "read_evaluation", noted)
    one = sides.load_pair(*paths, corpus=None, gold=None, jobs=1)
    assert len({line.split()[0] for line in readers.read_text().splitlines()}) == 1
    readers.unlink()
    two = sides.load_pair(*paths, corpus=None, gold=None, jobs=2)
    if can_start_workers():
        assert len({line.split()[0] for line in readers.read_text().splitlines()}) == 2
    for n, (a, b) in enumerate(zip(one, two, strict=True)):
        write_evaluation(a, tmp_path / f"one-{n}.json")
        write_evaluation(b, tmp_path / f"two-{n}.json")
        assert without_timestamp(tmp_path / f"one-{n}.json") == without_timestamp(
            tmp_path / f"two-{n}.json"
        )
    # a second file that is bad past its header (read by the worker): the same one-line
    # error either way
    text = paths[1].read_text("utf-8")
    at = text.rindex('"recall@1": ') + len('"recall@1": ')
    end = min(i for i in (text.find(",", at), text.find("\n", at)) if i >= 0)
    paths[1].write_text(text[:at] + '"bad"' + text[end:], "utf-8")
    errors = []
    for jobs in (1, 2):
        with pytest.raises(InputError) as caught:
            sides.load_pair(*paths, corpus=None, gold=None, jobs=jobs)
        errors.append(str(caught.value))
    assert errors[0] == errors[1]
    assert "cand.json" in errors[0]
