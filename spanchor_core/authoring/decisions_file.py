"""The review decisions file (``spanchor gold review --decisions FILE``): many decisions, written
by hand or by a script, applied in one pass by :func:`~.review.review_candidates`.

Two shapes, told apart by the file's name (never by sniffing its bytes):

* ``.jsonl`` (or ``.ndjson``): one JSON object a line, e.g.
  ``{"candidate_id": "manual#3", "decision": "approve", "question": "How hot?"}``;
* ``.csv``: a header row naming the columns, then one decision a row; an empty cell is a
  field not given.

The fields are those of :class:`~.review.ReviewDecision`: ``candidate_id`` and ``decision``
(``approve``, ``reject`` or ``edit``) on every line; ``question``, ``reason``, ``edited_text``,
``start`` and ``end`` where needed. The other fields a ``gold list --json`` line holds are
taken too, so that such a line with a ``decision`` added is a decision: ``document_id`` and
``status`` are ignored, and ``text`` must still be the candidate's text (see
:attr:`~.review.ReviewDecision.listed_text`).

Reading checks every line and returns one error per bad line (``file:line: what; what to
do``) rather than stopping at the first, so that one pass shows everything to fix.
"""

from __future__ import annotations

import csv
import difflib
import io
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final, Literal

from spanchor_core._io import jsonl_lines, loads_strict, open_for_reading, read_text
from spanchor_core.authoring.review import ReviewDecision
from spanchor_core.errors import GoldError, InputError

__all__ = ["DECISION_FIELDS", "LISTED_FIELDS", "read_decisions"]

DECISION_FIELDS: Final = (
    "candidate_id",
    "decision",
    "question",
    "reason",
    "edited_text",
    "start",
    "end",
)
"""The fields (JSONL keys, CSV columns) of a decision."""

LISTED_FIELDS: Final = ("document_id", "status", "text")
"""Fields of a ``gold list --json`` line that a decision may keep (``text`` is checked)."""

_DECISIONS: Final = ("approve", "reject", "edit")
_TEXT_FIELDS: Final = ("question", "reason", "edited_text")
_WHAT = "decisions file"


def _suggestion(given: str, choices: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(given, choices, n=1)
    return f"did you mean {close[0]!r}? " if close else ""


def _decision(values: Mapping[str, Any], path: Path, line: int, csv_cells: bool) -> ReviewDecision:
    """One decision from a line's fields (a JSON object, or a CSV row's non-empty cells)."""
    for key in values:
        if key not in DECISION_FIELDS and key not in LISTED_FIELDS:
            raise GoldError(
                f"unknown field {key!r}",
                path=path,
                line=line,
                hint=f"{_suggestion(key, DECISION_FIELDS)}the fields are "
                f"{', '.join(DECISION_FIELDS)}",
            )
    candidate_id = values.get("candidate_id")
    if not isinstance(candidate_id, str) or not candidate_id.strip():
        raise GoldError(
            "no candidate_id" if candidate_id is None else "candidate_id must be non-empty text",
            path=path,
            line=line,
            hint="give the id of the candidate (see `spanchor gold list`)",
        )
    decision = values.get("decision")
    choices = ", ".join(_DECISIONS)
    if decision is None:
        raise GoldError("no decision", path=path, line=line, hint=f"give decision {choices}")
    shown = decision.strip().lower() if isinstance(decision, str) else decision
    if shown not in _DECISIONS:
        close = _suggestion(shown, _DECISIONS) if isinstance(shown, str) else ""
        raise GoldError(
            f"decision {decision!r} is not one of {choices}",
            path=path,
            line=line,
            hint=f"{close}approve and reject set the status; edit changes only the question, "
            "the reason or the span",
        )
    texts: dict[str, str | None] = {}
    for name in (*_TEXT_FIELDS, "text"):
        value = values.get(name)
        if value is not None and not isinstance(value, str):
            raise GoldError(
                f"field {name!r} must be text, got {value!r}",
                path=path,
                line=line,
                hint="quote it as a JSON string",
            )
        texts[name] = value
    offsets: dict[str, int | None] = {}
    for name in ("start", "end"):
        value = values.get(name)
        if csv_cells and isinstance(value, str):
            value = int(value.strip()) if value.strip().isdigit() else value
        if value is not None and (type(value) is not int or value < 0):
            raise GoldError(
                f"field {name!r} must be a character offset (a whole number from 0), got {value!r}",
                path=path,
                line=line,
                hint="take the offsets from `spanchor locate` or `spanchor gold list --json`",
            )
        offsets[name] = value
    kind: Literal["approve", "reject", "edit"] = shown  # type: ignore[assignment]
    return ReviewDecision(
        candidate_id,
        kind,
        texts["question"],
        texts["reason"],
        texts["edited_text"],
        offsets["start"],
        offsets["end"],
        line,
        texts["text"],
    )


def _jsonl_fields(path: Path) -> Iterator[tuple[int, Mapping[str, Any] | GoldError]]:
    with open_for_reading(path, error=GoldError, what=_WHAT) as handle:
        for item in jsonl_lines(handle, path, error=GoldError):
            try:
                data = loads_strict(
                    item.text,
                    path=path,
                    line=item.number,
                    error=GoldError,
                    text_only=True,
                    hint="each line must be one JSON object, e.g. "
                    '{"candidate_id": "manual#3", "decision": "reject"}',
                )
            except GoldError as err:
                yield item.number, err
                continue
            if not isinstance(data, dict):
                yield (
                    item.number,
                    GoldError(
                        f"expected a JSON object, found {type(data).__name__}",
                        path=path,
                        line=item.number,
                        hint='each line is one decision, e.g. {"candidate_id": "manual#3", '
                        '"decision": "reject"}',
                    ),
                )
                continue
            yield item.number, data


def _check_header(header: list[str], path: Path, line: int) -> None:
    """GoldError when a CSV header names a column twice, an unknown one, or lacks one needed."""
    for name in header:
        if name not in DECISION_FIELDS and name not in LISTED_FIELDS:
            raise GoldError(
                f"unknown column {name!r}" if name else "a column without a name",
                path=path,
                line=line,
                hint=f"{_suggestion(name, DECISION_FIELDS)}the columns are "
                f"{', '.join(DECISION_FIELDS)}",
            )
        if header.count(name) > 1:
            raise GoldError(
                f"column {name!r} appears twice in the header",
                path=path,
                line=line,
                hint="name each column once",
            )
    for needed in ("candidate_id", "decision"):
        if needed not in header:
            raise GoldError(
                f"no {needed} column",
                path=path,
                line=line,
                hint="the first row names the columns, e.g. candidate_id,decision,question",
            )


def _csv_fields(path: Path) -> Iterator[tuple[int, Mapping[str, Any] | GoldError]]:
    text = read_text(path, error=GoldError, what=_WHAT)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] | None = None
    line = 1
    try:
        for row in reader:
            first, line = line, reader.line_num + 1
            if not any(cell.strip() for cell in row):
                continue
            if header is None:
                header = [cell.strip() for cell in row]
                _check_header(header, path, first)
                continue
            if len(row) > len(header):
                yield (
                    first,
                    GoldError(
                        f"{len(row)} cells, but the header names {len(header)} columns",
                        path=path,
                        line=first,
                        hint="quote cells that hold a comma",
                    ),
                )
                continue
            yield first, {name: cell for name, cell in zip(header, row, strict=False) if cell}
    except csv.Error as err:
        raise GoldError(
            f"not valid CSV: {err}", path=path, line=line, hint="check the quoting"
        ) from None


def read_decisions(
    path: str | os.PathLike[str],
) -> tuple[list[ReviewDecision], list[GoldError]]:
    """The decisions of a decisions file and one error per bad line (``path:line``), in file
    order. A file that cannot be read at all (missing, not UTF-8, not CSV, no decision in it,
    a name that says neither JSONL nor CSV) raises :class:`~spanchor_core.errors.GoldError`."""
    source = Path(path)
    suffix = source.suffix.lower()
    if suffix == ".csv":
        rows = _csv_fields(source)
    elif suffix in (".jsonl", ".ndjson"):
        rows = _jsonl_fields(source)
    else:
        raise GoldError(
            "cannot tell whether the decisions file is JSONL or CSV",
            path=source,
            hint="name it .jsonl (one JSON object a line) or .csv (a header row, then one "
            "decision a row)",
        )
    decisions: list[ReviewDecision] = []
    problems: list[GoldError] = []
    for number, fields in rows:
        if isinstance(fields, InputError):
            problems.append(GoldError(fields.message, path=source, line=number, hint=fields.hint))
            continue
        try:
            decisions.append(_decision(fields, source, number, suffix == ".csv"))
        except GoldError as err:
            problems.append(err)
    if not decisions and not problems:
        raise GoldError(
            "no decisions in the file",
            path=source,
            hint="write one decision a line: candidate_id, decision (approve, reject or edit)",
        )
    return decisions, problems
