"""Benchmark: scaling out — one-file corpora, the persistent index, and the Ray engine.

A synthetic JSONL corpus (BEIR layout, text generated from a seeded vocabulary, never stored
in the repository) of ``--size-mb`` MB, a gold set and a run of ``--queries`` queries x 10
results (text-only chunks, chunks with their document id and offsets, chunks with altered
whitespace, chunks found nowhere) are written to a temporary directory. Then each
configuration evaluates the run in a fresh interpreter (``spanchor_core.pipeline.run_evaluation``,
what ``spanchor evaluate`` does) and reports:

* wall time of the measuring process (interpreter start and imports included) and the phases
  inside it (corpus load, index build or cache load, evaluation);
* CPU seconds of the driver and of every Ray actor (``/proc/PID/stat``);
* peak RSS (``VmHWM``) of the driver and of every Ray actor.

Configurations: ``single`` (one process, cold cache), ``single-warm`` (the same, second run on
the unchanged corpus: the index is memory-mapped from the cache, nothing is built), and
``ray-N`` (a local Ray cluster, N mapping actors, warm cache). The evaluations of all
configurations are checked to be byte-identical (timestamps aside).

    python bench/bench_scale.py --size-mb 20 --queries 10000 --workers 1,2
    python bench/bench_scale.py --size-mb 1024 --queries 100000 --workers 1,2

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from spanchor_core.corpus import load_corpus_file, sha256_text
from spanchor_core.gold import Anchor, GoldQuery, GoldSet, write_gold
from spanchor_core.runs import RetrievedResult, RunRecorder

DOC_CHARS = 20_000
RESULTS = 10


def _vocabulary(rng: np.random.Generator, n: int = 20_000) -> list[str]:
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    words = []
    for _ in range(n):
        size = int(rng.integers(2, 11))
        words.append(bytes(letters[rng.integers(0, 26, size)]).decode())
    return words


def generate_corpus(workdir: Path, size_mb: float, rng: np.random.Generator) -> None:
    """Write ``workdir/corpus.jsonl`` of about ``size_mb`` MB of text."""
    vocab = np.array(_vocabulary(rng), dtype=object)
    target = int(size_mb * 1_000_000)
    written = 0
    n_docs = 0
    with (workdir / "corpus.jsonl").open("w", encoding="utf-8") as out:
        while written < target:
            words = vocab[rng.zipf(1.3, DOC_CHARS // 6) % len(vocab)]
            text = " ".join(words)[:DOC_CHARS]
            title = f"Document {n_docs}"
            out.write(json.dumps({"_id": f"d{n_docs:07d}", "title": title, "text": text}) + "\n")
            written += len(text)
            n_docs += 1


def generate(workdir: Path, size_mb: float, n_queries: int, seed: int) -> Path:
    """Write corpus.jsonl, gold.jsonl and run.jsonl under ``workdir``; return it."""
    rng = np.random.default_rng(seed)
    generate_corpus(workdir, size_mb, rng)
    corpus = load_corpus_file(workdir / "corpus.jsonl")
    ids = list(corpus)
    queries: list[GoldQuery] = []
    runs: list[list[RetrievedResult]] = []
    for q in range(n_queries):
        results = []
        anchors = []
        for rank in range(1, RESULTS + 1):
            doc_id = ids[int(rng.integers(0, len(ids)))]
            text = corpus.text(doc_id)
            length = int(rng.integers(300, 900))
            start = int(rng.integers(0, len(text) - length))
            piece = text[start : start + length]
            kind = rank % 5
            if kind == 0:  # with its document id and offsets: verified, no search
                result = RetrievedResult(
                    rank=rank, text=piece, document_id=doc_id, start=start, end=start + length
                )
            elif kind == 1:  # whitespace altered: the normalised stage
                result = RetrievedResult(rank=rank, text=piece.replace(" ", "  ", 5))
            elif kind == 2 and rank == 7:  # found nowhere
                result = RetrievedResult(rank=rank, text=f"nothing like this {q} " * 20)
            else:  # text only: the exact index
                result = RetrievedResult(rank=rank, text=piece)
            results.append(result)
            if rank in (1, 4):
                anchors.append(
                    Anchor(doc_id, start, start + length // 2, sha256_text(piece[: length // 2]))
                )
        queries.append(GoldQuery(f"q{q:06d}", f"question {q}?", tuple(anchors)))
        runs.append(results)
    gold = GoldSet(queries)
    write_gold(gold, workdir / "gold.jsonl")
    with RunRecorder(
        workdir / "run.jsonl",
        retriever="synthetic (bench_scale.py)",
        corpus_fingerprint=corpus.fingerprint,
        gold_sha256=gold.sha256,
    ) as recorder:
        for query, results in zip(queries, runs, strict=True):
            recorder.record(query.question, results, query_id=query.query_id)
    return workdir


MEASURE = r"""
import json, os, resource, sys, time
t0 = time.perf_counter()
from spanchor_core.corpus import load_corpus
from spanchor_core.evaluate import write_evaluation
from spanchor_core.index_store import persistent_locator
from spanchor_core.pipeline import run_evaluation
work, mode, workers, cache = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
shards = int(sys.argv[5])
phases = {}
t = time.perf_counter()
if shards > 1:  # the driver of a sharded run keeps the texts in the file
    from spanchor_core.corpus.lazy import open_corpus_file
    corpus = open_corpus_file(f"{work}/corpus.jsonl")
else:
    corpus = load_corpus(f"{work}/corpus.jsonl")
phases["load"] = time.perf_counter() - t
t = time.perf_counter()
if mode == "single":
    locator = persistent_locator(corpus, cache)
else:
    import ray
    ray.init(num_cpus=max(2, workers), include_dashboard=False, log_to_driver=False)
    from spanchor_core.distributed import RayLocator
    locator = RayLocator(
        corpus, source=f"{work}/corpus.jsonl", workers=workers, cache=cache, shards=shards
    )
    locator.worker_pids()  # wait for the actors to hold their corpus and index
phases["index"] = time.perf_counter() - t
t = time.perf_counter()
outcome = run_evaluation(corpus, f"{work}/gold.jsonl", f"{work}/run.jsonl", locator=locator)
phases["evaluate"] = time.perf_counter() - t
write_evaluation(outcome.evaluation, f"{work}/eval-{mode}-{workers}-{shards}.json")
def proc(pid):
    with open(f"/proc/{pid}/status") as f:
        peak = next(int(l.split()[1]) for l in f if l.startswith("VmHWM"))
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return {"peak_mb": peak / 1024, "cpu_s": cpu}
actors = [proc(pid) for pid in locator.worker_pids()] if mode != "single" else []
print(json.dumps({"phases": phases, "driver": proc(os.getpid()), "actors": actors,
                  "inside_s": time.perf_counter() - t0}))
"""


def measure(work: Path, mode: str, workers: int, cache: Path, shards: int) -> dict[str, object]:
    began = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(work), mode, str(workers), str(cache), str(shards)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    result["wall_s"] = time.perf_counter() - began
    return result


SHARD_MEMORY = r"""
import json, sys, time
from spanchor_core.corpus import load_corpus_file
t = time.perf_counter()
shards = int(sys.argv[2])
corpus = load_corpus_file(sys.argv[1], shard=None if shards == 1 else (0, shards))
with open("/proc/self/status") as f:
    peak = next(int(l.split()[1]) for l in f if l.startswith("VmHWM"))
print(json.dumps({"docs": len(corpus), "chars": corpus.total_chars, "peak_mb": peak / 1024,
                  "seconds": time.perf_counter() - t}))
"""


def shard_memory(size_mb: float, shard_counts: list[int], seed: int) -> None:
    """Peak RSS of a process holding one shard of a JSONL corpus, for each shard count."""
    with tempfile.TemporaryDirectory(prefix="spanchor-scale-") as tmp:
        work = Path(tmp)
        generate_corpus(work, size_mb, np.random.default_rng(seed))
        size = (work / "corpus.jsonl").stat().st_size / 1e6
        print(f"corpus.jsonl: {size:.0f} MB")
        print("| shards | documents in shard 0 | characters | load s | peak MB |")
        print("|---|---|---|---|---|")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        for n in shard_counts:
            done = subprocess.run(
                [sys.executable, "-c", SHARD_MEMORY, str(work / "corpus.jsonl"), str(n)],
                check=True,
                capture_output=True,
                text=True,
                env=env,
            )
            m = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"| {n} | {m['docs']} | {m['chars']} | {m['seconds']:.1f} | {m['peak_mb']:.0f} |")


def _same(work: Path) -> bool:
    texts = set()
    for path in work.glob("eval-*.json"):
        data = json.loads(path.read_text())
        data.pop("created_at", None)
        texts.add(json.dumps(data, sort_keys=True))
    return len(texts) == 1


def _run(args: argparse.Namespace, work: Path) -> None:
    t = time.perf_counter()
    if not (work / "run.jsonl").exists():
        generate(work, args.size_mb, args.queries, args.seed)
    size = (work / "corpus.jsonl").stat().st_size / 1e6
    print(f"corpus {size:.0f} MB, {args.queries} queries, ready in {time.perf_counter() - t:.1f} s")
    for old in work.glob("eval-*.json"):
        old.unlink()
    cache = work / "cache"
    plan = [("single", 1, 1, "single (cold cache)"), ("single", 1, 1, "single (warm cache)")]
    if (cache).exists():
        plan = plan[1:]
    for n in (int(w) for w in args.workers.split(",") if w):
        for shards in (int(x) for x in args.shards.split(",") if x):
            plan.append(("ray", n, shards, f"ray, {n} CPU(s), {shards} shard(s)"))
    print(
        "| configuration | wall s | load s | index s | evaluate s | driver CPU s | "
        "driver peak MB | actors | actors CPU s | actor peak MB (max) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for mode, workers, shards, label in plan:
        m = measure(work, mode, workers, cache, shards)
        phases = m["phases"]
        driver = m["driver"]
        actors = m["actors"]
        assert isinstance(phases, dict)
        assert isinstance(driver, dict)
        assert isinstance(actors, list)
        actor_cpu = sum(a["cpu_s"] for a in actors)
        actor_peak = max((a["peak_mb"] for a in actors), default=0.0)
        print(
            f"| {label} | {m['wall_s']:.1f} | {phases['load']:.1f} | {phases['index']:.1f} | "
            f"{phases['evaluate']:.1f} | {driver['cpu_s']:.1f} | {driver['peak_mb']:.0f} | "
            f"{len(actors)} | {actor_cpu:.1f} | {actor_peak:.0f} |",
            flush=True,
        )
    print(f"evaluations byte-identical: {_same(work)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=20)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--workers", default="1,2", help="Ray actor counts (empty: no Ray)")
    parser.add_argument("--shards", default="1", help="shard counts of the Ray runs (1,4,16)")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="write the generated corpus, gold set and run here and keep them (reused when "
        "present); default: a temporary directory",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--shard-memory",
        default="",
        help="only measure the peak memory of loading shard 0 of N (e.g. 1,4,16)",
    )
    args = parser.parse_args(argv)
    if args.shard_memory:
        shard_memory(args.size_mb, [int(n) for n in args.shard_memory.split(",")], args.seed)
        return 0
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        _run(args, args.workdir)
    else:
        with tempfile.TemporaryDirectory(prefix="spanchor-scale-") as tmp:
            _run(args, Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
