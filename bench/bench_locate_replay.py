"""Benchmark: ``Locator.locate_many`` alone, replaying the batches an evaluation hands it.

A case directory of ``bench_adversarial.py`` (``corpus/``, ``gold.jsonl``, ``run.jsonl``) is
evaluated once with a locator that records every batch of :class:`LocateRequest` it is given
(``evaluate_file``, one process, its default batches); the batches are kept in
``DIR/locate-requests.pickle`` (the gold tuples a query's requests share stay shared, as the
locator's per-batch cache of them expects). Each later run loads the corpus, builds the
indexes once (or maps them from ``--cache``), then maps the recorded batches again, so a
profiler or ``valgrind --tool=callgrind`` sees the mapping and little else:

    python bench/bench_locate_replay.py --case /tmp/adv/adv-ordinary-10mb-2000q-seed0
    python bench/bench_locate_replay.py --case DIR --repeat 3
    python bench/bench_locate_replay.py --case DIR --profile 30
    python bench/bench_locate_replay.py --case DIR --dump /tmp/locations.pickle   # compare trees
    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out \\
        python bench/bench_locate_replay.py --case DIR --cache /tmp/idx
    valgrind --tool=callgrind ... python bench/bench_locate_replay.py --case DIR --cache /tmp/idx \\
        --no-map

The instructions of the mapping are those of a run minus those of the same run with
``--no-map`` (everything but the replay: imports, corpus, unpickling, the cached index).
``--dump`` writes every location as plain values (status, span, ``repr`` of the confidence,
candidates, rule, hint flag, reason) so two trees' files can be compared byte for byte. Not
part of the test suite.
"""

from __future__ import annotations

import argparse
import cProfile
import pickle
import pstats
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from spanchor_core.corpus import load_corpus
from spanchor_core.locate import LocateRequest, Location, Locator

__all__ = ["RecordingLocator", "main"]

REQUESTS = "locate-requests.pickle"


class RecordingLocator(Locator):
    """A :class:`Locator` that keeps every batch handed to :meth:`locate_many`."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.batches: list[list[LocateRequest]] = []

    def locate_many(self, requests: Sequence[LocateRequest]) -> list[Location]:
        self.batches.append(list(requests))
        return super().locate_many(requests)


def record(case: Path) -> Path:
    """Evaluate ``case`` once on one process, keeping the batches; return their file."""
    from spanchor_core.evaluate import evaluate_file
    from spanchor_core.gold import read_gold

    target = case / REQUESTS
    if target.is_file():
        return target
    corpus = load_corpus(case / "corpus")
    gold = read_gold(case / "gold.jsonl")
    locator = RecordingLocator(corpus)
    evaluate_file(corpus, gold, case / "run.jsonl", locator=locator, jobs=1)
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        pickle.dump(locator.batches, out, protocol=pickle.HIGHEST_PROTOCOL)
    partial.rename(target)
    return target


def plain(location: Location) -> tuple[object, ...]:
    """A location as plain values (the confidence by ``repr``, every bit of it)."""
    return (
        location.status.value,
        location.document_id,
        location.start,
        location.end,
        repr(location.confidence),
        tuple((c.document_id, c.start, c.end) for c in location.candidates),
        location.resolved_by,
        location.hint_rejected,
        location.reason,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", type=Path, required=True, help="a bench_adversarial case")
    parser.add_argument("--cache", type=Path, help="index cache directory (else built here)")
    parser.add_argument("--repeat", type=int, default=1, help="replays (medians printed)")
    parser.add_argument("--no-map", action="store_true", help="everything but the replay")
    parser.add_argument("--dump", type=Path, help="write the locations as plain values here")
    parser.add_argument("--profile", type=int, metavar="N", help="cProfile: top N functions")
    args = parser.parse_args(argv)
    path = record(args.case)
    c0 = time.process_time()
    corpus = load_corpus(args.case / "corpus")
    if args.cache is not None:
        from spanchor_core.index_store import persistent_locator

        locator = persistent_locator(corpus, args.cache)
    else:
        locator = Locator(corpus)
        locator.build_index(normalised=True)
    setup = time.process_time() - c0
    with path.open("rb") as source:
        batches: list[list[LocateRequest]] = pickle.load(source)
    results = sum(len(b) for b in batches)
    print(f"{args.case.name}: {len(batches)} batches, {results:,} requests")
    print(f"  corpus + index ({'cache' if args.cache else 'built'}): {setup:.3f} s CPU")
    if args.no_map:
        return 0
    profile = cProfile.Profile() if args.profile else None
    cpu: list[float] = []
    wall: list[float] = []
    located: list[Location] = []
    for _ in range(max(1, args.repeat)):
        located = []
        if profile is not None:
            profile.enable()
        t0, c0 = time.perf_counter(), time.process_time()
        for batch in batches:
            located += locator.locate_many(batch)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
        if profile is not None:
            profile.disable()
    shown = ", ".join(f"{c:.3f}" for c in cpu)
    print(f"  locate_many: {statistics.median(cpu):.3f} s CPU median ({shown})")
    print(f"  locate_many: {statistics.median(wall):.3f} s wall median")
    per = statistics.median(cpu) / max(1, results) * 1e6
    print(f"  per request: {per:.2f} us CPU")
    if args.dump is not None:
        with args.dump.open("wb") as out:
            pickle.dump([plain(x) for x in located], out, protocol=4)
        print(f"  locations written to {args.dump}")
    if profile is not None:
        stats = pstats.Stats(profile)
        stats.sort_stats("tottime").print_stats(args.profile)
        stats.sort_stats("cumulative").print_stats(args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
