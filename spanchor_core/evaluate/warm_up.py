"""Before a run is read on several processes: the short-text indexes built once, here.

A result text too short for the minimizer index is found through a sampled k-gram index
(:mod:`spanchor_core.locate.sampled`), one over the canonical text and one over its normalised
stream, each built on the first batch that needs it (about a second each for 50 MB). Built
that lazily, every forked process built its own pair: a run of short chunks read on two
processes paid both builds twice, 2 s more CPU than one process for 50 MB and no shorter wall
time (bench/README.md, session 15).

So before forking, the first results of the run are looked at. When enough of them are short
that every process would build the indexes on its first batches anyway, they are built now —
the canonical one here, the normalised one meanwhile on a forked child that hands it back
(:class:`~spanchor_core.evaluate.file_fork.Forked`; should it give nothing, it is built here)
— and every process inherits both. A locator of the persistent index cache keeps them in its
entry once built (:mod:`spanchor_core.index_store.short`): the next run maps them. Which
index finds a text never changes its location (:mod:`spanchor_core.locate.find`), so a wrong
guess costs time, never a result; and reading the sample never raises: a bad record is left
for the real read to report, at its line.
"""

from __future__ import annotations

import functools
import itertools
from typing import Final

from spanchor_core.evaluate.file_fork import Forked, can_fork
from spanchor_core.locate import Locator
from spanchor_core.runs import RunStream

__all__ = ["SAMPLE_RESULTS", "SHORT_SHARE", "warm_short_indexes"]

SAMPLE_RESULTS: Final = 2_000
"""Results looked at, at most, from the start of the first part."""

SHORT_SHARE: Final = 32
"""The indexes are built when at least one sampled text in this many is short: a batch of
5,000 results then holds some 150 short texts, more than the 16 from which every batch after
the first builds them (:meth:`~spanchor_core.locate.scan.CorpusScanner.sampled_index`)."""

_CLEAR_AFTER: Final = 200
"""Results after which a sample with no short text at all stops (the ordinary run: chunks of
hundreds of characters, where looking further costs time for nothing)."""


def warm_short_indexes(locator: Locator, stream: RunStream, start: int, stop: int) -> bool:
    """Build ``locator``'s short-text indexes now when the records from byte ``start`` (to
    ``stop``) of ``stream`` say a run of short texts is coming; whether they were built.

    ``stream``'s counters are left as reading moved them: the caller resets them before its
    own read, as it does for every part."""
    shortest = locator.min_indexed_length
    sampled = short = 0
    try:
        records = stream.part_fields(start, stop)
        try:
            for fields in itertools.islice(records, SAMPLE_RESULTS):
                for text, document_id, offset, _ in fields.results:
                    if text is None:
                        continue
                    sampled += 1
                    # a result with its document and offsets is mostly placed by them, unsearched
                    short += len(text) < shortest and (document_id is None or offset is None)
                if sampled >= SAMPLE_RESULTS or (sampled >= _CLEAR_AFTER and not short):
                    break
        finally:
            records.close()  # type: ignore[attr-defined]  # a generator
    except Exception:  # a bad record: the real read reports it, at its line
        return False
    if not short or short * SHORT_SHARE < sampled:
        return False
    kept = locator.short_indexes_kept()  # in the index cache: mapped, not built (no helper)
    helper = (
        Forked(functools.partial(locator.build_short_index, normalised=True))
        if can_fork() and not kept
        else None
    )
    try:
        locator.build_short_index(normalised=False)
        answer = None if helper is None else helper.result()
    finally:
        if helper is not None:
            helper.close()
    if answer is None:
        locator.build_short_index(normalised=True)
    else:
        locator.use_short_index(answer[0], normalised=True)
    return True
