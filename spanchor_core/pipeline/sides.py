"""Inputs -> evaluations: which file a side is, and every side scored with one corpus index.

An evaluation file is read as it is; a run (in memory or a path) is checked (:func:`open_run`)
and scored, both sides of a comparison sharing one :class:`~spanchor_core.locate.Locator`, on
one process or on several (``jobs``). A file's kind is read from its parsed ``kind``
(:func:`file_kind`), never guessed from its bytes.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from spanchor_core.corpus import Corpus
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
from spanchor_core.evaluate.checks import gold_checked
from spanchor_core.evaluate.kind import holds_evaluation
from spanchor_core.gold import GoldSet
from spanchor_core.index_store import pipeline_locator
from spanchor_core.locate import Locator
from spanchor_core.metrics import DEFAULT_K, DEFAULT_MIN_OVERLAP
from spanchor_core.parallel import ProcessLocator, default_start_method, resolve_jobs, run_tasks
from spanchor_core.pipeline.mappings import SharedMappings
from spanchor_core.runs import Run, RunStream, iter_run, read_run

__all__ = [
    "EvaluationSource",
    "SideProgress",
    "default_locator",
    "file_kind",
    "load_labelled",
    "load_pair",
    "load_side",
    "load_sides",
    "open_run",
    "score_opened",
    "score_run",
]

EvaluationSource = Evaluation | Run | str | os.PathLike[str]
"""One side of a comparison: an evaluation or a run, in memory or as a file."""

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


def score_opened(
    opened: Run | RunStream,
    corpus: Corpus,
    gold: GoldSet,
    *,
    k: Sequence[int],
    min_overlap: float,
    locator: Locator | None,
    progress: ProgressCallback | None,
    group: str = "auto",
    jobs: int | None = None,
) -> Evaluation:
    """Score an opened run; a run with no record at all is bad input, never a quiet pass.
    A run file is read and mapped on ``jobs`` processes (:func:`evaluate_file`)."""
    if isinstance(opened, Run):
        evaluation = evaluate(
            corpus,
            gold,
            opened,
            k=k,
            min_overlap=min_overlap,
            locator=locator,
            progress=progress,
            group=group,
        )
    else:
        evaluation = evaluate_file(
            corpus,
            gold,
            opened,
            k=k,
            min_overlap=min_overlap,
            locator=locator,
            progress=progress,
            group=group,
            jobs=jobs,
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
    return score_opened(
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


def _all_known(sources: Sequence[EvaluationSource], jobs: int) -> list[Evaluation | Run | Path]:
    """:func:`_as_known` of every source. With ``jobs`` > 1 every file's kind is looked at
    first, then two or more evaluation files are read on that many processes
    (:func:`run_tasks`: the driver reads one, a worker each other and hands it back pickled, a
    fraction of what reading costs); of the files read, the first bad one in order raises
    its error, as it would on one process."""
    if jobs <= 1:  # one source after the other, each checked and read in turn
        return [_as_known(source) for source in sources]
    files: dict[int, Path] = {}
    for i, source in enumerate(sources):
        if not isinstance(source, Evaluation | Run) and file_kind(source) == "evaluation":
            files[i] = Path(source)
    paths = list(files.values())
    if len(paths) >= 2:
        read = iter(run_tasks([functools.partial(read_evaluation, p) for p in paths], jobs))
    else:  # nothing to read side by side; each file's kind is known already
        read = (read_evaluation(p) for p in paths)
    return [
        next(read)
        if i in files
        else source
        if isinstance(source, Evaluation | Run)
        else Path(source)
        for i, source in enumerate(sources)
    ]


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


def default_locator(corpus: Corpus) -> Locator:
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
        locator=locator if locator is not None else default_locator(corpus),
        group=group,
    )


def load_labelled(
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
    jobs: int | None = 1,
) -> list[Evaluation]:
    """Every ``(label, source)`` as an evaluation, runs scored with one corpus index and, where
    ``k``/``min_overlap`` are None, the settings of the first side that is an evaluation.

    ``jobs=None`` (a gate not told how many): two or more run files that are each read in two
    parts by default are read in paired halves on two processes
    (:mod:`~spanchor_core.pipeline.paired`), else the runs are scored as with 1.

    With ``jobs`` > 1 and a plain :class:`Locator` (or none; an engine such as a
    :class:`~spanchor_core.distributed.RayLocator` maps its own way), two or more runs are
    scored concurrently, the workers sharing the driver's corpus, gold set and index; a single
    run is mapped on ``jobs`` processes (:class:`~spanchor_core.parallel.ProcessLocator`).
    Runs scored one after the other on a local locator map each distinct result once
    (:class:`~spanchor_core.pipeline.mappings.SharedMappings`): what a later side returned
    before is not searched for again."""
    automatic = jobs is None
    count = 1 if jobs is None else resolve_jobs(jobs)
    known = _all_known([source for _, source in sides], count)
    reference = next((side for side in known if isinstance(side, Evaluation)), None)
    if k is None:
        k = DEFAULT_K if reference is None else reference.settings.k
    if min_overlap is None:
        min_overlap = DEFAULT_MIN_OVERLAP if reference is None else reference.settings.min_overlap
    runs = sum(not isinstance(side, Evaluation) for side in known)
    parallel = count > 1 and (locator is None or type(locator) is Locator)
    # one index for both sides: from the persistent cache for a large corpus, else lazily
    if locator is None and corpus is not None:
        locator = default_locator(corpus)
    if not runs or corpus is None or gold is None:
        checked: AbstractContextManager[None] = nullcontext()
    else:  # checked once for every run (each run's scoring would check it again)
        checked = gold_checked(gold, corpus)
    settings = _SideSettings(k, min_overlap, allow_mismatch, group)
    with checked:
        if automatic and runs >= 2 and corpus is not None and gold is not None:
            paired = _load_paired(sides, known, corpus, gold, settings, progress, locator)
            if paired is not None:
                return paired
        if parallel and runs >= 2 and corpus is not None and gold is not None:
            labels = [label for label, _ in sides]
            return _load_concurrently(
                labels, known, corpus, gold, settings, progress, locator, count
            )
        return _load_in_turn(
            sides, known, corpus, gold, settings, progress, locator, parallel, count
        )


def _load_paired(
    sides: Sequence[tuple[str, EvaluationSource]],
    known: Sequence[Evaluation | Run | Path],
    corpus: Corpus,
    gold: GoldSet,
    settings: _SideSettings,
    progress: SideProgress | None,
    locator: Locator | None,
) -> list[Evaluation] | None:
    """The run files among ``known`` read in paired halves (:func:`~spanchor_core.pipeline.
    paired.score_paired`), or None where that is not the case to take (a run in memory, an
    engine's locator, a run too small or not in our format, one usable CPU) or something went
    wrong: the caller then scores them in turn and reports what it was."""
    if type(locator) is not Locator or any(isinstance(side, Run) for side in known):
        return None
    from spanchor_core.pipeline.paired import paired_halves, score_paired

    try:
        opened = [
            open_run(side, corpus=corpus, gold=gold, allow_mismatch=settings.allow_mismatch)
            for side in known
            if isinstance(side, Path)
        ]
    except Exception:  # scoring in turn raises it, after whatever comes before it
        return None
    streams = [stream for stream in opened if isinstance(stream, RunStream)]
    halves = paired_halves(streams, locator)
    if halves is None or len(streams) != len(opened):
        return None
    labels = [
        label for (label, _), side in zip(sides, known, strict=True) if isinstance(side, Path)
    ]
    scored = score_paired(
        streams,
        halves,
        corpus,
        gold,
        k=settings.k,
        min_overlap=settings.min_overlap,
        locator=locator,
        progress=[None if progress is None else progress(label) for label in labels],
        group=settings.group,
    )
    if scored is None:
        return None
    each = iter(scored)
    return [side if isinstance(side, Evaluation) else next(each) for side in known]


def _load_in_turn(
    sides: Sequence[tuple[str, EvaluationSource]],
    known: Sequence[Evaluation | Run | Path],
    corpus: Corpus | None,
    gold: GoldSet | None,
    settings: _SideSettings,
    progress: SideProgress | None,
    locator: Locator | None,
    parallel: bool,
    count: int,
) -> list[Evaluation]:
    """The runs among ``known`` scored one after the other on this process (``locator``, or
    ``count`` processes when ``parallel``), each distinct result mapped once."""
    runs = sum(not isinstance(side, Evaluation) for side in known)
    mapper = locator
    if parallel and runs and corpus is not None and gold is not None:
        mapper = ProcessLocator(corpus, jobs=count, base=locator)
    if runs >= 2 and (type(mapper) is Locator or isinstance(mapper, ProcessLocator)):
        # not for an engine's locator (Ray): the memory kept grows with the run (a few hundred
        # bytes per distinct result), and a sharded driver is held under the corpus size
        mapper = SharedMappings(mapper)
    try:
        return [
            source
            if isinstance(source, Evaluation)
            else _scored(
                source,
                corpus=corpus,
                gold=gold,
                k=settings.k,
                min_overlap=settings.min_overlap,
                allow_mismatch=settings.allow_mismatch,
                progress=None if progress is None else progress(label),
                locator=mapper,
                group=settings.group,
            )
            for (label, _), source in zip(sides, known, strict=True)
        ]
    finally:
        pool = mapper.base if isinstance(mapper, SharedMappings) else mapper
        if isinstance(pool, ProcessLocator):
            pool.close()


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
    shared = locator if locator is not None else default_locator(corpus)
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
    jobs: int | None = 1,
) -> tuple[tuple[Evaluation, ...], Evaluation]:
    """:func:`load_pair` for one or more baselines (repeated runs of one configuration).

    The baselines come back in the order given. With one baseline, ``progress`` is asked for
    ``"baseline"``; with several, for ``"baseline NAME"`` (the file name). ``jobs=None``
    chooses for large run files (:func:`load_labelled`).
    """
    sources = list(baselines)
    labels = ["baseline"]
    if len(sources) > 1:
        labels = [
            f"baseline {Path(s).name}" if isinstance(s, str | os.PathLike) else f"baseline {i}"
            for i, s in enumerate(sources, start=1)
        ]
    loaded = load_labelled(
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
