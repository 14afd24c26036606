"""Scoring a run against a gold set: :func:`evaluate`, the :class:`Evaluation` it returns, and
the evaluation file (``kind: spanchor.evaluation``) that stores one.

How a run is scored (the rules a reader of a report needs):

* Query ids are resolved first (:func:`spanchor_core.runs.resolve_query_ids`): a record without
  an id gets the id of the gold query with the same text. Records that still have no id are
  listed as ``unresolved``; records whose id is not in the gold set as ``not_in_gold``. Neither
  is mapped nor scored.
* Several records for one query id: the **last one wins** (a run file is appended to, so a later
  line is a retry or a re-run), and the id is listed in ``duplicates``.
* A gold query with no record is scored as an empty retrieval (every metric 0) and listed in
  ``missing_in_run``: a retriever that skipped a query must not look better for it.
* A record with an ``error`` is scored as an empty retrieval, whatever results it carries, and
  listed in ``errors``.
* A gold query without anchors cannot be scored: it is listed in ``skipped`` with the reason and
  left out of every aggregate. Anchors that no longer match the corpus (unknown document, out
  of bounds, empty, text hash changed) and two gold queries sharing an id stop the evaluation
  with a :class:`GoldError`: scoring against moved evidence would be silently wrong.
* Every result of every scored record is mapped in one batched
  :meth:`spanchor_core.locate.Locator.locate_many` call (:func:`evaluate_file`, which reads a
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

import itertools
import json
import math
import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from spanchor_core._io import atomic_write, describe_validation_error, loads_strict
from spanchor_core._version import __version__
from spanchor_core.corpus import Corpus
from spanchor_core.errors import EvaluationFileError, GoldError, InputError, RunError
from spanchor_core.gold import GoldSet, validate_gold
from spanchor_core.locate import LocateRequest, Location, Locator, MatchStatus
from spanchor_core.metrics import (
    DEFAULT_K,
    DEFAULT_METRICS,
    DEFAULT_MIN_OVERLAP,
    _apply_plan,
    _metric_plan,
    check_k,
    check_min_overlap,
    measure_coverage,
    metric_names,
)
from spanchor_core.runs import (
    RetrievalRecord,
    Run,
    RunHeader,
    RunStream,
    _resolve_record,
    iter_run,
)
from spanchor_core.spans import DocSpan

__all__ = [
    "EVALUATION_KIND",
    "EVALUATION_SCHEMA_VERSION",
    "Evaluation",
    "EvaluationSettings",
    "LocatedResult",
    "MappingStats",
    "MetricSummary",
    "ProgressCallback",
    "QueryEvaluation",
    "QueryStatus",
    "check_gold",
    "check_run_provenance",
    "evaluate",
    "evaluate_file",
    "evaluation_json_schema",
    "read_evaluation",
    "write_evaluation",
]

ProgressCallback = Callable[[str, int, int], None]
"""``progress(phase, done, total)``: see :func:`evaluate`."""

EVALUATION_KIND: Final = "spanchor.evaluation"
EVALUATION_SCHEMA_VERSION: Final = 1

_STATUSES: tuple[str, ...] = tuple(status.value for status in MatchStatus)
_FAILED: frozenset[str] = frozenset({MatchStatus.UNMAPPED.value, MatchStatus.INVALID.value})


class QueryStatus(StrEnum):
    """Why a query has the scores it has."""

    SCORED = "scored"
    """Its record was mapped and scored."""
    MISSING_IN_RUN = "missing_in_run"
    """The run has no record for it: scored as an empty retrieval."""
    ERROR = "error"
    """Its record carries an error: scored as an empty retrieval."""


@dataclass(frozen=True, slots=True)
class LocatedResult:
    """Where one retrieved result landed in the corpus (kept so reports can show lost evidence)."""

    rank: int
    status: str
    document_id: str | None
    start: int | None
    end: int | None
    confidence: float
    hint_rejected: bool = False

    @property
    def span(self) -> DocSpan | None:
        if self.status in _FAILED or self.document_id is None:
            return None
        if self.start is None or self.end is None:
            return None
        return DocSpan(self.document_id, self.start, self.end)


@dataclass(frozen=True, slots=True)
class MappingStats:
    """How the results of a query (or of a whole run) were mapped onto the corpus."""

    counts: Mapping[str, int]
    """Results per :class:`~spanchor_core.locate.MatchStatus` value, every status present."""
    hint_rejected: int = 0
    """Results whose offsets (or document id) did not match their text and were ignored."""

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def unmapped(self) -> int:
        """Results that got no span: ``unmapped`` plus ``invalid``."""
        return sum(self.counts.get(status, 0) for status in _FAILED)

    @property
    def unmapped_rate(self) -> float:
        """``unmapped / total``; 0.0 when nothing was mapped."""
        return self.unmapped / self.total if self.total else 0.0

    @classmethod
    def of(cls, results: Sequence[LocatedResult]) -> MappingStats:
        found = Counter(result.status for result in results)
        counts = {status: found.get(status, 0) for status in _STATUSES}
        counts.update({status: n for status, n in sorted(found.items()) if status not in counts})
        return cls(counts, sum(1 for result in results if result.hint_rejected))

    @classmethod
    def combine(cls, parts: Sequence[MappingStats]) -> MappingStats:
        counts = dict.fromkeys(_STATUSES, 0)
        for part in parts:
            for status, n in part.counts.items():
                counts[status] = counts.get(status, 0) + n
        return cls(counts, sum(part.hint_rejected for part in parts))


@dataclass(frozen=True, slots=True)
class QueryEvaluation(Mapping[str, float]):
    """One query's scores, addressable by metric name: ``query_eval["recall@5"]``."""

    query_id: str
    metrics: Mapping[str, float]
    status: QueryStatus = QueryStatus.SCORED
    gold: tuple[DocSpan, ...] = ()
    results: tuple[LocatedResult, ...] = ()
    mapping: MappingStats = field(default_factory=lambda: MappingStats.of(()))
    error: str | None = None

    def __getitem__(self, name: str) -> float:
        try:
            return self.metrics[name]
        except KeyError:
            raise KeyError(
                f"{self.query_id!r} has no metric {name!r}; known: {', '.join(self.metrics)}"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.metrics)

    def __len__(self) -> int:
        return len(self.metrics)


@dataclass(frozen=True, slots=True)
class MetricSummary:
    """Macro statistics of one metric over the scored queries (``std``: population, ÷ n)."""

    mean: float
    std: float
    min: float
    max: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> MetricSummary:
        if not values:
            return cls(math.nan, math.nan, math.nan, math.nan, 0)
        n = len(values)
        mean = math.fsum(values) / n
        variance = math.fsum((value - mean) ** 2 for value in values) / n
        return cls(mean, math.sqrt(variance), min(values), max(values), n)


@dataclass(frozen=True, slots=True)
class EvaluationSettings:
    """What an evaluation was computed from and with, so two evaluations can be compared."""

    k: tuple[int, ...] = DEFAULT_K
    min_overlap: float = DEFAULT_MIN_OVERLAP
    corpus_fingerprint: str | None = None
    gold_sha256: str | None = None
    gold_path: str | None = None
    run_path: str | None = None
    run_header: Mapping[str, Any] | None = None
    spanchor_version: str | None = __version__
    created_at: str | None = None
    source_format: str = f"{EVALUATION_KIND}/{EVALUATION_SCHEMA_VERSION}"
    """The file format this evaluation came from (``spanchor-0.x/<schema>`` for old files)."""


@dataclass(frozen=True, slots=True, eq=False)
class Evaluation(Mapping[str, QueryEvaluation]):
    """Per-query scores of one run against one gold set, plus everything needed to trust them.

    A mapping from query id (gold order) to :class:`QueryEvaluation`, so
    ``evaluation["q1"]["recall@5"]`` reads one value; :meth:`metric` reads a metric for every
    query and :meth:`aggregate` summarises it.
    """

    queries: Mapping[str, QueryEvaluation]
    settings: EvaluationSettings
    metric_names: tuple[str, ...]
    missing_in_run: tuple[str, ...] = ()
    not_in_gold: tuple[str, ...] = ()
    unresolved: tuple[str, ...] = ()
    """Query texts of run records whose id could not be resolved against the gold set."""
    duplicates: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    skipped: Mapping[str, str] = field(default_factory=dict)
    """Gold queries that could not be scored, with the reason."""
    mapping: MappingStats = field(default_factory=lambda: MappingStats.of(()))
    """Mapping statistics over every scored query."""
    warnings: tuple[str, ...] = ()

    def __getitem__(self, query_id: str) -> QueryEvaluation:
        try:
            return self.queries[query_id]
        except KeyError:
            reason = self.skipped.get(query_id)
            detail = f" (skipped: {reason})" if reason else ""
            raise KeyError(f"no scored query {query_id!r}{detail}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.queries)

    def __len__(self) -> int:
        return len(self.queries)

    def __repr__(self) -> str:
        return f"Evaluation({len(self)} queries, k={list(self.settings.k)})"

    def _repr_html_(self) -> str:
        """Rich notebook display: headline means by K, a recall-vs-K curve, mapping health."""
        from spanchor_core.html_report import evaluation_summary_html  # lazy: light import

        return evaluation_summary_html(self)

    @property
    def has_result_spans(self) -> bool:
        """False for evaluations read from spanchor 0.x files, which stored no result spans."""
        return self.settings.source_format.startswith(EVALUATION_KIND)

    def _check_name(self, name: str) -> None:
        if name not in self.metric_names:
            raise KeyError(f"unknown metric {name!r}; known: {', '.join(self.metric_names)}")

    def metric(self, name: str) -> dict[str, float]:
        """``{query_id: value}`` of one metric, in gold order."""
        self._check_name(name)
        return {qid: query.metrics[name] for qid, query in self.queries.items()}

    def aggregate(self, name: str) -> MetricSummary:
        """Mean, population std, min, max and n of one metric over the scored queries."""
        return MetricSummary.of(list(self.metric(name).values()))

    def mean(self, name: str) -> float:
        return self.aggregate(name).mean

    def aggregates(self) -> dict[str, MetricSummary]:
        """:meth:`aggregate` for every metric, in metric order."""
        return {name: self.aggregate(name) for name in self.metric_names}


# -- evaluate -----------------------------------------------------------------------------------


class _Tally:
    """The duplicate rule, one record at a time: which records count, which ids repeat.

    :meth:`add` is called with the (resolved) query id of every record in file order and says
    whether the record is a candidate for its gold query; the caller keeps the last candidate
    per id (the last record wins).
    """

    __slots__ = ("_extra", "_gold", "_seen")

    def __init__(self, gold: GoldSet) -> None:
        self._gold = gold
        self._seen: Counter[str] = Counter()
        self._extra: list[str] = []

    def add(self, query_id: str) -> bool:
        self._seen[query_id] += 1
        if query_id in self._gold:
            return True
        if self._seen[query_id] == 1:
            self._extra.append(query_id)
        return False

    def duplicates(self) -> tuple[str, ...]:
        """Ids seen more than once, sorted."""
        return tuple(sorted(qid for qid, n in self._seen.items() if n > 1))

    def not_in_gold(self) -> tuple[str, ...]:
        """Ids not in the gold set, sorted."""
        return tuple(sorted(self._extra))


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What the winning record of one gold query amounts to once mapped (its texts dropped)."""

    error: str | None
    results: tuple[LocatedResult, ...]


def _requests(record: RetrievalRecord) -> list[LocateRequest]:
    """The record's results as locate requests, in rank order (a stable sort on ``rank``)."""
    ranked = sorted(record.results, key=lambda result: result.rank)
    return [
        LocateRequest(
            text=result.text,
            document_id=result.document_id,
            start=result.start,
            end=result.end,
        )
        for result in ranked
    ]


def _outcome(error: str | None, locations: Sequence[Location], first: int, count: int) -> _Outcome:
    """A record's mapped results: ``locations[first:first + count]`` in rank slots 1..count.

    An errored record is scored as an empty retrieval: it has no results, whatever it carried.
    """
    if error is not None:
        return _Outcome(error, ())
    return _Outcome(
        None,
        tuple(
            _located(slot, locations[index])
            for slot, index in enumerate(range(first, first + count), start=1)
        ),
    )


# Gold problems that make scores meaningless: evidence that is not where the anchor says, or two
# queries under one id. Other problems (no anchors, an empty question) do not stop scoring.
_FATAL_GOLD_PROBLEMS = frozenset(
    {
        "duplicate_query_id",
        "unknown_document",
        "negative_offset",
        "inverted_span",
        "empty_span",
        "out_of_bounds",
        "hash_mismatch",
    }
)


def check_gold(gold: GoldSet, corpus: Corpus) -> None:
    """Raise :class:`GoldError` (with file and line) if ``gold`` cannot be scored on ``corpus``.

    An empty gold set, anchors in unknown documents, out of bounds, empty or inverted, or
    whose hash does not match the text: scores computed from them would mean nothing.
    """
    if not gold.entries:
        raise GoldError(
            "the gold set has no queries",
            path=gold.path,
            hint="add queries (`spanchor anchor add`) or point to the right file",
        )
    problems = [p for p in validate_gold(gold, corpus) if p.code in _FATAL_GOLD_PROBLEMS]
    if problems:
        first = problems[0]
        more = f" ({len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise GoldError(
            f"query {first.query_id!r}: {first.message}{more}",
            path=gold.path,
            line=first.line,
            hint="fix the gold set (`spanchor validate` lists every problem) or evaluate "
            "against the corpus it was written for",
        )


# status -> its value: reading ``.value`` off an enum member is a slow descriptor call.
_STATUS_VALUE: dict[MatchStatus, str] = {status: str(status.value) for status in MatchStatus}


def _located(rank: int, location: Location) -> LocatedResult:
    status = location.status
    value = _STATUS_VALUE.get(status)
    return LocatedResult(
        rank=rank,
        status=str(status.value) if value is None else value,
        document_id=location.document_id,
        start=location.start,
        end=location.end,
        confidence=location.confidence,
        hint_rejected=location.hint_rejected,
    )


def check_run_provenance(run: Run | RunStream, corpus: Corpus, gold: GoldSet) -> None:
    """Raise :class:`RunError` if ``run`` says it was recorded against another corpus or gold set.

    :func:`evaluate` only warns about a mismatch (a notebook may compare on purpose); the CLI
    calls this first, because in CI such a run would gate on numbers that mean nothing.
    Runs that do not record a fingerprint or gold hash (spanchor 0.x files) pass. Only the
    header is read, so a :class:`~spanchor_core.runs.RunStream` (header read, records not yet)
    will do.
    """
    recorded = run.header.corpus_fingerprint
    if recorded is not None and recorded != corpus.fingerprint:
        raise RunError(
            f"the run was recorded against another corpus (fingerprint {recorded[:12]}…, "
            f"these documents are {corpus.fingerprint[:12]}…)",
            path=run.path,
            line=1,
            hint="re-record the run on these documents, or pass --allow-mismatch",
        )
    if run.header.gold_sha256 is not None and run.header.gold_sha256 != gold.sha256:
        raise RunError(
            f"the run was recorded for another version of the gold set "
            f"({run.header.gold_sha256[:12]}…, this one is {gold.sha256[:12]}…)",
            path=run.path,
            line=1,
            hint="re-record the run for this gold set, or pass --allow-mismatch",
        )


def evaluate(
    corpus: Corpus,
    gold: GoldSet,
    run: Run,
    *,
    k: Sequence[int] = DEFAULT_K,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    locator: Locator | None = None,
    progress: ProgressCallback | None = None,
) -> Evaluation:
    """Map every retrieved result onto the corpus and score every gold query.

    Always returns an :class:`Evaluation`; never changes ``gold`` or ``run``. The rules for
    missing, extra, duplicate and failed records are in the module documentation. Raises
    :class:`InputError` for a bad ``k`` or ``min_overlap`` and :class:`GoldError` when the gold
    anchors do not match ``corpus``. Pass ``locator`` to reuse one built for ``corpus``.
    ``progress(phase, done, total)`` is called as work advances (phases ``"map"`` — results,
    reported when mapping starts and ends — and ``"score"`` — queries), so a front end can
    draw a progress bar without this module knowing about terminals.
    """
    ks, overlap, scored_ids, skipped = _prepare(corpus, gold, k, min_overlap, locator)
    tally = _Tally(gold)
    chosen: dict[str, RetrievalRecord] = {}
    unresolved: list[str] = []
    for original in run.records:
        record, matched = _resolve_record(original, gold)
        if not matched:
            unresolved.append(record.query)
        qid = record.query_id
        if qid is not None and tally.add(qid):
            chosen[qid] = record

    # One batched mapping call for every result of every record that will be scored.
    requests: list[LocateRequest] = []
    firsts: dict[str, int] = {}
    for qid in scored_ids:
        winner = chosen.get(qid)
        if winner is None or winner.error is not None:
            continue
        firsts[qid] = len(requests)
        requests.extend(_requests(winner))
    if progress is not None:
        progress("map", 0, len(requests))
    if requests:
        if locator is None:
            locator = Locator(corpus)
        locations = locator.locate_many(requests)
    else:
        locations = []
    del requests
    if progress is not None:
        progress("map", len(locations), len(locations))
    outcomes = {
        qid: _outcome(found.error, locations, firsts.get(qid, 0), len(found.results))
        for qid in scored_ids
        if (found := chosen.get(qid)) is not None
    }
    return _finish(
        corpus,
        gold,
        ks,
        overlap,
        scored_ids,
        skipped,
        outcomes,
        tally,
        unresolved,
        run.header,
        run.path,
        run.warnings,
        progress,
    )


def evaluate_file(
    corpus: Corpus,
    gold: GoldSet,
    run: str | os.PathLike[str] | RunStream,
    *,
    k: Sequence[int] = DEFAULT_K,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    locator: Locator | None = None,
    progress: ProgressCallback | None = None,
    batch_results: int = 10_000,
) -> Evaluation:
    """:func:`evaluate` for a run file, read record by record so that it is never held whole.

    Gives the same :class:`Evaluation` as ``evaluate(corpus, gold, read_run(path))`` (only
    ``created_at`` differs) with far less memory on large runs: records are read one line at a
    time (:class:`~spanchor_core.runs.RunStream`), their ids resolved as they come, and their
    results mapped ``batch_results`` at a time (a record is never split, so a batch may run
    over by one record); only the mapped spans are kept, never the texts. ``run`` is a path,
    or a stream already opened (the CLI opens one to check the header's provenance first; its
    ``records_read`` then tells how many records there were).

    A record that a later record for the same query replaces has been mapped for nothing;
    runs have few such retries. ``progress("map", done, 0)`` reports results mapped so far
    (the total is unknown until the end, when ``("map", n, n)`` is reported), then the
    ``"score"`` phase as in :func:`evaluate`. Errors in the run file are raised when reading
    reaches them.
    """
    stream = run if isinstance(run, RunStream) else iter_run(run)
    if isinstance(batch_results, bool) or not isinstance(batch_results, int) or batch_results < 1:
        raise InputError(f"batch_results must be a positive integer, got {batch_results!r}")
    ks, overlap, scored_ids, skipped = _prepare(corpus, gold, k, min_overlap, locator)
    scored = frozenset(scored_ids)
    tally = _Tally(gold)
    outcomes: dict[str, _Outcome] = {}
    unresolved: list[str] = []
    # The batch: (query id, error, result count) of its records in file order, and their requests.
    pending: list[tuple[str, str | None, int]] = []
    requests: list[LocateRequest] = []
    mapped = 0

    def flush() -> None:
        nonlocal locator, mapped
        if requests:
            if locator is None:
                locator = Locator(corpus)
            locations = locator.locate_many(requests)
        else:
            locations = []
        first = 0
        for qid, error, count in pending:  # file order: the last record per id wins
            outcomes[qid] = _outcome(error, locations, first, count)
            first += count
        mapped += len(requests)
        pending.clear()
        requests.clear()
        if progress is not None:
            progress("map", mapped, 0)

    if progress is not None:
        progress("map", 0, 0)
    for original in stream:
        record, matched = _resolve_record(original, gold)
        del original
        if not matched:
            unresolved.append(record.query)
        qid = record.query_id
        if qid is None or not tally.add(qid) or qid not in scored:
            continue
        if record.error is None:
            requests.extend(_requests(record))
            pending.append((qid, None, len(record.results)))
        else:  # scored as an empty retrieval: nothing to map
            pending.append((qid, record.error, 0))
        del record  # only the requests keep its texts, until the batch is mapped
        if len(requests) >= batch_results:
            flush()
    flush()
    if progress is not None:
        progress("map", mapped, mapped)
    return _finish(
        corpus,
        gold,
        ks,
        overlap,
        scored_ids,
        skipped,
        outcomes,
        tally,
        unresolved,
        stream.header,
        stream.path,
        stream.warnings,
        progress,
    )


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


def _finish(
    corpus: Corpus,
    gold: GoldSet,
    ks: tuple[int, ...],
    overlap: float,
    scored_ids: Sequence[str],
    skipped: dict[str, str],
    outcomes: Mapping[str, _Outcome],
    tally: _Tally,
    unresolved: Sequence[str],
    header: RunHeader,
    run_path: Path | None,
    run_warnings: Sequence[str],
    progress: ProgressCallback | None,
) -> Evaluation:
    """Score every gold query from the mapped outcomes and assemble the Evaluation."""
    names = tuple(metric_names(ks))
    plan = _metric_plan(ks, DEFAULT_METRICS)
    queries: dict[str, QueryEvaluation] = {}
    missing: list[str] = []
    errors: list[str] = []
    step = max(1, len(scored_ids) // 100)
    for done, qid in enumerate(scored_ids):
        if progress is not None and done % step == 0:
            progress("score", done, len(scored_ids))
        anchors = tuple(anchor.span for anchor in gold[qid].anchors)
        outcome = outcomes.get(qid)
        located = () if outcome is None else outcome.results
        if outcome is None:
            status = QueryStatus.MISSING_IN_RUN
            missing.append(qid)
        elif outcome.error is not None:
            status = QueryStatus.ERROR
            errors.append(qid)
        else:
            status = QueryStatus.SCORED
        coverage = measure_coverage(anchors, [result.span for result in located])
        queries[qid] = QueryEvaluation(
            query_id=qid,
            metrics=_apply_plan(coverage, plan, overlap),
            status=status,
            gold=anchors,
            results=located,
            mapping=MappingStats.of(located),
            error=None if outcome is None else outcome.error,
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
        not_in_gold=tally.not_in_gold(),
        unresolved=tuple(unresolved),
        duplicates=tally.duplicates(),
        errors=tuple(errors),
        skipped=skipped,
        mapping=MappingStats.combine([query.mapping for query in queries.values()]),
        warnings=tuple(warnings),
    )


# -- the evaluation file ------------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SpanModel(_Model):
    document_id: str
    start: int
    end: int


class LocatedResultModel(_Model):
    rank: int
    status: str
    document_id: str | None
    start: int | None
    end: int | None
    confidence: float
    hint_rejected: bool = False


class MappingModel(_Model):
    counts: dict[str, int]
    hint_rejected: int = 0
    total: int
    unmapped_rate: float


class SummaryModel(_Model):
    mean: float | None
    std: float | None
    min: float | None
    max: float | None
    n: int


class QueryModel(_Model):
    query_id: str
    status: QueryStatus
    error: str | None = None
    metrics: dict[str, float]
    gold: list[SpanModel]
    mapping: MappingModel
    results: list[LocatedResultModel]


class SettingsModel(_Model):
    k: list[int]
    min_overlap: float = Field(ge=0.0, le=1.0)
    corpus_fingerprint: str | None
    gold_sha256: str | None
    gold_path: str | None = None
    run_path: str | None = None
    run_header: dict[str, Any] | None = None


class EvaluationFile(_Model):
    """The evaluation file: one JSON object, ``kind`` and ``schema_version`` first."""

    kind: Literal["spanchor.evaluation"] = EVALUATION_KIND
    schema_version: Literal[1] = EVALUATION_SCHEMA_VERSION
    spanchor_version: str | None
    created_at: str | None
    settings: SettingsModel
    metric_names: list[str]
    aggregates: dict[str, SummaryModel]
    """Derived from ``queries``; written for readers of the file, recomputed when read."""
    mapping: MappingModel
    missing_in_run: list[str]
    not_in_gold: list[str]
    unresolved: list[str]
    duplicates: list[str]
    errors: list[str]
    skipped: dict[str, str]
    warnings: list[str]
    queries: list[QueryModel]


def evaluation_json_schema() -> dict[str, Any]:
    """JSON Schema of the evaluation file (``kind: spanchor.evaluation``, schema_version 1)."""
    return EvaluationFile.model_json_schema()


def _mapping_model(stats: MappingStats) -> MappingModel:
    return MappingModel(
        counts=dict(stats.counts),
        hint_rejected=stats.hint_rejected,
        total=stats.total,
        unmapped_rate=stats.unmapped_rate,
    )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _to_file(evaluation: Evaluation) -> EvaluationFile:
    """Everything of the evaluation file but its ``queries`` (validated: it is small).

    The queries, nearly all of the file, are converted by :func:`_query_json` without building
    a model per result: at 100,000 results the models cost seconds.
    """
    s = evaluation.settings
    return EvaluationFile(
        spanchor_version=s.spanchor_version,
        created_at=s.created_at,
        settings=SettingsModel(
            k=list(s.k),
            min_overlap=s.min_overlap,
            corpus_fingerprint=s.corpus_fingerprint,
            gold_sha256=s.gold_sha256,
            gold_path=s.gold_path,
            run_path=s.run_path,
            run_header=None if s.run_header is None else dict(s.run_header),
        ),
        metric_names=list(evaluation.metric_names),
        aggregates={
            name: SummaryModel(
                mean=_finite(summary.mean),
                std=_finite(summary.std),
                min=_finite(summary.min),
                max=_finite(summary.max),
                n=summary.n,
            )
            for name, summary in evaluation.aggregates().items()
        },
        mapping=_mapping_model(evaluation.mapping),
        missing_in_run=list(evaluation.missing_in_run),
        not_in_gold=list(evaluation.not_in_gold),
        unresolved=list(evaluation.unresolved),
        duplicates=list(evaluation.duplicates),
        errors=list(evaluation.errors),
        skipped=dict(evaluation.skipped),
        warnings=list(evaluation.warnings),
        queries=[],
    )


def _mapping_json(stats: MappingStats) -> dict[str, Any]:
    """``MappingModel(...).model_dump(mode="json")``, without the model."""
    return {
        "counts": {status: int(n) for status, n in stats.counts.items()},
        "hint_rejected": int(stats.hint_rejected),
        "total": int(stats.total),
        "unmapped_rate": float(stats.unmapped_rate),
    }


def _query_json(query: QueryEvaluation) -> dict[str, Any]:
    """``QueryModel(...).model_dump(mode="json")`` for one query, without the models.

    Same keys in the same order and the same conversions (numbers to ``float`` where the model
    says float, the status to its value), so the bytes written are the same.
    """
    return {
        "query_id": str(query.query_id),
        "status": QueryStatus(query.status).value,
        "error": query.error,
        "metrics": {name: float(value) for name, value in query.metrics.items()},
        "gold": [{"document_id": d, "start": a, "end": b} for d, a, b in query.gold],
        "mapping": _mapping_json(query.mapping),
        "results": [
            {
                "rank": r.rank,
                "status": r.status,
                "document_id": r.document_id,
                "start": r.start,
                "end": r.end,
                "confidence": float(r.confidence),
                "hint_rejected": r.hint_rejected,
            }
            for r in query.results
        ],
    }


def _evaluation_json_parts(evaluation: Evaluation) -> Iterator[str]:
    """The evaluation file's text in pieces, ending with a newline.

    The settings and summary part is indented JSON; each query is one compact JSON object on
    a line of its own inside ``"queries"`` — still one JSON document, but one line per query
    diffs well and is written by the standard library's C encoder (``indent`` would force its
    pure-Python encoder, seconds for a large run). Written piece by piece so that the text of
    a large evaluation is never held in memory whole.
    """
    head = _to_file(evaluation).model_dump(mode="json")
    del head["queries"]
    head_text = json.dumps(head, indent=2, ensure_ascii=False, allow_nan=False)
    if not evaluation.queries:
        yield head_text[: -len("\n}")] + ',\n  "queries": []\n}\n'
        return
    yield head_text[: -len("\n}")] + ',\n  "queries": ['
    separator = "\n    "
    for query in evaluation.queries.values():
        yield separator + json.dumps(_query_json(query), ensure_ascii=False, allow_nan=False)
        separator = ",\n    "
    yield "\n  ]\n}\n"


def _check_consistent(model: EvaluationFile, path: Path) -> None:
    """A hand-edited or truncated file must fail here, not later inside a comparison."""
    seen: set[str] = set()
    names = list(model.metric_names)
    for index, q in enumerate(model.queries):
        if q.query_id in seen:
            raise EvaluationFileError(
                f"query {q.query_id!r} appears twice (queries[{index}])", path=path
            )
        seen.add(q.query_id)
        absent = [name for name in names if name not in q.metrics]
        if absent:
            raise EvaluationFileError(
                f"query {q.query_id!r} lacks {', '.join(absent)} (queries[{index}])",
                path=path,
                hint="write evaluation files with spanchor evaluate -o",
            )


def _from_file(model: EvaluationFile) -> Evaluation:
    queries: dict[str, QueryEvaluation] = {}
    for q in model.queries:
        results = tuple(
            LocatedResult(
                rank=r.rank,
                status=r.status,
                document_id=r.document_id,
                start=r.start,
                end=r.end,
                confidence=r.confidence,
                hint_rejected=r.hint_rejected,
            )
            for r in q.results
        )
        queries[q.query_id] = QueryEvaluation(
            query_id=q.query_id,
            metrics=dict(q.metrics),
            status=q.status,
            gold=tuple(DocSpan(s.document_id, s.start, s.end) for s in q.gold),
            results=results,
            mapping=MappingStats(dict(q.mapping.counts), q.mapping.hint_rejected),
            error=q.error,
        )
    s = model.settings
    return Evaluation(
        queries=queries,
        settings=EvaluationSettings(
            k=tuple(s.k),
            min_overlap=s.min_overlap,
            corpus_fingerprint=s.corpus_fingerprint,
            gold_sha256=s.gold_sha256,
            gold_path=s.gold_path,
            run_path=s.run_path,
            run_header=s.run_header,
            spanchor_version=model.spanchor_version,
            created_at=model.created_at,
        ),
        metric_names=tuple(model.metric_names),
        missing_in_run=tuple(model.missing_in_run),
        not_in_gold=tuple(model.not_in_gold),
        unresolved=tuple(model.unresolved),
        duplicates=tuple(model.duplicates),
        errors=tuple(model.errors),
        skipped=dict(model.skipped),
        mapping=MappingStats(dict(model.mapping.counts), model.mapping.hint_rejected),
        warnings=tuple(model.warnings),
    )


def write_evaluation(evaluation: Evaluation, path: str | os.PathLike[str]) -> None:
    """Write ``evaluation`` as JSON, atomically (a temporary file, then a rename).

    The bytes depend only on the evaluation: keys in a fixed order, queries in gold order,
    floats in their shortest round-tripping form. Only ``created_at`` differs between two
    evaluations of the same inputs.
    """
    parts = _evaluation_json_parts(evaluation)
    first = next(parts)  # the validated head: a bad evaluation fails before any file exists
    atomic_write(
        path, itertools.chain([first], parts), error=EvaluationFileError, what="the evaluation"
    )


# spanchor 0.x wrote its mapper statuses in capitals; these are the same outcomes.
_OLD_STATUSES = {
    "MAPPED_EXACT": MatchStatus.EXACT.value,
    "MAPPED_NORMALIZED": MatchStatus.NORMALISED.value,
    "MAPPED_FUZZY": MatchStatus.FUZZY.value,
    "AMBIGUOUS": MatchStatus.AMBIGUOUS.value,
    "UNMAPPED": MatchStatus.UNMAPPED.value,
}


class _OldAnchor(BaseModel):
    model_config = ConfigDict(extra="ignore")
    document_id: str
    start: int
    end: int


class _OldQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")
    query_id: str
    anchors: list[_OldAnchor] = []


class _OldEvaluation(BaseModel):
    """spanchor 0.x evaluation (``Run``) file, schema 0.1.0 / 0.2.0, and its JSON report."""

    model_config = ConfigDict(extra="ignore")
    schema_version: str
    timestamp: str | None = None
    queries: list[_OldQuery] = []
    per_query_metrics: dict[str, dict[str, Any]]
    config: dict[str, Any] = {}
    mapper_stats: dict[str, int] = {}
    corpus_hash: str | None = None
    gold_set_hash: str | None = None


def _old_metrics(qid: str, raw: Mapping[str, Any], path: Path) -> dict[str, float]:
    # The 0.x JSON report nests the values under "metrics"; the Run file does not.
    values = raw["metrics"] if isinstance(raw.get("metrics"), dict) else raw
    metrics: dict[str, float] = {}
    for name, value in values.items():
        if name == "question":
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise EvaluationFileError(
                f"per_query_metrics[{qid!r}][{name!r}] is not a number", path=path
            )
        metrics[name] = float(value)
    return metrics


def _from_old(data: Mapping[str, Any], path: Path) -> Evaluation:
    try:
        old = _OldEvaluation.model_validate(data)
    except ValidationError as err:
        raise EvaluationFileError(
            f"not a valid spanchor 0.x evaluation: {describe_validation_error(err)}", path=path
        ) from None
    gold = {
        q.query_id: tuple(DocSpan(a.document_id, a.start, a.end) for a in q.anchors)
        for q in old.queries
    }
    counts = dict.fromkeys(_STATUSES, 0)
    for name, n in old.mapper_stats.items():
        status = _OLD_STATUSES.get(name, name.lower())
        counts[status] = counts.get(status, 0) + n
    queries: dict[str, QueryEvaluation] = {}
    names: list[str] = []
    for qid, raw in old.per_query_metrics.items():
        metrics = _old_metrics(qid, raw, path)
        names.extend(name for name in metrics if name not in names)
        queries[qid] = QueryEvaluation(query_id=qid, metrics=metrics, gold=gold.get(qid, ()))
    for qid, query in queries.items():
        absent = [name for name in names if name not in query.metrics]
        if absent:
            raise EvaluationFileError(f"query {qid!r} lacks {', '.join(absent)}", path=path)
    config = old.config
    raw_k = config.get("k_values", config.get("k", DEFAULT_K))
    try:
        ks = check_k([raw_k] if isinstance(raw_k, int) else list(raw_k))
        overlap = check_min_overlap(config.get("min_overlap", DEFAULT_MIN_OVERLAP))
    except (InputError, TypeError, ValueError) as err:
        raise EvaluationFileError(
            f"bad config in spanchor 0.x evaluation: {err}", path=path
        ) from None
    return Evaluation(
        queries=queries,
        settings=EvaluationSettings(
            k=ks,
            min_overlap=overlap,
            corpus_fingerprint=old.corpus_hash,
            gold_sha256=old.gold_set_hash,
            spanchor_version=None,
            created_at=old.timestamp,
            source_format=f"spanchor-0.x/{old.schema_version}",
        ),
        metric_names=tuple(names),
        mapping=MappingStats(counts),  # 0.x kept run-wide counts only, none per query
        warnings=(
            "read from a spanchor 0.x evaluation: its recall, precision, hit and IoU compared "
            "offsets across documents; evaluate the run again to compare like with like",
        ),
    )


def read_evaluation(path: str | os.PathLike[str]) -> Evaluation:
    """Read an evaluation file written by :func:`write_evaluation` or by spanchor 0.x.

    Dispatches on ``kind`` (0.x files have none and are recognised by ``per_query_metrics``).
    Raises :class:`EvaluationFileError`, naming the file, for anything else.
    """
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as err:
        raise EvaluationFileError(f"cannot read: {err.strerror or err}", path=source) from None
    except UnicodeDecodeError as err:
        raise EvaluationFileError(f"not UTF-8 at byte {err.start}", path=source) from None
    data = loads_strict(text, path=source, error=EvaluationFileError)
    if not isinstance(data, dict):
        raise EvaluationFileError("an evaluation file holds one JSON object", path=source)
    kind = data.get("kind")
    if kind is None:
        if "per_query_metrics" in data and "schema_version" in data:
            return _from_old(data, source)
        if "aggregate_metrics" in data:
            raise EvaluationFileError(
                "this file holds aggregate metrics only, no per-query metrics",
                path=source,
                hint="evaluate the run again to get a file that can be compared query by query",
            )
        raise EvaluationFileError(
            "not an evaluation file (no 'kind')",
            path=source,
            hint="pass a file written by `spanchor evaluate`",
        )
    if kind != EVALUATION_KIND:
        raise EvaluationFileError(f"this is a {kind!r} file, not an evaluation", path=source)
    version = data.get("schema_version")
    if version != EVALUATION_SCHEMA_VERSION:
        raise EvaluationFileError(
            f"evaluation schema_version {version!r} is not supported (this spanchor reads "
            f"{EVALUATION_SCHEMA_VERSION})",
            path=source,
            hint="upgrade spanchor" if isinstance(version, int) and version > 1 else None,
        )
    try:
        model = EvaluationFile.model_validate(data)
    except ValidationError as err:
        raise EvaluationFileError(describe_validation_error(err), path=source) from None
    _check_consistent(model, source)
    return _from_file(model)
