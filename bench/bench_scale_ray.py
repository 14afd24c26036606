"""Benchmark: a corpus larger than one process should hold, evaluated by the real CLI on Ray.

Issue 17's measurement: a synthetic BEIR-layout ``corpus.jsonl`` of ``--size-mb`` MB (1 GB and
more), a gold set and a run of ``--queries`` queries x 10 results, all generated *streaming*
(the corpus is written document by document and never held in memory: the run's chunks are
read back from the file by byte offset), then ``spanchor evaluate`` run as a separate process
per configuration — one process, or on a local Ray cluster of 1 or 2 CPUs with 1, 4 or 16
shards — measuring what a user would pay:

* wall time of the CLI process; its CPU (user+sys) and peak RSS from ``wait4``;
* CPU and peak RSS (``VmHWM``, and the largest private ``RssAnon`` seen) of every Ray worker
  process, and the CPU of Ray's own processes (raylet, GCS...), sampled from ``/proc`` — the
  cluster is started per CPU count by a holder process of this script (``ray.init(num_cpus=N)``)
  and stopped by it, never by ``ray stop``;
* the index entries built during the run (from the cache's ``meta.json``: count and build
  seconds) — a second run on the unchanged corpus builds none;
* whether the evaluation file is byte-identical to the first single-process one (``created_at``
  aside), and if not how many per-result locations differ.

The mix of results (seeded): text only and verbatim (most), with their document id and offsets,
with their document id only, whitespace altered (two spaces for one), a few characters edited
(the fuzzy stages), and text found nowhere. Gold anchors are halves of retrieved chunks, and a
fifth of the queries also have an anchor nothing retrieved.

    python bench/bench_scale_ray.py generate --size-mb 100 --queries 10000 --workdir /tmp/sr100
    python bench/bench_scale_ray.py measure --workdir /tmp/sr100 \
        --configs single,single,ray2x4,ray2x4,ray2x16,ray2x16,ray2x1,ray1x1,ray1x4,ray1x16

Every measured configuration is appended to ``WORKDIR/results.jsonl``; ``report`` prints them
as a Markdown table. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

DOC_CHARS = 20_000
RESULTS = 10
TITLE_SEPARATOR = "\n\n"  # spanchor_core.corpus.sources: a title is joined to its text so
KINDS = ("exact", "offsets", "doc_id", "whitespace", "edited", "absent")
MIX = (0.55, 0.15, 0.10, 0.10, 0.05, 0.05)
PROC = Path("/proc")
AGENTS = ("ray::DashboardAgent", "ray::RuntimeEnvAgent")  # Ray's own, not workers


# --- generation ---------------------------------------------------------------------------


def vocabulary(rng: np.random.Generator, n: int = 20_000) -> list[str]:
    """``n`` random lower-case words of 2-10 letters."""
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    return [
        bytes(letters[rng.integers(0, 26, int(rng.integers(2, 11)))]).decode() for _ in range(n)
    ]


class TextSource:
    """Zipf-distributed words from a seeded vocabulary, as a stream of ASCII bytes (numpy
    gathers whole blocks: a gigabyte takes seconds, not a Python loop over words)."""

    def __init__(self, rng: np.random.Generator) -> None:
        words = [w.encode() + b" " for w in vocabulary(rng)]
        self.rng = rng
        self.bytes = np.frombuffer(b"".join(words), dtype=np.uint8)
        self.lengths = np.array([len(w) for w in words], dtype=np.int64)
        self.offsets = np.concatenate(([0], np.cumsum(self.lengths)[:-1]))

    def block(self, size: int) -> np.ndarray[Any, Any]:
        """At least ``size`` bytes of words, each followed by one space."""
        parts, total = [], 0
        while total < size:
            idx = self.rng.zipf(1.3, max(1000, (size - total) // 4)) % len(self.lengths)
            lens = self.lengths[idx]
            ends = np.cumsum(lens)
            starts = np.repeat(ends - lens, lens)
            gather = np.repeat(self.offsets[idx], lens) + (np.arange(int(ends[-1])) - starts)
            parts.append(self.bytes[gather])
            total += int(ends[-1])
        return np.concatenate(parts)


def document_texts(source: TextSource, n: int) -> list[bytes]:
    """``n`` documents of exactly ``DOC_CHARS`` characters, starting and ending with a letter."""
    block = source.block(n * DOC_CHARS).copy()
    docs = block[: n * DOC_CHARS].reshape(n, DOC_CHARS)
    docs[docs[:, 0] == 32, 0] = ord("x")
    docs[docs[:, -1] == 32, -1] = ord("x")
    return [row.tobytes() for row in docs]


def title_of(n: int) -> str:
    return f"Document {n}"


def doc_id_of(n: int) -> str:
    return f"d{n:07d}"


def write_corpus(path: Path, n_docs: int, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    """Stream ``n_docs`` documents to ``path`` (JSONL, BEIR fields); return the byte offset of
    every document's text in the file (the text is ASCII without escapes: bytes = chars)."""
    source = TextSource(rng)
    offsets = np.zeros(n_docs, dtype=np.int64)
    where = 0
    with path.open("wb") as out:
        for first in range(0, n_docs, 256):
            texts = document_texts(source, min(256, n_docs - first))
            for n, text in enumerate(texts, start=first):
                head = f'{{"_id": "{doc_id_of(n)}", "title": "{title_of(n)}", "text": "'.encode()
                offsets[n] = where + len(head)
                out.write(head + text + b'"}\n')
                where += len(head) + len(text) + 3
    return offsets


@dataclass
class Plan:
    """Every result decided up front (arrays, no text): document, start, length, kind."""

    doc: np.ndarray[Any, Any]
    start: np.ndarray[Any, Any]
    length: np.ndarray[Any, Any]
    kind: np.ndarray[Any, Any]
    extra_doc: np.ndarray[Any, Any]  # per query: a gold anchor nothing retrieved (-1: none)
    extra_start: np.ndarray[Any, Any]


def plan_results(n_docs: int, n_queries: int, rng: np.random.Generator) -> Plan:
    shape = (n_queries, RESULTS)
    length = rng.integers(300, 900, shape)
    start = rng.integers(0, DOC_CHARS - 900, shape)
    start[rng.random(shape) < 0.02] = 0  # some chunks start their document
    kind = rng.choice(len(KINDS), size=shape, p=MIX)
    extra = np.where(rng.random(n_queries) < 0.2, rng.integers(0, n_docs, n_queries), -1)
    return Plan(
        doc=rng.integers(0, n_docs, shape),
        start=start,
        length=length,
        kind=kind,
        extra_doc=extra,
        extra_start=rng.integers(0, DOC_CHARS - 900, n_queries),
    )


def _edit(piece: str, rng: np.random.Generator) -> str:
    chars = list(piece)
    for at in rng.integers(0, len(chars), 3):
        chars[int(at)] = "q" if chars[int(at)] != "q" else "z"
    return "".join(chars)


def generate(workdir: Path, size_mb: float, n_queries: int, seed: int) -> dict[str, Any]:
    """Write corpus.jsonl, gold.jsonl and run.jsonl under ``workdir``; return their sizes."""
    from spanchor_core.corpus import open_corpus_file, sha256_text
    from spanchor_core.gold import Anchor, GoldQuery, GoldSet, write_gold
    from spanchor_core.runs import RetrievedResult, RunRecorder

    began = time.perf_counter()
    rng = np.random.default_rng(seed)
    n_docs = max(1, int(np.ceil(size_mb * 1e6 / DOC_CHARS)))
    corpus_path = workdir / "corpus.jsonl"
    offsets = write_corpus(corpus_path, n_docs, rng)
    corpus_s = time.perf_counter() - began
    plan = plan_results(n_docs, n_queries, rng)
    fd = os.open(corpus_path, os.O_RDONLY)

    def read(doc: int, start: int, length: int) -> str:
        return os.pread(fd, length, int(offsets[doc]) + start).decode("ascii")

    def prefix(doc: int) -> int:  # where the text starts in the canonical document
        return len(title_of(doc)) + len(TITLE_SEPARATOR)

    queries: list[GoldQuery] = []
    try:
        for q in range(n_queries):
            anchors: list[Anchor] = []
            for rank in range(RESULTS):
                if KINDS[plan.kind[q, rank]] != "absent" and len(anchors) < 2:
                    doc, start = int(plan.doc[q, rank]), int(plan.start[q, rank])
                    half = int(plan.length[q, rank]) // 2
                    at = prefix(doc) + start
                    anchors.append(
                        Anchor(doc_id_of(doc), at, at + half, sha256_text(read(doc, start, half)))
                    )
            if plan.extra_doc[q] >= 0:
                doc, start = int(plan.extra_doc[q]), int(plan.extra_start[q])
                at = prefix(doc) + start
                anchors.append(
                    Anchor(doc_id_of(doc), at, at + 400, sha256_text(read(doc, start, 400)))
                )
            queries.append(GoldQuery(f"q{q:06d}", f"question {q}?", tuple(anchors)))
        gold = GoldSet(queries)
        write_gold(gold, workdir / "gold.jsonl")
        fingerprint = open_corpus_file(corpus_path).fingerprint
        with RunRecorder(
            workdir / "run.jsonl",
            retriever="synthetic (bench_scale_ray.py)",
            corpus_fingerprint=fingerprint,
            gold_sha256=gold.sha256,
        ) as recorder:
            for q, query in enumerate(queries):
                results = []
                for rank in range(RESULTS):
                    doc, start = int(plan.doc[q, rank]), int(plan.start[q, rank])
                    length = int(plan.length[q, rank])
                    kind = KINDS[plan.kind[q, rank]]
                    piece = read(doc, start, length)
                    at = prefix(doc) + start
                    if kind == "offsets":
                        result = RetrievedResult(
                            rank + 1, piece, document_id=doc_id_of(doc), start=at, end=at + length
                        )
                    elif kind == "doc_id":
                        result = RetrievedResult(rank + 1, piece, document_id=doc_id_of(doc))
                    elif kind == "whitespace":
                        result = RetrievedResult(rank + 1, piece.replace(" ", "  ", 5))
                    elif kind == "edited":
                        result = RetrievedResult(rank + 1, _edit(piece, rng))
                    elif kind == "absent":
                        result = RetrievedResult(rank + 1, f"nothing like this {q} {rank} " * 20)
                    else:
                        result = RetrievedResult(rank + 1, piece)
                    results.append(result)
                recorder.record(query.question, results, query_id=query.query_id)
    finally:
        os.close(fd)
    sizes = {
        name: (workdir / name).stat().st_size
        for name in ("corpus.jsonl", "gold.jsonl", "run.jsonl")
    }
    info = {
        "size_mb": size_mb,
        "queries": n_queries,
        "seed": seed,
        "documents": n_docs,
        "bytes": sizes,
        "corpus_seconds": round(corpus_s, 1),
        "seconds": round(time.perf_counter() - began, 1),
        "kinds": {k: int((plan.kind == i).sum()) for i, k in enumerate(KINDS)},
    }
    (workdir / "generated.json").write_text(json.dumps(info, indent=2) + "\n")
    return info


# --- measuring ----------------------------------------------------------------------------


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, user+sys CPU seconds) of ``pid``, or None when it is gone."""
    try:
        fields = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _status(pid: int) -> dict[str, int]:
    wanted = {"VmHWM", "RssAnon"}
    found: dict[str, int] = {}
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in wanted:
                found[key] = int(value.split()[0])
    except OSError:
        pass
    return found


def _cmdline(pid: int) -> str:
    try:
        return (
            (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""


def _descendants(roots: set[int]) -> set[int]:
    parents: dict[int, int] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            st = _stat(int(entry.name))
            if st is not None:
                parents[int(entry.name)] = st[0]
    found = set(roots)
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in found and pid not in found:
                found.add(pid)
                changed = True
    return found


@dataclass
class Seen:
    """What the sampler saw of one process."""

    name: str
    cpu_first: float
    cpu_last: float
    hwm_kb: int = 0
    anon_kb: int = 0


@dataclass
class Sampler:
    """Polls ``/proc`` for the descendants of ``roots`` every ``interval`` seconds."""

    roots: set[int]
    interval: float = 0.5
    seen: dict[int, Seen] = field(default_factory=dict)
    before: set[int] = field(default_factory=set)  # alive when the run started
    _stop: threading.Event = field(default_factory=threading.Event)

    def sample(self, baseline: bool = False) -> None:
        for pid in _descendants(self.roots):
            st = _stat(pid)
            if st is None:
                continue
            mem = _status(pid)
            entry = self.seen.get(pid)
            if entry is None:
                entry = Seen(_cmdline(pid)[:80], st[1] if baseline else 0.0, st[1])
                self.seen[pid] = entry
                if baseline:
                    self.before.add(pid)
            entry.cpu_last = st[1]
            # a Ray worker starts as "python default_worker.py", then titles itself ray::IDLE,
            # then ray::<actor class> when it becomes an actor: keep the latest title
            entry.name = _cmdline(pid)[:80] or entry.name
            entry.hwm_kb = max(entry.hwm_kb, mem.get("VmHWM", 0))
            entry.anon_kb = max(entry.anon_kb, mem.get("RssAnon", 0))

    def run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> Sampler:
        self.sample(baseline=True)
        self._thread = threading.Thread(target=self.run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


HOLDER = r"""
import sys, ray
ray.init(num_cpus=int(sys.argv[1]), include_dashboard=False, object_store_memory=2 * 1024**3,
         _temp_dir=sys.argv[2], log_to_driver=False, _node_ip_address="127.0.0.1")
print(ray.get_runtime_context().gcs_address, flush=True)
sys.stdin.read()  # until this script closes the pipe
ray.shutdown()
"""


class Cluster:
    """A local Ray cluster of ``cpus`` CPUs, held by a child process and stopped by it."""

    def __init__(self, cpus: int, temp_dir: Path, attempts: int = 4) -> None:
        temp_dir.mkdir(parents=True, exist_ok=True)
        self.cpus = cpus
        for _ in range(attempts):  # a loaded machine can miss Ray's 30 s raylet start-up wait
            self.process = subprocess.Popen(
                [sys.executable, "-c", HOLDER, str(cpus), str(temp_dir)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert self.process.stdout is not None
            self.address = self.process.stdout.readline().strip()
            if self.address:
                return
            self.process.wait()
        raise RuntimeError("the Ray holder process did not start a cluster")

    def wait_idle(self, timeout: float = 60) -> None:
        """Until the actors of the previous driver have ended (they are not this run's)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            names = [_cmdline(p) for p in _descendants({self.process.pid})]
            if not any(n.startswith("ray::") and not n.startswith("ray::IDLE") for n in names):
                return
            time.sleep(0.5)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.process.terminate()  # our own child, by its pid
            self.process.wait()


def _entries(cache: Path) -> dict[str, float]:
    found = {}
    if cache.is_dir():
        for meta in cache.glob("*/meta.json"):
            if not meta.parent.name.startswith("."):
                found[meta.parent.name] = float(json.loads(meta.read_text())["build_seconds"])
    return found


def _parse(config: str) -> tuple[int, int]:
    """``single`` -> (0, 1); ``ray2x4`` -> (2 CPUs, 4 shards)."""
    if config == "single":
        return 0, 1
    cpus, _, shards = config.removeprefix("ray").partition("x")
    return int(cpus), int(shards)


def measure_one(work: Path, config: str, cluster: Cluster | None) -> dict[str, Any]:
    cpus, shards = _parse(config)
    cache = work / "cache"
    out = work / f"eval-{config}-{int(time.time())}.json"
    command = [
        sys.executable,
        "-m",
        "spanchor_core.cli",
        "evaluate",
        str(work / "corpus.jsonl"),
        str(work / "gold.jsonl"),
        str(work / "run.jsonl"),
        "-o",
        str(out),
        "-q",
        "--max-unmapped-rate",
        "1",
    ]
    if cluster is not None:
        command += ["--ray", cluster.address, "--ray-workers", str(cpus), "--shards", str(shards)]
    env = {**os.environ, "SPANCHOR_INDEX_CACHE": str(cache)}
    before = _entries(cache)
    if cluster is not None:
        cluster.wait_idle()
    began = time.perf_counter()
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    roots = {process.pid} | ({cluster.process.pid} if cluster is not None else set())
    with Sampler(roots) as sampler:
        assert process.stderr is not None
        stderr = process.stderr.read()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - began
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{config}: exit {process.returncode}\n{stderr[-3000:]}")
    built = {k: v for k, v in _entries(cache).items() if k not in before}
    # Ray workers: started for this run, or idle before it (prestarted, leased by this run)
    workers = [
        s
        for pid, s in sampler.seen.items()
        if s.name.startswith("ray::")
        and not s.name.startswith(AGENTS)
        and (pid not in sampler.before or s.cpu_last > s.cpu_first)
    ]
    actors = [s for s in workers if not s.name.startswith("ray::IDLE")]
    system = [
        s
        for pid, s in sampler.seen.items()
        if pid != process.pid and (not s.name.startswith("ray::") or s.name.startswith(AGENTS))
    ]
    return {
        "config": config,
        "cpus": cpus,
        "shards": shards,
        "wall_s": round(wall, 1),
        "driver_cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "driver_peak_mb": round(usage.ru_maxrss / 1024),
        "actors": len(actors),
        "workers_cpu_s": round(sum(s.cpu_last - s.cpu_first for s in workers), 1),
        "actor_peak_mb": round(max((s.hwm_kb for s in actors), default=0) / 1024),
        "actor_anon_mb": round(max((s.anon_kb for s in actors), default=0) / 1024),
        "ray_system_cpu_s": round(sum(s.cpu_last - s.cpu_first for s in system), 1),
        "built": len(built),
        "build_s": round(sum(built.values()), 1),
        "output": out.name,
        "load": os.getloadavg()[0],
        "finished": time.strftime("%H:%M:%S", time.gmtime()),
    }


def _bytes(path: Path) -> bytes:
    """The evaluation file's bytes without its ``created_at`` value."""
    return re.sub(rb'"created_at": "[^"]*"', b"", path.read_bytes(), count=1)


def _evaluation(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    data.pop("created_at", None)
    return data


def compare(work: Path, output: str, reference: str | None) -> dict[str, Any]:
    """Byte identity (``created_at`` aside) with the reference; if not, what differs: the
    results whose location differs (with examples) and the queries whose metrics differ."""
    if reference is None:
        return {"identical": None}
    if reference == output or _bytes(work / reference) == _bytes(work / output):
        return {"identical": True}
    a = _evaluation(work / reference)
    b = _evaluation(work / output)
    if json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True):
        return {"identical": True}
    results = metrics = 0
    examples: list[dict[str, Any]] = []
    for qa, qb in zip(a.pop("queries"), b.pop("queries"), strict=True):
        if qa.get("metrics") != qb.get("metrics"):
            metrics += 1
        for ra, rb in zip(qa.get("results", []), qb.get("results", []), strict=True):
            if ra != rb:
                results += 1
                if len(examples) < 20:
                    examples.append({"query": qa["query_id"], "single": ra, "this": rb})
    rest = [k for k in a.keys() | b.keys() if a.get(k) != b.get(k)]
    return {
        "identical": False,
        "differing_results": results,
        "differing_query_metrics": metrics,
        "differing_sections": sorted(rest),
        "examples": examples,
    }


def measure(work: Path, configs: list[str]) -> None:
    # a cluster of this machine only, for this script's own drivers: no token to hand around
    os.environ["RAY_AUTH_MODE"] = "disabled"
    log = work / "results.jsonl"
    previous = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    reference = next((r["output"] for r in previous if r["config"] == "single"), None)
    clusters: dict[int, Cluster] = {}
    try:
        for config in configs:
            cpus, _ = _parse(config)
            cluster = None
            if cpus:
                if cpus not in clusters:
                    for other in list(clusters):  # one cluster at a time: memory
                        clusters.pop(other).close()
                    clusters[cpus] = Cluster(cpus, Path(f"/tmp/sr-ray-{os.getpid()}-{cpus}"))
                cluster = clusters[cpus]
            row = measure_one(work, config, cluster)
            if reference is None and config == "single":
                reference = row["output"]
            row.update(compare(work, row["output"], reference))
            with log.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)
    finally:
        for cluster in clusters.values():
            cluster.close()


def report(work: Path) -> None:
    rows = [json.loads(line) for line in (work / "results.jsonl").read_text().splitlines()]
    reference = next((r["output"] for r in rows if r["config"] == "single"), None)
    for r in rows:  # runs measured before (or beside) the first single-process one
        if r.get("identical") is None and reference is not None:
            r.update(compare(work, r["output"], reference))
    print(
        "| configuration | wall s | driver CPU s | workers CPU s | Ray system CPU s | "
        "driver peak MB | actors | actor peak MB (VmHWM) | actor private MB | index built "
        "(entries, s) | identical |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        label = (
            "single process" if r["cpus"] == 0 else f"Ray {r['cpus']} CPU, {r['shards']} shard(s)"
        )
        label += ", cold" if r["built"] else ", warm"
        same = {True: "yes", None: "?"}.get(r["identical"], f"no ({r.get('differing_results')})")
        print(
            f"| {label} | {r['wall_s']:.0f} | {r['driver_cpu_s']:.0f} | {r['workers_cpu_s']:.0f} | "
            f"{r['ray_system_cpu_s']:.0f} | {r['driver_peak_mb']} | {r['actors']} | "
            f"{r['actor_peak_mb']} | {r['actor_anon_mb']} | {r['built']}, {r['build_s']:.0f} | "
            f"{same} |"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("generate", "measure", "report"))
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--size-mb", type=float, default=100)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument(
        "--configs",
        default="single,single",
        help="comma-separated: single, rayCxS (C CPUs in the cluster, S shards)",
    )
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    if args.action == "generate":
        print(json.dumps(generate(args.workdir, args.size_mb, args.queries, args.seed)))
    elif args.action == "measure":
        measure(args.workdir, [c for c in args.configs.split(",") if c])
    else:
        report(args.workdir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
