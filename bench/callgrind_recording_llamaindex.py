"""Instruction counts of the LlamaIndex recording path, per retrieval, for callgrind.

Wall clock on the shared 2-core machine moves by 50-90 % between runs, so small cuts are
counted in instructions instead. Each variant runs ``--calls`` times between two calls of
``os.getppid()``, after the imports and a warm-up, with the garbage collector frozen and off
so that the counts repeat; callgrind is told to dump its counters before every ``getppid``,
so each variant's instructions are the total of one dump (part 2k+2 is variant k; the other
parts hold the imports and each variant's set-up and tear-down). ``write``/``flock`` count
for their Python wrappers only (callgrind sees user space). Run it as:

    valgrind --tool=callgrind --dump-before=getppid --callgrind-out-file=/tmp/cg/cg.out \\
        .venv/bin/python bench/callgrind_recording_llamaindex.py --calls 200
    grep -H '^summary:' /tmp/cg/cg.out.*     # divide by --calls

The script prints the variants in order: the bare retriever, do-nothing event and span
handlers, ``SpanchorEventHandler``, a ``SpanchorEventHandler`` that records no retrieval
(``stages=("context",)``: the span watcher, the event dispatch and the early return),
``NodeConverter.entries`` of the 5 nodes, ``record_line`` of the retrieval's line (orjson
included), ``RunRecorder.record`` of that line (entries built beforehand), an empty loop.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]

from spanchor_core.runs.write import record_line
from spanchor_llamaindex import SpanchorEventHandler, tag_query
from spanchor_llamaindex.nodes import NodeConverter

__all__ = ["main"]

# The wall-clock bench next to this file defines the retriever, nodes and do-nothing handlers.
_bench: Any = importlib.import_module("bench_recording_llamaindex")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=200, help="calls per variant")
    args = parser.parse_args(argv)
    n = args.calls
    nodes = _bench.make_nodes()
    retriever = _bench.FixedRetriever(nodes)
    root = get_dispatcher()
    original = (list(root.event_handlers), list(root.span_handlers))
    workdir = Path(tempfile.mkdtemp(prefix="spanchor-cg-"))
    recorder = SpanchorEventHandler(workdir / "run.jsonl", retriever="bench")
    idle = SpanchorEventHandler(workdir / "idle.jsonl", retriever="bench", stages=("context",))
    core = recorder.recorder
    converter = NodeConverter()
    query = "How much water does the kettle hold?"
    entries = converter.entries(nodes)
    line = (
        "q1", query, entries, 0.1234, None, "FixedRetriever", "retrieval",
        "BaseRetriever.retrieve-5f2c", "BaseRetriever.retrieve-5f2c", None, 0, None,
    )  # fmt: skip

    def retrieve() -> None:
        with tag_query("q1"):
            retriever.retrieve(query)

    def with_null() -> None:
        root.event_handlers = [*original[0], _bench.NullEvents()]
        root.span_handlers = [*original[1], _bench.NullSpans()]

    def restore() -> None:
        root.event_handlers, root.span_handlers = list(original[0]), list(original[1])

    convert: Callable[[], Any] = lambda: converter.entries(nodes)  # noqa: E731
    encode: Callable[[], Any] = lambda: record_line(*line)  # noqa: E731

    def record() -> None:
        core.record(
            query, entries, query_id="q1", latency_ms=0.1234, source="FixedRetriever",
            stage="retrieval", trace_id=line[7], run_id=line[8], sequence=0,
        )  # fmt: skip

    for _ in range(30):
        retrieve()
        convert()
        encode()
        record()
    with_null()
    for _ in range(30):
        retrieve()
    restore()
    recorder.install()
    for _ in range(30):
        retrieve()
    recorder.uninstall()
    idle.install()
    for _ in range(30):
        retrieve()
    idle.uninstall()

    def repeated(call: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(n):
                call()

        return run

    def nothing() -> None:
        return None

    # (name, set-up, measured, tear-down): handlers are installed outside the measured part
    variants: list[tuple[str, Callable[[], Any], Callable[[], None], Callable[[], Any]]] = [
        ("bare retriever", nothing, repeated(retrieve), nothing),
        ("do-nothing handlers", with_null, repeated(retrieve), restore),
        ("SpanchorEventHandler", recorder.install, repeated(retrieve), recorder.uninstall),
        ("recording no retrieval", idle.install, repeated(retrieve), idle.uninstall),
        ("NodeConverter.entries", nothing, repeated(convert), nothing),
        ("record_line", nothing, repeated(encode), nothing),
        ("RunRecorder.record", nothing, repeated(record), nothing),
        ("empty loop", nothing, repeated(nothing), nothing),
    ]
    gc.collect()
    gc.freeze()
    gc.disable()
    for _, setup, run, teardown in variants:
        setup()
        os.getppid()  # callgrind dumps here: the next part is this variant
        run()
        os.getppid()  # and here: the part after it (tear-down, next set-up) is not counted
        teardown()
    gc.enable()
    recorder.close()
    idle.close()
    failures = recorder.failures + idle.failures
    records = recorder.records
    shutil.rmtree(workdir)
    for number, (name, *_) in enumerate(variants):
        print(f"part {2 * number + 2}: {name}")
    print(f"done: {n} calls per variant, {records} records, {failures} recording failures")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
