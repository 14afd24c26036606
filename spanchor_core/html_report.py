"""HTML reports: a comparison or an evaluation as one self-contained page, with its charts.

:func:`comparison_html` and :func:`evaluation_html` return a whole HTML document — inline CSS,
charts drawn as inline SVG by the small helpers below, no JavaScript, no external URL — that
opens offline in any browser and can be attached to a CI run as a single file.
:func:`comparison_summary_html` and :func:`evaluation_summary_html` return a compact fragment
for notebooks (``Comparison._repr_html_`` and ``Evaluation._repr_html_`` use them).
:func:`query_deltas` and :func:`metric_curve` are the data behind the charts, shared with the
optional matplotlib helpers in :mod:`spanchor_core.plots`.

Everything a user wrote (questions, document text, ids, retriever descriptions, messages) is
HTML-escaped. ``redact=True`` removes questions, evidence and context text, retriever error
messages and unresolved query texts; ids and numbers stay. Output depends only on the inputs
(no timestamps), so two renders of the same comparison are byte-identical.
"""

from __future__ import annotations

import html
import itertools
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal, NamedTuple

from spanchor_core._io import atomic_write
from spanchor_core._version import __version__
from spanchor_core.compare import ChangeStatus, Comparison, QueryChange
from spanchor_core.corpus import Corpus
from spanchor_core.errors import InputError
from spanchor_core.evaluate import Evaluation, MappingStats, QueryEvaluation
from spanchor_core.gold import GoldSet
from spanchor_core.metrics import metric_parts
from spanchor_core.reports import lost_evidence
from spanchor_core.spans import (
    DocSpan,
    Span,
    group_by_document,
    intersect_spans,
    subtract_spans,
    union_spans,
)

__all__ = [
    "DEFAULT_CONTEXT_CHARS",
    "DEFAULT_HTML_LIMIT",
    "DELTA_COLOURS",
    "SERIES_COLOURS",
    "DeltaKind",
    "QueryDelta",
    "comparison_html",
    "comparison_summary_html",
    "evaluation_html",
    "evaluation_summary_html",
    "metric_curve",
    "primary_metric",
    "query_deltas",
    "write_html",
]

DEFAULT_HTML_LIMIT: Final = 200
"""Rows, bars and sections a page shows before it says "… and N more". A browser copes with
more, but a page listing 10,000 queries is not read either."""
DEFAULT_CONTEXT_CHARS: Final = 100
"""Characters of the document shown on each side of lost evidence (about 200 around it)."""
_PIECES: Final = 3
"""Pieces of evidence shown in context per query; the rest are listed by offsets."""
_SEGMENT_CAP: Final = 600
"""A highlighted stretch longer than this shows its head and tail around a "…" marker."""
_SUMMARY_BARS: Final = 30
"""Bars in the notebook summary's delta plot."""
_DASH: Final = "–"

DeltaKind = Literal["regressed", "flaky", "worse", "unchanged", "better", "improved"]

DELTA_COLOURS: Final[Mapping[str, str]] = {
    "regressed": "#c62828",
    "flaky": "#ef6c00",
    "worse": "#ef9a9a",
    "unchanged": "#9e9e9e",
    "better": "#a5d6a7",
    "improved": "#2e7d32",
}
"""Bar colour per :data:`DeltaKind`: strong red/green for gate verdicts, pale for moves the
gate let through, grey for no change (beyond the noise floor)."""
_DELTA_LEGEND: Final = (
    ("regressed", "regressed (fails the gate)"),
    ("flaky", "regressed, allow-listed flaky"),
    ("worse", "worse, within the allowed drop"),
    ("unchanged", "unchanged"),
    ("better", "better, below the noise floor"),
    ("improved", "improved"),
)
SERIES_COLOURS: Final = ("#1565c0", "#e65100", "#6a1b9a", "#00838f", "#5d4037", "#ad1457")
"""Line colours of the recall-vs-K curves, in series order (blue for the baseline, orange for
the candidate: distinguishable with the common colour-vision deficiencies)."""


# -- escaping and small formatting --------------------------------------------------------------

# C0/C1 control characters other than tab and newline are not allowed in HTML text; a browser
# would show them as boxes or drop them, a strict parser would complain.
_CONTROL: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _esc(text: str) -> str:
    """``text`` as inert HTML text or attribute value (quotes included)."""
    return html.escape(_CONTROL.sub("\ufffd", text), quote=True)


def _fmt(value: float | None, spec: str = ".3f") -> str:
    if value is None or not math.isfinite(value):
        return _DASH
    return format(value, spec)


def _delta(value: float | None) -> str:
    return _fmt(value, "+.3f")


def _percent(value: float) -> str:
    return f"{100.0 * value:.1f}%"


def _num(value: float) -> str:
    """An SVG coordinate: one decimal, no ``-0.0``."""
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text


def _retriever(evaluation: Evaluation | None) -> str | None:
    """The retriever description a run header names, if any."""
    header = None if evaluation is None else evaluation.settings.run_header
    retriever = header.get("retriever") if isinstance(header, Mapping) else None
    description = retriever.get("description") if isinstance(retriever, Mapping) else None
    return description if isinstance(description, str) and description else None


def _retriever_parameters(evaluation: Evaluation) -> str | None:
    header = evaluation.settings.run_header
    retriever = header.get("retriever") if isinstance(header, Mapping) else None
    parameters = retriever.get("parameters") if isinstance(retriever, Mapping) else None
    if not isinstance(parameters, Mapping) or not parameters:
        return None
    text = json.dumps(parameters, sort_keys=True, ensure_ascii=False, default=str)
    return text if len(text) <= 200 else text[:199] + "…"


def _check_limit(value: int, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{name} must be a whole number of at least 1, not {value!r}")


def _more(shown: int, total: int, what: str = "") -> str:
    return f"… and {total - shown} more{' ' + what if what else ''}"


def _question(gold: GoldSet | None, query_id: str, redact: bool) -> str | None:
    if redact or gold is None or query_id not in gold:
        return None
    return gold[query_id].question


def _table(
    header: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[bool] = ()
) -> str:
    """A table of already-escaped cells; ``numeric[i]`` right-aligns column ``i``."""

    def cls(i: int) -> str:
        return ' class="num"' if i < len(numeric) and numeric[i] else ""

    head = "".join(f"<th{cls(i)}>{cell}</th>" for i, cell in enumerate(header))
    body = "".join(
        "<tr>" + "".join(f"<td{cls(i)}>{cell}</td>" for i, cell in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _ids(items: Sequence[str], limit: int) -> str:
    shown = ", ".join(f"<code>{_esc(item)}</code>" for item in items[:limit])
    return shown if len(items) <= limit else f"{shown} {_more(limit, len(items))}"


# -- the data behind the charts -------------------------------------------------------------------


def primary_metric(comparison: Comparison) -> str | None:
    """The metric the charts show: the first one the policy gates per query (in the policy's
    order), else the first gated on its mean, else the first aggregate row; ``None`` if the
    comparison has no metric at all."""
    for name in comparison.policy.max_drop:
        return name
    for name in comparison.policy.aggregate:
        return name
    for row in comparison.aggregates:
        return row.metric
    for query in comparison.queries:
        for change in query.changes:
            return change.metric
    return None


class QueryDelta(NamedTuple):
    """One bar of the per-query delta plot."""

    query_id: str
    baseline: float
    candidate: float
    delta: float
    """``candidate - baseline`` (0.0 within the noise floor), as the comparison recorded it."""
    kind: DeltaKind


def _direction(comparison: Comparison, metric: str) -> str:
    for row in comparison.aggregates:
        if row.metric == metric:
            return row.direction
    return comparison.policy.directions.get(metric, "higher")


def _kind(row: QueryChange, metric: str, gain: float) -> DeltaKind:
    status = row.change(metric).status
    if metric in row.regressed:
        return "flaky" if row.flaky else "regressed"
    if status is ChangeStatus.IMPROVED:
        return "improved"
    if gain < 0:
        return "worse"
    return "better" if gain > 0 else "unchanged"


def query_deltas(comparison: Comparison, metric: str | None = None) -> list[QueryDelta]:
    """Every compared query's change in ``metric`` (default :func:`primary_metric`), the worst
    first — the order of the bars, top to bottom.

    "Worst" follows the metric's direction: a rise is worst for a lower-is-better metric. Ties
    are broken by query id. Raises :class:`InputError` when ``metric`` was not compared.
    """
    name = metric if metric is not None else primary_metric(comparison)
    if name is None:
        raise InputError("the comparison has no metric to plot")
    sign = 1.0 if _direction(comparison, name) == "higher" else -1.0
    rows: list[tuple[float, str, QueryDelta]] = []
    for row in comparison.queries:
        try:
            change = row.change(name)
        except KeyError:
            continue
        gain = sign * change.delta
        kind = _kind(row, name, gain)
        rows.append(
            (
                gain,
                row.query_id,
                QueryDelta(row.query_id, change.baseline, change.candidate, change.delta, kind),
            )
        )
    if comparison.queries and not rows:
        compared = sorted({c.metric for row in comparison.queries for c in row.changes})
        raise InputError(
            f"metric {name!r} was not compared; compared: {', '.join(compared) or 'none'}"
        )
    rows.sort(key=lambda item: (item[0], item[1]))
    return [item[2] for item in rows]


def _cutoffs(evaluation: Evaluation, base: str) -> list[int]:
    found = []
    for name in evaluation.metric_names:
        metric, cutoff = metric_parts(name)
        if metric == base and cutoff is not None:
            found.append(cutoff)
    return sorted(set(found))


def metric_curve(
    evaluation: Evaluation,
    base: str = "recall",
    *,
    ks: Sequence[int] | None = None,
    query_ids: Iterable[str] | None = None,
) -> list[tuple[int, float]]:
    """``[(K, mean of base@K)]`` for every K the evaluation has (or those of ``ks`` it has).

    ``query_ids`` restricts the mean to those queries (a comparison's compared queries, so
    that the curves agree with its aggregates); by default every scored query counts. A K with
    no query to average is left out.
    """
    available = _cutoffs(evaluation, base)
    wanted = available if ks is None else [k for k in sorted(set(ks)) if k in available]
    ids = list(evaluation) if query_ids is None else [q for q in query_ids if q in evaluation]
    points = []
    for k in wanted:
        values = [evaluation[qid].metrics[f"{base}@{k}"] for qid in ids]
        if values:
            points.append((k, math.fsum(values) / len(values)))
    return points


# -- SVG helpers ----------------------------------------------------------------------------------
# Charts are drawn at a fixed size in pixels (viewBox equal to the size, width capped at 100% by
# the CSS, so they shrink on narrow screens). Text uses currentColor so it follows the page's
# (or the notebook theme's) text colour.

_FONT: Final = 12
_CHAR_W: Final = 7.3
"""Width of one character of the 12 px monospace font the query-id labels use."""


def _nice_step(span: float, target: int) -> float:
    raw = span / max(1, target)
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        if raw <= factor * power * (1 + 1e-9):
            return factor * power
    return 10.0 * power


def _ticks(lo: float, hi: float, target: int = 6) -> list[float]:
    """Round tick values covering ``[lo, hi]`` (which must not be empty)."""
    step = _nice_step(hi - lo, target)
    first = math.floor(lo / step + 1e-9) * step
    last = math.ceil(hi / step - 1e-9) * step
    count = round((last - first) / step)
    return [round(first + i * step, 10) + 0.0 for i in range(count + 1)]


def _tick_label(value: float) -> str:
    text = f"{value:+.2f}".rstrip("0").rstrip(".") if value else "0"
    return text if text not in ("+", "-") else "0"


def _svg(width: float, height: float, label: str, body: Sequence[str]) -> str:
    return (
        f'<svg class="chart" width="{_num(width)}" height="{_num(height)}" '
        f'viewBox="0 0 {_num(width)} {_num(height)}" role="img" aria-label="{_esc(label)}" '
        f'font-size="{_FONT}">'
        f"<title>{_esc(label)}</title>" + "".join(body) + "</svg>"
    )


def _text(x: float, y: float, text: str, *, anchor: str = "start", extra: str = "") -> str:
    return (
        f'<text x="{_num(x)}" y="{_num(y)}" text-anchor="{anchor}" fill="currentColor"'
        f"{(' ' + extra) if extra else ''}>{_esc(text)}</text>"
    )


def _line(x1: float, y1: float, x2: float, y2: float, stroke: str, extra: str = "") -> str:
    return (
        f'<line x1="{_num(x1)}" y1="{_num(y1)}" x2="{_num(x2)}" y2="{_num(y2)}" '
        f'stroke="{stroke}"{(" " + extra) if extra else ""}/>'
    )


def _clip_label(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


_LABEL_CHARS: Final = 24


def _delta_rows(deltas: Sequence[QueryDelta]) -> list[QueryDelta | list[QueryDelta]]:
    """Bars in order, with the run of unchanged queries folded into one row: a row per query
    that did not move buries the ones that did."""
    rows: list[QueryDelta | list[QueryDelta]] = []
    for d in deltas:
        if d.kind != "unchanged":
            rows.append(d)
        elif rows and isinstance(rows[-1], list):
            rows[-1].append(d)
        else:
            rows.append([d])
    return rows


def _unchanged_label(count: int) -> str:
    return f"{count} unchanged"


def _delta_svg(
    deltas: Sequence[QueryDelta],
    metric: str,
    *,
    width: int = 900,
    gold: GoldSet | None = None,
    redact: bool = False,
) -> str:
    """Horizontal bars from a zero line, one per query that moved (left is a drop, right a
    rise), and one grey row counting the queries that did not."""
    rows = _delta_rows(deltas)
    labels = [
        _clip_label(row.query_id, _LABEL_CHARS)
        if isinstance(row, QueryDelta)
        else _unchanged_label(len(row))
        for row in rows
    ]
    label_w = max((len(label) for label in labels), default=4) * _CHAR_W + 14
    value_w = 60.0
    left, right = label_w, width - value_w
    row_h, top, axis_h = 18.0, 6.0, 40.0
    bottom = top + row_h * len(rows)
    height = bottom + axis_h
    values = [d.delta for d in deltas]
    lo, hi = min([0.0, *values]), max([0.0, *values])
    if hi - lo < 1e-12:
        lo, hi = -1.0, 1.0
    ticks = _ticks(lo, hi)
    lo, hi = ticks[0], ticks[-1]

    def x(value: float) -> float:
        return left + (value - lo) / (hi - lo) * (right - left)

    body: list[str] = []
    for i in range(0, len(rows), 2):  # zebra stripes guide the eye from label to bar
        body.append(
            f'<rect x="0" y="{_num(top + i * row_h)}" width="{width}" height="{_num(row_h)}" '
            f'fill="currentColor" fill-opacity="0.05"/>'
        )
    for tick in ticks:
        body.append(_line(x(tick), top, x(tick), bottom + 4, "#bdbdbd", 'stroke-width="1"'))
        body.append(_text(x(tick), bottom + 17, _tick_label(tick), anchor="middle"))
    body.append(
        _text(
            (left + right) / 2,
            bottom + 34,
            f"Δ {metric} (candidate − baseline)",
            anchor="middle",
            extra='font-weight="600"',
        )
    )
    zero = x(0.0)
    mono = 'font-family="ui-monospace, SFMono-Regular, Menlo, Consolas, monospace"'
    for i, (row, label) in enumerate(zip(rows, labels, strict=True)):
        y = top + i * row_h
        if isinstance(row, list):
            listed = ", ".join(d.query_id for d in row[:50])
            more = f" {_more(50, len(row))}" if len(row) > 50 else ""
            body.append(
                f'<g class="unchanged" data-count="{len(row)}">'
                f"<title>{_esc(f'unchanged: {listed}{more}')}</title>"
                f'<rect x="{_num(zero - 1.5)}" y="{_num(y + 3)}" width="3" '
                f'height="{_num(row_h - 6)}" fill="{DELTA_COLOURS["unchanged"]}"/>'
                + _text(label_w - 8, y + 13, label, anchor="end", extra='font-style="italic"')
                + _text(width - 6, y + 13, "0", anchor="end")
                + "</g>"
            )
            continue
        bar_x, bar_w = min(x(row.delta), zero), max(abs(x(row.delta) - zero), 1.0)
        tip = (
            f"{row.query_id}: {metric} {_fmt(row.baseline)} → {_fmt(row.candidate)} "
            f"({_delta(row.delta)}), {row.kind}"
        )
        question = _question(gold, row.query_id, redact)
        if question:
            tip += f"\n{question}"
        body.append(
            f'<g class="bar" data-query="{_esc(row.query_id)}" data-delta="{row.delta!r}" '
            f'data-kind="{row.kind}"><title>{_esc(tip)}</title>'
            f'<rect x="{_num(bar_x)}" y="{_num(y + 3)}" width="{_num(bar_w)}" '
            f'height="{_num(row_h - 6)}" fill="{DELTA_COLOURS[row.kind]}"/>'
            + _text(label_w - 8, y + 13, label, anchor="end", extra=mono)
            + _text(width - 6, y + 13, _delta(row.delta), anchor="end")
            + "</g>"
        )
    body.append(_line(zero, top - 2, zero, bottom + 4, "currentColor", 'stroke-width="1.5"'))
    label = f"Per-query change in {metric}, worst first ({len(deltas)} queries)"
    return _svg(width, height, label, body)


def _curve_svg(
    series: Sequence[tuple[str, Sequence[tuple[int, float]]]],
    metric: str,
    *,
    width: int = 370,
    height: int = 250,
) -> str:
    """Mean ``metric@K`` against K (evenly spaced), one line per series, y from 0 to 1."""
    left, right, top, bottom = 46.0, width - 14.0, 12.0, height - 42.0
    ks = sorted({k for _, points in series for k, _ in points})
    values = [v for _, points in series for _, v in points]
    y_hi = 1.0 if not values or max(values) <= 1.0 else _ticks(0.0, max(values))[-1]
    y_ticks = _ticks(0.0, y_hi, 5)

    def x(k: int) -> float:
        if len(ks) == 1:
            return (left + right) / 2
        pad = (right - left) * 0.06
        return left + pad + ks.index(k) / (len(ks) - 1) * (right - left - 2 * pad)

    def y(value: float) -> float:
        return bottom - value / y_ticks[-1] * (bottom - top)

    body: list[str] = []
    for tick in y_ticks:
        body.append(_line(left, y(tick), right, y(tick), "#e0e0e0"))
        body.append(_text(left - 6, y(tick) + 4, f"{tick:g}", anchor="end"))
    body.append(_line(left, bottom, right, bottom, "currentColor"))
    body.append(_line(left, top, left, bottom, "currentColor"))
    for k in ks:
        body.append(_line(x(k), bottom, x(k), bottom + 4, "currentColor"))
        body.append(_text(x(k), bottom + 17, str(k), anchor="middle"))
    body.append(
        _text(
            (left + right) / 2,
            bottom + 34,
            "K (results considered)",
            anchor="middle",
            extra='font-weight="600"',
        )
    )
    body.append(
        _text(
            12,
            (top + bottom) / 2,
            f"mean {metric}@K",
            anchor="middle",
            extra=f'font-weight="600" transform="rotate(-90 12 {_num((top + bottom) / 2)})"',
        )
    )
    for index, (name, points) in enumerate(series):
        colour = SERIES_COLOURS[index % len(SERIES_COLOURS)]
        dash = ' stroke-dasharray="6 4"' if index == 0 and len(series) > 1 else ""
        coords = " ".join(f"{_num(x(k))},{_num(y(v))}" for k, v in points)
        body.append(
            f'<g class="series" data-series="{_esc(name)}">'
            f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2.5"'
            f"{dash}/>"
            + "".join(
                f'<circle cx="{_num(x(k))}" cy="{_num(y(v))}" r="4" fill="{colour}">'
                f"<title>{_esc(f'{name}: mean {metric}@{k} = {v:.3f}')}</title></circle>"
                for k, v in points
            )
            + "</g>"
        )
    label = f"Mean {metric}@K against K: " + ", ".join(name for name, _ in series)
    return _svg(width, height, label, body)


def _ci_svg(low: float, delta: float, high: float, scale: float, colour: str) -> str:
    """A tiny forest-plot cell: the mean delta as a dot, its interval as a whisker."""
    width, height, pad = 170.0, 22.0, 8.0

    def x(value: float) -> float:
        return pad + (value + scale) / (2 * scale) * (width - 2 * pad)

    mid = height / 2
    body = [
        _line(x(0.0), 2, x(0.0), height - 2, "#9e9e9e"),
        _line(x(low), mid, x(high), mid, colour, 'stroke-width="2"'),
        _line(x(low), mid - 5, x(low), mid + 5, colour, 'stroke-width="2"'),
        _line(x(high), mid - 5, x(high), mid + 5, colour, 'stroke-width="2"'),
        f'<circle cx="{_num(x(delta))}" cy="{_num(mid)}" r="4" fill="{colour}"/>',
    ]
    label = f"mean delta {_delta(delta)}, interval [{_delta(low)}, {_delta(high)}]"
    return _svg(width, height, label, body).replace('class="chart"', 'class="ci"', 1)


# -- evidence in its source context -------------------------------------------------------------


def _top_k(query: QueryEvaluation, k: int | None) -> Mapping[str, list[Span]]:
    return group_by_document(
        span
        for result in query.results
        if (k is None or result.rank <= k) and (span := result.span) is not None
    )


def _snap_start(text: str, start: int, limit: int) -> int:
    """Move a window start forward to the next word boundary (at most ``limit`` characters)."""
    if start <= 0:
        return 0
    for i in range(start, min(start + 20, limit)):
        if text[i - 1].isspace():
            return i
    return start


def _snap_end(text: str, end: int, limit: int) -> int:
    if end >= len(text):
        return len(text)
    for i in range(end, max(end - 20, limit), -1):
        if text[i].isspace():
            return i
    return end


@dataclass(frozen=True, slots=True)
class _Marks:
    """The three kinds of highlighted characters of one document."""

    lost: list[Span]
    """Shown in <mark>: what the reader must look at."""
    kept: list[Span]
    """Gold the retriever still finds."""
    gold: list[Span]
    """All gold (what is neither lost nor kept shows as gold not found on either side)."""


def _inside(position: int, spans: Sequence[Span]) -> bool:
    return any(start <= position < end for start, end in spans)


def _segment(text: str, kind: str) -> str:
    if len(text) > _SEGMENT_CAP:
        half = _SEGMENT_CAP // 2
        cut = len(text) - 2 * half
        text_html = (
            _esc(text[:half])
            + f'<span class="elided"> … {cut} characters … </span>'
            + _esc(text[-half:])
        )
    else:
        text_html = _esc(text)
    if kind == "lost":
        return f'<mark class="lost">{text_html}</mark>'
    if kind in ("kept", "gold"):
        return f'<span class="{kind}">{text_html}</span>'
    return text_html


def _window_html(text: str, start: int, end: int, marks: _Marks) -> str:
    cuts = {start, end}
    for spans in (marks.lost, marks.kept, marks.gold):
        for a, b in spans:
            cuts.update(point for point in (a, b) if start < point < end)
    points = sorted(cuts)
    parts = ["…" if start > 0 else ""]
    for a, b in itertools.pairwise(points):
        if _inside(a, marks.lost):
            kind = "lost"
        elif _inside(a, marks.kept):
            kind = "kept"
        elif _inside(a, marks.gold):
            kind = "gold"
        else:
            kind = "plain"
        parts.append(_segment(text[a:b], kind))
    parts.append("…" if end < len(text) else "")
    return "".join(parts)


def _where(spans: Sequence[DocSpan]) -> str:
    return ", ".join(f"<code>{_esc(s.document_id)}[{s.start}:{s.end}]</code>" for s in spans)


def _context_html(
    corpus: Corpus | None,
    focus: Sequence[DocSpan],
    marks: Mapping[str, _Marks],
    *,
    redact: bool,
    context_chars: int,
) -> str:
    """Each piece of ``focus`` inside a block of its document, ``context_chars`` either side.

    Pieces whose windows overlap share one block; blocks beyond the first few are listed by
    offsets. Without a corpus, or redacted, only offsets are shown.
    """
    if not focus:
        return ""
    if redact or corpus is None:
        reason = "text redacted" if redact else "pass the corpus to see the text"
        cap = 4 * _PIECES
        shown = _where(focus[:cap]) + (f" {_more(cap, len(focus))}" if len(focus) > cap else "")
        return f'<p class="offsets">{shown} <span class="muted">({reason})</span></p>'
    windows: list[tuple[str, int, int]] = []
    absent: list[DocSpan] = []
    for span in focus:
        if span.document_id not in corpus:
            absent.append(span)
            continue
        text = corpus.text(span.document_id)
        a = _snap_start(text, max(0, span.start - context_chars), span.start)
        b = _snap_end(text, min(len(text), span.end + context_chars), span.end)
        if windows and windows[-1][0] == span.document_id and a <= windows[-1][2]:
            windows[-1] = (span.document_id, windows[-1][1], max(b, windows[-1][2]))
        else:
            windows.append((span.document_id, a, b))
    blocks = []
    for document_id, a, b in windows[:_PIECES]:
        text = corpus.text(document_id)
        blocks.append(
            f'<figure class="context"><figcaption><code>{_esc(document_id)}</code> '
            f"characters {a}–{b}</figcaption>"
            f"<blockquote>{_window_html(text, a, b, marks[document_id])}</blockquote></figure>"
        )
    rest = [
        span
        for span in focus
        if span not in absent
        and not any(span.document_id == d and a <= span.start < b for d, a, b in windows[:_PIECES])
    ]
    if rest:
        blocks.append(f'<p class="offsets">Also: {_where(rest)}</p>')
    if absent:
        blocks.append(f'<p class="offsets">Not in this corpus: {_where(absent)}</p>')
    return "".join(blocks)


def _deepest_k(evaluation: Evaluation) -> int:
    cutoffs = [c for name in evaluation.metric_names if (c := metric_parts(name)[1]) is not None]
    return max(cutoffs) if cutoffs else max(evaluation.settings.k)


def _regression_k(row: QueryChange, evaluation: Evaluation) -> int:
    """The depth lost evidence is judged at: the deepest K among the regressed metrics (the
    evaluation's deepest K stands in for whole-list metrics such as ``mrr``)."""
    cutoffs = [c for name in row.regressed if (c := metric_parts(name)[1]) is not None]
    return max(cutoffs) if cutoffs else _deepest_k(evaluation)


def _marks(
    gold_docs: Mapping[str, list[Span]], focus: Sequence[DocSpan], cover: Mapping[str, list[Span]]
) -> dict[str, _Marks]:
    return {
        document_id: _Marks(
            lost=union_spans((s.start, s.end) for s in focus if s.document_id == document_id),
            kept=intersect_spans(spans, cover.get(document_id, [])),
            gold=spans,
        )
        for document_id, spans in gold_docs.items()
    }


def _retrieved_line(query: QueryEvaluation, k: int, who: str) -> str:
    """Where a side's top ``k`` results landed, as offsets: where the retriever went instead."""
    cover = _top_k(query, k)
    if not query.results:
        return f'<p class="muted">The {who} retrieved nothing for this query.</p>'
    spans = [DocSpan(doc, a, b) for doc in sorted(cover) for a, b in cover[doc]]
    unmapped = sum(1 for r in query.results if r.rank <= k and r.span is None)
    text = _where(spans[: 4 * _PIECES]) or "nothing that maps onto the corpus"
    if len(spans) > 4 * _PIECES:
        text += " " + _more(4 * _PIECES, len(spans))
    extra = f"; {unmapped} unmapped" if unmapped else ""
    return f'<p class="muted">The {who}\'s top {k} covers {text}{extra}.</p>'


def _regression_evidence(
    row: QueryChange,
    baseline: Evaluation,
    candidate: Evaluation,
    gold: GoldSet | None,
    corpus: Corpus | None,
    *,
    redact: bool,
    context_chars: int,
) -> str:
    qid = row.query_id
    if qid not in baseline or qid not in candidate:
        return '<p class="muted">Not scored on both sides: no evidence to compare.</p>'
    for side, evaluation in (("baseline", baseline), ("candidate", candidate)):
        if not evaluation.has_result_spans:
            return (
                f'<p class="muted">The {side} evaluation was read from '
                f"{_esc(evaluation.settings.source_format)}, which keeps no result spans.</p>"
            )
    before, after = baseline[qid], candidate[qid]
    if gold is not None and qid in gold:
        anchors = [anchor.span for anchor in gold[qid].anchors]
    else:
        anchors = list(after.gold or before.gold)
    k = _regression_k(row, candidate)
    lost = lost_evidence(before, after, k=k, gold=anchors)
    gold_docs = group_by_document(anchors)
    cover = _top_k(after, k)
    kept = sum(
        b - a
        for doc, spans in gold_docs.items()
        for a, b in intersect_spans(spans, cover.get(doc, []))
    )
    total_gold = sum(b - a for spans in gold_docs.values() for a, b in spans)
    parts = []
    if after.status.value != "scored":
        parts.append(
            f'<p class="note">Candidate: {_esc(after.status.value.replace("_", " "))}.</p>'
        )
    if not lost:
        parts.append(
            f"<p>No gold characters lost in the top {k}: the score fell for another reason "
            "(rank or precision).</p>"
        )
        return "".join(parts)
    lost_chars = sum(span.length for span in lost)
    parts.append(
        f"<p><strong>Lost {lost_chars} of {total_gold} gold characters in the top {k}</strong>"
        f" (found by the baseline, not by the candidate); the candidate still retrieves "
        f"{kept}.</p>"
    )
    parts.append(
        _context_html(
            corpus,
            lost,
            _marks(gold_docs, lost, cover),
            redact=redact,
            context_chars=context_chars,
        )
    )
    parts.append(_retrieved_line(after, k, "candidate"))
    return "".join(parts)


# -- page parts -------------------------------------------------------------------------------

_CSS: Final = """
.spanchor{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
 font-size:15px;line-height:1.45;max-width:1000px;margin:0 auto;padding:16px 20px 40px}
.spanchor h1,.spanchor h2,.spanchor h3{line-height:1.2}
.spanchor h2{font-size:20px;margin:28px 0 6px;padding-bottom:4px;border-bottom:1px solid #d0d7de}
.spanchor h3{font-size:16px;margin:0 0 4px}
.spanchor code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:90%}
.spanchor .verdict{border-radius:8px;padding:14px 20px;margin:0 0 12px;color:#fff}
.spanchor .verdict.fail{background:#b71c1c}
.spanchor .verdict.pass{background:#1b5e20}
.spanchor .verdict h1{margin:0;font-size:28px;letter-spacing:.02em}
.spanchor .verdict p{margin:6px 0 0}
.spanchor .verdict .chips span{display:inline-block;background:rgba(255,255,255,.2);
 border-radius:12px;padding:1px 10px;margin:6px 6px 0 0;font-size:13px}
.spanchor .head{border-bottom:2px solid #d0d7de;margin-bottom:12px}
.spanchor .head h1{margin:0 0 4px;font-size:24px}
.spanchor table{border-collapse:collapse;margin:8px 0 12px;font-size:14px}
.spanchor th,.spanchor td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;
 vertical-align:top}
.spanchor th{background:rgba(127,127,127,.12);font-weight:600}
.spanchor .num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.spanchor td.ci{padding:0 4px;vertical-align:middle}
.spanchor svg{display:block;overflow:visible}
.spanchor svg.chart{max-width:100%;height:auto}
.spanchor figure{margin:8px 0 12px}
.spanchor figcaption{font-size:13px;margin-bottom:4px}
.spanchor .charts{display:flex;flex-wrap:wrap;gap:8px 32px}
.spanchor .legend{font-size:13px;margin:4px 0 8px}
.spanchor .legend span.item{white-space:nowrap;margin-right:14px}
.spanchor .swatch{display:inline-block;width:12px;height:12px;border-radius:2px;
 vertical-align:-1px;margin-right:5px}
.spanchor .swatch.line{height:0;width:22px;border-top:3px solid;border-radius:0;
 vertical-align:4px}
.spanchor .muted,.spanchor .caption{color:#6e7781;font-size:13px}
.spanchor .caption{margin:2px 0 6px}
.spanchor .badge{display:inline-block;border-radius:4px;padding:0 6px;font-size:12px;
 font-weight:600;color:#fff;margin-right:4px}
.spanchor .badge.error{background:#c62828}
.spanchor .badge.warning{background:#b26a00}
.spanchor ul.findings{padding-left:20px;margin:6px 0}
.spanchor ul.findings li{margin:3px 0}
.spanchor article.query{border:1px solid #d0d7de;border-left:5px solid #c62828;
 border-radius:6px;padding:10px 16px;margin:12px 0}
.spanchor article.query.flaky{border-left-color:#ef6c00}
.spanchor article.query.missed{border-left-color:#6e7781}
.spanchor article.query p{margin:4px 0}
.spanchor .question{font-style:italic}
.spanchor figure.context{margin:8px 0}
.spanchor figure.context figcaption{color:#6e7781}
.spanchor blockquote{margin:0;padding:8px 12px;border-left:4px solid #d0d7de;
 background:rgba(127,127,127,.07);white-space:pre-wrap;overflow-wrap:anywhere;font-size:14px}
.spanchor mark.lost{background:#ffe082;color:#1f2328;border-bottom:2px solid #c62828;
 padding:0 1px}
.spanchor .kept{background:#c8e6c9;color:#1f2328}
.spanchor .gold{text-decoration:underline dotted #6a1b9a 2px;text-underline-offset:3px}
.spanchor .elided{color:#6e7781;font-style:italic}
.spanchor .offsets{font-size:13px}
.spanchor footer{margin-top:28px;color:#6e7781;font-size:12px}
.spanchor.fragment{max-width:none;padding:0;margin:0;font-size:14px}
.spanchor.fragment h2{font-size:16px;margin:14px 0 4px}
.spanchor.fragment .verdict{padding:8px 14px}
.spanchor.fragment .verdict h1{font-size:20px}
"""
_PAGE_CSS: Final = "body{margin:0;background:#fff;color:#1f2328}"


def _page(title: str, body: Sequence[str]) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="spanchor {_esc(__version__)}">\n'
        f"<title>{_esc(title)}</title>\n<style>{_PAGE_CSS}{_CSS}</style>\n</head>\n<body>\n"
        '<main class="spanchor">\n' + "\n".join(part for part in body if part) + "\n</main>\n"
        "</body>\n</html>\n"
    )


def _fragment(body: Sequence[str]) -> str:
    return (
        f'<div class="spanchor fragment"><style>{_CSS}</style>'
        + "\n".join(part for part in body if part)
        + "</div>"
    )


def _section(anchor: str, heading: str, *content: str) -> str:
    return f'<section id="{anchor}"><h2>{heading}</h2>' + "".join(content) + "</section>"


def _legend(items: Iterable[tuple[str, str]]) -> str:
    """Colour swatches with labels: ``(css colour, escaped label)``."""
    return (
        '<p class="legend">'
        + "".join(
            f'<span class="item"><span class="swatch" style="background:{colour}"></span>'
            f"{label}</span>"
            for colour, label in items
        )
        + "</p>"
    )


def _counts_text(comparison: Comparison) -> str:
    c = comparison.counts
    flaky = f" ({c['flaky_regressed']} allow-listed flaky)" if c["flaky_regressed"] else ""
    return f"{c['regressed']} of {c['compared']} compared queries regressed{flaky}"


def _verdict_html(
    comparison: Comparison,
    baseline: Evaluation | None,
    candidate: Evaluation | None,
    title: str | None,
) -> str:
    c = comparison.counts
    verdict = "PASS" if comparison.passed else "FAIL"
    chips = [
        f"{c['regressed']} regressed",
        f"{c['improved']} improved",
        f"{c['unchanged']} unchanged",
        f"{c['errors']} error{'s' if c['errors'] != 1 else ''}",
        f"{c['warnings']} warning{'s' if c['warnings'] != 1 else ''}",
    ]
    if c["only_in_baseline"] or c["only_in_candidate"]:
        chips.append(f"{c['only_in_baseline'] + c['only_in_candidate']} one-sided")
    lines = [
        f'<header class="verdict {verdict.lower()}" id="verdict">',
        f"<h1>{verdict}: {_counts_text(comparison)}</h1>",
        '<p class="chips">' + "".join(f"<span>{chip}</span>" for chip in chips) + "</p>",
    ]
    if baseline is not None or candidate is not None:
        sides = " · ".join(
            f"{side}: {_esc(_retriever(ev) or _DASH)}"
            for side, ev in (("baseline", baseline), ("candidate", candidate))
        )
        lines.append(f"<p>{sides}</p>")
    if title:
        lines.append(f"<p>{_esc(title)}</p>")
    lines.append("</header>")
    return "".join(lines)


def _findings_html(comparison: Comparison, limit: int) -> str:
    ordered = [*comparison.errors, *comparison.warnings]
    if not ordered:
        return _section("findings", "Findings", "<p>No errors and no warnings.</p>")
    items = [
        f'<li><span class="badge {f.severity}">{f.severity}</span> <code>{_esc(f.code)}</code> '
        f"{_esc(f.message)}</li>"
        for f in ordered[:limit]
    ]
    if len(ordered) > limit:
        items.append(f"<li>{_more(limit, len(ordered))}</li>")
    return _section("findings", "Findings", '<ul class="findings">', *items, "</ul>")


def _delta_section(
    comparison: Comparison,
    metric: str | None,
    *,
    gold: GoldSet | None,
    redact: bool,
    bars: int,
    width: int,
    heading: bool = True,
) -> str:
    name = metric if metric is not None else primary_metric(comparison)
    if name is None or not comparison.queries:
        return _section("deltas", "Per-query change", "<p>No compared queries to plot.</p>")
    deltas = query_deltas(comparison, name)
    changed = [d for d in deltas if d.kind != "unchanged"]
    unchanged = [d.query_id for d in deltas if d.kind == "unchanged"]
    shown = deltas
    notes = []
    if len(changed) > bars:
        largest = sorted(changed, key=lambda d: (-abs(d.delta), d.query_id))[:bars]
        keep = {d.query_id for d in largest}
        shown = [d for d in deltas if d.kind == "unchanged" or d.query_id in keep]
        notes.append(f"The {len(changed) - bars} smallest of {len(changed)} changes are not drawn.")
    if unchanged and heading:
        notes.append(f"Unchanged ({len(unchanged)}): {_ids(unchanged, bars)}")
    note = "".join(f'<p class="caption">{text}</p>' for text in notes)
    drop = comparison.policy.max_drop.get(name)
    rule = (
        f"The gate allows each query to lose at most {drop:g} of {_esc(name)}."
        if drop is not None
        else f"{_esc(name)} is gated on its mean only."
        if name in comparison.policy.aggregate
        else ""
    )
    caption = (
        f'<p class="caption">One bar per query whose {_esc(name)} changed, worst first; bars '
        f"left of the line lost {_esc(name)}"
        + (
            ", right of it gained"
            if _direction(comparison, name) == "higher"
            else ", right of it rose (lower is better)"
        )
        + "; the grey row counts the queries that did not change."
        + f" {rule}</p>"
    )
    kinds = {d.kind for d in shown}
    legend = _legend((DELTA_COLOURS[kind], label) for kind, label in _DELTA_LEGEND if kind in kinds)
    chart = _delta_svg(shown, name, width=width, gold=gold, redact=redact)
    title = f"Per-query change in {_esc(name)}"
    if not heading:
        return f"<h2>{title}</h2>{legend}{chart}{note}"
    return _section("deltas", title, caption, legend, chart, note)


def _series_legend(names: Sequence[str]) -> str:
    items = []
    for index, name in enumerate(names):
        colour = SERIES_COLOURS[index % len(SERIES_COLOURS)]
        style = "dashed" if index == 0 and len(names) > 1 else "solid"
        items.append(
            f'<span class="item"><span class="swatch line" style="border-top-color:{colour};'
            f'border-top-style:{style}"></span>{name}</span>'
        )
    return '<p class="legend">' + "".join(items) + "</p>"


_CURVE_BASES: Final = ("recall", "hit")


def _curves(
    sides: Sequence[tuple[str, Evaluation]],
    query_ids: Sequence[str] | None,
    *,
    width: int,
    with_table: bool,
) -> str:
    """Recall-vs-K (and hit-vs-K) panels over the K values every side has; with
    ``with_table``, the plotted values (and, for two sides, their difference) as tables."""
    panels = []
    tables = []
    for base in _CURVE_BASES:
        common = set(_cutoffs(sides[0][1], base))
        for _, evaluation in sides[1:]:
            common &= set(_cutoffs(evaluation, base))
        ks = sorted(common)
        series = [
            (name, metric_curve(evaluation, base, ks=ks, query_ids=query_ids))
            for name, evaluation in sides
        ]
        if not ks or not any(points for _, points in series):
            continue
        panels.append(
            f"<figure><figcaption>Mean {_esc(base)}@K</figcaption>"
            f"{_curve_svg(series, base, width=width)}</figure>"
        )
        values = [dict(points) for _, points in series]
        rows = [
            [name, *(_fmt(v.get(k)) for k in ks)]
            for (name, _), v in zip(series, values, strict=True)
        ]
        if len(values) == 2:
            a, b = values
            rows.append(["Δ", *(_delta(b[k] - a[k]) if k in a and k in b else _DASH for k in ks)])
        tables.append(
            _table(
                [f"Mean {_esc(base)}", *(f"@{k}" for k in ks)], rows, [False, *([True] * len(ks))]
            )
        )
    if not panels:
        return '<p class="muted">No recall@K or hit@K metric to draw.</p>'
    legend = _series_legend([name for name, _ in sides])
    out = legend + '<div class="charts">' + "".join(panels) + "</div>"
    if with_table:
        out += '<div class="charts">' + "".join(tables) + "</div>"
    return out


def _context_legend(*items: tuple[str, str, str]) -> str:
    """The key to highlighted context: ``(css class, word, meaning)`` per kind of highlight."""
    cells = []
    for cls, word, meaning in items:
        tag = "mark" if cls == "lost" else "span"
        cells.append(f'<span class="item"><{tag} class="{cls}">{word}</{tag}>: {meaning}</span>')
    return '<p class="legend">' + "".join(cells) + "</p>"


def _side_label(side: str, evaluation: Evaluation) -> str:
    description = _retriever(evaluation)
    return f"{side} ({_esc(description)})" if description else side


def _regressions_section(
    comparison: Comparison,
    baseline: Evaluation | None,
    candidate: Evaluation | None,
    gold: GoldSet | None,
    corpus: Corpus | None,
    *,
    redact: bool,
    limit: int,
    context_chars: int,
) -> str:
    regressions = comparison.regressions()
    if not regressions:
        return _section("regressions", "Regressions", "<p>No query regressed.</p>")
    intro = (
        '<p class="caption">Largest drop first. Each shows the gold evidence the candidate '
        "lost, in its document.</p>"
    )
    if baseline is None or candidate is None:
        intro += (
            '<p class="muted">Pass both evaluations (baseline=, candidate=) to see the '
            "lost evidence.</p>"
        )
    elif not redact and corpus is not None:
        intro += _context_legend(
            ("lost", "lost", "gold the baseline found and the candidate no longer does"),
            ("kept", "kept", "gold the candidate still finds"),
            ("gold", "missed", "gold neither side found"),
        )
    articles = []
    for number, row in enumerate(regressions[:limit], start=1):
        changes = " · ".join(
            f"{_esc(name)} {_fmt(row.change(name).baseline)} → "
            f"{_fmt(row.change(name).candidate)} (<strong>{_delta(row.change(name).delta)}"
            "</strong>)"
            for name in row.regressed
        )
        flaky = ' <span class="badge warning">flaky, allowed</span>' if row.flaky else ""
        parts = [
            f'<article class="query{" flaky" if row.flaky else ""}" '
            f'id="regression-{number}" data-query="{_esc(row.query_id)}">',
            f"<h3>#{number} <code>{_esc(row.query_id)}</code>{flaky}</h3>",
        ]
        question = _question(gold, row.query_id, redact)
        if question:
            parts.append(f'<p class="question">{_esc(question)}</p>')
        parts.append(f"<p>{changes}</p>")
        if baseline is not None and candidate is not None:
            parts.append(
                _regression_evidence(
                    row,
                    baseline,
                    candidate,
                    gold,
                    corpus,
                    redact=redact,
                    context_chars=context_chars,
                )
            )
        parts.append("</article>")
        articles.append("".join(parts))
    if len(regressions) > limit:
        articles.append(f"<p>{_more(limit, len(regressions), 'regressions')}</p>")
    return _section("regressions", "Regressions", intro, *articles)


def _improvements_section(
    comparison: Comparison, gold: GoldSet | None, *, redact: bool, limit: int
) -> str:
    def improved(row: QueryChange) -> list[str]:
        return [c.metric for c in row.changes if c.status is ChangeStatus.IMPROVED]

    def gain(row: QueryChange) -> float:
        return max((abs(row.change(name).delta) for name in improved(row)), default=0.0)

    rows = sorted(
        (row for row in comparison.queries if row.status is ChangeStatus.IMPROVED),
        key=lambda row: (-gain(row), row.query_id),
    )
    if not rows:
        return _section("improvements", "Improvements", "<p>No query improved.</p>")
    show_question = gold is not None and not redact
    header = ["#", "Query", *(["Question"] if show_question else []), "Change"]
    cells = []
    for number, row in enumerate(rows[:limit], start=1):
        line = [str(number), f"<code>{_esc(row.query_id)}</code>"]
        if show_question:
            line.append(_esc(_question(gold, row.query_id, redact) or ""))
        line.append(
            "<br>".join(
                f"{_esc(name)} {_fmt(row.change(name).baseline)} → "
                f"{_fmt(row.change(name).candidate)} ({_delta(row.change(name).delta)})"
                for name in improved(row)
            )
        )
        cells.append(line)
    more = f"<p>{_more(limit, len(rows), 'improvements')}</p>" if len(rows) > limit else ""
    return _section("improvements", "Improvements", _table(header, cells, [True]), more)


_MAPPING_COLUMNS: Final = (
    "Results",
    "Unmapped",
    "Unmapped rate",
    "Exact",
    "Verified",
    "Normalised",
    "Fuzzy",
    "Ambiguous",
    "Hints rejected",
)


def _mapping_row(label: str, stats: MappingStats) -> list[str]:
    counts = stats.counts
    return [
        label,
        str(stats.total),
        str(stats.unmapped),
        _percent(stats.unmapped_rate),
        str(counts.get("exact", 0)),
        str(counts.get("verified", 0)),
        str(counts.get("normalised", 0)),
        str(counts.get("fuzzy", 0)),
        str(counts.get("ambiguous", 0)),
        str(stats.hint_rejected),
    ]


def _mapping_table(rows: Sequence[tuple[str, MappingStats]]) -> str:
    return (
        _table(
            ["Side", *_MAPPING_COLUMNS],
            [_mapping_row(label, stats) for label, stats in rows],
            [False, *([True] * len(_MAPPING_COLUMNS))],
        )
        + '<p class="caption">Unmapped: results that got no span in the corpus (unmapped or '
        "invalid); they count as misses. Hints rejected: offsets or document ids that did not "
        "match the result's text.</p>"
    )


def _aggregates_section(comparison: Comparison) -> str:
    if not comparison.aggregates:
        return ""
    confidence = comparison.policy.bootstrap.confidence
    extent = max(
        (
            abs(value)
            for row in comparison.aggregates
            for value in (row.ci_low, row.ci_high, row.delta)
            if value is not None and math.isfinite(value)
        ),
        default=0.0,
    )
    scale = _ticks(0.0, extent, 4)[-1] if extent > 0 else 1.0
    rows = []
    for row in comparison.aggregates:
        interval = _DASH
        picture = ""
        if row.ci_low is not None and row.ci_high is not None and row.delta is not None:
            interval = f"[{_delta(row.ci_low)}, {_delta(row.ci_high)}]"
            gain = row.delta if row.direction == "higher" else -row.delta
            colour = (
                DELTA_COLOURS["regressed"]
                if row.gate_passed is False or gain < 0
                else DELTA_COLOURS["improved"]
                if gain > 0
                else DELTA_COLOURS["unchanged"]
            )
            picture = _ci_svg(row.ci_low, row.delta, row.ci_high, scale, colour)
        if row.gate is None:
            gate = _DASH
        else:
            verdict = {True: "pass", False: "<strong>FAIL</strong>", None: _DASH}[row.gate_passed]
            gate = (
                f"{verdict} (max drop {row.gate.max_drop:g} on "
                f"{_esc(row.gate.basis.replace('_', ' '))})"
            )
        rows.append(
            [
                f"<code>{_esc(row.metric)}</code>",
                "higher" if row.direction == "higher" else "lower",
                str(row.n),
                _fmt(row.baseline_mean),
                _fmt(row.candidate_mean),
                _delta(row.delta),
                interval,
                picture,
                _fmt(row.p_value, ".3g"),
                gate,
            ]
        )
    table = _table(
        [
            "Metric",
            "Better",
            "n",
            "Baseline",
            "Candidate",
            "Δ mean",
            f"{confidence:.0%} CI of Δ",
            f"Δ and CI (±{scale:g})",
            "p",
            "Gate",
        ],
        rows,
        [False, False, True, True, True, True, True, False, True, False],
    ).replace("<td>" + '<svg class="ci"', '<td class="ci"><svg class="ci"')
    caption = (
        '<p class="caption">Means over the compared queries. The interval is a paired '
        "bootstrap interval of the mean change; p is a paired sign-flip test (two-sided). "
        "The grey line in each picture is zero.</p>"
    )
    return _section("aggregates", "Aggregates", caption, table)


def _footer(comparison: Comparison | None) -> str:
    text = f"spanchor {_esc(__version__)}"
    if comparison is not None:
        policy = comparison.policy
        gates = ", ".join(f"{_esc(name)} ≤ {drop:g}" for name, drop in policy.max_drop.items())
        text += (
            f" · per-query max drop: {gates or _DASH} · noise floor {policy.noise_floor:g} · "
            f"{policy.bootstrap.n_resamples} resamples, seed {comparison.seed}"
        )
    return f"<footer>{text}</footer>"


# -- public renderers -----------------------------------------------------------------------------


def _check_context(context_chars: int) -> None:
    if isinstance(context_chars, bool) or not isinstance(context_chars, int) or context_chars < 0:
        raise InputError(f"context_chars must be a whole number >= 0, not {context_chars!r}")


def comparison_html(
    comparison: Comparison,
    *,
    baseline: Evaluation | None = None,
    candidate: Evaluation | None = None,
    gold: GoldSet | None = None,
    corpus: Corpus | None = None,
    redact: bool = False,
    title: str | None = None,
    metric: str | None = None,
    limit: int = DEFAULT_HTML_LIMIT,
    context_chars: int = DEFAULT_CONTEXT_CHARS,
) -> str:
    """A comparison as one self-contained HTML page (inline CSS and SVG, no script, offline).

    In reading order: the verdict, the findings, a per-query delta plot of ``metric`` (default
    :func:`primary_metric`), recall-vs-K and hit-vs-K curves of both sides (needs both
    evaluations), each regression with its lost evidence highlighted in its document (needs
    both evaluations; the text needs ``corpus``, questions need ``gold``), improvements,
    mapping health and the aggregates with their confidence intervals. ``limit`` caps bars,
    rows and regressions shown; ``context_chars`` is the document text shown either side of
    lost evidence.
    """
    _check_limit(limit, "limit")
    _check_context(context_chars)
    sides = [(name, ev) for name, ev in (("baseline", baseline), ("candidate", candidate)) if ev]
    if baseline is not None and candidate is not None:
        compared = [row.query_id for row in comparison.queries]
        curves = _curves(
            [(_side_label(n, ev), ev) for n, ev in sides], compared, width=370, with_table=True
        )
        curves = (
            '<p class="caption">Mean over the compared queries at each K both sides '
            "report.</p>" + curves
        )
    else:
        curves = (
            '<p class="muted">Pass both evaluations (baseline=, candidate=) to draw the curves.</p>'
        )
    body = [
        _verdict_html(comparison, baseline, candidate, title),
        _findings_html(comparison, limit),
        _delta_section(comparison, metric, gold=gold, redact=redact, bars=limit, width=900),
        _section("curves", "Recall against K", curves),
        _regressions_section(
            comparison,
            baseline,
            candidate,
            gold,
            corpus,
            redact=redact,
            limit=limit,
            context_chars=context_chars,
        ),
        _improvements_section(comparison, gold, redact=redact, limit=limit),
    ]
    for side, ids in (
        ("baseline", comparison.only_in_baseline),
        ("candidate", comparison.only_in_candidate),
    ):
        if ids:
            body.append(f"<p>Only in the {side} ({len(ids)}, not compared): {_ids(ids, limit)}</p>")
    if sides:
        body.append(
            _section(
                "mapping",
                "Mapping health",
                _mapping_table([(name, ev.mapping) for name, ev in sides]),
            )
        )
    body += [_aggregates_section(comparison), _footer(comparison)]
    return _page(title or "spanchor comparison", body)


def comparison_summary_html(comparison: Comparison, *, metric: str | None = None) -> str:
    """A compact HTML fragment for notebooks: verdict, errors, aggregates, a small delta plot.

    Needs nothing but the comparison (no corpus, no evaluations); used by
    ``Comparison._repr_html_``.
    """
    errors = [
        f'<li><span class="badge error">error</span> {_esc(f.message)}</li>'
        for f in comparison.errors[:5]
    ]
    body = [_verdict_html(comparison, None, None, None)]
    if errors:
        body.append('<ul class="findings">' + "".join(errors) + "</ul>")
    body.append(_aggregates_section(comparison))
    if comparison.queries:
        body.append(
            _delta_section(
                comparison,
                metric,
                gold=None,
                redact=True,
                bars=_SUMMARY_BARS,
                width=560,
                heading=False,
            )
        )
    return _fragment(body)


def _metric_grid(evaluation: Evaluation, bases: Sequence[str] | None = None) -> str:
    """Means as a metric × K table (whole-list metrics in their own column)."""
    cells: dict[str, dict[int | None, str]] = {}
    for name in evaluation.metric_names:
        base, cutoff = metric_parts(name)
        if bases is None or base in bases:
            cells.setdefault(base, {})[cutoff] = name
    if not cells:
        return "<p>No metrics.</p>"
    ks = sorted({c for by_k in cells.values() for c in by_k if c is not None})
    columns: list[int | None] = [*ks]
    if any(None in by_k for by_k in cells.values()):
        columns.append(None)
    summaries = evaluation.aggregates()
    rows = [
        [
            f"<code>{_esc(base)}</code>",
            *(_fmt(summaries[by_k[c]].mean) if c in by_k else "" for c in columns),
        ]
        for base, by_k in cells.items()
    ]
    header = ["Metric", *("whole list" if c is None else f"@{c}" for c in columns)]
    return _table(header, rows, [False, *([True] * len(columns))])


def _coverage_items(evaluation: Evaluation, *, redact: bool, limit: int) -> list[str]:
    items = []
    if evaluation.missing_in_run:
        items.append(
            f"<li><strong>Missing in run</strong> (scored as empty retrievals): "
            f"{len(evaluation.missing_in_run)} — {_ids(evaluation.missing_in_run, limit)}</li>"
        )
    if evaluation.errors:
        shown = []
        for qid in evaluation.errors[:limit]:
            text = f"<code>{_esc(qid)}</code>"
            message = evaluation.queries[qid].error if qid in evaluation.queries else None
            if message and not redact:
                short = message if len(message) <= 120 else message[:119] + "…"
                text += f" ({_esc(short)})"
            shown.append(text)
        more = f" {_more(limit, len(evaluation.errors))}" if len(evaluation.errors) > limit else ""
        items.append(
            f"<li><strong>Retriever errors</strong> (scored as empty retrievals): "
            f"{len(evaluation.errors)} — {'; '.join(shown)}{more}</li>"
        )
    if evaluation.skipped:
        listed = list(evaluation.skipped.items())
        reasons = "; ".join(
            f"<code>{_esc(qid)}</code> ({_esc(reason)})" for qid, reason in listed[:limit]
        )
        more = f" {_more(limit, len(listed))}" if len(listed) > limit else ""
        items.append(
            f"<li><strong>Skipped</strong> (not scored): {len(listed)} — {reasons}{more}</li>"
        )
    if evaluation.not_in_gold:
        items.append(
            f"<li><strong>Not in the gold set</strong> (ignored): {len(evaluation.not_in_gold)}"
            f" — {_ids(evaluation.not_in_gold, limit)}</li>"
        )
    if evaluation.unresolved:
        listed_text = "" if redact else f" — {_ids(evaluation.unresolved, limit)}"
        items.append(
            f"<li><strong>Records without a query id</strong> (ignored): "
            f"{len(evaluation.unresolved)}{listed_text}</li>"
        )
    if evaluation.duplicates:
        items.append(
            f"<li><strong>Several records</strong> (the last one was scored): "
            f"{len(evaluation.duplicates)} — {_ids(evaluation.duplicates, limit)}</li>"
        )
    return items


_MISSED_QUERIES: Final = 20
"""Queries whose missed evidence an evaluation page shows in context."""


def _missed_section(
    evaluation: Evaluation,
    gold: GoldSet | None,
    corpus: Corpus,
    *,
    redact: bool,
    context_chars: int,
) -> str:
    """The worst queries' gold evidence that the top K did not retrieve, in its document."""
    if not evaluation.has_result_spans:
        return ""
    k = _deepest_k(evaluation)
    name = f"recall@{k}"
    if name not in evaluation.metric_names:
        return ""
    worst = sorted(
        (q for q in evaluation.queries.values() if q.metrics[name] < 1.0),
        key=lambda q: (q.metrics[name], q.query_id),
    )
    if not worst:
        return _section(
            "missed", "Missed evidence", f"<p>Every query's top {k} covers all its gold.</p>"
        )
    intro = (
        f'<p class="caption">Queries whose top {k} misses gold evidence, lowest {name} first.'
        "</p>"
        + (
            ""
            if redact
            else _context_legend(
                ("lost", "missed", f"gold the top {k} does not cover"),
                ("kept", "found", f"gold the top {k} covers"),
            )
        )
    )
    articles = []
    for number, query in enumerate(worst[:_MISSED_QUERIES], start=1):
        if gold is not None and query.query_id in gold:
            anchors = [anchor.span for anchor in gold[query.query_id].anchors]
        else:
            anchors = list(query.gold)
        gold_docs = group_by_document(anchors)
        cover = _top_k(query, k)
        missed = [
            DocSpan(doc, a, b)
            for doc in sorted(gold_docs)
            for a, b in subtract_spans(gold_docs[doc], cover.get(doc, []))
        ]
        parts = [
            f'<article class="query missed" data-query="{_esc(query.query_id)}">'
            f"<h3>#{number} <code>{_esc(query.query_id)}</code> · {_esc(name)} "
            f"{_fmt(query.metrics[name])}</h3>"
        ]
        question = _question(gold, query.query_id, redact)
        if question:
            parts.append(f'<p class="question">{_esc(question)}</p>')
        parts.append(
            _context_html(
                corpus,
                missed,
                _marks(gold_docs, missed, cover),
                redact=redact,
                context_chars=context_chars,
            )
        )
        parts.append(_retrieved_line(query, k, "retriever") + "</article>")
        articles.append("".join(parts))
    if len(worst) > _MISSED_QUERIES:
        articles.append(f"<p>{_more(_MISSED_QUERIES, len(worst), 'queries')}</p>")
    return _section("missed", "Missed evidence", intro, *articles)


def _per_query_table(
    evaluation: Evaluation, gold: GoldSet | None, *, redact: bool, limit: int
) -> str:
    k = _deepest_k(evaluation)
    wanted = [f"{base}@{k}" for base in ("recall", "precision", "hit", "full_evidence")]
    wanted.append("mrr" if "mrr" in evaluation.metric_names else f"mrr@{k}")
    columns = [name for name in wanted if name in evaluation.metric_names]
    show_question = gold is not None and not redact
    header = [
        "Query",
        *(["Question"] if show_question else []),
        "Status",
        *(f"<code>{_esc(name)}</code>" for name in columns),
    ]
    rows = []
    items = list(evaluation.queries.values())
    for query in items[:limit]:
        row = [f"<code>{_esc(query.query_id)}</code>"]
        if show_question:
            row.append(_esc(_question(gold, query.query_id, redact) or ""))
        row.append(_esc(query.status.value.replace("_", " ")))
        row += [_fmt(query.metrics.get(name)) for name in columns]
        rows.append(row)
    numeric = [False, *([False] if show_question else []), False, *([True] * len(columns))]
    more = f"<p>{_more(limit, len(items), 'queries')}</p>" if len(items) > limit else ""
    return _table(header, rows, numeric) + more


def _settings_table(evaluation: Evaluation) -> str:
    s = evaluation.settings
    rows = [
        ("K", ", ".join(str(k) for k in s.k)),
        ("min_overlap", f"{s.min_overlap:g}"),
        ("corpus fingerprint", _esc(s.corpus_fingerprint or _DASH)),
        ("gold-set hash", _esc(s.gold_sha256 or _DASH)),
        ("retriever", _esc(_retriever(evaluation) or _DASH)),
    ]
    params = _retriever_parameters(evaluation)
    if params:
        rows.append(("retriever parameters", f"<code>{_esc(params)}</code>"))
    if not evaluation.has_result_spans:
        rows.append(("read from", _esc(s.source_format)))
    return _table(["Setting", "Value"], rows)


def _evaluation_head(evaluation: Evaluation, tag: str) -> str:
    description = _retriever(evaluation)
    skipped = f", {len(evaluation.skipped)} skipped" if evaluation.skipped else ""
    title = "spanchor evaluation" + (f": {_esc(description)}" if description else "")
    return (
        f'<{tag} class="head"><h1>{title}</h1><p><strong>{len(evaluation)} queries scored'
        f"</strong>{skipped} · unmapped rate {_percent(evaluation.mapping.unmapped_rate)}</p>"
        f"</{tag}>"
    )


def evaluation_html(
    evaluation: Evaluation,
    *,
    gold: GoldSet | None = None,
    corpus: Corpus | None = None,
    redact: bool = False,
    title: str | None = None,
    limit: int = DEFAULT_HTML_LIMIT,
    context_chars: int = DEFAULT_CONTEXT_CHARS,
) -> str:
    """One evaluation as a self-contained HTML page.

    Means as a metric × K table, the recall-vs-K and hit-vs-K curves, mapping health, query
    coverage (missing, failed, skipped), the worst queries' missed evidence in its document
    (needs ``corpus``), the per-query table and the settings. ``gold`` supplies questions.
    """
    _check_limit(limit, "limit")
    _check_context(context_chars)
    body = [
        _evaluation_head(evaluation, "header"),
        (f"<p>{_esc(title)}</p>" if title else ""),
        _section("summary", "Means over the scored queries", _metric_grid(evaluation)),
        _section(
            "curves",
            "Recall against K",
            _curves([("this run", evaluation)], None, width=370, with_table=False),
        ),
        _section("mapping", "Mapping health", _mapping_table([("run", evaluation.mapping)])),
    ]
    coverage = _coverage_items(evaluation, redact=redact, limit=limit)
    body.append(
        _section(
            "coverage",
            "Query coverage",
            "<ul>" + "".join(coverage) + "</ul>"
            if coverage
            else "<p>Every gold query had exactly one record, and every record a gold query.</p>",
        )
    )
    if evaluation.warnings:
        body.append(
            _section(
                "warnings",
                "Warnings",
                "<ul>" + "".join(f"<li>{_esc(w)}</li>" for w in evaluation.warnings) + "</ul>",
            )
        )
    if corpus is not None:
        body.append(
            _missed_section(evaluation, gold, corpus, redact=redact, context_chars=context_chars)
        )
    body += [
        _section(
            "queries",
            "Per-query results",
            _per_query_table(evaluation, gold, redact=redact, limit=limit),
        ),
        _section("settings", "Settings", _settings_table(evaluation)),
        _footer(None),
    ]
    return _page(title or "spanchor evaluation", body)


_SUMMARY_BASES: Final = ("recall", "precision", "hit", "full_evidence", "mrr", "ndcg")


def evaluation_summary_html(evaluation: Evaluation) -> str:
    """A compact HTML fragment for notebooks: headline means by K, a small recall-vs-K curve,
    mapping health. Needs nothing but the evaluation; used by ``Evaluation._repr_html_``."""
    m = evaluation.mapping
    body = [
        _evaluation_head(evaluation, "div"),
        _metric_grid(evaluation, _SUMMARY_BASES),
        _curves([("this run", evaluation)], None, width=300, with_table=False),
        f'<p class="muted">Mapping: {m.total} results, {m.unmapped} unmapped '
        f"({_percent(m.unmapped_rate)}), {m.counts.get('ambiguous', 0)} ambiguous, "
        f"{m.counts.get('fuzzy', 0)} fuzzy, {m.hint_rejected} hints rejected.</p>",
    ]
    return _fragment(body)


def write_html(text: str, path: str | os.PathLike[str]) -> None:
    """Write an HTML report to ``path`` as UTF-8, atomically (temporary file, then rename)."""
    atomic_write(path, text, what="the HTML report")
