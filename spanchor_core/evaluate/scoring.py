"""Scoring a run against a gold set: :func:`evaluate` (a run in memory), :func:`evaluate_stream`
(a run read record by record), both giving the same :class:`Evaluation`.

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

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from spanchor_core.corpus import Corpus
from spanchor_core.errors import InputError
from spanchor_core.evaluate.checks import check_gold
from spanchor_core.evaluate.model import (
    Evaluation,
    EvaluationSettings,
    LocatedResult,
    MappingStats,
    ProgressCallback,
    QueryEvaluation,
    QueryStatus,
)
from spanchor_core.gold import GoldSet
from spanchor_core.locate import LocateRequest, Location, Locator, MatchStatus
from spanchor_core.metrics import (
    DEFAULT_K,
    DEFAULT_METRICS,
    DEFAULT_MIN_OVERLAP,
    apply_plan,
    check_k,
    check_min_overlap,
    measure_coverage,
    metric_names,
    metric_plan,
)
from spanchor_core.runs import RetrievalRecord, Run, RunHeader, RunStream, _resolve_record

__all__ = ["evaluate", "evaluate_stream"]


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


def evaluate_stream(
    corpus: Corpus,
    gold: GoldSet,
    stream: RunStream,
    *,
    k: Sequence[int] = DEFAULT_K,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    locator: Locator | None = None,
    progress: ProgressCallback | None = None,
    batch_results: int = 10_000,
) -> Evaluation:
    """:func:`evaluate` for a run read record by record, so that it is never held whole.

    Gives the same :class:`Evaluation` as ``evaluate(corpus, gold, read_run(path))`` (only
    ``created_at`` differs) with far less memory on large runs: records come one line at a
    time from the :class:`~spanchor_core.runs.RunStream`, their ids are resolved as they come,
    and their results mapped ``batch_results`` at a time (a record is never split, so a batch
    may run over by one record); only the mapped spans are kept, never the texts. Afterwards
    the stream's ``records_read`` tells how many records there were.

    A record that a later record for the same query replaces has been mapped for nothing;
    runs have few such retries. ``progress("map", done, 0)`` reports results mapped so far
    (the total is unknown until the end, when ``("map", n, n)`` is reported), then the
    ``"score"`` phase as in :func:`evaluate`. Errors in the run file are raised when reading
    reaches them.
    """
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
    plan = metric_plan(ks, DEFAULT_METRICS)
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
            metrics=apply_plan(coverage, plan, overlap),
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
