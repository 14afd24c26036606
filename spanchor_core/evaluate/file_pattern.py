"""The pattern of a query line as our writer writes it in the usual case (:data:`PLAIN_LINE`,
and :data:`BUFFER_LINE` for the same line where it stands in a file): what it matches parses
with orjson to a plain query, so the columnar reader (:mod:`.file_columns`) can keep the rest
of a matched line as text and parse it only when its query is built."""

from __future__ import annotations

import re
from typing import Final

from spanchor_core.evaluate.file_queries import _STATUSES
from spanchor_core.evaluate.model import _STATUSES as _MATCH_STATUSES

__all__ = ["BUFFER_LINE", "PLAIN_LINE"]


def _plain_line_pattern(*, in_buffer: bool = False) -> re.Pattern[bytes]:
    """A query line as our writer writes it in the usual case, member by member: strings of
    ASCII without escapes or control characters, whole numbers of at most 18 digits, floats
    without a huge exponent, every mapping count in ``MatchStatus`` order, no traces.

    Groups: the id, the status, the error (``None`` for ``null``), the metrics object (up to
    its first ``}``: scanning for one character is the fast loop of the regex engine;
    :meth:`_Columns.add_matched` refuses escapes and non-ASCII in the joined objects, and a
    nested value fails its parse or its type check) and the rest of the line from ``"gold"``
    on. What it matches, and
    ``add_matched`` keeps, parses with orjson to what :meth:`_Columns.add` accepts, so the
    rest of a line is parsed only for the queries that are built.

    ``in_buffer``: the same line as it stands in the file, for ``finditer`` over the query
    lines (:meth:`_Columns.add_buffer`): the indentation (spaces) before it, an optional
    comma and the newline after it; group 5 is empty, at ``"gold"``, so that the rest of the
    line is found by position instead of being copied."""
    text = rb'"[^"\\\x00-\x1f\x80-\xff]*+"'
    whole = rb"-?+(?:0|[1-9][0-9]{0,17}+)"
    # a float, never ``inf`` when parsed: at most 20 digits before the point, a 2-digit exponent
    real = (
        rb"-?+(?:0|[1-9][0-9]{0,19}+)"
        rb"(?:\.[0-9]++(?:[eE][+-]?+[0-9]{1,2}+)?+|[eE][+-]?+[0-9]{1,2}+)"
    )
    number = rb"(?:" + real + rb"|" + whole + rb")"

    def array_of(item: bytes) -> bytes:
        return rb"\[(?:" + item + rb"(?:, " + item + rb")*+)?+\]"

    span = rb'\{"document_id": ' + text + rb', "start": ' + whole + rb', "end": ' + whole + rb"\}"
    result = (
        rb'\{"rank": ' + whole + rb', "status": ' + text
        + rb', "document_id": (?:null|' + text + rb")"
        + rb', "start": (?:null|' + whole + rb'), "end": (?:null|' + whole + rb")"
        + rb', "confidence": ' + real + rb', "hint_rejected": (?:true|false)\}'
    )  # fmt: skip
    counts = b", ".join(b'"' + re.escape(s.encode()) + b'": ' + whole for s in _MATCH_STATUSES)
    mapping = (
        rb'\{"counts": \{' + counts + rb'\}, "hint_rejected": ' + whole
        + rb', "total": ' + whole + rb', "unmapped_rate": ' + number + rb"\}"
    )  # fmt: skip
    statuses = b"|".join(re.escape(s.encode()) for s in sorted(_STATUSES, key=len, reverse=True))
    tail = (
        rb'"gold": ' + array_of(span) + rb', "mapping": ' + mapping
        + rb', "results": ' + array_of(result) + rb"\}"
    )  # fmt: skip
    return re.compile(
        (rb" *+" if in_buffer else b"")
        + rb'\{"query_id": "([^"\\\x00-\x1f\x80-\xff]*+)", "status": "(' + statuses + rb')", '
        rb'"error": (?:null|"([^"\\\x00-\x1f\x80-\xff]*+)"), '
        rb'"metrics": (\{[^}]*+\}), '
        + (rb"()" + tail + rb",?+\n" if in_buffer else rb"(" + tail + rb")")
    )  # fmt: skip


PLAIN_LINE: Final = _plain_line_pattern()
"""Our writer's usual query line (:func:`_plain_line_pattern`); ``fullmatch`` it."""
BUFFER_LINE: Final = _plain_line_pattern(in_buffer=True)
"""The same line with its indentation, comma and newline, for ``finditer`` over a file."""
