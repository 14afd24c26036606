"""Instruction counts of the LangChain recording path, per retrieval, for callgrind.

Wall clock on the shared 2-core machine moves by 50-90 % between runs, so small cuts are
counted in instructions instead. Each variant runs ``--calls`` times inside its own rarely
used C function (``functools.reduce``, ``itertools.starmap`` ...), which callgrind is told to
collect in (``--toggle-collect``), after the imports and a warm-up, with the garbage collector
frozen and off so that the counts repeat. ``write``/``flock`` count for their Python wrappers
only (callgrind sees user space). Run it through the wrapper command printed by ``--help``:

    valgrind --tool=callgrind --collect-atstart=no \\
        --toggle-collect=functools_reduce --toggle-collect=starmap_next \\
        --toggle-collect=takewhile_next --toggle-collect=dropwhile_next \\
        --toggle-collect=filterfalse_next --toggle-collect=accumulate_next \\
        --toggle-collect=groupby_next --callgrind-out-file=/tmp/cg.out \\
        .venv/bin/python bench/callgrind_recording_langchain.py --calls 200
    callgrind_annotate --inclusive=yes --threshold=100 /tmp/cg.out | grep -E \\
        ':(functools_reduce|starmap_next|takewhile_next|dropwhile_next|filterfalse_next|'\\
        'accumulate_next|groupby_next) '

Divide each inclusive count by ``--calls``. Markers: functools_reduce = bare retriever,
starmap_next = no-op handler, takewhile_next = SpanchorCallbackHandler, dropwhile_next =
RecordingRetriever, filterfalse_next = ``Recording.record`` of the 5 Documents,
accumulate_next = ``documents_to_entries``, groupby_next = ``record_line`` (orjson included).
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import itertools
import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spanchor_core.runs.write import record_line
from spanchor_langchain import RecordingRetriever, SpanchorCallbackHandler
from spanchor_langchain.documents import documents_to_entries
from spanchor_langchain.recording import Recording

__all__ = ["main"]

# The wall-clock bench next to this file defines the retriever, documents and no-op handler.
_bench: Any = importlib.import_module("bench_recording_langchain")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=200, help="calls per variant")
    args = parser.parse_args(argv)
    n = args.calls
    documents = _bench.make_documents(5, 800)
    bare = _bench.FixedRetriever(documents=documents)
    workdir = Path(tempfile.mkdtemp(prefix="spanchor-cg-"))
    query = "how are retrieved chunks mapped back onto source spans?"
    wrapped = RecordingRetriever(bare, workdir / "wrapper.jsonl")
    handler = SpanchorCallbackHandler(workdir / "callback.jsonl")
    recording = Recording(workdir / "recording.jsonl")
    with_handler: Any = {"callbacks": [handler]}
    with_noop: Any = {"callbacks": [_bench.NoOpHandler()]}
    run_id = uuid.uuid4()
    metadata = {"ls_retriever_name": "fixed"}
    entries = documents_to_entries(documents, None, ("score", "relevance_score"), None)
    line = (None, query, entries, 1.234, None, "FixedRetriever", "retrieval", run_id, run_id,
            None, 0, metadata)  # fmt: skip
    variants: list[Callable[[], Any]] = [
        lambda: bare.invoke(query),
        lambda: bare.invoke(query, with_noop),
        lambda: bare.invoke(query, with_handler),
        lambda: wrapped.invoke(query),
        lambda: recording.record(
            query,
            documents,
            None,
            1.2,
            None,
            "FixedRetriever",
            "retrieval",
            run_id,
            run_id,
            None,
            0,
            metadata,
        ),
        lambda: documents_to_entries(documents, None, ("score", "relevance_score"), None),
        lambda: record_line(*line),
    ]
    for call in variants:
        for _ in range(30):
            call()
    gc.collect()
    gc.freeze()
    gc.disable()
    bare_call, noop, handled, wrapper, record, convert, encode = variants
    functools.reduce(lambda _a, _b: bare_call(), range(n), None)
    list(itertools.starmap(noop, [()] * n))
    list(itertools.takewhile(lambda _: handled() or True, range(n)))
    list(itertools.dropwhile(lambda _: wrapper() or True, range(n)))
    list(itertools.filterfalse(lambda _: record(), range(n)))
    list(itertools.accumulate(range(n), lambda _a, _b: convert() and 0))
    list(itertools.groupby(range(n), lambda _: encode()))
    gc.enable()
    wrapped.close()
    handler.close()
    recording.close()
    failures = wrapped.failures + handler.failures + recording.failures
    shutil.rmtree(workdir)
    print(f"done: {n} calls per variant, {failures} recording failures")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
