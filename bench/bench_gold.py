"""The gold phases of ``spanchor evaluate`` before the run is read: ``read_gold``,
``validate_gold`` (what ``check_gold`` runs) and the gold-set hash (``content_sha256``, what
``check_run_provenance`` compares), timed in one process on a case directory.

    PYTHONPATH=<tree> python bench/bench_gold.py --case DIR [--base OTHER_TREE] [--reps 11]

``DIR`` holds ``corpus/`` and ``gold.jsonl`` (a ``bench_adversarial.py`` case). With ``--base``,
that tree's ``spanchor_core/gold/{model,file,validate}.py`` are loaded under other names (each
importing everything else from ``PYTHONPATH``'s tree) and each phase alternates base and
``PYTHONPATH``'s code, old then new, ``--reps`` times: CPU medians (``time.process_time``), a
collection before each call; the results must be equal.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _cpu(function: Callable[[], Any]) -> float:
    gc.collect()
    start = time.process_time()
    result = function()
    elapsed = time.process_time() - start
    del result
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", type=Path, required=True)
    parser.add_argument("--base", type=Path, help="a tree of the code to compare with")
    parser.add_argument("--reps", type=int, default=11)
    args = parser.parse_args()

    from spanchor_core.corpus import load_corpus
    from spanchor_core.gold import file, model, validate

    gold_path = args.case / "gold.jsonl"
    corpus = load_corpus(args.case / "corpus")
    gold = file.read_gold(gold_path)
    sides: dict[str, tuple[ModuleType, ModuleType, ModuleType]] = {"new": (model, file, validate)}
    if args.base is not None:
        root = args.base / "spanchor_core" / "gold"
        base_model = _load("base_gold_model", root / "model.py")
        sides = {
            "base": (
                base_model,
                _load("base_gold_file", root / "file.py"),
                _load("base_gold_validate", root / "validate.py"),
            ),
            **sides,
        }

    def calls(m: ModuleType, f: ModuleType, v: ModuleType) -> dict[str, Callable[[], Any]]:
        return {
            "read_gold": lambda: f.read_gold(gold_path),
            "validate_gold": lambda: v.validate_gold(gold, corpus),
            "content_sha256": lambda: m.GoldSet.content_sha256(gold.entries),
        }

    phases = {name: calls(*modules) for name, modules in sides.items()}
    print(f"{len(gold.entries)} queries, {gold_path.stat().st_size / 1e6:.1f} MB; {args.reps} reps")
    for phase in phases["new"]:
        results = {name: phases[name][phase]() for name in phases}
        assert all(r == results["new"] for r in results.values()), phase
        times: dict[str, list[float]] = {name: [] for name in phases}
        for _ in range(args.reps):
            for name in phases:
                times[name].append(_cpu(phases[name][phase]))
        cells = [
            f"{name} {statistics.median(t) * 1e3:6.1f} ms (min {min(t) * 1e3:.1f})"
            for name, t in times.items()
        ]
        if "base" in times:
            ratio = statistics.median(times["new"]) / statistics.median(times["base"]) - 1
            cells.append(f"{ratio:+.0%}")
        print(f"{phase:15s} " + "  ".join(cells))


if __name__ == "__main__":
    main()
