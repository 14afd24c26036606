"""The LangChain example end to end: record three chunkings, then let ``spanchor gate`` judge.

1. records the support assistant on the 57 quickstart questions three times (``record.py``):
   500-character chunks (the baseline), 120-character chunks (the candidate that loses
   evidence) and 800-character chunks (a candidate that keeps it);
2. shows a few answers the customer would now get wrong;
3. runs ``spanchor gate`` with ``spanchor.toml``: baseline vs 120 must fail (exit code 1),
   baseline vs 800 must pass (exit code 0).

Usage::

    python examples/langchain_app/run_all.py [OUT_DIR]

Runs go to ``OUT_DIR/runs`` (default: a new temporary directory). Exits 0 when both verdicts
are the expected ones, so CI can run it.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from spanchor_core import Corpus, GoldQuery, GoldSet, load_corpus, read_gold
from spanchor_core.cli import main as spanchor

if TYPE_CHECKING:  # mypy runs from the repository root; Python runs this file as a script
    from examples.langchain_app.record import DOCS, GOLD, record
else:
    from record import DOCS, GOLD, record

__all__ = ["CHUNKINGS", "CONFIG", "EXPECTED", "main", "run_all"]

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "spanchor.toml"
CHUNKINGS = {"baseline": 500, "candidate": 120, "candidate-800": 800}
"""Run name -> chunk size (no overlap: RecursiveCharacterTextSplitter only overlaps pieces
it merges, and these documents split at paragraphs first)."""


EXPECTED = {"candidate": 1, "candidate-800": 0}
"""Candidate -> the exit code ``spanchor gate`` must give it against the baseline."""


def _gate(title: str, argv: list[str], expected: int) -> int:
    print(f"\n=== {title}\n$ spanchor {' '.join(argv)}", flush=True)
    code = spanchor(argv)
    verdict = "as expected" if code == expected else f"UNEXPECTED (wanted {expected})"
    print(f"--> exit code {code}: {verdict}", flush=True)
    return code


def _flat(text: str) -> str:
    return " ".join(text.split())


def _lost_answers(
    corpus: Corpus, gold: GoldSet, answers: dict[str, list[str]]
) -> list[tuple[GoldQuery, str, str]]:
    """Questions whose baseline answer quotes all their evidence and the candidate's does not."""

    def right(query: GoldQuery, answer: str) -> bool:
        return all(
            _flat(corpus.text(a.document_id)[a.start : a.end]) in _flat(answer)
            for a in query.anchors
        )

    return [
        (query, before, after)
        for query, before, after in zip(
            gold.values(), answers["baseline"], answers["candidate"], strict=True
        )
        if right(query, before) and not right(query, after)
    ]


def run_all(out: Path) -> dict[str, int]:
    """Record the three runs into ``out/runs`` and gate them; candidate -> gate exit code."""
    runs = out / "runs"
    answers: dict[str, list[str]] = {}
    for name, chunk_size in CHUNKINGS.items():
        answers[name] = record(runs / f"{name}.jsonl", chunk_size=chunk_size)
        print(f"recorded {runs / name}.jsonl  (chunk_size={chunk_size})")

    print("\nanswers right with 500-character chunks, wrong with 120 (first three):")
    corpus = load_corpus(DOCS)
    for query, before, after in _lost_answers(corpus, read_gold(GOLD), answers)[:3]:
        print(f"  {query.query_id} {query.question}\n    500: {before}\n    120: {after}")

    config = ["gate", "--config", str(CONFIG), "--baseline", str(runs / "baseline.jsonl")]
    codes: dict[str, int] = {}
    for name, expected in EXPECTED.items():
        argv = [*config, "--candidate", str(runs / f"{name}.jsonl")]
        must = "fail" if expected else "pass"
        codes[name] = _gate(
            f"chunk_size 500 -> {CHUNKINGS[name]}: the gate must {must}", argv, expected
        )
    return codes


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args:
        codes = run_all(Path(args[0]))
    else:
        with tempfile.TemporaryDirectory(prefix="spanchor-langchain-") as tmp:
            codes = run_all(Path(tmp))
    return 0 if codes == EXPECTED else 1


if __name__ == "__main__":
    sys.exit(main())
