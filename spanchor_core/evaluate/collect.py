"""Collecting a run's records for scoring: :class:`Collector` resolves each record's query id,
counts it, maps its results in batches (:meth:`~spanchor_core.locate.Locator.locate_many`) and
keeps only what scoring needs — provenance, the located results, their spans in columns
(:class:`SpanColumns`) and the merge keys of unmapped results, never the retrieved texts.

The scoring rules themselves are documented in :mod:`spanchor_core.evaluate.scoring`.
"""

from __future__ import annotations

import hashlib
import operator
from array import array
from collections import Counter
from collections.abc import Hashable, Sequence
from itertools import repeat
from typing import NamedTuple

import numpy as np

from spanchor_core.corpus import Corpus
from spanchor_core.evaluate.model import LocatedResult, ProgressCallback
from spanchor_core.evaluate.scored_columns import NONE_OFFSET, ResultColumns
from spanchor_core.gold import GoldSet
from spanchor_core.locate import LocateRequest, Locator, MatchStatus
from spanchor_core.runs.model import RecordFields
from spanchor_core.runs.query_ids import lookup_query_id
from spanchor_core.spans import DocSpan

__all__ = ["CollectedPart", "Collector", "SpanColumns"]


class _Tally:
    """Which records count and which ids repeat, one record at a time.

    :meth:`add` is called with the (resolved) query id of every record and says whether the
    record belongs to a gold query; ids outside the gold set are listed once each.
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

    def absorb(self, seen: Counter[str], extra: Sequence[str]) -> None:
        """Count the ids of a later part of the run (``seen``, and ``extra``: those of them
        outside the gold set, in the order met) as if they had been added here."""
        mine = self._seen
        self._extra.extend(qid for qid in extra if qid not in mine)
        mine.update(seen)

    def duplicates(self) -> tuple[str, ...]:
        """Ids with more than one record, sorted."""
        return tuple(sorted(qid for qid, n in self._seen.items() if n > 1))

    def not_in_gold(self) -> tuple[str, ...]:
        """Ids not in the gold set, sorted."""
        return tuple(sorted(self._extra))


class _StatusValues(dict[MatchStatus, str]):
    """status -> its value: reading ``.value`` off an enum member is a slow descriptor call."""

    def __missing__(self, status: MatchStatus) -> str:
        return str(status.value)


_STATUS_VALUE = _StatusValues({status: str(status.value) for status in MatchStatus})


_NO_SPAN: frozenset[str] = frozenset({MatchStatus.UNMAPPED.value, MatchStatus.INVALID.value})
_STATUS = operator.attrgetter("status")


def _text_key(status: str, text: str | None) -> Hashable:
    """What makes two unmapped results the same evidence when a trace's retrievals are merged:
    their text (digested: the key must not depend on the process, since it also orders
    retrievals), so two different unmapped texts are two results and the same text returned
    twice is one. A mapped result's key is its span as a plain ``(document, start, end)``."""
    data = (text or "").encode("utf-8", "surrogatepass")
    return ("?", status, hashlib.blake2b(data, digest_size=10).hexdigest())


class _Stub(NamedTuple):
    """What scoring keeps of a record once its results are mapped: its provenance, as
    :class:`~spanchor_core.grouping.Provenance` reads it (never the retrieved texts)."""

    query: str
    error: str | None
    source: str | None
    stage: str | None
    trace_id: str | None
    sequence: int | None
    line: int | None


class _Kept(NamedTuple):
    """One mapped record of a gold query: provenance, where its results (rank slots 1..n) start
    in the collector's :class:`~spanchor_core.evaluate.scored_columns.ResultColumns` and how
    many there are, where its spans start in its :class:`SpanColumns`, and the merge keys of
    the results without a span (by slot index); a mapped result's key is its span as a plain
    tuple, built only when records are merged."""

    stub: _Stub
    at: int
    size: int
    first: int
    unmapped_keys: dict[int, Hashable]

    def located(self, results: ResultColumns) -> tuple[LocatedResult, ...]:
        """The record's results, as objects."""
        return results.results(self.at, self.size)

    def keys(self, located: Sequence[LocatedResult]) -> tuple[Hashable, ...]:
        unmapped = self.unmapped_keys
        return tuple(
            unmapped.get(index, (r.document_id, r.start, r.end)) for index, r in enumerate(located)
        )


class SpanColumns:
    """Every mapped result's span, column by column, in the order mapped: a document code
    (``-1``: no span) and the offsets; what the vectorised metrics read
    (:func:`~spanchor_core.metrics.batch.score_columns`), without a span object per result."""

    __slots__ = ("codes", "documents", "ends", "starts")

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        # typed arrays, not lists: 8 bytes an entry instead of a pointer and an int object
        self.documents = array("q")
        self.starts = array("q")
        self.ends = array("q")

    def add(self, spans: Sequence[DocSpan | None]) -> int:
        """Append ``spans``; where they start."""
        first = len(self.documents)
        codes = self.codes
        for span in spans:
            if span is None:
                self.documents.append(-1)
                self.starts.append(0)
                self.ends.append(0)
            else:
                self.documents.append(codes.setdefault(span[0], len(codes)))
                self.starts.append(span[1])
                self.ends.append(span[2])
        return first

    def add_columns(self, results: ResultColumns, at: int) -> list[int]:
        """Append the span of each result of ``results`` from ``at`` on (the batch just
        located: ``LocatedResult.span`` of each, read off the columns with numpy, no object
        per result); the positions (from ``at``) of those without one."""
        statuses = np.frombuffer(results.statuses, dtype=np.int32)[at:]
        documents = np.frombuffer(results.documents, dtype=np.int32)[at:]
        starts = np.frombuffer(results.starts, dtype=np.int64)[at:]
        ends = np.frombuffer(results.ends, dtype=np.int64)[at:]
        names = results.names
        # a span: a status that has one, a document (code 0 is None) and both offsets
        spanless = np.array([name in _NO_SPAN for name in names])
        has = (~spanless[statuses]) & (documents != 0) & (starts != NONE_OFFSET)
        has &= ends != NONE_OFFSET
        # document codes of these columns, given in the order the documents are first met
        codes = self.codes
        table = np.full(len(names), -1, dtype=np.int64)
        for code in dict.fromkeys(documents[has].tolist()):
            table[code] = codes.setdefault(names[code], len(codes))
        self.documents.frombytes(np.where(has, table[documents], -1).tobytes())
        self.starts.frombytes(np.where(has, starts, 0).tobytes())
        self.ends.frombytes(np.where(has, ends, 0).tobytes())
        return np.flatnonzero(~has).tolist()

    def absorb(self, other: SpanColumns) -> int:
        """Append every span of ``other`` (a later part of a run, collected on another
        process), its document codes translated into these; where they start."""
        first = len(self.documents)
        codes = self.codes
        table = np.array(
            [codes.setdefault(doc, len(codes)) for doc in other.codes] + [-1], dtype=np.int64
        )
        # other's codes are 0..n-1 in the order given (a dict keeps it); -1 (no span) stays -1
        documents = table[np.frombuffer(other.documents, dtype=np.int64)]
        self.documents.frombytes(documents.tobytes())
        self.starts.extend(other.starts)
        self.ends.extend(other.ends)
        return first


class CollectedPart(NamedTuple):
    """What a :class:`Collector` kept of one part of a run (:meth:`Collector.part`): all a
    collector that read the parts before needs to go on as if it had read this one too
    (:meth:`Collector.absorb`). Plain values and typed arrays: cheap to pickle, as it is
    handed back from another process."""

    records: int
    unresolved: list[str]
    seen: Counter[str]
    extra: list[str]
    kept: dict[str, list[_Kept]]
    spans: SpanColumns
    results: ResultColumns
    mapped: int


class Collector:
    """Resolves, maps and keeps every record of every gold query, batching the mapping.

    Only what scoring needs survives a batch: each record's provenance (its results dropped),
    its mapped results with their merge keys, and their spans in columns — never the
    retrieved texts.
    """

    def __init__(
        self,
        corpus: Corpus,
        gold: GoldSet,
        scored: frozenset[str],
        locator: Locator | None,
        batch_results: int | None,
        progress: ProgressCallback | None,
    ) -> None:
        self.corpus, self.gold, self.scored = corpus, gold, scored
        self.locator = locator
        self.batch_results = batch_results
        self.progress = progress
        self.tally = _Tally(gold)
        self.unresolved: list[str] = []
        self.records = 0
        self.kept: dict[str, list[_Kept]] = {}
        self.spans = SpanColumns()
        self.results = ResultColumns()
        self.mapped = 0
        self._pending: list[tuple[str, _Stub, int]] = []
        self._requests: list[LocateRequest] = []
        self._prefer: dict[str, tuple[DocSpan, ...]] = {}

    def add(self, record: RecordFields) -> None:
        """Take one record: resolve its id (:func:`~spanchor_core.runs.resolve_record`'s rule),
        count it, and queue its results for mapping when it belongs to a scored query."""
        self.records += 1
        qid = record.query_id
        if not qid:
            found = lookup_query_id(self.gold, record.query)
            if found is None:
                self.unresolved.append(record.query)
            else:
                qid = found
        if qid is None or not self.tally.add(qid) or qid not in self.scored:
            return
        if record.error is None:
            prefer = self._prefer.get(qid)
            if prefer is None:
                prefer = self._prefer[qid] = tuple(a.span for a in self.gold[qid].anchors)
            # prefer (the query's gold spans) settles text found equally well in several
            # places in favour of the copy the gold names: the retriever returned the evidence
            # text and cannot know which copy the annotator anchored (resolved_by="gold")
            results = record.results
            count = len(results)
            if count:
                # positional, in one C loop over the result columns: keyword arguments cost a
                # third more per result, a comprehension's unpacking another third
                self._requests.extend(
                    map(LocateRequest, *zip(*results, strict=True), repeat(prefer, count))
                )
        else:  # scored as an empty retrieval: nothing to map
            count = 0
        stub = _Stub(
            record.query,
            record.error,
            record.source,
            record.stage,
            record.trace_id,
            record.sequence,
            record.line,
        )
        self._pending.append((qid, stub, count))
        if self.batch_results is not None and len(self._requests) >= self.batch_results:
            self.flush()

    def flush(self) -> None:
        requests = self._requests
        if requests:
            if self.locator is None:
                self.locator = Locator(self.corpus)
            locations = self.locator.locate_many(requests)
        else:
            locations = []
        ranks = [slot for _, _, count in self._pending for slot in range(1, count + 1)]
        statuses = list(map(_STATUS_VALUE.__getitem__, map(_STATUS, locations)))
        results = self.results
        at = results.add_located(ranks, statuses, locations)
        base = len(self.spans.documents)
        unmapped = self.spans.add_columns(results, at)
        keys: dict[int, Hashable] = {
            index: _text_key(statuses[index], requests[index].text) for index in unmapped
        }
        first = 0
        kept = self.kept
        pointer, n_unmapped = 0, len(unmapped)
        for qid, stub, count in self._pending:
            end_at = first + count
            unmapped_keys: dict[int, Hashable] = {}
            while pointer < n_unmapped and unmapped[pointer] < end_at:
                index = unmapped[pointer]
                unmapped_keys[index - first] = keys[index]
                pointer += 1
            found = kept.get(qid)
            item = _Kept(stub, at + first, count, base + first, unmapped_keys)
            if found is None:
                kept[qid] = [item]
            else:
                found.append(item)
            first = end_at
        self.mapped += len(requests)
        self._pending = []
        self._requests = []
        if self.progress is not None and self.batch_results is not None:
            self.progress("map", self.mapped, 0)

    def mapping_done(self) -> None:
        """Nothing more is mapped for a while (the records read so far are all mapped): the
        pages of a memory-mapped index are dropped from this process until a lookup needs
        them again (:func:`~spanchor_core.index_store.release_index_pages`), so that they do
        not count in the resident memory of what follows — scoring, another part's answer."""
        locator = self.locator
        # only a locator that maps here: one that maps elsewhere (Ray actors, a pool's workers)
        # holds no such pages, and may set itself up on being asked for its indexes
        if locator is not None and (
            type(locator) is Locator or getattr(locator, "fork_safe", False)
        ):
            # imported here: only a locator from the index cache has such pages
            from spanchor_core.index_store import release_index_pages

            release_index_pages(locator)

    def part(self) -> CollectedPart:
        """What this collector kept, for a collector that read the run before it
        (:meth:`absorb`); every record's results are mapped first."""
        self.flush()
        tally = self.tally
        results = self.results
        results._mappings = {}  # a cache of this process's: rebuilt where it is used
        return CollectedPart(
            self.records,
            self.unresolved,
            tally._seen,
            tally._extra,
            self.kept,
            self.spans,
            results,
            self.mapped,
        )

    def absorb(self, part: CollectedPart) -> None:
        """Go on as if the records of ``part`` (the next part of the run in file order, read
        by another collector) had been added here: the same counts, lists, kept records and
        columns as reading them here gives, so that scoring cannot tell."""
        self.flush()
        self.records += part.records
        self.unresolved.extend(part.unresolved)
        self.tally.absorb(part.seen, part.extra)
        at = self.results.absorb(part.results)
        first = self.spans.absorb(part.spans)
        kept = self.kept
        for qid, items in part.kept.items():
            moved = [item._replace(at=item.at + at, first=item.first + first) for item in items]
            found = kept.get(qid)
            if found is None:
                kept[qid] = moved
            else:
                found.extend(moved)
        self.mapped += part.mapped
