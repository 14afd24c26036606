"""The queries of an evaluation file in our writer's layout, stored by column as they are read
(:class:`~spanchor_core.evaluate.model.QueryTable`): the metric values in one float array and
the rest of each query kept as its text, built into objects only when asked for, so that a
comparison of two 100,000-query files reads columns instead of building millions of objects.
The plain checks are those of :mod:`.file_queries`, made a column at a time; any line they do
not vouch for is built by its :class:`~spanchor_core.evaluate.file_queries._Builder`."""

from __future__ import annotations

import operator
import re
from array import array
from functools import partial
from itertools import chain, islice, repeat
from typing import Any, Final, TypeAlias

import numpy as np
import orjson

from spanchor_core._fill import fill, fill_one, slot_setters
from spanchor_core.evaluate.file_fork import Forked, can_fork
from spanchor_core.evaluate.file_pattern import BUFFER_LINE
from spanchor_core.evaluate.file_queries import (
    _FLOAT,
    _INT,
    _INT_OR_NONE,
    _NUMBER,
    _QUERY_ORDER,
    _RESULT_ORDER,
    _RESULT_TYPES,
    _STATUSES,
    _STR_OR_NONE,
    _Builder,
    _is_score,
)
from spanchor_core.evaluate.model import (
    LocatedResult,
    MappingStats,
    MetricRow,
    QueryEvaluation,
    QueryStatus,
    QueryTable,
)
from spanchor_core.spans import DocSpan

_SPAN_ORDER: Final = ("document_id", "start", "end")
_SPAN_TYPES: Final = (str, int, int)
_MAPPING_ORDER: Final = ("counts", "hint_rejected", "total", "unmapped_rate")
_GOLD_MEMBER: Final = b', "gold": ['
_BACKSLASH: Final = b"\\"
_COLON: Final = ord(":")
_DICT: Final = {dict}
_LIST: Final = {list}
_STR: Final = {str}
_QUERY_KEY_LIST: Final = list(_QUERY_ORDER)
_MAPPING_KEY_LIST: Final = list(_MAPPING_ORDER)
_SPAN_KEY_LIST: Final = list(_SPAN_ORDER)
_RESULT_KEY_LIST: Final = list(_RESULT_ORDER)
_BOOL: Final = {bool}


_GROUPS: Final = operator.methodcaller("group", 1, 2, 3, 4, 5)
_BUFFER_GROUPS: Final = operator.methodcaller("group", 1, 2, 3, 4)
_GOLD_START: Final = operator.methodcaller("start", 5)
_START: Final = re.Match.start
_END: Final = re.Match.end
_BUFFER_CHUNK: Final = 1024
"""Query lines of a buffer stored together (:meth:`_Columns.add_buffer`)."""
_TRUE: Final = b"true"
_FALSE: Final = b"false"
_COMMA: Final = ord(",")
_CLOSING: Final = ord("}")
_STATUS_BYTES: Final = {key.encode(): status for key, status in _STATUSES.items()}
_DOC_SPAN: Final = partial(tuple.__new__, DocSpan)
"""A :class:`DocSpan` of three values in its field order, without its ``__new__``'s call."""


def _tail(text: bytes, start: int, end: int) -> bytes:
    """The ``"gold": ...}`` end of a query line, from its top-level ``gold`` member."""
    return text[start + 2 : end]


class _Columns:
    """The queries of a file in our writer's layout, kept by column: ids, statuses and errors
    in lists, the metric values in one float array, and of each query the text of its
    ``gold``, ``mapping`` and ``results`` members, built into objects only when the query is
    asked for (:class:`~spanchor_core.evaluate.model.QueryTable`).

    A query line in our writer's exact shape (members in its order, metrics exactly the file's
    ``metric_names`` in order, results of the usual types, no traces) is checked and stored
    without building anything; any other line is built at once by the :class:`_Builder`,
    which accepts exactly what the strict path accepts. Both give the same query.
    """

    def __init__(self, names: tuple[str, ...]) -> None:
        self.builder = _Builder(names)
        self.names = names
        self.ids: list[str] = []
        self.seen: set[str] = set()
        self.statuses: list[QueryStatus] = []
        self.errors: list[str | None] = []
        self.tails: list[bytes] = []
        # what add_buffer stores instead of tails: the file's query lines, and of each query
        # where its "gold" member starts and where its line ends
        self.buffer: bytes | None = None
        self.gold_at = array("q")
        self.ends = array("q")
        self.eager: dict[int, QueryEvaluation] = {}
        self.values = array("d")
        self.name_list = list(names)
        # the ':' of a metrics object without repeated names: no value holds one
        self.metric_colons = len(names) + sum(name.count(":") for name in names)
        self.cost = len(_QUERY_ORDER) + len(names) + len(_MAPPING_ORDER)
        self.scores = [i for i, name in enumerate(names) if _is_score(name)]
        self.names_say_bool = any("true" in name or "false" in name for name in names)
        self.rows: tuple[tuple[str, ...], dict[str, int], np.ndarray[Any, Any]] | None = None

    def _plain(self, gold: Any, mapping: Any, results: Any) -> bool:
        for span in gold:
            if (
                type(span) is not dict
                or tuple(span) != _SPAN_ORDER
                or tuple(map(type, span.values())) != _SPAN_TYPES
            ):
                return False
        if tuple(mapping) != _MAPPING_ORDER or self.builder._mapping(mapping) is None:
            return False
        for r in results:
            if (
                type(r) is not dict
                or tuple(r) != _RESULT_ORDER
                or tuple(map(type, r.values())) not in _RESULT_TYPES
            ):
                return False
        return True

    def add(self, q: Any, text: bytes, end: int) -> int | None:
        """Store one parsed query line (``text[:end]`` is its JSON); its members' count (the
        ``:`` inside its strings left out), or ``None`` to decline the file."""
        if type(q) is dict and tuple(q) == _QUERY_ORDER:
            query_id, status, error, metrics, gold, mapping, results = q.values()
            if (
                type(query_id) is str
                and query_id not in self.seen
                and type(status) is str
                and status in _STATUSES
                and type(error) in _STR_OR_NONE
                and type(metrics) is dict
                and type(gold) is list
                and type(mapping) is dict
                and type(results) is list
                and tuple(metrics) == self.names
            ):
                raw = metrics.values()
                types = set(map(type, raw))
                if (
                    (types == _FLOAT or types <= _NUMBER)
                    and self._plain(gold, mapping, results)
                    and _GOLD_MEMBER in text
                ):
                    # the first '", "gold": [' is the top-level member: a '"' after a space is
                    # outside any string, and nothing before "gold" may hold a list
                    start = text.find(_GOLD_MEMBER, 0, end)
                    try:
                        self.values.extend(raw)
                    except OverflowError:
                        return None
                    self.ids.append(query_id)
                    self.seen.add(query_id)
                    self.statuses.append(_STATUSES[status])
                    self.errors.append(error)
                    self.tails.append(text[start + 2 : end])
                    return (
                        self.cost
                        + 3 * len(gold)
                        + len(mapping["counts"])
                        + len(_RESULT_ORDER) * len(results)
                    )
        built = self.builder.build(q)
        if built is None or built[0].query_id in self.seen:
            return None
        query, pairs = built
        try:
            self.values.extend([query.metrics[name] for name in self.names])
        except OverflowError:
            return None
        self.eager[len(self.ids)] = query
        self.ids.append(query.query_id)
        self.seen.add(query.query_id)
        self.statuses.append(query.status)
        self.errors.append(query.error)
        self.tails.append(b"")
        return pairs

    def add_chunk(self, qs: list[Any], texts: list[bytes], ends: list[int], colons: int) -> bool:
        """Store several parsed query lines at once when every one is in our writer's exact
        shape (what :meth:`add` checks one by one, checked here a column at a time, in C
        loops); ``False``, storing nothing, for the caller to add them one by one.

        ``colons`` is the number of ``:`` in the lines: it equals the members when no key is
        repeated and no string holds one (a line's text never has fewer).
        """
        n = len(qs)
        try:
            if set(map(type, qs)) != _DICT or list(chain.from_iterable(qs)) != _QUERY_KEY_LIST * n:
                return False
            fields = list(chain.from_iterable(map(dict.values, qs)))
            ids, statuses, errors = fields[0::7], fields[1::7], fields[2::7]
            metrics, golds, mappings, results = (
                fields[3::7],
                fields[4::7],
                fields[5::7],
                fields[6::7],
            )
            if (
                set(map(type, ids)) != _STR
                or len(set(ids)) != n
                or not self.seen.isdisjoint(ids)
                or set(map(type, statuses)) != _STR
                or not _STATUSES.keys() >= set(statuses)
                or not _STR_OR_NONE.issuperset(map(type, errors))
                or set(map(type, metrics)) != _DICT
                or list(chain.from_iterable(metrics)) != self.name_list * n
                or set(map(type, golds)) != _LIST
                or set(map(type, mappings)) != _DICT
                or list(chain.from_iterable(mappings)) != _MAPPING_KEY_LIST * n
                or set(map(type, results)) != _LIST
            ):
                return False
            raw = list(chain.from_iterable(map(dict.values, metrics)))
            types = set(map(type, raw))
            if types != _FLOAT and not types <= _NUMBER:
                return False
            stats = list(chain.from_iterable(map(dict.values, mappings)))
            counts = stats[0::4]
            if (
                set(map(type, counts)) != _DICT
                or not _INT.issuperset(map(type, chain.from_iterable(map(dict.values, counts))))
                or set(map(type, stats[1::4])) != _INT
                or set(map(type, stats[2::4])) != _INT
                or not _NUMBER.issuperset(map(type, stats[3::4]))
            ):
                return False
            spans = list(chain.from_iterable(golds))
            if spans:
                if set(map(type, spans)) != _DICT or list(
                    chain.from_iterable(spans)
                ) != _SPAN_KEY_LIST * len(spans):
                    return False
                kinds = list(map(type, chain.from_iterable(map(dict.values, spans))))
                if set(kinds[0::3]) != _STR or not _INT.issuperset(kinds[1::3] + kinds[2::3]):
                    return False
            located = list(chain.from_iterable(results))
            if located:
                if set(map(type, located)) != _DICT or list(
                    chain.from_iterable(located)
                ) != _RESULT_KEY_LIST * len(located):
                    return False
                kinds = list(map(type, chain.from_iterable(map(dict.values, located))))
                if (
                    set(kinds[0::7]) != _INT
                    or set(kinds[1::7]) != _STR
                    or not _STR_OR_NONE.issuperset(kinds[2::7])
                    or not _INT_OR_NONE.issuperset(kinds[3::7] + kinds[4::7])
                    or set(kinds[5::7]) != _FLOAT
                    or set(kinds[6::7]) != _BOOL
                ):
                    return False
            members = (
                self.cost * n
                + 3 * len(spans)
                + sum(map(len, counts))
                + len(_RESULT_ORDER) * len(located)
            )
            if members != colons:
                return False  # a repeated key, or a ':' inside a string: one by one
            starts = list(map(bytes.find, texts, repeat(_GOLD_MEMBER), repeat(0), ends))
            if min(starts) < 0:
                return False
            values = array("d", raw)
        except (TypeError, ValueError, OverflowError):
            return False
        self.values.extend(values)
        self.ids.extend(ids)
        self.seen.update(ids)
        self.statuses.extend(map(_STATUSES.__getitem__, statuses))
        self.errors.extend(errors)
        # the first '", "gold": [' is the top-level member (see :meth:`add`)
        self.tails.extend(map(_tail, texts, starts, ends))
        return True

    def add_matched(self, matches: list[re.Match[bytes]]) -> bool:
        """Store query lines that :data:`PLAIN_LINE` matched, their metrics parsed by one
        orjson call and checked a column at a time (the rest of each line is kept as its
        text); ``False``, storing nothing, for the caller to add them the longer way."""
        groups = map(_GROUPS, matches)
        raw_ids, raw_statuses, raw_errors, raw_metrics, tails = zip(*groups, strict=True)
        if not self._add_plain(raw_ids, raw_statuses, raw_errors, raw_metrics):
            return False
        self.tails.extend(tails)
        return True

    def add_buffer(self, buffer: bytes, stop: int) -> bool:
        """Store the query lines of ``buffer[:stop]`` (the file from the line after
        ``"queries": [`` to the one before ``]``) when every one is in :data:`BUFFER_LINE`'s
        shape, with a comma after each but the last: their metrics as :meth:`add_matched`
        stores them, the rest of each line left in ``buffer`` (kept) and found by position.

        Of a large buffer the second half is matched on a forked child while this process
        matches the first (:mod:`.file_fork`); without the child's answer this process
        matches it too. Either way the same lines are checked the same way.

        ``False`` when a line is not, for the caller to read the lines the longer way into
        a new :class:`_Columns` (this one may hold some of them)."""
        if self.ids or stop <= 0:
            return False
        split = _halfway(buffer, stop) if stop >= _FORK_BYTES and can_fork() else 0
        helper = Forked(partial(_matched_part, self.names, buffer, split, stop)) if split else None
        try:
            first = self._match(buffer, 0, split or stop)
            if first is None:
                return False
            gold_at, ends = first
            if helper is not None:
                answer, helper = helper.result(), None
                second = self._match(buffer, split, stop) if answer is None else self._take(*answer)
                if second is None:
                    return False
                gold_at.extend(second[0])
                ends.extend(second[1])
        finally:
            if helper is not None:
                helper.close()
        # the byte before each newline: a comma after every query but the last, which ends
        # with its object's closing brace
        before = np.frombuffer(buffer, dtype=np.uint8)[np.frombuffer(ends, dtype=np.int64) - 2]
        if before[-1] != _CLOSING or (before[:-1] != _COMMA).any():
            return False
        ends[-1] += 1  # so that every query's object ends two bytes before its line's end
        self.buffer, self.gold_at, self.ends = buffer, gold_at, ends
        return True

    def _match(self, buffer: bytes, start: int, stop: int) -> tuple[array[int], array[int]] | None:
        """Store the plain members of the query lines of ``buffer[start:stop]`` (``start`` at
        a line's start), matched where they stand one after the other; where each query's
        ``gold`` member starts and its line ends, or ``None`` when a line is not matched."""
        found = BUFFER_LINE.finditer(buffer, start, stop)
        at = start
        gold_at, ends = array("q"), array("q")
        while chunk := list(islice(found, _BUFFER_CHUNK)):
            starts, chunk_ends = list(map(_START, chunk)), list(map(_END, chunk))
            # one match per line, one after the other: no line skipped by the search
            if starts[0] != at or starts[1:] != chunk_ends[:-1]:
                return None
            at = chunk_ends[-1]
            raw_ids, raw_statuses, raw_errors, raw_metrics = zip(
                *map(_BUFFER_GROUPS, chunk), strict=True
            )
            if not self._add_plain(raw_ids, raw_statuses, raw_errors, raw_metrics):
                return None
            gold_at.extend(map(_GOLD_START, chunk))
            ends.extend(chunk_ends)
        return (gold_at, ends) if at == stop else None

    def _take(self, part: _Part | None) -> tuple[array[int], array[int]] | None:
        """Store what :func:`_matched_part` matched on the child; its positions, or ``None``
        when it declined the lines or repeats an id stored here."""
        if part is None:
            return None
        ids, statuses, errors, values, gold_at, ends = part
        if not self.seen.isdisjoint(ids):
            return None
        self.values.extend(values)
        self.ids.extend(ids)
        self.seen.update(ids)
        self.statuses.extend(statuses)
        self.errors.extend(errors)
        return gold_at, ends

    def _add_plain(
        self,
        raw_ids: tuple[bytes, ...],
        raw_statuses: tuple[bytes, ...],
        raw_errors: tuple[bytes | None, ...],
        raw_metrics: tuple[bytes, ...],
    ) -> bool:
        """Store the plain members of matched query lines (the rest of each is the caller's
        to keep); ``False``, storing nothing, when the metrics are not plain."""
        n = len(raw_ids)
        # ASCII without escapes or control characters (the pattern): the text is the string
        ids = b"\n".join(raw_ids).decode("ascii").split("\n")
        if len(set(ids)) != n or not self.seen.isdisjoint(ids):
            return False
        joined = b"[" + b",".join(raw_metrics) + b"]"
        # numpy over the bytes: bytes.count is a byte-at-a-time loop, several times slower
        codes = np.frombuffer(joined, dtype=np.uint8)
        if int(codes.max()) >= 0x80 or _BACKSLASH in joined:
            return False  # non-ASCII or an escape in a metrics object: the longer way decides
        if int(np.count_nonzero(codes == _COLON)) != self.metric_colons * n:
            return False  # a repeated name (orjson keeps the last one)
        try:
            metrics = orjson.loads(joined)
        except orjson.JSONDecodeError:
            return False  # NaN, a huge number, a control character: the longer way decides
        if list(chain.from_iterable(metrics)) != self.name_list * n:
            return False  # names missing, added, out of order or repeated
        raw = list(chain.from_iterable(map(dict.values, metrics)))
        del metrics
        # array("d") takes ints and floats and refuses every other parsed value but bools,
        # which only a "true" or "false" outside the names can be
        if self.names_say_bool or _TRUE in joined or _FALSE in joined:
            types = set(map(type, raw))
            if types != _FLOAT and not types <= _NUMBER:
                return False
        try:
            values = array("d", raw)
        except (TypeError, OverflowError):
            return False
        self.values.extend(values)
        self.ids.extend(ids)
        self.seen.update(ids)
        self.statuses.extend(map(_STATUS_BYTES.__getitem__, raw_statuses))
        if raw_errors.count(None) == n:
            self.errors.extend(repeat(None, n))
        else:
            self.errors.extend(None if e is None else e.decode("ascii") for e in raw_errors)
        return True

    def __len__(self) -> int:
        return len(self.ids)

    def finish(self) -> QueryTable | None:
        """The table of every stored query; ``None`` when a built-in score lies outside
        [0, 1] (the strict path names it)."""
        n, m = len(self.ids), len(self.names)
        values = (
            np.frombuffer(self.values, dtype=np.float64).reshape(n, m)
            if n and m
            else np.zeros((n, m))
        )
        if self.scores:
            picked = values[:, self.scores]
            if ((picked < 0.0) | (picked > 1.0)).any():
                return None
        eager = sorted(self.eager)
        repeated = tuple(self.ids[row] for row in eager if self.eager[row].repeated)
        merged = tuple(self.ids[row] for row in eager if self.eager[row].merged)
        # the rows are made from the matrix, not through the table: a table holding this
        # object's _build and this object holding the table would be a cycle, which only the
        # garbage collector frees (a full pass over everything alive, ~0.25 s at exit)
        self.rows = (self.names, {name: i for i, name in enumerate(self.names)}, values)
        del self.seen
        return QueryTable(self.ids, self.names, values, self._build, repeated, merged)

    def _build(self, row: int) -> QueryEvaluation:
        """The query at ``row``: one built at once as it is, any other from its text, which
        was checked when read to hold members in our writer's order and of its types (the
        same objects as :meth:`_Builder.parts` makes, without its checks)."""
        query = self.eager.get(row)
        if query is not None:
            return query
        if self.rows is None:  # pragma: no cover - the table is what calls this
            raise RuntimeError("the queries are not stored yet")
        names, index, values = self.rows
        if self.buffer is None:
            tail = self.tails[row]
        else:
            tail = self.buffer[self.gold_at[row] : self.ends[row] - 2]
        gold, mapping, results = orjson.loads(b"{" + tail).values()
        counts, hint_rejected, _, _ = mapping.values()
        key = (tuple(counts), tuple(counts.values()), hint_rejected)
        stats = self.builder.stats.get(key)
        if stats is None:
            stats = self.builder.stats[key] = MappingStats(counts, hint_rejected)
        fields = (
            self.ids[row],
            MetricRow(names, index, values[row]),
            self.statuses[row],
            tuple(map(_DOC_SPAN, map(dict.values, gold))),
            _located(results),
            stats,
            self.errors[row],
            (),
        )
        return fill_one(QueryEvaluation, _QUERY_SETTERS, fields)


# Built from their text for a comparison's diagnosis (two per regressed query): filled
# through their slots' setters (:mod:`spanchor_core._fill`), a fifth of the constructors' time.
_RESULT_SETTERS: Final = slot_setters(LocatedResult, (*_RESULT_ORDER, "resolved_by", "reason"))
_QUERY_SETTERS: Final = slot_setters(
    QueryEvaluation,
    ("query_id", "metrics", "status", "gold", "results", "mapping", "error", "traces"),
)


def _located(results: list[dict[str, Any]]) -> tuple[LocatedResult, ...]:
    """``LocatedResult(*r.values())`` of each result (its members in our writer's order and
    of its types, as checked when read), ``resolved_by`` and ``reason`` ``None``."""
    k = len(results)
    if not k:
        return ()
    columns = [*zip(*map(dict.values, results), strict=True), repeat(None), repeat(None)]
    return tuple(fill(LocatedResult, _RESULT_SETTERS, columns, k))


_FORK_BYTES: Final = 4 << 20
"""Query lines of at least this many bytes are matched half on a forked child."""
_Part: TypeAlias = (
    "tuple[list[str], list[QueryStatus], list[str | None], array[float], array[int], array[int]]"
)
"""What a child matched: ids, statuses, errors, metric values, gold and line-end positions."""


def _halfway(buffer: bytes, stop: int) -> int:
    """The start of the first line after the middle of ``buffer[:stop]``, or 0 for none."""
    split = buffer.find(b"\n", stop // 2, stop) + 1
    return split if 0 < split < stop else 0


def _matched_part(names: tuple[str, ...], buffer: bytes, start: int, stop: int) -> _Part | None:
    """On the child: the plain members of the lines of ``buffer[start:stop]``, or ``None``."""
    columns = _Columns(names)
    found = columns._match(buffer, start, stop)
    if found is None:
        return None
    return columns.ids, columns.statuses, columns.errors, columns.values, *found
