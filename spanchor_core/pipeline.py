"""The one pipeline from paths to a verdict: inputs -> evaluations -> comparison -> exit code.

``spanchor evaluate`` calls :func:`run_evaluation`, ``spanchor compare`` and ``spanchor gate``
call :func:`run_gate`, and the pytest plugin calls :func:`load_pair` / :func:`load_side`, so a
file is recognised, a run is checked and scored, and an exit code is decided in one place. Either
side of a comparison may be an :class:`Evaluation`, a :class:`Run`, or a path to an evaluation
file (ours or spanchor 0.x's) or to a run file, which is then scored against the documents and
the gold set. A file's kind is read from its parsed ``kind`` (:func:`file_kind`), never guessed
from its bytes.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Literal

from spanchor_core.compare import BAD_INPUT_FINDINGS, Comparison, compare
from spanchor_core.compare.noise import (
    NoiseReport,
    RepeatedBaseline,
    measure_noise,
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
from spanchor_core.errors import InputError, RunError
from spanchor_core.evaluate import (
    Evaluation,
    ProgressCallback,
    check_gold,
    check_run_provenance,
    evaluate,
    evaluate_file,
    read_evaluation,
)
from spanchor_core.evaluate.kind import holds_evaluation
from spanchor_core.exit_codes import ExitCode
from spanchor_core.gold import GoldSet, read_gold
from spanchor_core.index_store import pipeline_locator
from spanchor_core.locate import Locator
from spanchor_core.metrics import DEFAULT_K, DEFAULT_MIN_OVERLAP
from spanchor_core.parallel import ProcessLocator, default_start_method, resolve_jobs, run_tasks
from spanchor_core.policy import Policy, default_policy, policy_from_mapping
from spanchor_core.runs import Run, RunStream, iter_run, read_run
from spanchor_core.settings import GateConfig

__all__ = [
    "BAD_INPUT_FINDINGS",
    "EvaluationOutcome",
    "EvaluationSource",
    "GateOutcome",
    "GoldHashPolicy",
    "NoiseOutcome",
    "file_kind",
    "load_pair",
    "load_side",
    "load_sides",
    "open_run",
    "policy_with_drops",
    "run_evaluation",
    "run_gate",
    "run_noise",
    "score_run",
]

EvaluationSource = Evaluation | Run | str | os.PathLike[str]
"""One side of a comparison: an evaluation or a run, in memory or as a file."""


class GoldHashPolicy(StrEnum):
    """What :func:`run_evaluation` does when the gold set's hash is not the expected one."""

    WARN = "warn"
    """Score anyway, and say so in :attr:`EvaluationOutcome.warnings`."""
    FAIL = "fail"
    """Refuse to score: :class:`InputError`."""
    IGNORE = "ignore"
    """Do not compare the hashes."""


SideProgress = Callable[[str], ProgressCallback | None]
"""``progress(side)``: a progress callback for scoring ``side`` (a name or a label), or None."""


# -- which file is it ---------------------------------------------------------------------------


def file_kind(path: str | os.PathLike[str]) -> Literal["evaluation", "run"]:
    """Whether ``path`` holds an evaluation (ours or 0.x) or a run/results file.

    Decided by the parsed ``kind`` (:func:`~spanchor_core.evaluate.kind.holds_evaluation`),
    never by extension or by text found somewhere in the file.
    """
    return "evaluation" if holds_evaluation(path) else "run"


# -- inputs -> evaluations ----------------------------------------------------------------------


def open_run(
    run: Run | RunStream | str | os.PathLike[str],
    *,
    corpus: Corpus,
    gold: GoldSet,
    allow_mismatch: bool = False,
) -> Run | RunStream:
    """A run made ready for scoring, after the checks CI needs; a path is opened as a stream.

    The gold set must match ``corpus`` (:func:`check_gold`) and, unless ``allow_mismatch``,
    the run must say it was recorded against these documents and this gold set
    (:func:`check_run_provenance`). Of a run file only the header is read here.
    """
    check_gold(gold, corpus)
    opened = run if isinstance(run, Run | RunStream) else iter_run(run)
    if not allow_mismatch:
        check_run_provenance(opened, corpus, gold)
    return opened


def _score(
    opened: Run | RunStream,
    corpus: Corpus,
    gold: GoldSet,
    *,
    k: Sequence[int],
    min_overlap: float,
    locator: Locator | None,
    progress: ProgressCallback | None,
    group: str = "auto",
) -> Evaluation:
    """Score an opened run; a run with no record at all is bad input, never a quiet pass."""
    score = evaluate if isinstance(opened, Run) else evaluate_file
    evaluation = score(
        corpus,
        gold,
        opened,  # type: ignore[arg-type]  # each scorer gets the kind it reads
        k=k,
        min_overlap=min_overlap,
        locator=locator,
        progress=progress,
        group=group,
    )
    if evaluation.records == 0:
        raise RunError(
            "the run holds no record: the recorder saw no retrieval",
            path=opened.path or "run",
            hint="was the retriever called inside the recording scope (or with the callback "
            "handler attached)? record the run again",
        )
    return evaluation


def score_run(
    run: Run | RunStream | str | os.PathLike[str],
    *,
    corpus: Corpus,
    gold: GoldSet,
    k: Sequence[int] = DEFAULT_K,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    allow_mismatch: bool = False,
    locator: Locator | None = None,
    progress: ProgressCallback | None = None,
    group: str = "auto",
) -> Evaluation:
    """Score a run (in memory, opened, or a path) after :func:`open_run`'s checks.

    A run file is read record by record, never held whole. A run without any record is a
    :class:`~spanchor_core.errors.RunError`. ``group`` is the grouping rule for queries with
    several records (:mod:`spanchor_core.grouping`).
    """
    opened = open_run(run, corpus=corpus, gold=gold, allow_mismatch=allow_mismatch)
    return _score(
        opened,
        corpus,
        gold,
        k=k,
        min_overlap=min_overlap,
        locator=locator,
        progress=progress,
        group=group,
    )


def _as_known(source: EvaluationSource) -> Evaluation | Run | Path:
    """An evaluation file read; a run (in memory or as a path) left to be scored."""
    if isinstance(source, Evaluation | Run):
        return source
    if file_kind(source) == "evaluation":
        return read_evaluation(source)
    return Path(source)


def _scored(
    run: Run | Path,
    *,
    corpus: Corpus | None,
    gold: GoldSet | None,
    k: Sequence[int],
    min_overlap: float,
    allow_mismatch: bool,
    progress: ProgressCallback | None,
    locator: Locator | None,
    group: str = "auto",
) -> Evaluation:
    if corpus is None or gold is None:
        if isinstance(run, Path):
            read_run(run)  # a broken file is reported as such, not as "needs the documents"
        raise InputError(
            "is a run; scoring it needs the documents and the gold set",
            path=run if isinstance(run, Path) else run.path or "run",
            hint="give the documents and the gold set (--docs DIR --gold FILE, or corpus= and "
            "gold=), or compare evaluations",
        )
    return score_run(
        run,
        corpus=corpus,
        gold=gold,
        k=k,
        min_overlap=min_overlap,
        allow_mismatch=allow_mismatch,
        locator=locator,
        progress=progress,
        group=group,
    )


def load_side(
    source: EvaluationSource,
    *,
    corpus: Corpus | None,
    gold: GoldSet | None,
    k: Sequence[int] = DEFAULT_K,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    allow_mismatch: bool = False,
    progress: ProgressCallback | None = None,
    locator: Locator | None = None,
    group: str = "auto",
) -> Evaluation:
    """One side of a comparison: an evaluation as it is, or a run scored now (:func:`score_run`).

    Scoring a run needs ``corpus`` and ``gold`` (else :class:`InputError`). Pass ``locator``
    (built on ``corpus``) to share one corpus index between both sides.
    """
    known = _as_known(source)
    if isinstance(known, Evaluation):
        return known
    return _scored(
        known,
        corpus=corpus,
        gold=gold,
        k=k,
        min_overlap=min_overlap,
        allow_mismatch=allow_mismatch,
        progress=progress,
        locator=locator,
        group=group,
    )


def load_pair(
    baseline: EvaluationSource,
    candidate: EvaluationSource,
    *,
    corpus: Corpus | None,
    gold: GoldSet | None,
    k: Sequence[int] | None = None,
    min_overlap: float | None = None,
    allow_mismatch: bool = False,
    progress: SideProgress | None = None,
    group: str = "auto",
    locator: Locator | None = None,
    jobs: int = 1,
) -> tuple[Evaluation, Evaluation]:
    """Both sides as evaluations, scoring the runs among them with one corpus index.

    Runs are scored with ``k`` and ``min_overlap``; where those are None, with the settings of
    the side that is already an evaluation (the only choice that can make the two comparable),
    and with the library defaults when both sides are runs. ``progress("baseline")`` /
    ``progress("candidate")`` may return a progress callback for scoring that side. ``jobs``
    (0: one per CPU) scores two runs concurrently, or maps one run on that many processes
    (:mod:`spanchor_core.parallel`); the evaluations are the same as with 1.
    """
    (base,), cand = load_sides(
        [baseline],
        candidate,
        corpus=corpus,
        gold=gold,
        k=k,
        min_overlap=min_overlap,
        allow_mismatch=allow_mismatch,
        progress=progress,
        group=group,
        locator=locator,
        jobs=jobs,
    )
    return base, cand


def _default_locator(corpus: Corpus) -> Locator:
    """The pipeline's locator: from the persistent index cache for a large corpus, else one
    that indexes lazily, at most once."""
    return pipeline_locator(corpus) or Locator(corpus)


def _score_side(
    run: Run | Path,
    corpus: Corpus,
    gold: GoldSet,
    k: Sequence[int],
    min_overlap: float,
    allow_mismatch: bool,
    group: str,
    locator: Locator | None,
    progress: ProgressCallback | None = None,
) -> Evaluation:
    """One run side scored, as a task of :func:`run_tasks` (module level: ``spawn`` pickles it;
    without ``locator`` — a spawned worker — it takes the pipeline's own)."""
    return _scored(
        run,
        corpus=corpus,
        gold=gold,
        k=k,
        min_overlap=min_overlap,
        allow_mismatch=allow_mismatch,
        progress=progress,
        locator=locator if locator is not None else _default_locator(corpus),
        group=group,
    )


def _load_all(
    sides: Sequence[tuple[str, EvaluationSource]],
    *,
    corpus: Corpus | None,
    gold: GoldSet | None,
    k: Sequence[int] | None,
    min_overlap: float | None,
    allow_mismatch: bool,
    progress: SideProgress | None,
    group: str,
    locator: Locator | None = None,
    jobs: int = 1,
) -> list[Evaluation]:
    """Every ``(label, source)`` as an evaluation, runs scored with one corpus index and, where
    ``k``/``min_overlap`` are None, the settings of the first side that is an evaluation.

    With ``jobs`` > 1 and a plain :class:`Locator` (or none; an engine such as a
    :class:`~spanchor_core.distributed.RayLocator` maps its own way), two or more runs are
    scored concurrently, the workers sharing the driver's corpus, gold set and index; a single
    run is mapped on ``jobs`` processes (:class:`~spanchor_core.parallel.ProcessLocator`)."""
    count = resolve_jobs(jobs)
    known = [_as_known(source) for _, source in sides]
    reference = next((side for side in known if isinstance(side, Evaluation)), None)
    if k is None:
        k = DEFAULT_K if reference is None else reference.settings.k
    if min_overlap is None:
        min_overlap = DEFAULT_MIN_OVERLAP if reference is None else reference.settings.min_overlap
    runs = sum(not isinstance(side, Evaluation) for side in known)
    parallel = count > 1 and (locator is None or type(locator) is Locator)
    # one index for both sides: from the persistent cache for a large corpus, else lazily
    if locator is None and corpus is not None:
        locator = _default_locator(corpus)
    if parallel and runs >= 2 and corpus is not None and gold is not None:
        labels = [label for label, _ in sides]
        settings = _SideSettings(k, min_overlap, allow_mismatch, group)
        return _load_concurrently(labels, known, corpus, gold, settings, progress, locator, count)
    mapper = locator
    if parallel and runs and corpus is not None and gold is not None:
        mapper = ProcessLocator(corpus, jobs=count, base=locator)
    try:
        return [
            source
            if isinstance(source, Evaluation)
            else _scored(
                source,
                corpus=corpus,
                gold=gold,
                k=k,
                min_overlap=min_overlap,
                allow_mismatch=allow_mismatch,
                progress=None if progress is None else progress(label),
                locator=mapper,
                group=group,
            )
            for (label, _), source in zip(sides, known, strict=True)
        ]
    finally:
        if isinstance(mapper, ProcessLocator):
            mapper.close()


@dataclass(frozen=True, slots=True)
class _SideSettings:
    """How every run side is scored (one value, handed to each concurrent task)."""

    k: Sequence[int]
    min_overlap: float
    allow_mismatch: bool
    group: str


def _load_concurrently(
    labels: Sequence[str],
    known: Sequence[Evaluation | Run | Path],
    corpus: Corpus,
    gold: GoldSet,
    settings: _SideSettings,
    progress: SideProgress | None,
    locator: Locator | None,
    jobs: int,
) -> list[Evaluation]:
    """The runs among ``known`` scored by :func:`run_tasks`, one task per run, in order. The
    index is built before the workers fork (they inherit it); spawned workers take their own."""
    shared = locator if locator is not None else _default_locator(corpus)
    shared.build_index(normalised=True)
    inherited = default_start_method() == "fork"
    tasks: list[Callable[[], Evaluation]] = []
    for label, source in zip(labels, known, strict=True):
        if isinstance(source, Evaluation):
            continue
        first = not tasks  # the driver scores the first run: its progress bar is drawn
        tasks.append(
            functools.partial(
                _score_side,
                source,
                corpus,
                gold,
                settings.k,
                settings.min_overlap,
                settings.allow_mismatch,
                settings.group,
                shared if inherited or first else None,
                progress(label) if progress is not None and first else None,
            )
        )
    scored = iter(run_tasks(tasks, jobs))
    return [side if isinstance(side, Evaluation) else next(scored) for side in known]


def load_sides(
    baselines: Sequence[EvaluationSource],
    candidate: EvaluationSource,
    *,
    corpus: Corpus | None,
    gold: GoldSet | None,
    k: Sequence[int] | None = None,
    min_overlap: float | None = None,
    allow_mismatch: bool = False,
    progress: SideProgress | None = None,
    group: str = "auto",
    locator: Locator | None = None,
    jobs: int = 1,
) -> tuple[tuple[Evaluation, ...], Evaluation]:
    """:func:`load_pair` for one or more baselines (repeated runs of one configuration).

    The baselines come back in the order given. With one baseline, ``progress`` is asked for
    ``"baseline"``; with several, for ``"baseline NAME"`` (the file name).
    """
    sources = list(baselines)
    labels = ["baseline"]
    if len(sources) > 1:
        labels = [
            f"baseline {Path(s).name}" if isinstance(s, str | os.PathLike) else f"baseline {i}"
            for i, s in enumerate(sources, start=1)
        ]
    loaded = _load_all(
        [*zip(labels, sources, strict=True), ("candidate", candidate)],
        corpus=corpus,
        gold=gold,
        k=k,
        min_overlap=min_overlap,
        allow_mismatch=allow_mismatch,
        progress=progress,
        group=group,
        locator=locator,
        jobs=jobs,
    )
    return tuple(loaded[:-1]), loaded[-1]


# -- evaluate: one run, its checks and its exit code --------------------------------------------


@dataclass(frozen=True, slots=True)
class EvaluationOutcome:
    """One scored run, what was noticed on the way, and the exit code of ``spanchor evaluate``."""

    evaluation: Evaluation
    gold: GoldSet
    corpus: Corpus
    max_unmapped_rate: float | None
    warnings: tuple[str, ...] = ()
    """Problems noticed before scoring (a gold-set hash that is not the expected one)."""

    @property
    def unmapped_exceeded(self) -> bool:
        """More results than ``max_unmapped_rate`` allows could not be mapped."""
        limit = self.max_unmapped_rate
        return limit is not None and self.evaluation.mapping.unmapped_rate > limit

    @property
    def incomplete(self) -> bool:
        """Some gold queries have no record in the run."""
        return bool(self.evaluation.missing_in_run)

    @property
    def exit_code(self) -> ExitCode:
        """:attr:`ExitCode.UNTRUSTED` when the run is incomplete or too much is unmapped."""
        return ExitCode.UNTRUSTED if self.unmapped_exceeded or self.incomplete else ExitCode.PASS


def _gold_hash_warning(
    gold: GoldSet, expected: str | None, policy: GoldHashPolicy | str
) -> tuple[str, ...]:
    """Compare the gold set's hash (ours, 0.x's, or ``sha256:``-prefixed) with ``expected``."""
    try:
        policy = GoldHashPolicy(policy)
    except ValueError:
        raise InputError(
            f"the gold-hash policy must be warn, fail or ignore, not {policy!r}"
        ) from None
    if expected is None or policy is GoldHashPolicy.IGNORE:
        return ()
    if expected in {gold.sha256, gold.legacy_sha256, f"sha256:{gold.sha256}"}:
        return ()
    message = (
        f"the gold set's hash is {gold.sha256} (0.x form {gold.legacy_sha256}), not {expected}"
    )
    if policy is GoldHashPolicy.FAIL:
        raise InputError(message, path=gold.path, hint="evaluate against the expected gold set")
    return (message,)


def run_evaluation(
    corpus: Corpus | str | os.PathLike[str],
    gold: GoldSet | str | os.PathLike[str],
    run: str | os.PathLike[str],
    *,
    k: Sequence[int] = DEFAULT_K,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    globs: Sequence[str] = DEFAULT_GLOBS,
    max_unmapped_rate: float | None = 0.1,
    allow_mismatch: bool = False,
    expected_gold_hash: str | None = None,
    gold_hash_policy: GoldHashPolicy | str = GoldHashPolicy.WARN,
    progress: ProgressCallback | None = None,
    group: str = "auto",
    locator: Locator | None = None,
    jobs: int = 1,
) -> EvaluationOutcome:
    """Score one run file as ``spanchor evaluate`` does, with every check CI relies on.

    The gold set's hash is checked against ``expected_gold_hash`` (``gold_hash_policy``: warn,
    fail with :class:`InputError`, or ignore), then the gold set against the documents and the
    run's provenance (:func:`score_run`). A run none of whose records matches a gold query is
    an :class:`InputError`: scoring it would report a pass on nothing. ``locator`` (built on
    the same documents, e.g. a :class:`~spanchor_core.distributed.RayLocator`) maps the results;
    without one, ``jobs`` processes do (0: one per CPU; :mod:`spanchor_core.parallel`), with
    the same evaluation as one.
    """
    if max_unmapped_rate is not None and not 0.0 <= max_unmapped_rate <= 1.0:
        raise InputError(f"max_unmapped_rate must be between 0 and 1, got {max_unmapped_rate}")
    documents = corpus if isinstance(corpus, Corpus) else load_corpus(corpus, globs=tuple(globs))
    gold_set = gold if isinstance(gold, GoldSet) else read_gold(gold)
    warnings = _gold_hash_warning(gold_set, expected_gold_hash, gold_hash_policy)
    count = resolve_jobs(jobs)
    opened = open_run(Path(run), corpus=documents, gold=gold_set, allow_mismatch=allow_mismatch)
    owned = None
    if locator is None:
        locator = pipeline_locator(documents)
        if count > 1:
            locator = owned = ProcessLocator(documents, jobs=count, base=locator)
    try:
        evaluation = _score(
            opened,
            documents,
            gold_set,
            k=k,
            min_overlap=min_overlap,
            locator=locator,
            progress=progress,
            group=group,
        )
    finally:
        if owned is not None:
            owned.close()
    records = opened.records_read if isinstance(opened, RunStream) else len(opened.records)
    if records and len(evaluation.missing_in_run) == len(evaluation):
        where = gold_set.path if gold_set.path is not None else "the gold set"
        raise InputError(
            f"none of the run's {records} records matches a query of {where}",
            path=Path(run),
            hint="check that the run was recorded for this gold set",
        )
    return EvaluationOutcome(evaluation, gold_set, documents, max_unmapped_rate, warnings)


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
    the outcome is the same as with 1. It cannot be combined with ``engine``.
    """
    count = resolve_jobs(config.jobs if jobs is None else jobs)
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
        locator = engine(corpus) if engine is not None else _default_locator(corpus)
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
        jobs=count,
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


# -- noise: N repeats of one configuration -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NoiseOutcome:
    """What ``spanchor noise`` measured: the repeats (sorted by path) and their disagreement."""

    baselines: tuple[Evaluation, ...]
    report: NoiseReport
    policy: Policy
    """The policy the flaky queries and the floor are for: the given one, else the default."""

    @property
    def gated(self) -> tuple[str, ...]:
        """The metrics the policy gates (and that the repeats report)."""
        names = {row.metric for row in self.report.metrics}
        return tuple(name for name in self.policy.gated_metrics if name in names)

    @property
    def flaky_queries(self) -> tuple[str, ...]:
        """Queries flaky on a gated metric: what goes into the policy's ``flaky_queries``."""
        return self.report.flaky_queries(self.gated)

    @property
    def noise_floor(self) -> float:
        """The largest spread of a gated metric's mean between the repeats."""
        return self.report.noise_floor(self.gated)


def run_noise(
    baselines: Sequence[str | os.PathLike[str]],
    *,
    docs: str | os.PathLike[str] | None = None,
    gold: str | os.PathLike[str] | None = None,
    k: Sequence[int] | None = None,
    min_overlap: float | None = None,
    globs: Sequence[str] = DEFAULT_GLOBS,
    allow_mismatch: bool = False,
    group: str = "auto",
    policy: Policy | None = None,
    progress: SideProgress | None = None,
    jobs: int = 1,
) -> NoiseOutcome:
    """Score (or read) N repeated baselines and measure how much they disagree.

    Run files need ``docs`` and ``gold``; all baselines must be of one gold set and corpus
    (:class:`InputError` naming the odd file). Flakiness counts differences larger than the
    policy's noise floor. Without ``policy``, the default one (:func:`compare`'s) names the
    gated metrics. ``jobs`` (0: one per CPU) scores the runs concurrently, with the same
    outcome (:mod:`spanchor_core.parallel`).
    """
    paths = [Path(p) for p in baselines]
    corpus = load_corpus(docs, globs=tuple(globs)) if docs is not None else None
    gold_set = read_gold(gold) if gold is not None else None
    if len(paths) < 2:
        raise InputError(
            f"measuring noise needs at least two baselines, got {len(paths)}",
            hint="record the same configuration two or more times and give every run file",
        )
    loaded = _load_all(
        [(f"baseline {path.name}", path) for path in paths],
        corpus=corpus,
        gold=gold_set,
        k=k,
        min_overlap=min_overlap,
        allow_mismatch=allow_mismatch,
        progress=progress,
        group=group,
        jobs=jobs,
    )
    labelled = sorted(zip(map(str, paths), loaded, strict=True), key=lambda pair: pair[0])
    if policy is None:
        policy = default_policy(labelled[0][1].metric_names)
    report = measure_noise(labelled, floor=policy.noise_floor)
    return NoiseOutcome(tuple(e for _, e in labelled), report, policy)
