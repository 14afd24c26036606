"""Benchmark: what the ``spanchor`` command costs before it does any work, whole process.

Each case runs ``--repeat`` times in a fresh interpreter (``python -m spanchor_core.cli`` or
``python -c``), the code roots given by ``--code`` alternated run by run so that a loaded
machine weighs on each alike. Wall time is ``perf_counter`` around the child; CPU time (user +
system) and peak RSS come from ``os.wait4``, i.e. the child alone. The median of each is
printed with the range, and the load average before and after.

Cases: ``python -c pass`` (the interpreter alone), ``import spanchor_core``,
``import spanchor_core.cli``, ``spanchor --version``, ``spanchor --help``,
``spanchor evaluate --help``, and ``spanchor evaluate`` of the quickstart example (copied once
with ``spanchor example quickstart`` into ``--workdir``: a 3-document corpus, so nearly all of
its time is start-up), with its terminal table or quiet (``-q``, what CI runs).

``--compile`` byte-compiles each code root first (``compileall``): with
``PYTHONDONTWRITEBYTECODE`` set, a module whose ``.pyc`` is missing or stale is compiled from
source in every process, which can cost more than the import being measured.

    python bench/bench_startup.py --code /work/main --code . --repeat 5
    python bench/bench_startup.py --cases version,help --repeat 9
    python bench/bench_startup.py --code /tmp/main-copy --code . --cases evaluate-quiet --compile

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CASES: dict[str, list[str]] = {
    "python": ["-c", "pass"],
    "import": ["-c", "import spanchor_core"],
    "import-cli": ["-c", "import spanchor_core.cli"],
    "version": ["-m", "spanchor_core.cli", "--version"],
    "help": ["-m", "spanchor_core.cli", "--help"],
    "evaluate-help": ["-m", "spanchor_core.cli", "evaluate", "--help"],
    "evaluate": [
        "-m",
        "spanchor_core.cli",
        "evaluate",
        "docs",
        "gold.jsonl",
        "runs/candidate.jsonl",
        "-o",
        "{out}",
    ],
    "evaluate-quiet": [
        "-m",
        "spanchor_core.cli",
        "evaluate",
        "docs",
        "gold.jsonl",
        "runs/candidate.jsonl",
        "-q",
        "-o",
        "{out}",
    ],
}


def _child(args: list[str], root: Path, cwd: Path) -> tuple[float, float, float]:
    """Wall s, CPU s (user + system) and peak RSS MiB of one run of ``python *args``."""
    env = dict(os.environ, PYTHONPATH=f"{root}{os.pathsep}{root / 'integrations'}")
    began = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - began
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)} with {root} exited {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _example(workdir: Path, root: Path) -> Path:
    target = workdir / "quickstart"
    if not target.exists():
        workdir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, PYTHONPATH=str(root))
        subprocess.run(
            [sys.executable, "-m", "spanchor_core.cli", "example", "quickstart", str(target)],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
        )
    return target


def _shown(values: list[float], unit: str, digits: int = 3) -> str:
    return (
        f"{statistics.median(values):.{digits}f} {unit} "
        f"({min(values):.{digits}f}-{max(values):.{digits}f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", action="append", type=Path, help="repository root (repeatable)")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated case names")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/spanchor-startup"))
    parser.add_argument("--compile", action="store_true", help="byte-compile each root first")
    options = parser.parse_args()
    roots = [root.resolve() for root in options.code or [Path(__file__).resolve().parents[1]]]
    if options.compile:
        for root in roots:
            subprocess.run(
                [sys.executable, "-m", "compileall", "-q", str(root / "spanchor_core")],
                check=True,
                stdout=subprocess.DEVNULL,
            )
    cases = options.cases.split(",")
    unknown = [case for case in cases if case not in CASES]
    if unknown:
        raise SystemExit(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")
    example = _example(options.workdir, roots[-1])
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for case in cases:
        results: dict[Path, list[tuple[float, float, float]]] = {root: [] for root in roots}
        for _ in range(options.repeat):
            for number, root in enumerate(roots):
                out = options.workdir / f"evaluation-{number}.json"
                args = [arg.format(out=out) for arg in CASES[case]]
                results[root].append(_child(args, root, example))
        for root, runs in results.items():
            walls, cpus, peaks = zip(*runs, strict=True)
            print(
                f"{case:14} {root!s:28} wall {_shown(list(walls), 's')}  "
                f"CPU {_shown(list(cpus), 's')}  peak {_shown(list(peaks), 'MiB', 0)}"
            )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
