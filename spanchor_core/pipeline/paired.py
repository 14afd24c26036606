"""The run sides of a gate read in paired halves on two processes: this process reads the first
half of every side's run file, a forked child the second half of every one, each remembering
what it mapped (:class:`~spanchor_core.pipeline.mappings.SharedMappings`).

Why: a baseline and a candidate of one regression test return mostly the same results for the
same queries, and record ``n`` of one file is about record ``n`` of the other. Reading each
side in two parts of its own (:mod:`spanchor_core.evaluate.run_parts`, one child per side)
maps the candidate's second half again on a child that never saw the baseline's; scoring the
sides concurrently (``--jobs 2``) maps every result of both sides. Cutting both files in halves
and giving each process the same half of every side has each process map one half of the
baseline and look most of the candidate's up again: the mapping of about one run for two.

The evaluations are those of scoring the sides one after the other: each side's records are
collected as :func:`~spanchor_core.evaluate.run_parts.collect_in_parts` collects them (its first
half here, its second half's compact columns taken from the child in file order), and a
location depends on its request alone. Only the fast, ordinary case is taken here: anything
that goes wrong (a bad line, a bad header, a run without records, a child that gave no answer
and a part that then fails here) returns nothing, and the caller scores the sides in turn, so
that every error is the one, and in the order, that scoring in turn reports.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from spanchor_core.corpus import Corpus
from spanchor_core.evaluate import Evaluation, ProgressCallback
from spanchor_core.evaluate.collect import CollectedPart
from spanchor_core.evaluate.file_fork import Forked
from spanchor_core.evaluate.run_parts import part_ranges, read_part
from spanchor_core.evaluate.scoring import (
    StreamScoring,
    collector_paused,
    finish_scoring,
    start_scoring,
)
from spanchor_core.evaluate.warm_up import warm_short_indexes
from spanchor_core.gold import GoldSet
from spanchor_core.locate import Locator
from spanchor_core.pipeline.mappings import SharedMappings
from spanchor_core.runs import RunStream

__all__ = ["paired_halves", "score_paired"]


_Half = tuple[int, int]
_Answer = list[tuple[CollectedPart, int, list[str]]]
"""The child's half of each side: its collected part, the records read and their warnings."""


def paired_halves(streams: Sequence[RunStream], locator: Locator) -> list[list[_Half]] | None:
    """Each stream's two byte ranges when every one of them would be read in two parts by
    default (a run of :data:`~spanchor_core.evaluate.run_parts.SPLIT_BYTES` or more, forking
    safe: Linux, two or more usable CPUs, no pool of ours alive), else None."""
    halves = [part_ranges(None, stream, locator) for stream in streams]
    if len(halves) < 2 or any(len(ranges) != 2 for ranges in halves):
        return None
    return halves


@collector_paused()
def score_paired(
    streams: Sequence[RunStream],
    halves: Sequence[Sequence[_Half]],
    corpus: Corpus,
    gold: GoldSet,
    *,
    k: Sequence[int],
    min_overlap: float,
    locator: Locator,
    progress: Sequence[ProgressCallback | None],
    group: str,
) -> list[Evaluation] | None:
    """Every stream scored, in order, their halves read as the module documentation says; None
    when anything went wrong (the caller then scores the sides in turn).

    ``streams`` are opened and checked (:func:`~spanchor_core.pipeline.sides.open_run`),
    ``halves`` are :func:`paired_halves` of them, and ``locator`` is a plain
    :class:`~spanchor_core.locate.Locator` on ``corpus``."""
    mapper = SharedMappings(locator)
    mapper.build_index(normalised=True)  # once, before forking: the child inherits it
    try:
        warm_short_indexes(mapper, streams[0], *halves[0][0])  # the short-text ones, if needed
        scorings = [
            start_scoring(
                corpus,
                gold,
                k=k,
                min_overlap=min_overlap,
                locator=mapper,
                progress=shown,
                group=group,
                batch_results=10_000,
            )
            for shown in progress
        ]
        for stream in streams:
            stream.records_read = 0
            stream.warnings = []
        # forked before any record is added: the child's collectors start empty
        child = Forked(functools.partial(_child_halves, scorings, streams, halves))
        try:
            for scoring, stream, ranges, shown in zip(
                scorings, streams, halves, progress, strict=True
            ):
                if shown is not None:
                    shown("map", 0, 0)
                    shown("read", ranges[0][0], stream.bytes_total)
                read_part(scoring.collector, stream, *ranges[0], shown)
            answer = child.result()
        finally:
            child.close()
        if answer is None:  # the child gave nothing: the second halves are read here
            for scoring, stream, ranges in zip(scorings, streams, halves, strict=True):
                read_part(scoring.collector, stream, *ranges[1], None)
                stream.bytes_read = ranges[1][1]
        else:
            for scoring, stream, ranges, (part, records, warnings) in zip(
                scorings, streams, halves, answer[0], strict=True
            ):
                scoring.collector.absorb(part)
                stream.records_read += records
                stream.warnings.extend(warnings)
                stream.bytes_read = ranges[1][1]
        evaluations = [
            finish_scoring(scoring, stream, shown)
            for scoring, stream, shown in zip(scorings, streams, progress, strict=True)
        ]
    except Exception:  # the sides in turn say what it was, in their order
        return None
    if any(evaluation.records == 0 for evaluation in evaluations):
        return None  # scoring in turn reports it, after whatever comes before it
    return evaluations


def _child_halves(
    scorings: Sequence[StreamScoring],
    streams: Sequence[RunStream],
    halves: Sequence[Sequence[_Half]],
) -> _Answer:
    """On the forked child: the second half of every stream collected, side after side, one
    :class:`SharedMappings` (the child's copy) remembering what every side mapped."""
    answer: _Answer = []
    for scoring, stream, ranges in zip(scorings, streams, halves, strict=True):
        collector = scoring.collector
        collector.progress = None
        stream.records_read = 0
        stream.warnings = []
        start, stop = ranges[1]
        for fields in stream.part_fields(start, stop):
            collector.add(fields)
        answer.append((collector.part(), stream.records_read, stream.warnings))
    return answer
