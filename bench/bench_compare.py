"""Benchmark: ``spanchor compare`` of two large evaluation files, whole process.

1. A *generator* (this interpreter) builds two :class:`~spanchor_core.evaluate.Evaluation`
   objects of N queries directly (deterministic from ``--seed``: every metric of
   :func:`~spanchor_core.metrics.metric_names` at K = 1, 3, 5, 10, five located results and one
   or two gold spans per query; the candidate is the baseline with about 30 % of the queries
   moved) and writes them with :func:`~spanchor_core.evaluate.write_evaluation`.
2. *Per phase*, once, in a fresh interpreter: import, read the baseline and the candidate
   (``load_side``: the kind check and ``read_evaluation``), classify (``compare`` less the
   statistics), the statistics (``paired_statistics``, timed by wrapping it), the diagnosis,
   ``write_comparison`` and the Markdown, JUnit and terminal renderings; wall, CPU and the peak
   RSS of each phase (``VmHWM``, reset through ``/proc/self/clear_refs``). Every output is kept
   (``--keep-output DIR``), to ``cmp`` one version of the code against another.
3. ``spanchor compare a.json b.json -o comparison.json -q`` runs ``--repeat`` times in a fresh
   interpreter (``python -m spanchor_core.cli``); each run's wall time (``perf_counter`` around
   the child), CPU time (user + system) and peak RSS (``ru_maxrss``) come from ``os.wait4``,
   i.e. the child alone. The median of each is printed with the range.
4. The *floor*: a fresh interpreter that only reads both files and parses them with the
   standard library's ``json.loads`` (and, for reference, ``orjson.loads``), measured the same
   way; also ``python -c pass`` with spanchor imported (the fixed cost of the CLI).

    python bench/bench_compare.py                       # 100,000 queries, 3 repeats
    python bench/bench_compare.py --queries 10000 --repeat 5 --workdir /tmp/sp-compare
    python bench/bench_compare.py --workdir /tmp/sp-compare --phases-only --keep-output /tmp/after

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from spanchor_core.evaluate import (
    Evaluation,
    EvaluationSettings,
    LocatedResult,
    MappingStats,
    QueryEvaluation,
    write_evaluation,
)
from spanchor_core.metrics import metric_names
from spanchor_core.spans import DocSpan

K = (1, 3, 5, 10)
RESULTS = 5
TARGET_WALL = 10.0
TARGET_PEAK_MIB = 1024.0


def _evaluation(n: int, seed: int, shift: float) -> Evaluation:
    """``n`` queries of made-up but well-formed scores; ``shift`` moves ~30 % of them."""
    rng = np.random.default_rng(seed)
    names = metric_names(K)
    base = np.random.default_rng(12345).random((n, len(names)))  # shared by both sides
    moved = rng.random(n) < 0.3
    values = base + np.where(moved[:, None], shift * rng.standard_normal((n, len(names))), 0.0)
    # scores stay in [0, 1] (counts are not scores: keep them whole numbers)
    values = np.clip(np.round(values, 4), 0.0, 1.0)
    counts_at = [i for i, name in enumerate(names) if name.split("@")[0] in ("retrieved_chars",)]
    values[:, counts_at] = np.round(values[:, counts_at] * 4000)
    unmapped_at = [i for i, name in enumerate(names) if name.split("@")[0] == "unmapped"]
    values[:, unmapped_at] = np.round(values[:, unmapped_at] * 3)
    docs = [f"doc-{d:04d}" for d in range(500)]
    doc_of = rng.integers(0, len(docs), size=(n, RESULTS))
    starts = rng.integers(0, 500_000, size=(n, RESULTS))
    lengths = rng.integers(300, 1000, size=(n, RESULTS))
    statuses = np.where(rng.random((n, RESULTS)) < 0.9, "exact", "normalised")
    statuses[rng.random((n, RESULTS)) < 0.05] = "unmapped"
    gold_two = rng.random(n) < 1 / 3
    queries: dict[str, QueryEvaluation] = {}
    for q in range(n):
        results = []
        for r in range(RESULTS):
            status = str(statuses[q, r])
            mapped = status != "unmapped"
            start = int(starts[q, r])
            results.append(
                LocatedResult(
                    rank=r + 1,
                    status=status,
                    document_id=docs[doc_of[q, r]] if mapped else None,
                    start=start if mapped else None,
                    end=start + int(lengths[q, r]) if mapped else None,
                    confidence=1.0 if status == "exact" else 0.93 if mapped else 0.0,
                )
            )
        gold = [DocSpan(docs[doc_of[q, 0]], int(starts[q, 0]) + 10, int(starts[q, 0]) + 200)]
        if gold_two[q]:
            gold.append(DocSpan(docs[(q * 7) % len(docs)], 1000, 1400))
        qid = f"q{q:06d}"
        queries[qid] = QueryEvaluation(
            query_id=qid,
            metrics=dict(zip(names, values[q].tolist(), strict=True)),
            gold=tuple(gold),
            results=tuple(results),
            mapping=MappingStats.of(results),
        )
    return Evaluation(
        queries=queries,
        settings=EvaluationSettings(
            k=K,
            corpus_fingerprint="0" * 64,
            gold_sha256="1" * 64,
            gold_path="gold.jsonl",
            run_path=f"run-{seed}.jsonl",
            created_at="2026-01-01T00:00:00+00:00",
        ),
        metric_names=tuple(names),
        mapping=MappingStats.combine([query.mapping for query in queries.values()]),
        records=n,
    )


@dataclass(frozen=True)
class Sample:
    wall: float
    cpu: float
    peak_mib: float
    code: int


def _run(argv: list[str], cwd: Path) -> Sample:
    started = time.perf_counter()
    child = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    assert child.stderr is not None
    err = child.stderr.read().decode("utf-8", "replace")
    child.stderr.close()
    if child.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv)} failed ({child.returncode}):\n{err}")
    # ru_maxrss is in KiB on Linux
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, child.returncode)


def _summary(label: str, samples: list[Sample]) -> str:
    def med(values: list[float]) -> str:
        return f"{statistics.median(values):6.2f} ({min(values):.2f}–{max(values):.2f})"

    walls = [s.wall for s in samples]
    cpus = [s.cpu for s in samples]
    peaks = [s.peak_mib for s in samples]
    return (
        f"{label:<34} wall {med(walls)} s   cpu {med(cpus)} s   "
        f"peak {statistics.median(peaks):7.1f} MiB   exit {samples[0].code}"
    )


_PHASES = r"""
import gc, io, os, resource, sys, time
from contextlib import redirect_stdout
from pathlib import Path

def _hwm():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

def _reset():
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:
        pass

rows = []
def phase(name, started, cpu):
    rows.append((name, time.perf_counter() - started, time.process_time() - cpu, _hwm()))
    _reset()

t, c = time.perf_counter(), time.process_time()
import spanchor_core.cli.evaluation as cli
from spanchor_core.compare import compare, write_comparison
from spanchor_core.diagnosis import diagnose_regressions
from spanchor_core.pipeline import load_side
from spanchor_core.render.junit import comparison_junit
from spanchor_core.render.markdown import comparison_markdown
phase("import spanchor_core.cli", t, c)
a, b, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
t, c = time.perf_counter(), time.process_time()
base = load_side(a, corpus=None, gold=None)
phase("read baseline (kind + read)", t, c)
t, c = time.perf_counter(), time.process_time()
cand = load_side(b, corpus=None, gold=None)
phase("read candidate (kind + read)", t, c)
classify = sys.modules["spanchor_core.compare.classify"]
inner = classify.paired_statistics
spent = [0.0, 0.0, 0.0]
def timed(*args, **kwargs):
    t, c = time.perf_counter(), time.process_time()
    try:
        return inner(*args, **kwargs)
    finally:
        spent[0] += time.perf_counter() - t
        spent[1] += time.process_time() - c
        spent[2] = max(spent[2], _hwm())
classify.paired_statistics = timed
t, c = time.perf_counter(), time.process_time()
comparison = compare(base, cand)
wall, cpu = time.perf_counter() - t - spent[0], time.process_time() - c - spent[1]
rows.append(("classify (compare without statistics)", wall, cpu, _hwm()))
rows.append(("statistics (bootstrap + sign flips)", spent[0], spent[1], spent[2]))
_reset()
t, c = time.perf_counter(), time.process_time()
if comparison.regressions():
    import dataclasses
    diagnosis = diagnose_regressions(comparison, base, cand)
    comparison = dataclasses.replace(comparison, diagnosis=diagnosis)
else:
    diagnosis = None
phase("diagnose regressions", t, c)
t, c = time.perf_counter(), time.process_time()
write_comparison(comparison, out / "comparison.json")
phase("write comparison JSON", t, c)
t, c = time.perf_counter(), time.process_time()
text = comparison_markdown(comparison, baseline=base, candidate=cand)
(out / "report.md").write_text(text, encoding="utf-8")
(out / "junit.xml").write_text(comparison_junit(comparison), encoding="utf-8")
screen = io.StringIO()
with redirect_stdout(screen):
    cli._print_comparison(comparison, False, diagnosis, policy_given=False)
(out / "terminal.txt").write_text(screen.getvalue(), encoding="utf-8")
phase("render Markdown + JUnit + terminal", t, c)
for name, wall, cpu, peak in rows:
    print(f"  {name:<40} wall {wall:6.2f} s   cpu {cpu:6.2f} s   peak {peak:7.1f} MiB")
print(f"  {'highest of the phases':<40} peak {max(row[3] for row in rows):7.1f} MiB")
"""
"""One fresh interpreter timing each phase of what ``spanchor compare`` does (wall, CPU, and
the peak RSS of each phase: ``VmHWM``, reset through ``/proc/self/clear_refs`` between them);
it also writes the comparison JSON, the Markdown report, the JUnit XML and the terminal
output (``COLUMNS=120``), so that two versions of the code can be diffed on the same inputs."""


_FLOOR = """
import json, sys, time
import orjson
t = time.perf_counter()
for name in sys.argv[1:]:
    with open(name, "rb") as handle:
        json.loads(handle.read().decode("utf-8"))
a = time.perf_counter() - t
t = time.perf_counter()
for name in sys.argv[1:]:
    with open(name, "rb") as handle:
        orjson.loads(handle.read())
b = time.perf_counter() - t
print(f"json.loads {a:.2f} s, orjson.loads {b:.2f} s", file=sys.stderr)
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, help="keep (and reuse) the generated files here")
    parser.add_argument(
        "--keep-output",
        type=Path,
        help="a directory: the phases run's comparison JSON, Markdown, JUnit and terminal output",
    )
    parser.add_argument(
        "--phases-only", action="store_true", help="only the per-phase run (no whole-process runs)"
    )
    parser.add_argument("--profile", action="store_true", help="also run once under cProfile")
    parser.add_argument("--generate-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    temp = None
    if args.generate_only and args.workdir is None:
        parser.error("--generate-only needs --workdir")
    if args.workdir is None:
        temp = tempfile.TemporaryDirectory(prefix="bench-compare-")
        workdir = Path(temp.name)
    else:
        workdir = args.workdir
        workdir.mkdir(parents=True, exist_ok=True)
    a = workdir / f"base-{args.queries}q-seed{args.seed}.json"
    b = workdir / f"cand-{args.queries}q-seed{args.seed}.json"
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, workdir {workdir}")
    for path, seed, shift in ((a, args.seed, 0.0), (b, args.seed + 1, 0.05)):
        if args.generate_only:
            write_evaluation(_evaluation(args.queries, seed, shift), path)
        elif not path.exists():
            # in a child, so that this process stays small: a forked child's peak RSS
            # (ru_maxrss) starts from its parent's size
            started = time.perf_counter()
            command = [sys.executable, __file__, *sys.argv[1:], "--workdir", str(workdir)]
            subprocess.run([*command, "--generate-only"], check=True)
            print(f"generated the inputs in {time.perf_counter() - started:.1f} s")
    if args.generate_only:
        return 0
    size = (a.stat().st_size + b.stat().st_size) / 2**20
    print(f"inputs: 2 × {args.queries:,} queries, {size:.1f} MiB together\n")

    out = workdir / "comparison.json"
    python = sys.executable
    compare = [python, "-m", "spanchor_core.cli", "compare", str(a), str(b), "-o", str(out), "-q"]
    kept = args.keep_output if args.keep_output is not None else workdir / "phases"
    kept.mkdir(parents=True, exist_ok=True)
    print("per phase, one fresh interpreter (peak: the highest RSS during that phase):")
    environment = {**os.environ, "COLUMNS": "120"}
    # in the work directory, like every measured child: ``-c`` puts the current directory
    # first on sys.path, which would shadow PYTHONPATH when run from a checkout
    phases = subprocess.run(
        [python, "-c", _PHASES, str(a), str(b), str(kept.resolve())], env=environment, cwd=workdir
    )
    if phases.returncode:
        sys.exit(f"the phases run failed ({phases.returncode})")
    print(f"outputs of the phases run in {kept}\n")
    if args.phases_only:
        if temp is not None:
            temp.cleanup()
        return 0
    runs = [_run(compare, workdir) for _ in range(args.repeat)]
    floor = [_run([python, "-c", _FLOOR, str(a), str(b)], workdir) for _ in range(args.repeat)]
    start_only = [_run([python, "-c", "import spanchor_core.cli"], workdir) for _ in range(3)]
    print(_summary("spanchor compare a b -o c -q", runs))
    print(_summary("floor: read + json.loads both", floor))
    print(_summary("interpreter + import spanchor", start_only))
    subprocess.run([python, "-c", _FLOOR, str(a), str(b)], check=True)
    print(f"target: ≤ {TARGET_WALL:g} s wall, ≤ {TARGET_PEAK_MIB:g} MiB peak")
    wall = statistics.median(s.wall for s in runs)
    peak = statistics.median(s.peak_mib for s in runs)
    ok = wall <= TARGET_WALL and peak <= TARGET_PEAK_MIB
    print(f"{'MET' if ok else 'NOT MET'}: {wall:.2f} s, {peak:.0f} MiB")
    if args.profile:
        stats = workdir / "compare.prof"
        profiled = [python, "-m", "cProfile", "-o", str(stats), *compare[1:]]
        _run(profiled, workdir)
        subprocess.run(
            [
                python,
                "-c",
                f"import pstats; pstats.Stats({str(stats)!r})"
                ".sort_stats('tottime').print_stats(25)",
            ],
            check=True,
        )
    if temp is not None:
        temp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
