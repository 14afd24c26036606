"""Scoring a run against a gold set: :func:`evaluate` (a run in memory), :func:`evaluate_stream`
(a run read record by record), both giving the same :class:`Evaluation`.

How a run is scored (the rules a reader of a report needs):

* Query ids are resolved first (:func:`spanchor_core.runs.resolve_query_ids`): a record without
  an id gets the id of the gold query with the same text. Records that still have no id are
  listed as ``unresolved``; records whose id is not in the gold set as ``not_in_gold``. Neither
  is mapped nor scored.
* Several records for one query id are made into what is scored by the grouping rule
  (:mod:`spanchor_core.grouping`): records of one asking (one ``trace_id``) become one ranked
  list (under ``auto``, the latest stage present, e.g. the ``context`` a model saw), and a
  question asked in several traces is scored as the mean of its askings and listed as
  repeated. The id is listed in ``duplicates`` either way.
* A gold query with no record is scored as an empty retrieval (every metric 0) and listed in
  ``missing_in_run``: a retriever that skipped a query must not look better for it.
* A record with an ``error`` is scored as an empty retrieval, whatever results it carries, and
  listed in ``errors``.
* A gold query without anchors cannot be scored: it is listed in ``skipped`` with the reason and
  left out of every aggregate. Anchors that no longer match the corpus (unknown document, out
  of bounds, empty, text hash changed) and two gold queries sharing an id stop the evaluation
  with a :class:`GoldError`: scoring against moved evidence would be silently wrong.
* Every result of every scored record is mapped in one batched
  :meth:`spanchor_core.locate.Locator.locate_many` call (:func:`evaluate_stream`, which reads a
  run file record by record, maps in batches of a bounded number of results instead; the
  answers are the same). Results are taken in rank order (a
  stable sort on ``rank``); the position in that order is the rank slot, so an unmapped or
  invalid result still occupies its slot (see :mod:`spanchor_core.metrics`).
* ``unmapped_rate`` is ``(unmapped + invalid) / results mapped``, over the results of scored
  records (0.0 when there are none); it is given overall and per query.

Aggregates are macro statistics over the scored queries (each query weighs the same):
mean, population standard deviation (divide by ``n``: the queries are the whole gold set, not a
sample of it), min, max and ``n``.
"""

from __future__ import annotations

import gc
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from spanchor_core._heap import release_free_heap
from spanchor_core.corpus import Corpus
from spanchor_core.errors import InputError
from spanchor_core.evaluate.checks import check_gold
from spanchor_core.evaluate.collect import Collector, SpanColumns
from spanchor_core.evaluate.model import (
    Evaluation,
    EvaluationSettings,
    MappingStats,
    ProgressCallback,
    QueryStatus,
    QueryTable,
    TraceSummary,
)
from spanchor_core.evaluate.run_parts import collect_in_parts, part_ranges
from spanchor_core.evaluate.scored_columns import ScoredQueries
from spanchor_core.gold import GoldSet
from spanchor_core.grouping import GroupRule, Retrieval, group_query, parse_group_rule
from spanchor_core.locate import Locator
from spanchor_core.metrics import (
    DEFAULT_K,
    DEFAULT_METRICS,
    DEFAULT_MIN_OVERLAP,
    MetricPlan,
    check_k,
    check_min_overlap,
    metric_names,
    metric_plan,
)
from spanchor_core.metrics.batch import RankedColumns, score_columns
from spanchor_core.runs import Run, RunHeader, RunStream
from spanchor_core.runs.model import STAGES, RecordFields
from spanchor_core.spans import DocSpan

__all__ = [
    "StreamScoring",
    "collector_paused",
    "evaluate",
    "evaluate_stream",
    "finish_scoring",
    "start_scoring",
]


def evaluate(
    corpus: Corpus,
    gold: GoldSet,
    run: Run,
    *,
    k: Sequence[int] = DEFAULT_K,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    locator: Locator | None = None,
    progress: ProgressCallback | None = None,
    group: GroupRule | str = "auto",
) -> Evaluation:
    """Map every retrieved result onto the corpus and score every gold query.

    Always returns an :class:`Evaluation`; never changes ``gold`` or ``run``. The rules for
    missing, extra, repeated and failed records are in the module documentation; ``group``
    chooses how several records of one query are scored (:mod:`spanchor_core.grouping`).
    Raises :class:`InputError` for a bad ``k``, ``min_overlap`` or ``group`` and
    :class:`GoldError` when the gold anchors do not match ``corpus``. Pass ``locator`` to
    reuse one built for ``corpus``. ``progress(phase, done, total)`` is called as work
    advances (phases ``"map"`` — results, reported when mapping starts and ends — and
    ``"score"`` — queries), so a front end can draw a progress bar without this module
    knowing about terminals.
    """
    return _evaluate_records(
        corpus,
        gold,
        run,
        k=k,
        min_overlap=min_overlap,
        locator=locator,
        progress=progress,
        group=group,
        batch_results=None,
        jobs=1,
    )


def evaluate_stream(
    corpus: Corpus,
    gold: GoldSet,
    stream: RunStream,
    *,
    k: Sequence[int] = DEFAULT_K,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    locator: Locator | None = None,
    progress: ProgressCallback | None = None,
    batch_results: int = 5_000,
    group: GroupRule | str = "auto",
    jobs: int | None = None,
) -> Evaluation:
    """:func:`evaluate` for a run read record by record, so that it is never held whole.

    Gives the same :class:`Evaluation` as ``evaluate(corpus, gold, read_run(path))`` (only
    ``created_at`` differs) with far less memory on large runs: records come one line at a
    time from the :class:`~spanchor_core.runs.RunStream`, their ids are resolved as they come,
    and their results mapped ``batch_results`` at a time (a record is never split, so a batch
    may run over by one record); only the mapped spans are kept, never the texts. Afterwards
    the stream's ``records_read`` tells how many records there were.

    ``progress("map", done, 0)`` reports results mapped so far (the total is unknown until
    the end, when ``("map", n, n)`` is reported) and ``progress("read", bytes, size)`` how
    far into the run file reading has come (every 256 records, ending with
    ``("read", size, size)``: a total known from the start, for a bar with a time left), then
    the ``"score"`` phase as in :func:`evaluate`. Errors in the run file are raised when
    reading reaches them.

    ``jobs`` processes read and map the records (:mod:`~spanchor_core.evaluate.run_parts`:
    the file cut into that many parts, all but the first on forked children), with the same
    evaluation as one; ``None`` (the default) takes two for a run of
    :data:`~spanchor_core.evaluate.run_parts.SPLIT_BYTES` or more where that is safe, 1 only
    this one. One process reads the run wherever forking is not available or safe (not Linux,
    one usable CPU, inside a pool's worker, a locator that maps on other processes) and for a
    file not in our one-record-a-line format. ``progress("read", ...)`` then follows this
    process's own part, scaled to the file.
    """
    if isinstance(batch_results, bool) or not isinstance(batch_results, int) or batch_results < 1:
        raise InputError(f"batch_results must be a positive integer, got {batch_results!r}")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise InputError(f"jobs must be a positive integer or None, got {jobs!r}")
    return _evaluate_records(
        corpus,
        gold,
        stream,
        k=k,
        min_overlap=min_overlap,
        locator=locator,
        progress=progress,
        group=group,
        batch_results=batch_results,
        jobs=jobs,
    )


_READ_EVERY = 256
"""Records between two ``"read"`` progress reports."""


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector held off while a run is scored, and restored after.

    Scoring creates a few objects per result (requests, locations, located results), none of
    them in a reference cycle; every few hundred allocations the collector runs anyway, and
    its older generations walk every live object — the corpus, the gold set, the index —
    freeing nothing: half a second of a 10,000-query evaluation. Reference counting still
    frees everything as before; a collector the caller had disabled stays disabled.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@collector_paused()
def _evaluate_records(
    corpus: Corpus,
    gold: GoldSet,
    source: Run | RunStream,
    *,
    k: Sequence[int],
    min_overlap: float,
    locator: Locator | None,
    progress: ProgressCallback | None,
    group: GroupRule | str,
    batch_results: int | None,
    jobs: int | None,
) -> Evaluation:
    """The one scoring loop behind :func:`evaluate` and :func:`evaluate_stream` (with the
    collector paused: each call pauses and restores it)."""
    scoring = start_scoring(
        corpus,
        gold,
        k=k,
        min_overlap=min_overlap,
        locator=locator,
        progress=progress,
        group=group,
        batch_results=batch_results,
    )
    collector = scoring.collector
    ranges = [] if isinstance(source, Run) else part_ranges(jobs, source, locator)
    if ranges and not isinstance(source, Run):
        if progress is not None:
            progress("map", 0, 0)
            progress("read", ranges[0][0], source.bytes_total)
        collect_in_parts(collector, source, ranges, progress)
    elif isinstance(source, Run):
        total = sum(len(r.results) for r in source.records if r.error is None)
        if progress is not None:
            progress("map", 0, total)
        for record in source.records:
            collector.add(RecordFields.of(record))
    elif progress is None:
        for fields in source.fields():
            collector.add(fields)
    else:
        progress("map", 0, 0)  # unknown until the stream ends
        progress("read", source.bytes_read, source.bytes_total)
        for count, fields in enumerate(source.fields(), start=1):
            collector.add(fields)
            if count % _READ_EVERY == 0:
                progress("read", source.bytes_read, source.bytes_total)
    del collector
    return finish_scoring(scoring, source, progress)


@dataclass(slots=True)
class StreamScoring:
    """One run's scoring between its settings checked and its records all collected: what
    :func:`start_scoring` prepared, for :func:`finish_scoring`. The collector is the one the
    caller adds the run's records to (the gate reads the parts of its sides' runs in turns
    of its own, :mod:`spanchor_core.pipeline.paired`)."""

    corpus: Corpus
    gold: GoldSet
    rule: GroupRule
    ks: tuple[int, ...]
    overlap: float
    scored_ids: list[str]
    skipped: dict[str, str]
    held: Collector | None
    """The collector until :func:`finish_scoring` lets it go."""

    @property
    def collector(self) -> Collector:
        """The collector the run's records are added to."""
        if self.held is None:
            raise RuntimeError("this run's scoring was finished already")
        return self.held


def start_scoring(
    corpus: Corpus,
    gold: GoldSet,
    *,
    k: Sequence[int],
    min_overlap: float,
    locator: Locator | None,
    progress: ProgressCallback | None,
    group: GroupRule | str,
    batch_results: int | None,
) -> StreamScoring:
    """The settings, gold set and locator checked, and an empty collector for the records."""
    rule = group if isinstance(group, GroupRule) else parse_group_rule(group)
    ks, overlap, scored_ids, skipped = _prepare(corpus, gold, k, min_overlap, locator)
    collector = Collector(corpus, gold, frozenset(scored_ids), locator, batch_results, progress)
    return StreamScoring(corpus, gold, rule, ks, overlap, scored_ids, skipped, collector)


def finish_scoring(
    scoring: StreamScoring, source: Run | RunStream, progress: ProgressCallback | None
) -> Evaluation:
    """The evaluation of every record collected: the last batch mapped, then scored. The
    collector is let go (its memory back before the caller writes)."""
    collector, scoring.held = scoring.collector, None
    collector.flush()
    collector.mapping_done()
    if progress is not None:
        if not isinstance(source, Run):
            progress("read", source.bytes_total, source.bytes_total)
        progress("map", collector.mapped, collector.mapped)
    # the batches' texts and arrays are gone: their pages back before scoring allocates its
    # own, and again once the collector is, before the caller writes (spanchor_core._heap)
    release_free_heap()
    evaluation = _finish(
        scoring.corpus,
        scoring.gold,
        scoring.ks,
        scoring.overlap,
        scoring.scored_ids,
        scoring.skipped,
        collector,
        scoring.rule,
        source.header,
        source.path,
        source.warnings,
        progress,
    )
    del collector
    release_free_heap()
    return evaluation


def _prepare(
    corpus: Corpus,
    gold: GoldSet,
    k: Sequence[int],
    min_overlap: float,
    locator: Locator | None,
) -> tuple[tuple[int, ...], float, list[str], dict[str, str]]:
    """Check the settings, the gold set and the locator; split gold into scored and skipped."""
    ks = check_k(k)
    overlap = check_min_overlap(min_overlap)
    check_gold(gold, corpus)
    if locator is not None and locator.corpus.fingerprint != corpus.fingerprint:
        raise InputError(
            "the locator was built for a different corpus",
            hint="pass a Locator built on the corpus being evaluated, or none",
        )
    skipped: dict[str, str] = {}
    scored_ids: list[str] = []
    for qid, query in gold.items():
        if not query.anchors:
            skipped[qid] = "the gold query has no anchors"
        else:
            scored_ids.append(qid)
    return ks, overlap, scored_ids, skipped


class _Lists:
    """The ranked lists an evaluation scores, gathered so that they are scored together
    (:func:`~spanchor_core.metrics.batch.score_columns`): each list is a run of the
    collector's span columns (a record's results, or a merged trace appended to them)."""

    __slots__ = ("counts", "firsts", "golds", "spans")

    def __init__(self, spans: SpanColumns) -> None:
        self.spans = spans
        self.golds: list[tuple[DocSpan, ...]] = []
        self.firsts: list[int] = []
        self.counts: list[int] = []

    def add(self, gold: tuple[DocSpan, ...], first: int, count: int) -> int:
        """A list of ``count`` spans from column ``first``; its row."""
        self.golds.append(gold)
        self.firsts.append(first)
        self.counts.append(count)
        return len(self.golds) - 1

    def score(self, plan: MetricPlan, overlap: float) -> NDArray[np.float64]:
        """Every list's values, in the order added (a ``lists x metrics`` float array)."""
        spans = self.spans
        counts = np.array(self.counts, dtype=np.int64)
        offsets = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        # column positions of list q's results: firsts[q] .. firsts[q] + counts[q]
        shift = np.array(self.firsts, dtype=np.int64) - offsets[:-1]
        total = int(offsets[-1])
        documents = np.frombuffer(spans.documents, dtype=np.int64)
        starts = np.frombuffer(spans.starts, dtype=np.int64)
        ends = np.frombuffer(spans.ends, dtype=np.int64)
        if not shift[counts > 0].any():
            # every list where it was mapped, in order (one record a query): the columns'
            # first ``total`` entries as they are, not gathered into copies (3 x 8 bytes a
            # result of the scoring peak)
            columns = RankedColumns(offsets, documents[:total], starts[:total], ends[:total])
        else:
            where = np.repeat(shift, counts) + np.arange(total, dtype=np.int64)
            columns = RankedColumns(offsets, documents[where], starts[where], ends[where])
        return score_columns(self.golds, columns, spans.codes, plan, overlap)


def _query_values(
    values: NDArray[np.float64], rows: Sequence[Sequence[int]]
) -> tuple[NDArray[np.float64], list[int]]:
    """Each query's metric values: its list's row, or the mean of its traces' rows (each
    metric's ``math.fsum`` of the Python floats over their number, as a query's dict of
    metrics always held); and the queries whose traces' rows are not all equal."""
    matrix = values[[row[0] for row in rows]] if rows else values[:0]
    divergent: list[int] = []
    for query, row in enumerate(rows):
        if len(row) > 1:
            picked = values[list(row)]
            if not (picked == picked[0]).all():
                divergent.append(query)
            columns = zip(*picked.tolist(), strict=True)
            matrix[query] = [math.fsum(column) / len(row) for column in columns]
    return matrix, divergent


def _finish(
    corpus: Corpus,
    gold: GoldSet,
    ks: tuple[int, ...],
    overlap: float,
    scored_ids: Sequence[str],
    skipped: dict[str, str],
    collector: Collector,
    rule: GroupRule,
    header: RunHeader,
    run_path: Path | None,
    run_warnings: Sequence[str],
    progress: ProgressCallback | None,
) -> Evaluation:
    """Group each gold query's records, score them all at once, and assemble the Evaluation.

    Two passes: the first decides what each query is scored on (its record's results, each
    merged trace, or nothing) and gathers those lists; they are scored together; then each
    query's values are put in one matrix. The queries are held by column
    (:mod:`~spanchor_core.evaluate.scored_columns`), each built when asked for.
    """
    names = tuple(metric_names(ks))
    plan = metric_plan(ks, DEFAULT_METRICS)
    lists = _Lists(collector.spans)
    results = collector.results
    table = ScoredQueries(scored_ids, tuple(name for name, _, _ in plan), results)
    nothing = results.mapping(0, 0)
    missing: list[str] = []
    errors: list[str] = []
    emptied: list[str] = []
    step = max(1, len(scored_ids) // 100)
    # one record under ``auto``/``first`` is scored exactly as it was returned (what
    # grouping gives for it, without building the retrieval and its ordering digest)
    plain = rule.kind in ("auto", "first")
    query_rows: list[list[int]] = []
    stages: Counter[str] = Counter()
    for done, qid in enumerate(scored_ids):
        if progress is not None and done % step == 0:
            progress("score", done, len(scored_ids))
        anchors = tuple(anchor.span for anchor in gold[qid].anchors)
        kept = collector.kept.get(qid)
        if kept is None:
            missing.append(qid)
            query_rows.append([lists.add(anchors, 0, 0)])
            table.add(anchors, QueryStatus.MISSING_IN_RUN, 0, 0, nothing, None, ())
            continue
        if plain and len(kept) == 1:
            only = kept[0]
            error = only.stub.error
            stages[only.stub.stage or "retrieval"] += 1
            if error is None:
                query_rows.append([lists.add(anchors, only.first, only.size)])
                status = QueryStatus.SCORED
            else:
                errors.append(qid)
                query_rows.append([lists.add(anchors, 0, 0)])
                status = QueryStatus.ERROR
            mapping = results.mapping(only.at, only.size)
            table.add(anchors, status, only.at, only.size, mapping, error, ())
            continue
        retrievals = []
        for ordinal, item in enumerate(kept):
            located = item.located(results)
            retrievals.append(Retrieval(item.stub, located, item.keys(located), ordinal=ordinal))
        grouped = group_query(retrievals, rule)
        rows: list[int] = []
        at, size = 0, 0
        for position, trace in enumerate(grouped.traces):
            stages[trace.stage or "retrieval"] += 1
            traced = tuple(
                result if result.rank == slot else replace(result, rank=slot)
                for slot, result in enumerate(trace.items, start=1)
            )
            if position == 0:
                at, size = results.add_results(traced), len(traced)
            first = collector.spans.add([result.span for result in traced])
            rows.append(lists.add(anchors, first, len(traced)))
        if not rows:  # a grouping rule left nothing: scored as an empty retrieval
            rows.append(lists.add(anchors, 0, 0))
            emptied.append(qid)
        query_rows.append(rows)
        first_trace = grouped.traces[0] if grouped.traces else None
        error = None if first_trace is None else first_trace.error
        if error is not None:
            errors.append(qid)
        traces = (
            tuple(
                TraceSummary(t.trace_id, len(t.lines), t.sources, t.stage, t.error)
                for t in grouped.traces
            )
            if grouped.records > 1 or not grouped.traces
            else ()
        )
        table.add(
            anchors,
            QueryStatus.ERROR if error is not None else QueryStatus.SCORED,
            at,
            size,
            MappingStats.of([r for retrieval in retrievals for r in retrieval.items]),
            error,
            traces,
        )

    table.matrix, divergent = _query_values(lists.score(plan, overlap), query_rows)
    del query_rows, lists
    queries = QueryTable(
        table.ids, table.metric_names, table.matrix, table, table.repeated(), table.merged()
    )

    if progress is not None:
        progress("score", len(scored_ids), len(scored_ids))
    settings = EvaluationSettings(
        k=ks,
        min_overlap=overlap,
        corpus_fingerprint=corpus.fingerprint,
        gold_sha256=gold.sha256,
        gold_path=None if gold.path is None else str(gold.path),
        run_path=None if run_path is None else str(run_path),
        run_header=header.model_dump(mode="json"),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        group=str(rule),
    )
    warnings = list(run_warnings)
    recorded = header.corpus_fingerprint
    if recorded is not None and recorded != corpus.fingerprint:
        warnings.append(
            "the run was recorded against a different corpus "
            f"({recorded[:12]}…, evaluated on {corpus.fingerprint[:12]}…)"
        )
    if header.gold_sha256 is not None and header.gold_sha256 != gold.sha256:
        warnings.append("the run was recorded for a different version of the gold set")
    return Evaluation(
        queries=queries,
        settings=settings,
        metric_names=names,
        missing_in_run=tuple(missing),
        emptied=tuple(emptied),
        not_in_gold=collector.tally.not_in_gold(),
        unresolved=tuple(collector.unresolved),
        duplicates=collector.tally.duplicates(),
        errors=tuple(errors),
        skipped=skipped,
        mapping=MappingStats.combine(table.mappings),
        warnings=tuple(warnings),
        records=collector.records,
        stages={name: stages[name] for name in sorted(stages, key=STAGES.index)},
        divergent=tuple(table.ids[query] for query in divergent),
    )
