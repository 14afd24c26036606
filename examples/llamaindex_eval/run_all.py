"""The LlamaIndex example end to end: three chunkings through the eval suite, then the gate.

1. runs ``eval_suite.py``'s pipeline for three ``SentenceSplitter`` chunkings — 128 tokens
   (the baseline), 64 tokens (the candidate that loses evidence) and 128 tokens overlapping by
   64 (a candidate that keeps it) — and prints one metric table for all three;
2. runs ``spanchor gate`` with ``spanchor.toml``: baseline vs 64 must fail (exit code 1),
   baseline vs 128/64 must pass (exit code 0).

Usage::

    python examples/llamaindex_eval/run_all.py [OUT_DIR]

Runs go to ``OUT_DIR/runs`` (default: a new temporary directory). Exits 0 when both verdicts
are the expected ones, so CI can run it.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from spanchor_core import load_corpus, read_gold
from spanchor_core.cli import main as spanchor
from spanchor_llamaindex import SpanContext

if TYPE_CHECKING:  # mypy runs from the repository root; Python runs this file as a script
    from examples.llamaindex_eval.eval_suite import (
        DOCS,
        GOLD,
        Chunking,
        ChunkingResult,
        evaluate_chunking,
        format_table,
        load_documents,
    )
else:
    from eval_suite import (
        DOCS,
        GOLD,
        Chunking,
        ChunkingResult,
        evaluate_chunking,
        format_table,
        load_documents,
    )

__all__ = ["CHUNKINGS", "CONFIG", "EXPECTED", "main", "run_all"]

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "spanchor.toml"
CHUNKINGS = {
    "baseline": Chunking(128),
    "candidate": Chunking(64),
    "candidate-overlap": Chunking(128, chunk_overlap=64),
}
EXPECTED = {"candidate": 1, "candidate-overlap": 0}
"""Candidate -> the exit code ``spanchor gate`` must give it against the baseline."""


async def _evaluate_all(runs: Path) -> dict[str, ChunkingResult]:
    # One corpus index and one document load shared by the three chunkings.
    context = SpanContext(load_corpus(DOCS), read_gold(GOLD))
    documents = load_documents()
    return {
        name: await evaluate_chunking(
            chunking, runs / f"{name}.jsonl", context=context, documents=documents
        )
        for name, chunking in CHUNKINGS.items()
    }


def _gate(title: str, argv: list[str], expected: int) -> int:
    print(f"\n=== {title}\n$ spanchor {' '.join(argv)}", flush=True)
    code = spanchor(argv)
    verdict = "as expected" if code == expected else f"UNEXPECTED (wanted {expected})"
    print(f"--> exit code {code}: {verdict}", flush=True)
    return code


def run_all(out: Path) -> dict[str, int]:
    """Evaluate and record the three chunkings into ``out/runs``, gate them; name -> exit code."""
    runs = out / "runs"
    # asyncio.run, not LlamaIndex's sync evaluate(): that one leaves an event loop unclosed.
    results = asyncio.run(_evaluate_all(runs))
    print(format_table(list(results.values())))
    for name, result in results.items():
        print(f"recorded {result.run_path}  ({name})")

    config = ["gate", "--config", str(CONFIG), "--baseline", str(runs / "baseline.jsonl")]
    codes: dict[str, int] = {}
    for name, expected in EXPECTED.items():
        argv = [*config, "--candidate", str(runs / f"{name}.jsonl")]
        must = "fail" if expected else "pass"
        title = f"{CHUNKINGS['baseline']} -> {CHUNKINGS[name]}: the gate must {must}"
        codes[name] = _gate(title, argv, expected)
    return codes


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args:
        codes = run_all(Path(args[0]))
    else:
        with tempfile.TemporaryDirectory(prefix="spanchor-llamaindex-") as tmp:
            codes = run_all(Path(tmp))
    return 0 if codes == EXPECTED else 1


if __name__ == "__main__":
    sys.exit(main())
