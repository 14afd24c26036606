"""A run file's records collected on several processes: the file cut at line boundaries into
parts (:meth:`~spanchor_core.runs.RunStream.record_ranges`), every part but the first read,
mapped and kept on a forked child (:class:`~spanchor_core.evaluate.file_fork.Forked`), the
first on this process meanwhile, and each child's answer taken in file order into this
process's collector (:meth:`~spanchor_core.evaluate.collect.Collector.absorb`) before scoring.

Why: reading, parsing and mapping the records is three quarters of ``spanchor evaluate``'s
time, and each record is read and mapped on its own, whatever came before it. What crosses
records — a query's several records (grouped by the grouping rule, askings averaged),
repeated ids, ids outside the gold set, records resolved by their text, the stage counts —
is decided by scoring after every part is in, on the records in file order, exactly as when
one process read them all; the merge only appends (:class:`~spanchor_core.evaluate.collect.
CollectedPart`). A forked child shares the corpus, the gold set and the index with this
process without copying them (copy-on-write) and hands back only its part's compact columns.

Whatever happens to a child, the answer is the one process's: a child that dies, stalls or
meets bad input in its part gives no answer, and this process reads that part itself when
its turn comes, so an error in the run file is raised by this process, at its ``path:line``
of the whole file, and only once every part before it was read without one — the first error
in file order, as one process reports it.

A spanchor 0.x ``{query_id: [results]}`` object is cut at candidate member boundaries, found
by a byte pattern that strings and nested values may hold too: this process proves a cut by
reading its own part up to it, a child's part is taken only when its reading ended at the
next cut (or the object's end) and none of its query ids came before; at a cut that does not
hold, this process reads on to the end of the file itself and the children are given up
on, so the answer is still the one process's (see :meth:`~spanchor_core.runs.RunStream.
part_fields`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Final

from spanchor_core.evaluate.collect import CollectedPart, Collector
from spanchor_core.evaluate.file_fork import Forked, can_fork
from spanchor_core.evaluate.model import ProgressCallback
from spanchor_core.evaluate.warm_up import warm_short_indexes
from spanchor_core.locate import Locator
from spanchor_core.runs import RunStream

__all__ = ["SPLIT_BYTES", "collect_in_parts", "part_ranges", "read_part"]

SPLIT_BYTES: Final = 8 << 20
"""Records, in bytes of the run file, from which ``jobs=None`` (the default) reads a run in two
parts on two processes: below it, forking a copy of this process costs more than it saves."""

_READ_EVERY: Final = 256


def part_ranges(
    jobs: int | None, stream: RunStream, locator: Locator | None
) -> list[tuple[int, int]]:
    """The byte ranges to read ``stream`` in, one per process, or none for one process.

    ``jobs`` parts (``None``: two for a run of at least :data:`SPLIT_BYTES` of records, else
    one); one wherever forking is not safe or cheap
    (:func:`~spanchor_core.evaluate.file_fork.can_fork`), when the file cannot be read in
    parts (:meth:`~spanchor_core.runs.RunStream.record_ranges`), or when the results are mapped
    by something that may not be used from a forked child (an engine's locator: Ray actors, a
    pool of worker processes; a locator says it may with a true ``fork_safe``)."""
    if jobs == 1 or not _fork_safe(locator) or not can_fork():
        return []
    ranges = stream.record_ranges(2 if jobs is None else jobs)
    if jobs is None and ranges and ranges[-1][1] - ranges[0][0] < SPLIT_BYTES:
        return []
    return ranges


def _fork_safe(locator: Locator | None) -> bool:
    return locator is None or type(locator) is Locator or getattr(locator, "fork_safe", False)


def collect_in_parts(
    collector: Collector,
    stream: RunStream,
    ranges: Sequence[tuple[int, int]],
    progress: ProgressCallback | None,
) -> None:
    """Add every record of ``stream`` to ``collector`` as reading it in one go does, the
    ``ranges`` after the first read on forked children (see the module documentation).

    ``stream``'s ``records_read``, ``warnings`` and ``bytes_read`` end as a whole read leaves
    them. ``progress("read", ...)`` follows this process's own part, scaled to the file."""
    if collector.locator is None:
        collector.locator = Locator(collector.corpus)
    # built once here, before forking: every child inherits it instead of building its own
    collector.locator.build_index(normalised=True)
    # and, for a run of short texts, the indexes they are found through (else built by each)
    warm_short_indexes(collector.locator, stream, *ranges[0])
    stream.records_read = 0
    stream.warnings = []
    children: list[Forked[_Answer]] = []
    try:
        for start, stop in ranges[1:]:
            # forked before this process adds a record: each child starts from an empty
            # collector, as if its part were the whole run
            children.append(Forked(functools.partial(_child_part, collector, stream, start, stop)))
        start, stop = ranges[0]
        read_part(collector, stream, start, stop, progress)
        collector.mapping_done()  # the index's pages out while the children's answers come in
        for (start, stop), child in zip(ranges[1:], children, strict=True):
            if stream.bytes_read > start:
                break  # reading went on past the cut (a 0.x object's did not hold): all read
            answer = child.result()
            if answer is None or not stream.take_part(answer[0][3]):
                # the child gave nothing (or a part that does not follow the parts before):
                # its part is read here, in its turn
                read_part(collector, stream, start, stop, None)
            else:
                part, records, warnings, _ = answer[0]
                collector.absorb(part)
                stream.records_read += records
                stream.warnings.extend(warnings)
            stream.bytes_read = max(stream.bytes_read, stop)
    finally:
        for child in children:
            child.close()


def read_part(
    collector: Collector,
    stream: RunStream,
    start: int,
    stop: int,
    progress: ProgressCallback | None,
) -> None:
    """The records from byte ``start`` to ``stop`` added to ``collector``, and mapped;
    ``progress("read", ...)`` follows this part, scaled to the whole file (the gate's paired
    halves read their parts with it too)."""
    if progress is None:
        for fields in stream.part_fields(start, stop):
            collector.add(fields)
    else:
        total = stream.bytes_total
        scale = (total - start) / max(stop - start, 1)
        for count, fields in enumerate(stream.part_fields(start, stop), start=1):
            collector.add(fields)
            if count % _READ_EVERY == 0:
                done = start + int((stream.bytes_read - start) * scale)
                progress("read", min(done, total), total)
    collector.flush()


_Answer = tuple[CollectedPart, int, list[str], frozenset[str] | None]
"""A child's part, the records it read, their warnings and (a 0.x object) their query ids."""


def _child_part(collector: Collector, stream: RunStream, start: int, stop: int) -> _Answer:
    """On a forked child: one part's records collected, and what reading them counted.

    A locator that remembers what it mapped (:class:`~spanchor_core.pipeline.mappings.
    SharedMappings`, the sides of a gate scored in turn) does not learn what the child mapped:
    handing 50,000 locations back costs ~1.5 s of CPU (pickled here, unpickled by the parent,
    on its critical path), saving the next side's child ~2.5 s of mapping on the other core,
    and measured no clear gain in a gate's wall time."""
    collector.progress = None
    stream.records_read = 0
    stream.warnings = []
    for fields in stream.part_fields(start, stop, alone=True):
        collector.add(fields)
    part = collector.part()
    # the index's pages out of this child before its answer is pickled, where it peaked
    collector.mapping_done()
    return part, stream.records_read, stream.warnings, stream.part_keys()
