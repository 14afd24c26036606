"""Benchmark: two runs scored with each distinct result mapped once (``SharedMappings``) or not.

A baseline run and a candidate that differs from it as a retriever change does (the same
chunk store: 40 % of the queries re-ranked, 20 % with 3 of their 10 results swapped for chunks
of other queries), both scored by ``load_pair`` in one process on one corpus, gold set and
index, alternately with ``pipeline/mappings.SharedMappings`` and with a pass-through wrapper.
Prints CPU (``time.process_time``) and wall per round and how many requests were answered from
an earlier batch. The case is any directory holding ``corpus/``, ``gold.jsonl`` and
``run.jsonl`` (``bench_adversarial.py --workdir`` writes them); the candidate is written beside
the run once (``candidate-reranked.jsonl``, seeded).

    python bench/bench_shared_mappings.py /tmp/legacy-wd/adv-ordinary-50mb-10000q-seed0 --rounds 3

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from spanchor_core import load_corpus, read_gold
from spanchor_core.locate import LocateRequest, Location, Locator
from spanchor_core.pipeline import load_pair, sides
from spanchor_core.pipeline.mappings import SharedMappings

CANDIDATE = "candidate-reranked.jsonl"


def write_candidate(case: Path, seed: int = 1) -> Path:
    """``run.jsonl`` of ``case`` re-ranked and partly swapped (see the module doc), once."""
    target = case / CANDIDATE
    if target.is_file():
        return target
    rng = random.Random(seed)
    header, *lines = (case / "run.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    pool = [result for record in records for result in record["results"]]
    out = [header]
    for record in records:
        results = [dict(result) for result in record["results"]]
        if rng.random() < 0.4:
            rng.shuffle(results)
        if rng.random() < 0.2 and len(results) >= 3:
            for slot in rng.sample(range(len(results)), 3):
                results[slot] = dict(rng.choice(pool))
        for rank, result in enumerate(results, start=1):
            result["rank"] = rank
        record["results"] = results
        out.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
    partial = case / f"{CANDIDATE}.partial"
    partial.write_text("\n".join(out) + "\n", encoding="utf-8")
    partial.rename(target)
    return target


class _PassThrough(SharedMappings):
    """Every request mapped by the base locator, as before ``SharedMappings``."""

    def locate_many(self, requests: Sequence[LocateRequest]) -> list[Location]:
        return self.base.locate_many(requests)


class _Counted(SharedMappings):
    last: SharedMappings | None = None

    def __init__(self, base: Locator) -> None:
        super().__init__(base)
        _Counted.last = self


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("case", type=Path, help="directory with corpus/, gold.jsonl, run.jsonl")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each, alternated")
    args = parser.parse_args(argv)
    candidate = write_candidate(args.case)
    corpus, gold = load_corpus(args.case / "corpus"), read_gold(args.case / "gold.jsonl")
    locator = sides.default_locator(corpus)
    locator.build_index(normalised=True)
    for mode in ["pass-through", "shared"] * args.rounds:
        setattr(sides, "SharedMappings", _Counted if mode == "shared" else _PassThrough)  # noqa: B010
        cpu, wall = time.process_time(), time.perf_counter()
        load_pair(args.case / "run.jsonl", candidate, corpus=corpus, gold=gold, locator=locator)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        shared, _Counted.last = _Counted.last, None
        reused = "" if shared is None else f", {shared.reused:,} requests reused"
        print(f"{mode:<13} CPU {cpu:6.2f} s  wall {wall:6.2f} s{reused}", flush=True)
    setattr(sides, "SharedMappings", SharedMappings)  # noqa: B010
    return 0


if __name__ == "__main__":
    sys.exit(main())
