"""The quickstart, end to end: the gate catches a chunking regression, then passes a fix.

Runs ``spanchor gate`` twice with the settings in ``spanchor.toml``:

1. baseline (paragraph chunks) vs ``candidate`` (200-character windows): evidence is cut in
   pieces, 14 of the 57 questions lose some of it, the gate fails with exit code 1;
2. baseline vs ``candidate-overlap`` (400-character windows overlapping by 200): nothing is
   lost, the gate passes with exit code 0.

This script exits 0 when both verdicts are the expected ones, so CI can run it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from spanchor_core.cli import main as spanchor

HERE = Path(__file__).resolve().parent
CONFIG = str(HERE / "spanchor.toml")


def step(title: str, argv: list[str], expected: int) -> bool:
    print(f"\n=== {title}\n$ spanchor {' '.join(argv)}", flush=True)
    code = spanchor(argv)
    verdict = "as expected" if code == expected else f"UNEXPECTED (wanted {expected})"
    print(f"--> exit code {code}: {verdict}", flush=True)
    return code == expected


def main() -> int:
    config = ["gate", "--config", CONFIG]
    ok = step("paragraphs -> 200-char windows: the gate must fail", config, expected=1)
    overlap = str(HERE / "runs" / "candidate-overlap.jsonl")
    ok &= step(
        "paragraphs -> 400-char windows, 200 overlap: the gate must pass",
        [*config, "--candidate", overlap],
        expected=0,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
