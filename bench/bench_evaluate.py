"""Benchmark: the whole evaluation path a user runs, from files on disk to the evaluation file.

For each configuration (corpus size in MB x number of queries) three things happen:

1. a *generator* interpreter writes a synthetic corpus as ``.md`` files (the generators of
   ``bench_mapping.py``, loaded from its path), a gold set of one or two anchors per query
   (:func:`spanchor_core.gold.write_gold`) and a run file of queries x 10 results recorded with
   :class:`spanchor_core.runs.RunRecorder`, with the chunk mix of ``bench_mapping.py``
   (altered whitespace, absent, metadata headers, stripped markup, right and wrong offsets);
2. a fresh *measuring* interpreter runs the user path and times each phase: ``load_corpus``
   (disk read + canonicalisation), ``read_gold``, the :class:`Locator` index build, then
   either (``--streaming``, the default: what ``spanchor evaluate`` and ``spanchor gate`` do)
   :func:`evaluate_file`, which reads the run record by record while it maps, split into the
   mapping (time spent in ``Locator.locate_many``) and the rest (reading the run, gold
   validation, query-id resolution, coverage and metrics), or (``--no-streaming``, the
   library path for a run already in memory) ``read_run`` and :func:`evaluate` split the same
   way; then ``write_evaluation``. It reports its peak RSS (``VmHWM``);
3. the parent prints the measuring process's own wall time, interpreter start and imports
   included.

    python bench/bench_evaluate.py --sizes 1,10,50 --queries 100,1000,10000
    python bench/bench_evaluate.py --sizes 50 --queries 10000 --profile
    python bench/bench_evaluate.py --sizes 50 --queries 10000 --no-streaming

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import io
import os
import platform
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

from spanchor_core.corpus import Corpus, load_corpus, sha256_text
from spanchor_core.evaluate import evaluate, evaluate_file, write_evaluation
from spanchor_core.gold import Anchor, GoldQuery, GoldSet, read_gold, write_gold
from spanchor_core.locate import LocateRequest, Location, Locator
from spanchor_core.runs import RetrievedResult, RunRecorder, iter_run, read_run

__all__ = ["TimedLocator", "generate", "measure"]

CHUNKS_PER_QUERY = 10
CPU_SECONDS: dict[str, float] = {}
"""Process CPU time (user + system) per phase, beside the wall times (less affected by load)."""
_MAPPING_BENCH = Path(__file__).resolve().with_name("bench_mapping.py")


def _bench_mapping() -> ModuleType:
    """``bench_mapping.py`` loaded from its path (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location("_bench_mapping", _MAPPING_BENCH)
    if spec is None or spec.loader is None:  # pragma: no cover - the file is next to this one
        raise RuntimeError(f"cannot load {_MAPPING_BENCH}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------ generating the files


def _corpus_dir(workdir: Path, size: float, seed: int) -> Path:
    return workdir / f"corpus-{size:g}mb-seed{seed}"


def _case_dir(workdir: Path, size: float, n_queries: int, seed: int) -> Path:
    return workdir / f"case-{size:g}mb-{n_queries}q-seed{seed}"


def _anchor(text: str, document_id: str, start: int, end: int) -> Anchor:
    return Anchor(document_id, start, end, sha256_text(text[start:end]))


def generate(workdir: Path, size: float, n_queries: int, seed: int) -> Path:
    """Write corpus (once per size), gold set and run file; return the case directory.

    Gold evidence per query: usually (85 %) a piece of the span one of its ten chunks really
    came from, at a random rank, so scores spread over the ranks; otherwise a random span the
    run does not retrieve. A third of the queries get a second, random anchor (partial
    recall). 5 % of the records carry no query id and are resolved by their text.
    """
    mapping = _bench_mapping()
    texts: dict[str, str] = mapping.make_corpus_texts(size, seed)
    corpus_dir = _corpus_dir(workdir, size, seed)
    if not corpus_dir.is_dir():
        partial = corpus_dir.with_name(corpus_dir.name + ".partial")
        partial.mkdir(parents=True, exist_ok=True)
        for doc_id, text in texts.items():
            (partial / f"{doc_id}.md").write_text(text, encoding="utf-8", newline="")
        partial.rename(corpus_dir)
    case = _case_dir(workdir, size, n_queries, seed)
    case.mkdir(parents=True, exist_ok=True)
    chunks = mapping.make_chunks(texts, n_queries * CHUNKS_PER_QUERY, seed + 1)
    rng = np.random.default_rng(seed + 2)
    ids = sorted(texts)

    def random_anchor() -> Anchor:
        doc_id = ids[int(rng.integers(0, len(ids)))]
        text = texts[doc_id]
        length = int(rng.integers(100, 400))
        start = int(rng.integers(0, len(text) - length))
        return _anchor(text, doc_id, start, start + length)

    queries: list[GoldQuery] = []
    for q in range(n_queries):
        batch = chunks[q * CHUNKS_PER_QUERY : (q + 1) * CHUNKS_PER_QUERY]
        found = [chunk.truth for chunk in batch if chunk.truth is not None]
        anchors: list[Anchor] = []
        if found and rng.random() < 0.85:
            doc_id, start, end = found[int(rng.integers(0, len(found)))]
            a = start + int(rng.integers(0, (end - start) // 3))
            b = end - int(rng.integers(0, (end - start) // 3))
            anchors.append(_anchor(texts[doc_id], doc_id, a, b))
        else:
            anchors.append(random_anchor())
        if rng.random() < 1 / 3:
            anchors.append(random_anchor())
        queries.append(GoldQuery(f"q{q:05d}", f"synthetic question number {q}?", tuple(anchors)))
    gold = GoldSet(queries)
    write_gold(gold, case / "gold.jsonl")

    with RunRecorder(
        case / "run.jsonl",
        retriever="synthetic (bench_evaluate.py)",
        parameters={"size_mb": size, "queries": n_queries, "seed": seed, "k": CHUNKS_PER_QUERY},
        corpus_fingerprint=Corpus.from_texts(texts).fingerprint,
        gold_sha256=gold.sha256,
        strict=True,
    ) as recorder:
        for q, query in enumerate(queries):
            batch = chunks[q * CHUNKS_PER_QUERY : (q + 1) * CHUNKS_PER_QUERY]
            results = [
                RetrievedResult(
                    rank=rank,
                    text=chunk.request.text,
                    score=round(1.0 - rank / 20, 3),
                    document_id=chunk.request.document_id,
                    start=chunk.request.start,
                    end=chunk.request.end,
                    metadata={"chunk": q * CHUNKS_PER_QUERY + rank - 1, "kind": chunk.kind},
                )
                for rank, chunk in enumerate(batch, start=1)
            ]
            query_id = None if q % 20 == 7 else query.query_id
            recorder.record(query.question, results, query_id=query_id, latency_ms=12.5)
    return case


# ------------------------------------------------------------------ measuring the user path


class TimedLocator(Locator):
    """A :class:`Locator` that adds the wall (CPU) time spent in :meth:`locate_many` to
    ``seconds`` (``cpu_seconds``).

    Passing one to :func:`evaluate` splits its time into mapping and everything else without
    mapping twice.
    """

    seconds: float = 0.0
    cpu_seconds: float = 0.0

    def locate_many(self, requests: Sequence[LocateRequest]) -> list[Location]:
        t0 = time.perf_counter()
        c0 = time.process_time()
        try:
            return super().locate_many(requests)
        finally:
            self.seconds += time.perf_counter() - t0
            self.cpu_seconds += time.process_time() - c0


@contextmanager
def _timed(label: str, phases: dict[str, float], peaks: dict[str, int]) -> Iterator[None]:
    """Time a phase; when the kernel lets us reset VmHWM, also record the phase's peak RSS."""
    reset = _reset_peak()
    t0 = time.perf_counter()
    c0 = time.process_time()
    yield
    phases[label] = time.perf_counter() - t0
    CPU_SECONDS[label] = time.process_time() - c0
    if reset:
        peaks[label] = _rss_kib()[1]


def _reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark (Linux: write 5 to /proc/self/clear_refs)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _rss_kib() -> tuple[int, int]:
    """(current RSS, peak RSS) in KiB: VmRSS and VmHWM from /proc/self/status."""
    values = {"VmRSS": 0, "VmHWM": 0}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key = line.split(":", 1)[0]
            if key in values:
                values[key] = int(line.split()[1])
    except OSError:  # not Linux: ru_maxrss is the peak (KiB on Linux, bytes on macOS)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak, peak
    return values["VmRSS"], values["VmHWM"]


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@dataclass(slots=True)
class Measurement:
    """What one pass over the user path measured."""

    phases: dict[str, float]
    corpus_bytes: int
    run_bytes: int
    gold_bytes: int
    evaluation_bytes: int
    n_documents: int
    n_queries: int
    n_results: int
    baseline_kib: int
    peak_kib: int
    phase_peaks_kib: dict[str, int]
    counts: dict[str, int]
    recall_at_5: float


def measure(
    case: Path,
    corpus_dir: Path,
    *,
    profile: cProfile.Profile | None = None,
    streaming: bool = True,
    run_name: str = "run.jsonl",
) -> Measurement:
    """Run load -> read gold -> index -> evaluate -> write, timing each phase.

    ``streaming``: :func:`evaluate_file` reads the run while evaluating; otherwise
    ``read_run`` (its own phase) and :func:`evaluate`. ``run_name``: the run file in ``case``.
    """
    baseline = _rss_kib()[0]
    phases: dict[str, float] = {}
    peaks: dict[str, int] = {}
    if profile is not None:
        profile.enable()
    with _timed("load_corpus (read + canonicalise)", phases, peaks):
        corpus = load_corpus(corpus_dir)
    with _timed("read_gold", phases, peaks):
        gold = read_gold(case / "gold.jsonl")
    if not streaming:
        with _timed("read_run", phases, peaks):
            run = read_run(case / run_name)
    with _timed("index build (exact + normalised)", phases, peaks):
        locator = TimedLocator(corpus)
        locator.build_index(normalised=True)
    if streaming:
        name, rest = "evaluate_file", "read run + metrics + bookkeeping"
        with _timed(name, phases, peaks):
            stream = iter_run(case / run_name)
            evaluation = evaluate_file(corpus, gold, stream, locator=locator)
        n_records = stream.records_read
    else:
        name, rest = "evaluate", "metrics + bookkeeping"
        with _timed(name, phases, peaks):
            evaluation = evaluate(corpus, gold, run, locator=locator)
        n_records = len(run.records)
        del run
    evaluate_seconds = phases.pop(name)
    if name in peaks:
        peaks[f"{name}: map (locate_many)"] = peaks[f"{name}: {rest}"] = peaks.pop(name)
    phases[f"{name}: map (locate_many)"] = locator.seconds
    phases[f"{name}: {rest}"] = evaluate_seconds - locator.seconds
    evaluate_cpu = CPU_SECONDS.pop(name)
    CPU_SECONDS[f"{name}: map (locate_many)"] = locator.cpu_seconds
    CPU_SECONDS[f"{name}: {rest}"] = evaluate_cpu - locator.cpu_seconds
    with _timed("write_evaluation", phases, peaks):
        write_evaluation(evaluation, case / "evaluation.json")
    if profile is not None:
        profile.disable()
    return Measurement(
        phases=phases,
        corpus_bytes=_dir_bytes(corpus_dir),
        run_bytes=(case / "run.jsonl").stat().st_size,
        gold_bytes=(case / "gold.jsonl").stat().st_size,
        evaluation_bytes=(case / "evaluation.json").stat().st_size,
        n_documents=len(corpus),
        n_queries=n_records,
        n_results=evaluation.mapping.total,
        baseline_kib=baseline,
        peak_kib=max([_rss_kib()[1], *peaks.values()]),
        phase_peaks_kib=peaks,
        counts={name: n for name, n in evaluation.mapping.counts.items() if n},
        recall_at_5=evaluation.mean("recall@5"),
    )


def _print_measurement(title: str, m: Measurement) -> None:
    mib = 2**20
    input_bytes = m.corpus_bytes + m.run_bytes
    print(f"\n== {title}")
    print(
        f"  input: corpus {m.corpus_bytes / mib:.1f} MiB in {m.n_documents} files + run file "
        f"{m.run_bytes / mib:.1f} MiB ({m.n_queries:,} records, {m.n_results:,} results mapped) "
        f"= {input_bytes / mib:.1f} MiB; gold {m.gold_bytes / mib:.2f} MiB, "
        f"evaluation written {m.evaluation_bytes / mib:.1f} MiB"
    )
    print(f"  {'phase':<48} {'wall':>10} {'CPU':>10}   peak RSS during the phase")
    for name, seconds in m.phases.items():
        peak_kib = m.phase_peaks_kib.get(name)
        peak_text = "" if peak_kib is None else f"{peak_kib / 1024:8.1f} MiB"
        if name.startswith("evaluate") and ": " in name and peak_kib is not None:
            peak_text += f" (whole {name.split(':')[0]})"
        cpu = CPU_SECONDS.get(name)
        cpu_text = "" if cpu is None else f"{cpu:8.3f} s"
        print(f"  {name:<48} {seconds:8.3f} s {cpu_text:>10} {peak_text}")
    for name, cpu in CPU_SECONDS.items():
        if name not in m.phases:  # evaluate_file / evaluate, split above by wall time only
            print(f"  {name + ' (whole, CPU)':<48} {'':>10} {cpu:8.3f} s")
    total = sum(m.phases.values())
    cpu_total = sum(CPU_SECONDS.values())
    print(f"  {'total (phases above)':<48} {total:8.3f} s {cpu_total:8.3f} s")
    per_result = total / max(m.n_results, 1) * 1e6
    print(
        f"  per result {per_result:.1f} µs wall, {cpu_total / max(m.n_results, 1) * 1e6:.1f} µs CPU"
    )
    peak = m.peak_kib * 1024
    print(
        f"  peak RSS {peak / mib:8.1f} MiB = {peak / input_bytes:.2f}x input "
        f"(VmHWM from /proc/self/status, reset through /proc/self/clear_refs "
        f"before each phase, highest value kept; interpreter and imports included; "
        f"{m.baseline_kib / 1024:.1f} MiB after imports, so "
        f"{(m.peak_kib - m.baseline_kib) / 1024:.1f} MiB = "
        f"{(m.peak_kib - m.baseline_kib) * 1024 / input_bytes:.2f}x input for the work itself)"
    )
    print("  statuses: " + ", ".join(f"{k}={v}" for k, v in m.counts.items()))
    print(f"  mean recall@5 {m.recall_at_5:.3f}")


def _measure_one(
    workdir: Path, size: float, n_queries: int, seed: int, top: int, streaming: bool
) -> None:
    case = _case_dir(workdir, size, n_queries, seed)
    corpus_dir = _corpus_dir(workdir, size, seed)
    profile = cProfile.Profile() if top else None
    m = measure(case, corpus_dir, profile=profile, streaming=streaming)
    path = "evaluate_file (streaming)" if streaming else "read_run + evaluate"
    title = f"{size:g} MB x {n_queries:,} queries x {CHUNKS_PER_QUERY} results, {path}"
    _print_measurement(title, m)
    if profile is not None:
        out = io.StringIO()
        stats = pstats.Stats(profile, stream=out)
        stats.sort_stats("tottime").print_stats(top)
        stats.sort_stats("cumulative").print_stats(top)
        print("  (times above are under cProfile, which slows Python-heavy phases)")
        print(out.getvalue())


# ------------------------------------------------------------------ driver


def _run(arguments: list[str]) -> tuple[float, float]:
    """Run this script with ``arguments`` in a fresh interpreter; return its wall and CPU time."""
    sys.stdout.flush()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, __file__, *arguments], check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,10,50", help="corpus sizes in MB, comma-separated")
    parser.add_argument("--queries", default="100,1000,10000", help="query counts (x10 results)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--workdir", type=Path, help="keep the generated files here (default: a temporary dir)"
    )
    parser.add_argument(
        "--profile",
        type=int,
        nargs="?",
        const=30,
        default=0,
        metavar="N",
        help="run the measurement under cProfile and print the top N functions (default 30)",
    )
    parser.add_argument(
        "--streaming",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="evaluate with evaluate_file, reading the run while mapping (the default, what "
        "the CLI does), or read the whole run first and call evaluate (--no-streaming)",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="measuring runs per configuration (median shown)"
    )
    parser.add_argument("--generate", help=argparse.SUPPRESS)  # SIZE,QUERIES
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # SIZE,QUERIES
    args = parser.parse_args(argv)
    for option in ("generate", "measure"):
        value = getattr(args, option)
        if value:
            if args.workdir is None:
                parser.error(f"--{option} needs --workdir")
            size, n_queries = value.split(",")
            if option == "generate":
                generate(args.workdir, float(size), int(n_queries), args.seed)
            else:
                _measure_one(
                    args.workdir,
                    float(size),
                    int(n_queries),
                    args.seed,
                    args.profile,
                    args.streaming,
                )
            return 0
    print(
        f"spanchor evaluation benchmark; Python {platform.python_version()}, "
        f"numpy {np.__version__}, {platform.machine()}, {_cpu_count()} CPUs; "
        "wall times from time.perf_counter; one generating and one measuring interpreter "
        "per configuration"
    )
    sizes = [float(x) for x in args.sizes.split(",") if x]
    queries = [int(x) for x in args.queries.split(",") if x]
    with tempfile.TemporaryDirectory(prefix="spanchor-bench-") as temp:
        workdir = args.workdir or Path(temp)
        for size in sizes:
            for n_queries in queries:
                common = ["--workdir", str(workdir), "--seed", str(args.seed)]
                config = f"{size:g},{n_queries}"
                generated, _ = _run(["--generate", config, *common])
                extra = ["--profile", str(args.profile)] if args.profile else []
                extra.append("--streaming" if args.streaming else "--no-streaming")
                walls, cpus = [], []
                for _ in range(args.repeat):
                    wall, cpu = _run(["--measure", config, *common, *extra])
                    walls.append(wall)
                    cpus.append(cpu)
                    print(
                        f"  measuring process wall {wall:8.3f} s, CPU {cpu:8.3f} s (interpreter "
                        f"start, imports, phases, exit); files generated in {generated:.1f} s, "
                        "not counted"
                    )
                if args.repeat > 1:
                    print(
                        f"  median of {args.repeat}: wall {statistics.median(walls):.3f} s, "
                        f"CPU {statistics.median(cpus):.3f} s"
                    )
    return 0


def _cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


if __name__ == "__main__":
    sys.exit(main())
