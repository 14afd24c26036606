"""Peak memory of recording and reading a run whose one record holds a huge text (issue 12).

A run file is made with one record whose single result text is ``--mb`` megabytes of UTF-8
(mixed Latin-1, CJK and emoji with newlines and quotes that JSON must escape, or ``--ascii``),
written with the stdlib as any other tool could write it. Then, each step in a fresh child
process (``ru_maxrss`` is per process and never goes down, so steps must not share one):

* ``record``: ``RunRecorder.record`` of the same text into another file;
* ``read_run`` and ``iter_run``: reading the made file.

Printed per step: its outcome, wall time, peak resident memory, the growth over the child's
baseline (the interpreter with spanchor imported, and for ``record`` the text already built)
and the peak as a multiple of the record's size on disk. Lines over the documented limit
(``spanchor_core._io.MAX_LINE_BYTES``, 64 MiB) are refused with a clear error on both sides,
so a 200 MB text shows the (small) cost of refusing it and ``--mb 60`` the cost of reading it.

    .venv/bin/python bench/bench_big_record.py              # 200 MB: refused
    .venv/bin/python bench/bench_big_record.py --mb 60      # under the limit: read
    .venv/bin/python bench/bench_big_record.py --mb 60 --ascii
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["main"]

_ASCII = 'plain words and more words "quoted"\n'
_MIXED = 'café naïve 漢字テキスト 🙂 "quoted"\n'

_CHILD = r"""
import json, resource, sys, time
from spanchor_core.errors import SpanchorError
from spanchor_core.runs import RunRecorder, iter_run, read_run

mode, path, megabytes, piece = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
copies = megabytes * 1_000_000 // len(piece.encode("utf-8"))
text = piece * copies if mode in ("make", "record") else ""
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
outcome = "ok"
if mode == "make":
    header = {"kind": "spanchor.run", "schema_version": 1, "spanchor_version": "0.5.0",
              "created_at": "2025-01-01T00:00:00.000Z"}
    record = {"query_id": "q1", "query": "the question",
              "results": [{"rank": 1, "text": text, "score": 0.5}]}
    with open(path, "w", encoding="utf-8") as out:
        out.write(json.dumps(header) + "\n" + json.dumps(record, ensure_ascii=False) + "\n")
elif mode == "record":
    with RunRecorder(path) as recorder:
        recorder.record("the question", [{"rank": 1, "text": text, "score": 0.5}])
    if recorder.failures:
        outcome = f"refused: {recorder.last_error}"
else:
    try:
        reader = read_run(path).records if mode == "read_run" else iter_run(path)
        size = sum(len(r.text or "") for record in reader for r in record.results)
        outcome = f"ok, {size:,} characters"
    except SpanchorError as exc:
        outcome = f"refused: {exc}"
wall = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(base, peak, wall)
print(outcome)
"""


def _child(*args: str) -> tuple[int, int, float, str]:
    """One step in a fresh interpreter: (baseline KiB, peak KiB, wall seconds, outcome)."""
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, *args], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    base, peak, wall = out[0].split()
    return int(base), int(peak), float(wall), out[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=200, help="size of the one text (MB of UTF-8)")
    parser.add_argument("--ascii", action="store_true", help="ASCII text only")
    args = parser.parse_args(argv)
    piece = _ASCII if args.ascii else _MIXED
    with tempfile.TemporaryDirectory() as directory:
        made = Path(directory) / "big.jsonl"
        _child("make", str(made), str(args.mb), piece)
        size = made.stat().st_size
        kind = "ASCII" if args.ascii else "mixed"
        print(f"one record of {size / 1e6:.1f} MB on disk ({kind} text)")
        print(f"{'step':<9} {'wall s':>7} {'peak MiB':>9} {'growth MiB':>11} {'peak/record':>12}")
        for mode in ("record", "read_run", "iter_run"):
            target = Path(directory) / "recorded.jsonl" if mode == "record" else made
            base, peak, wall, outcome = _child(mode, str(target), str(args.mb), piece)
            growth = (peak - base) / 1024  # ru_maxrss is in KiB on Linux
            ratio = peak * 1024 / size
            print(f"{mode:<9} {wall:>7.2f} {peak / 1024:>9.0f} {growth:>11.0f} {ratio:>11.1f}x")
            print(f"          {outcome[:150]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
