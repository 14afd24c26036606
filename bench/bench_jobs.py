"""Benchmark: ``spanchor evaluate`` and ``spanchor gate`` on one process and on ``--jobs N``.

Each measurement is the whole command in a fresh interpreter (``python -m spanchor_core.cli``),
timed from here: wall time, CPU time of the command and all its processes (user + system,
from ``RUSAGE_CHILDREN``; this process is their subreaper, so a forked child still leaving when
the command exits is counted too), and the peak resident memory of every process of the command
(``VmHWM``, polled from ``/proc`` every 20 ms, so a process living less than that may be
missed). The evaluation / comparison files of each ``--jobs`` value are checked to be the same
bytes as those of ``--jobs 1`` apart from ``created_at``.

The case is ``bench_evaluate.py``'s (50 MB x 10,000 queries by default, generated into
``--workdir`` when absent). The gate's candidate is the baseline run with every third record's
last result dropped (written once, beside the run). The index cache is warmed by one evaluate
before anything is timed (the pipeline caches the index of a corpus of 1M characters or more),
so every row maps the same memory-mapped index.

    python bench/bench_jobs.py --workdir /tmp/sp-bench --jobs 1,2 --repeat 3

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_CREATED = re.compile(rb'"created_at": "[^"]*"')
_BENCH_EVALUATE = Path(__file__).resolve().with_name("bench_evaluate.py")


@dataclass(frozen=True)
class Measured:
    wall: float
    cpu: float
    peaks: tuple[float, ...]  # MiB, the command's own process first
    code: int


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children", encoding="ascii") as handle:
                    todo.extend(int(child) for child in handle.read().split())
            except OSError:
                continue
    return found


def _hwm_mib(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _adopt_orphans() -> None:
    """Become the subreaper of the commands' processes (Linux): a child a command forked and
    left running at its exit (``evaluate/file_fork``'s, leaving as the command does) is then
    reaped here, so its CPU time is in ``RUSAGE_CHILDREN`` like everyone else's."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def _reap_orphans() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, 0)
        except ChildProcessError:
            return
        if not pid:
            return


def _run(argv: Sequence[str], env: dict[str, str]) -> Measured:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "spanchor_core.cli", *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    peaks: dict[int, float] = {}
    while process.poll() is None:
        for pid in _descendants(process.pid):
            peak = _hwm_mib(pid)
            if peak is not None:
                peaks[pid] = max(peak, peaks.get(pid, 0.0))
        time.sleep(0.02)
    wall = time.perf_counter() - began
    _reap_orphans()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if process.returncode not in (0, 1):
        err = process.stderr.read().decode() if process.stderr else ""
        raise SystemExit(f"{' '.join(argv)} exited {process.returncode}: {err}")
    own = peaks.pop(process.pid, 0.0)
    return Measured(wall, cpu, (own, *sorted(peaks.values(), reverse=True)), process.returncode)


def _candidate(run: Path) -> Path:
    """The run with every third record's last result dropped: a candidate that regresses."""
    out = run.with_name("candidate-jobs.jsonl")
    if out.exists():
        return out
    temp = out.with_suffix(".partial")
    with run.open(encoding="utf-8") as lines, temp.open("w", encoding="utf-8") as written:
        for number, line in enumerate(lines):
            data = json.loads(line)
            if number and number % 3 == 0 and data.get("results"):
                data["results"] = data["results"][:-1]
                line = json.dumps(data, ensure_ascii=False) + "\n"
            written.write(line)
    temp.rename(out)
    return out


def _case(workdir: Path, size: float, queries: int, seed: int) -> tuple[Path, Path]:
    corpus = workdir / f"corpus-{size:g}mb-seed{seed}"
    case = workdir / f"case-{size:g}mb-{queries}q-seed{seed}"
    if not (case / "run.jsonl").exists():
        subprocess.run(
            [
                sys.executable,
                str(_BENCH_EVALUATE),
                "--workdir",
                str(workdir),
                "--seed",
                str(seed),
                "--generate",
                f"{size:g},{queries}",
            ],
            check=True,
        )
    return corpus, case


def _same(a: Path, b: Path) -> bool:
    return _CREATED.sub(b"", a.read_bytes()) == _CREATED.sub(b"", b.read_bytes())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/sp-bench"))
    parser.add_argument("--size", type=float, default=50)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--jobs",
        default="1,2",
        help="--jobs values, comma-separated ('default': the command without --jobs)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per row (median shown)")
    parser.add_argument("--commands", default="evaluate,gate")
    parser.add_argument(
        "--case",
        type=Path,
        default=None,
        help="a case directory (corpus/, gold.jsonl, run.jsonl: bench_adversarial's) instead "
        "of the generated one; the candidate is written beside its run",
    )
    args = parser.parse_args(argv)
    _adopt_orphans()
    if args.case is None:
        corpus, case = _case(args.workdir, args.size, args.queries, args.seed)
    else:
        corpus, case = args.case / "corpus", args.case
    gold, run = case / "gold.jsonl", case / "run.jsonl"
    candidate = _candidate(run)
    env = dict(os.environ)
    env.setdefault("SPANCHOR_INDEX_CACHE", str(args.workdir / "index-cache"))
    out = args.workdir / "jobs-out"
    out.mkdir(exist_ok=True)
    commands = {
        "evaluate": ["evaluate", str(corpus), str(gold), str(run), "-q"],
        "gate": [
            "gate",
            "--docs", str(corpus),
            "--gold", str(gold),
            "--baseline", str(run),
            "--candidate", str(candidate),
            "-q",
        ],
    }  # fmt: skip
    _run([*commands["evaluate"], "-o", str(out / "warm.json")], env)  # the index cache, warm
    print(
        f"spanchor --jobs benchmark: {args.size:g} MB x {args.queries:,} queries x 10 results; "
        f"{os.cpu_count()} CPUs; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(f"{'command':<10}{'jobs':>8}{'wall s':>9}{'CPU s':>9}  peak MiB per process  same bytes")
    wanted = [name for name in args.commands.split(",") if name]
    evaluate_wall: float | None = None
    for name in wanted:
        for jobs in [j for j in args.jobs.split(",") if j]:
            target = out / f"{name}-{jobs}.json"
            flag = [] if jobs == "default" else ["--jobs", jobs]
            rows = [
                _run([*commands[name], *flag, "-o", str(target)], env) for _ in range(args.repeat)
            ]
            wall = statistics.median(r.wall for r in rows)
            cpu = statistics.median(r.cpu for r in rows)
            peaks = rows[-1].peaks
            first = out / f"{name}-{args.jobs.split(',')[0]}.json"
            same = "yes" if _same(first, target) else "NO"
            shown = " + ".join(f"{p:.0f}" for p in peaks)
            ratio = ""
            if name == "evaluate" and evaluate_wall is None:  # the first --jobs value's
                evaluate_wall = wall
            elif name == "gate" and evaluate_wall:
                ratio = f"  ({wall / evaluate_wall:.2f}x evaluate, first --jobs value)"
            print(f"{name:<10}{jobs:>8}{wall:>9.2f}{cpu:>9.2f}  {shown:<22} {same}{ratio}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
