"""Peak memory of reading and writing a run whose one record holds a huge text (issue 12).

Writes a run file with one record whose single result text is ``--mb`` megabytes (mixed ASCII,
Latin-1, CJK and emoji, with newlines and quotes that JSON must escape, or ``--ascii``), then
reads it with ``read_run`` and with ``iter_run``. Each step runs in a fresh child process, so
the figures do not mix (``ru_maxrss`` is per process and never goes down). Printed per step:
wall time, peak resident memory, its growth over the child's baseline (the interpreter with
spanchor imported) and the peak as a multiple of the record's size on disk. A record over the
line limit (``spanchor_core._io.MAX_LINE_BYTES``, 64 MiB) is refused: the step prints the
error and the (small) peak of refusing it.

    .venv/bin/python bench/bench_big_record.py              # 200 MB: refused, say so cheaply
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

_CHILD = """
import resource, sys, time
from spanchor_core.runs import RunRecorder, iter_run, read_run
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
mode, path = sys.argv[1], sys.argv[2]
if mode == "baseline":
    size = 0
elif mode == "write":
    piece = sys.argv[4]
    text = piece * (int(sys.argv[3]) * 1_000_000 // len(piece.encode("utf-8")))
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with RunRecorder(path) as recorder:
        recorder.record("the question", [{"rank": 1, "text": text, "score": 0.5}])
    size = len(text)
elif mode == "read_run":
    size = sum(len(r.text or "") for rec in read_run(path).records for r in rec.results)
else:
    size = sum(len(r.text or "") for rec in iter_run(path) for r in rec.results)
wall = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(base, peak, wall, size)
"""


def _child(*args: str) -> tuple[int, int, float]:
    """Run one measurement in a fresh interpreter (ru_maxrss is per process, never reset)."""
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, *args], check=True, capture_output=True, text=True
    ).stdout.split()
    return int(out[0]), int(out[1]), float(out[2])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=200, help="size of the one text (MB of UTF-8)")
    parser.add_argument("--ascii", action="store_true", help="ASCII text only")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "big.jsonl"
        piece = _ASCII if args.ascii else _MIXED
        write = _child("write", str(path), str(args.mb), piece)
        size = path.stat().st_size
        print(f"one record of {size / 1e6:.1f} MB on disk ({'ASCII' if args.ascii else 'mixed'})")
        print(f"{'step':<10} {'wall s':>8} {'peak MiB':>10} {'growth MiB':>11} {'peak/record':>12}")
        for mode in ("baseline", "write", "read_run", "iter_run"):
            base, peak, wall = write if mode == "write" else _child(mode, str(path))
            growth = (peak - base) / 1024  # ru_maxrss is in KiB on Linux
            ratio = peak * 1024 / size
            print(f"{mode:<10} {wall:>8.2f} {peak / 1024:>10.0f} {growth:>11.0f} {ratio:>11.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
