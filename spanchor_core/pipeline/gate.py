"""``spanchor compare`` / ``gate``: two sides (or several baselines), their comparison under a
policy, the regressions' diagnosis, and the exit code."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from spanchor_core.compare import Comparison, compare
from spanchor_core.compare.noise import (
    RepeatedBaseline,
    repeated_baseline,
)
from spanchor_core.corpus import DEFAULT_GLOBS, Corpus, is_corpus_file, load_corpus
from spanchor_core.corpus.lazy import open_corpus_file
from spanchor_core.diagnosis import (
    ChunkInventory,
    ChunkInventoryError,
    MissingChunkInventory,
    RegressionDiagnosis,
    diagnose_regressions,
    inventory_path,
    load_inventory,
)
from spanchor_core.errors import InputError
from spanchor_core.evaluate import (
    Evaluation,
)
from spanchor_core.exit_codes import ExitCode
from spanchor_core.gold import GoldSet, read_gold
from spanchor_core.locate import Locator
from spanchor_core.parallel import resolve_jobs
from spanchor_core.pipeline.sides import SideProgress, default_locator, load_sides
from spanchor_core.policy import Policy, policy_from_mapping
from spanchor_core.settings import GateConfig

__all__ = [
    "GateOutcome",
    "engine_corpus",
    "policy_with_drops",
    "run_gate",
]

# -- compare / gate: two sides, a comparison and its exit code ----------------------------------


@dataclass(frozen=True, slots=True)
class GateOutcome:
    """Both evaluations, their comparison and the exit code the CI step should return."""

    baseline: Evaluation
    candidate: Evaluation
    comparison: Comparison
    gold: GoldSet | None
    corpus: Corpus | None
    diagnosis: RegressionDiagnosis | None = None
    """Why each regressed query regressed (:mod:`spanchor_core.diagnosis`); None without any."""
    baselines: tuple[Evaluation, ...] = ()
    """With several baselines, all of them sorted by path; ``baseline`` is then the first,
    the one reports and the diagnosis take their retrieved evidence from."""
    warnings: tuple[str, ...] = ()
    """What the gate went on without (a run header's chunk inventory that is not there)."""

    @property
    def unmapped_exceeded(self) -> bool:
        """Either side mapped fewer results than the limit allows."""
        return any(f.code == "unmapped_rate" for f in self.comparison.errors)

    @property
    def exit_code(self) -> ExitCode:
        """The CI verdict: the comparison's own code, 2 > 3 > 1 > 0 (see
        :attr:`~spanchor_core.compare.Comparison.exit_code`)."""
        return self.comparison.exit_code


def policy_with_drops(policy: Policy | None, max_drop: Mapping[str, float | None]) -> Policy | None:
    """``policy`` with per-query ``max_drop`` limits on top (None values are left out).

    spanchor 0.x's ``--max-recall-drop`` / ``--max-precision-drop`` are such limits on
    ``recall@5`` and ``precision@5``; they win over the policy's own.
    """
    extra = {name: value for name, value in max_drop.items() if value is not None}
    if not extra:
        return policy
    if policy is None:
        return policy_from_mapping({"max_drop": extra})
    data = policy.model_dump()
    data["max_drop"] = {**data["max_drop"], **extra}
    return policy_from_mapping(data)


def _inventories(
    config: GateConfig,
    baseline: Evaluation,
    candidate: Evaluation,
    corpus: Corpus | None,
    locator: Locator | None,
) -> tuple[tuple[ChunkInventory | None, ChunkInventory | None], tuple[str, ...]]:
    """The chunk inventories the two run headers point to (``tags["spanchor.chunks"]``), and a
    warning for each that is not there.

    An inventory only explains a regression (the chunking/ranking split); the verdict never
    depends on it. So a header pointing to a file that is gone — a run copied elsewhere
    without its chunks — costs the split and a warning, not the gate. A malformed inventory
    or tag is still bad input.
    """
    if corpus is None:  # nothing to map them onto: no split, and no reason to fail
        return (None, None), ()
    found: list[ChunkInventory | None] = []
    warnings: list[str] = []
    sides = (("baseline", baseline, config.baseline), ("candidate", candidate, config.candidate))
    for side, evaluation, source in sides:
        try:
            path = _inventory_file(evaluation, source)
        except MissingChunkInventory as err:
            warnings.append(f"{side}: {err}; no chunking/ranking split")
            path = None
        found.append(None if path is None else load_inventory(path, corpus, locator=locator))
    return (found[0], found[1]), tuple(warnings)


def _inventory_file(evaluation: Evaluation, source: str | os.PathLike[str]) -> Path | None:
    """Where the run header's inventory tag points. The tag is relative to the run file it was
    written in; an evaluation file copies that header, so its tag is taken relative to the run
    it was made from (``run_path``) first, then to the evaluation file itself."""
    header = evaluation.settings.run_header
    run = evaluation.settings.run_path
    if run is not None and Path(run).resolve() != Path(source).resolve():
        try:
            return inventory_path(header, run)
        except ChunkInventoryError:
            pass  # the run has moved since: try next to the evaluation file
    return inventory_path(header, source)


def engine_corpus(
    docs: str | os.PathLike[str],
    globs: Sequence[str],
    engine: Callable[[Corpus], Locator] | None,
) -> Corpus:
    """The corpus the driver holds for ``engine``: the whole text, or — when the engine's shard
    actors read the documents from a JSONL/Parquet corpus themselves (``holds_documents``) —
    a lazy view of ids, hashes and lengths that reads back only the documents the driver needs
    (the gold set's, the reports'). ``spanchor evaluate`` and :func:`run_gate` both ask here."""
    if (
        getattr(engine, "holds_documents", False)
        and tuple(globs) == DEFAULT_GLOBS
        and is_corpus_file(docs)
    ):
        return open_corpus_file(docs)
    return load_corpus(docs, globs=tuple(globs))


def _gate_corpus(config: GateConfig, engine: Callable[[Corpus], Locator] | None) -> Corpus:
    """The gate's corpus (:func:`engine_corpus` of its settings)."""
    assert config.docs is not None
    return engine_corpus(config.docs, config.globs, engine)


def run_gate(
    config: GateConfig,
    *,
    policy: Policy | None = None,
    policy_base: Path | None = None,
    progress: SideProgress | None = None,
    engine: Callable[[Corpus], Locator] | None = None,
    jobs: int | None = None,
) -> GateOutcome:
    """Evaluate both sides as needed and compare them under the configured policy.

    ``policy`` wins over ``config.policy``; with neither, :func:`compare`'s default applies.
    Several baselines (``config.baselines``) are combined by
    :func:`~spanchor_core.compare.noise.repeated_baseline`: each query's spread across them is
    its noise band, and baselines of another gold set or corpus are bad input naming the file.
    ``progress(side)`` may return a progress callback for evaluating ``"baseline"`` or
    ``"candidate"`` (see :func:`spanchor_core.evaluate.evaluate`). ``engine(corpus)`` gives the
    locator both sides are mapped with (e.g. a :class:`~spanchor_core.distributed.RayLocator`).
    ``jobs`` (default ``config.jobs``; 0: one per CPU) scores the sides concurrently when two or
    more are runs, sharing one corpus, gold set and index (:mod:`spanchor_core.parallel`);
    the outcome is the same as with 1. It cannot be combined with ``engine``. With neither
    ``jobs`` nor ``config.jobs`` set, two large run files are read in paired halves on two
    processes where two CPUs are usable (:mod:`spanchor_core.pipeline.paired`), else the sides
    are scored in turn, as with 1.
    """
    chosen_jobs = jobs if jobs is not None else config.jobs
    # neither told: two large run files are read in paired halves on two processes
    automatic = jobs is None and "jobs" not in config.model_fields_set and engine is None
    count = resolve_jobs(chosen_jobs)
    if engine is not None and count > 1:
        raise InputError(
            f"jobs={count} and an engine cannot be combined",
            hint="map on the engine (jobs=1), or on local processes (no engine)",
        )
    corpus = _gate_corpus(config, engine) if config.docs is not None else None
    gold = read_gold(config.gold) if config.gold is not None else None
    paths = config.baseline_paths
    # one locator (indexed lazily, at most once) for both sides and their chunk inventories
    locator: Locator | None = None
    if corpus is not None:
        locator = engine(corpus) if engine is not None else default_locator(corpus)
    baselines, candidate = load_sides(
        paths,
        config.candidate,
        corpus=corpus,
        gold=gold,
        k=config.k,
        min_overlap=config.min_overlap,
        allow_mismatch=config.allow_mismatch,
        progress=progress,
        group=config.group,
        locator=locator,
        jobs=None if automatic else count,
    )
    chosen = policy if policy is not None else config.resolved_policy(policy_base)
    members: tuple[Evaluation, ...] = ()
    if len(baselines) == 1:
        (baseline,) = baselines
        reference: Evaluation | RepeatedBaseline = baseline
    else:
        labelled = sorted(zip(map(str, paths), baselines, strict=True), key=lambda p: p[0])
        reference = repeated_baseline(labelled)
        members = tuple(evaluation for _, evaluation in labelled)
        baseline = members[0]
    comparison = compare(
        reference,
        candidate,
        chosen,
        seed=config.seed,
        max_unmapped_rate=config.max_unmapped_rate,
    )
    chunks, warnings = _inventories(config, baseline, candidate, corpus, locator)
    diagnosis = (
        diagnose_regressions(
            comparison,
            baseline,
            candidate,
            baseline_chunks=chunks[0],
            candidate_chunks=chunks[1],
        )
        if comparison.regressions() or None not in chunks
        else None
    )
    if diagnosis is not None:  # the comparison file and the reports show it
        comparison = dataclasses.replace(comparison, diagnosis=diagnosis)
    return GateOutcome(baseline, candidate, comparison, gold, corpus, diagnosis, members, warnings)
