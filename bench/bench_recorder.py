"""Cost of ``RunRecorder.record`` per retrieval, and of its parts (issue 16).

Each call records the same retrieval: a query and 5 results of about 800 characters of text
with LangChain-like metadata (``source``, ``start_index``, a score), about 4.5 kB a line, so
what is measured is the recording: checking and normalising the results, encoding one JSON
line and one ``write`` system call (between two ``flock`` calls where the platform has them).

Variants, timed interleaved (each round runs every variant once, in a rotating order, so drift
of the machine hits all alike); each call is timed alone with ``perf_counter_ns``:

* ``record``: ``RunRecorder.record`` as shipped;
* ``record, stdlib json``: the same with the stdlib encoder forced (orjson switched off);
* ``record, no flock``: the same without the advisory lock around the write;
* ``encode_line``: the line encoding alone (as shipped), and ``encode_line, stdlib json``.

Printed: median and p95 per call, in microseconds. Files go to a fresh temporary directory.

    .venv/bin/python bench/bench_recorder.py                 # 5,000 rounds
    .venv/bin/python bench/bench_recorder.py --rounds 20000
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from spanchor_core.runs import RunRecorder, encoding, recorder
from spanchor_core.runs.write import record_payload

__all__ = ["main"]

_WORDS = ["retrieval", "anchors", "spans", "corpus", "evidence", "chunk", "offset", "canonical"]


def _results() -> list[dict[str, Any]]:
    results = []
    for rank in range(1, 6):
        words = [_WORDS[(rank * 7 + i * 3) % len(_WORDS)] for i in range(100)]
        text = " ".join(words)[:800]
        results.append(
            {
                "rank": rank,
                "text": text,
                "score": 1.0 / rank,
                "metadata": {"source": f"docs/page-{rank}.md", "start_index": rank * 1000},
            }
        )
    return results


@contextlib.contextmanager
def _stdlib_json() -> Iterator[None]:
    saved = encoding._orjson
    encoding._orjson = None
    try:
        yield
    finally:
        encoding._orjson = saved


@contextlib.contextmanager
def _no_flock() -> Iterator[None]:
    saved = recorder._fcntl
    recorder._fcntl = None
    try:
        yield
    finally:
        recorder._fcntl = saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5000)
    args = parser.parse_args(argv)
    results = _results()
    query = "How do anchors survive a re-chunking of the corpus?"
    payload = record_payload("q1", query, results, 12.5, None)
    line = encoding.encode_line(payload)
    with tempfile.TemporaryDirectory() as directory:
        recorders = {
            name: RunRecorder(Path(directory) / f"{i}.jsonl")
            for i, name in enumerate(("record", "record, stdlib json", "record, no flock"))
        }

        def call(name: str) -> Callable[[], object]:
            def run() -> object:
                recorders[name].record(query, results, query_id="q1", latency_ms=12.5)
                return None

            return run

        variants: dict[str, tuple[Callable[[], object], Callable[[], Any]]] = {
            "record": (call("record"), contextlib.nullcontext),
            "record, stdlib json": (call("record, stdlib json"), _stdlib_json),
            "record, no flock": (call("record, no flock"), _no_flock),
            "encode_line": (lambda: encoding.encode_line(payload), contextlib.nullcontext),
            "encode_line, stdlib json": (lambda: encoding.encode_line(payload), _stdlib_json),
        }
        timings: dict[str, list[int]] = {name: [] for name in variants}
        names = list(variants)
        for round_number in range(args.rounds):
            shift = round_number % len(names)
            for name in names[shift:] + names[:shift]:
                function, context = variants[name]
                with context():
                    start = time.perf_counter_ns()
                    function()
                    timings[name].append(time.perf_counter_ns() - start)
        for rec in recorders.values():
            if rec.failures:
                raise SystemExit(f"recording failed: {rec.last_error!r}")
            rec.close()
    print(f"python {platform.python_version()} on {platform.machine()}, {args.rounds} rounds")
    print(f"line: {len(line)} bytes, orjson: {'yes' if encoding._orjson else 'no'}")
    print(f"{'variant':<26} {'median us':>10} {'p95 us':>8}")
    for name, values in timings.items():
        values.sort()
        median = statistics.median(values) / 1000
        p95 = values[int(len(values) * 0.95)] / 1000
        print(f"{name:<26} {median:>10.1f} {p95:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
