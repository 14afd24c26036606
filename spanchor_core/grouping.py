"""How the several retrievals recorded for one question become the one ranked list it is scored on.

One question often causes several retrievals: a hybrid retriever runs two retrievers, a
sub-question engine one per sub-question, an agent calls its tool twice, a fallback retries,
and a pipeline reranks what it retrieved before the model sees it. Recorders write one line per
retrieval with its provenance (``trace_id``, ``source``, ``stage``, ``sequence``); this module
turns a query's lines into what is scored, by a rule that never depends on line order or on the
order in which concurrent retrievals finished.

**Traces.** Records with the same ``trace_id`` belong to one asking of the question. A record
without a ``trace_id`` (files written before provenance existed, or by hand) is a trace of its
own. A question asked in two traces is a *repeat*: each trace is scored, the query's metrics are
their mean, and the query is listed as repeated — never silently collapsed. A trace whose
records all failed counts only when no trace of the query succeeded (a retry that worked
replaces the attempt that failed).

**The default rule, ``auto``.** Within a trace, the records of the latest stage present are
used — ``context`` (what the model saw) over ``postprocessed`` (after a reranker) over
``retrieval`` (a record without a stage is a retrieval). Several records of that stage are
merged by a deterministic interleave: they are ordered by (source, query text, content), then
rank 1 of each is taken, then rank 2 of each, and so on, each item kept once (the first time
it appears). A single record is scored exactly as it was returned, repeats included.
``sequence`` does not order the interleave because concurrent retrievals start in any order.

Other rules (CLI ``--group``, ``[tool.spanchor] group``):

* ``first`` — the trace's first retrieval at the latest stage (lowest ``sequence``);
* ``union`` — every retrieval-stage record of the trace, interleaved (ignores later stages);
* ``stage:NAME`` — only records of that stage, interleaved;
* ``source:NAME`` — only records from that retriever/tool/node, interleaved.

A trace with no record left under a rule contributes nothing; a query left with no trace is
scored as if it returned nothing (and reported).
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from spanchor_core.errors import InputError

__all__ = [
    "GROUP_RULES",
    "GroupRule",
    "GroupedQuery",
    "GroupedTrace",
    "Provenance",
    "Retrieval",
    "group_query",
    "parse_group_rule",
]

T = TypeVar("T")

_STAGE_ORDER = {"retrieval": 0, "postprocessed": 1, "context": 2}
GROUP_RULES = ("auto", "first", "union", "stage:NAME", "source:NAME")


class Provenance(Protocol):
    """What grouping reads of a record (a :class:`~spanchor_core.runs.RetrievalRecord` has it)."""

    @property
    def query(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def source(self) -> str | None: ...
    @property
    def stage(self) -> str | None: ...
    @property
    def trace_id(self) -> str | None: ...
    @property
    def sequence(self) -> int | None: ...
    @property
    def line(self) -> int | None: ...


@dataclass(frozen=True, slots=True)
class Retrieval(Generic[T]):
    """One recorded retrieval of a query: its provenance and its ranked items.

    ``items`` are whatever the caller scores (mapped spans, texts); ``keys`` identify items for
    de-duplication and ordering (same length as ``items``: e.g. the mapped span, or the text).
    ``ordinal`` tells two records apart that have no line number (their position in the input).
    """

    record: Provenance
    items: tuple[T, ...]
    keys: tuple[Hashable, ...]
    ordinal: int = 0


@dataclass(frozen=True, slots=True)
class GroupRule:
    """A parsed grouping rule: ``kind`` is auto, first, union, stage or source."""

    kind: str
    name: str | None = None

    def __str__(self) -> str:
        return self.kind if self.name is None else f"{self.kind}:{self.name}"


@dataclass(frozen=True, slots=True)
class GroupedTrace(Generic[T]):
    """One asking of the question: the ranked items it is scored on and where they came from.

    ``sources`` and ``stage`` describe the records merged (order-independent, so they may be
    written to an evaluation file); ``lines`` are their line numbers, for messages only — they
    change when the same records are written in another order.
    """

    trace_id: str | None
    items: tuple[T, ...]
    lines: tuple[int, ...]
    sources: tuple[str, ...] = ()
    stage: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class GroupedQuery(Generic[T]):
    """A query's traces in a deterministic order (by trace id, then content)."""

    traces: tuple[GroupedTrace[T], ...]
    records: int

    @property
    def repeated(self) -> bool:
        """The question was asked in more than one trace."""
        return len(self.traces) > 1

    @property
    def merged(self) -> bool:
        """Some trace was built from more than one record."""
        return any(len(trace.lines) > 1 for trace in self.traces)


def parse_group_rule(text: str) -> GroupRule:
    """The rule named by ``text`` (``auto``, ``first``, ``union``, ``stage:X``, ``source:X``)."""
    if not isinstance(text, str):
        raise InputError(f"group rule must be a string, got {type(text).__name__}")
    kind, sep, name = text.strip().partition(":")
    if not sep and kind in ("auto", "first", "union"):
        return GroupRule(kind)
    if sep and kind == "stage":
        if name not in _STAGE_ORDER:
            raise InputError(
                f"unknown stage {name!r} in group rule {text!r}",
                hint=f"use one of {', '.join('stage:' + s for s in _STAGE_ORDER)}",
            )
        return GroupRule(kind, name)
    if sep and kind == "source" and name:
        return GroupRule(kind, name)
    raise InputError(f"unknown group rule {text!r}", hint=f"use one of {', '.join(GROUP_RULES)}")


def _stage_rank(record: Provenance) -> int:
    return _STAGE_ORDER.get(record.stage or "retrieval", 0)


def _content_digest(retrieval: Retrieval[T]) -> str:
    # Orders retrievals that share source and query by what they returned, so that the
    # interleave does not depend on which of two concurrent retrievals finished first.
    digest = hashlib.blake2b(digest_size=12)
    digest.update(repr(retrieval.keys).encode("utf-8", "surrogatepass"))
    digest.update(repr(retrieval.record.error).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _order_key(retrieval: Retrieval[T]) -> tuple[str, str, int, str]:
    record = retrieval.record
    return (record.source or "", record.query, _stage_rank(record), _content_digest(retrieval))


def _interleave(retrievals: Sequence[Retrieval[T]]) -> tuple[T, ...]:
    if len(retrievals) == 1:  # one retrieval is scored exactly as it was returned
        return retrievals[0].items
    ordered = sorted(retrievals, key=_order_key)
    seen: set[Hashable] = set()
    merged: list[T] = []
    depth = max((len(r.items) for r in ordered), default=0)
    for rank in range(depth):
        for retrieval in ordered:
            if rank < len(retrieval.items):
                key = retrieval.keys[rank]
                if key not in seen:
                    seen.add(key)
                    merged.append(retrieval.items[rank])
    return tuple(merged)


def _select(rule: GroupRule, trace: Sequence[Retrieval[T]]) -> list[Retrieval[T]]:
    if rule.kind == "source":
        return [r for r in trace if r.record.source == rule.name]
    if rule.kind == "stage":
        return [r for r in trace if (r.record.stage or "retrieval") == rule.name]
    if rule.kind == "union":
        return [r for r in trace if _stage_rank(r.record) == 0]
    latest = max(_stage_rank(r.record) for r in trace)
    chosen = [r for r in trace if _stage_rank(r.record) == latest]
    if rule.kind == "first":
        first = min(
            chosen,
            key=lambda r: (
                r.record.sequence is None,
                r.record.sequence or 0,
                _order_key(r),
            ),
        )
        return [first]
    return chosen


def _line_of(retrieval: Retrieval[T]) -> int:
    line = retrieval.record.line
    return retrieval.ordinal if line is None else line


def _one_trace(
    rule: GroupRule, trace_id: str | None, trace: Sequence[Retrieval[T]]
) -> GroupedTrace[T] | None:
    working = [r for r in trace if r.record.error is None]
    if not working:
        errors = sorted({r.record.error or "" for r in trace})
        lines = tuple(sorted(_line_of(r) for r in trace))
        return GroupedTrace(trace_id, (), lines, _sources(trace), error="; ".join(errors))
    chosen = _select(rule, working)
    if not chosen:
        return None
    lines = tuple(sorted(_line_of(r) for r in chosen))
    stage = max((r.record.stage or "retrieval" for r in chosen), key=_STAGE_ORDER.__getitem__)
    return GroupedTrace(trace_id, _interleave(chosen), lines, _sources(chosen), stage)


def _sources(retrievals: Sequence[Retrieval[T]]) -> tuple[str, ...]:
    return tuple(sorted(r.record.source or "" for r in retrievals))


def group_query(
    retrievals: Iterable[Retrieval[T]],
    rule: GroupRule = GroupRule("auto"),
) -> GroupedQuery[T]:
    """Group one query's retrievals into traces and each trace into one ranked list.

    The result depends only on the set of retrievals, never on their order.
    """
    by_trace: dict[str | None, list[Retrieval[T]]] = {}
    solo: list[Retrieval[T]] = []
    count = 0
    for retrieval in retrievals:
        count += 1
        trace_id = retrieval.record.trace_id
        if trace_id is None:
            solo.append(retrieval)
        else:
            by_trace.setdefault(trace_id, []).append(retrieval)
    traces: list[GroupedTrace[T]] = []
    for trace_id, trace in sorted(by_trace.items(), key=lambda item: item[0] or ""):
        grouped = _one_trace(rule, trace_id, trace)
        if grouped is not None:
            traces.append(grouped)
    for retrieval in sorted(solo, key=_order_key):
        grouped = _one_trace(rule, None, [retrieval])
        if grouped is not None:
            traces.append(grouped)
    if any(trace.error is None for trace in traces):
        traces = [trace for trace in traces if trace.error is None]
    return GroupedQuery(tuple(traces), count)
