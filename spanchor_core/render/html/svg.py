"""Charts drawn as inline SVG: the per-query delta bars, the metric@K curves and the small
confidence-interval pictures of the aggregates table.

No JavaScript and no external resource: each chart is one ``<svg>`` element with a ``<title>``
per mark (the browser shows it as a tooltip). The data comes from
:mod:`spanchor_core.render.series`; every label goes through ``html_escape``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Final

from spanchor_core.gold import GoldSet
from spanchor_core.render.series import DELTA_COLOURS, SERIES_COLOURS, QueryDelta
from spanchor_core.render.text import (
    format_delta,
    format_number,
    html_escape,
    more_text,
    truncate,
)
from spanchor_core.render.wording import (
    question_for,
)

__all__ = ["DELTA_LEGEND", "ci_svg", "curve_svg", "delta_svg", "nice_ticks"]

DELTA_LEGEND: Final = (
    ("regressed", "regressed (fails the gate)"),
    ("flaky", "regressed, allow-listed flaky"),
    ("worse", "worse, within the allowed drop"),
    ("unchanged", "unchanged"),
    ("better", "better, below the noise floor"),
    ("improved", "improved"),
)
"""The legend of the delta bars: each :data:`DeltaKind` with what it means, in bar order."""


_COORD_LIMIT: Final = 1e6
"""Coordinates are clamped to this magnitude: a value no float arithmetic should produce for a
chart (an infinite or absurd metric read from a file) still gives a valid SVG number."""


def _num(value: float) -> str:
    """An SVG coordinate: one decimal, no ``-0.0``, never ``nan`` or ``inf``."""
    value = min(max(value, -_COORD_LIMIT), _COORD_LIMIT) if not math.isnan(value) else 0.0
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text


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


def _finite(values: Iterable[float]) -> list[float]:
    return [value for value in values if math.isfinite(value)]


def nice_ticks(lo: float, hi: float, target: int = 6) -> list[float]:
    """Round tick values covering ``[lo, hi]``; total: non-finite or reversed bounds give the
    ticks of ``[0, 1]``, and bounds beyond +-1e12 are clamped there."""
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        lo, hi = 0.0, 1.0
    lo, hi = max(lo, -1e12), min(hi, 1e12)
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
        f'viewBox="0 0 {_num(width)} {_num(height)}" role="img" aria-label="{html_escape(label)}" '
        f'font-size="{_FONT}">'
        f"<title>{html_escape(label)}</title>" + "".join(body) + "</svg>"
    )


def _text(x: float, y: float, text: str, *, anchor: str = "start", extra: str = "") -> str:
    return (
        f'<text x="{_num(x)}" y="{_num(y)}" text-anchor="{anchor}" fill="currentColor"'
        f"{(' ' + extra) if extra else ''}>{html_escape(text)}</text>"
    )


def _axis_title(left: float, right: float, bottom: float, text: str) -> str:
    """The bold title under a horizontal axis spanning ``left``..``right``."""
    return _text((left + right) / 2, bottom + 34, text, anchor="middle", extra='font-weight="600"')


def _line(x1: float, y1: float, x2: float, y2: float, stroke: str, extra: str = "") -> str:
    return (
        f'<line x1="{_num(x1)}" y1="{_num(y1)}" x2="{_num(x2)}" y2="{_num(y2)}" '
        f'stroke="{stroke}"{(" " + extra) if extra else ""}/>'
    )


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


def delta_svg(
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
        truncate(row.query_id, _LABEL_CHARS)
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
    values = _finite(d.delta for d in deltas)
    lo, hi = min([0.0, *values]), max([0.0, *values])
    if hi - lo < 1e-12:
        lo, hi = -1.0, 1.0
    ticks = nice_ticks(lo, hi)
    lo, hi = ticks[0], ticks[-1]

    def x(value: float) -> float:
        if math.isnan(value):
            value = 0.0
        return left + (min(max(value, lo), hi) - lo) / (hi - lo) * (right - left)

    body: list[str] = []
    for i in range(0, len(rows), 2):  # zebra stripes guide the eye from label to bar
        body.append(
            f'<rect x="0" y="{_num(top + i * row_h)}" width="{width}" height="{_num(row_h)}" '
            f'fill="currentColor" fill-opacity="0.05"/>'
        )
    for tick in ticks:
        body.append(_line(x(tick), top, x(tick), bottom + 4, "#bdbdbd", 'stroke-width="1"'))
        body.append(_text(x(tick), bottom + 17, _tick_label(tick), anchor="middle"))
    body.append(_axis_title(left, right, bottom, f"Δ {metric} (candidate − baseline)"))
    zero = x(0.0)
    mono = 'font-family="ui-monospace, SFMono-Regular, Menlo, Consolas, monospace"'
    for i, (row, label) in enumerate(zip(rows, labels, strict=True)):
        y = top + i * row_h
        if isinstance(row, list):
            listed = ", ".join(d.query_id for d in row[:50])
            more = f" {more_text(50, len(row))}" if len(row) > 50 else ""
            body.append(
                f'<g class="unchanged" data-count="{len(row)}">'
                f"<title>{html_escape(f'unchanged: {listed}{more}')}</title>"
                f'<rect x="{_num(zero - 1.5)}" y="{_num(y + 3)}" width="3" '
                f'height="{_num(row_h - 6)}" fill="{DELTA_COLOURS["unchanged"]}"/>'
                + _text(label_w - 8, y + 13, label, anchor="end", extra='font-style="italic"')
                + _text(width - 6, y + 13, "0", anchor="end")
                + "</g>"
            )
            continue
        bar_x, bar_w = min(x(row.delta), zero), max(abs(x(row.delta) - zero), 1.0)
        tip = (
            f"{row.query_id}: {metric} {format_number(row.baseline)} → "
            f"{format_number(row.candidate)} ({format_delta(row.delta)}), {row.kind}"
        )
        question = question_for(gold, row.query_id, redact=redact)
        if question:
            tip += f"\n{question}"
        body.append(
            f'<g class="bar" data-query="{html_escape(row.query_id)}" data-delta="{row.delta!r}" '
            f'data-kind="{row.kind}"><title>{html_escape(tip)}</title>'
            f'<rect x="{_num(bar_x)}" y="{_num(y + 3)}" width="{_num(bar_w)}" '
            f'height="{_num(row_h - 6)}" fill="{DELTA_COLOURS[row.kind]}"/>'
            + _text(label_w - 8, y + 13, label, anchor="end", extra=mono)
            + _text(width - 6, y + 13, format_delta(row.delta), anchor="end")
            + "</g>"
        )
    body.append(_line(zero, top - 2, zero, bottom + 4, "currentColor", 'stroke-width="1.5"'))
    label = f"Per-query change in {metric}, worst first ({len(deltas)} queries)"
    return _svg(width, height, label, body)


def curve_svg(
    series: Sequence[tuple[str, Sequence[tuple[int, float]]]],
    metric: str,
    *,
    width: int = 370,
    height: int = 250,
) -> str:
    """Mean ``metric@K`` against K (evenly spaced), one line per series, y from 0 to 1."""
    left, right, top, bottom = 46.0, width - 14.0, 12.0, height - 42.0
    ks = sorted({k for _, points in series for k, _ in points})
    series = [(name, [(k, v) for k, v in points if math.isfinite(v)]) for name, points in series]
    values = [v for _, points in series for _, v in points]
    y_hi = 1.0 if not values or max(values) <= 1.0 else nice_ticks(0.0, max(values))[-1]
    y_ticks = nice_ticks(0.0, y_hi, 5)

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
    body.append(_axis_title(left, right, bottom, "K (results considered)"))
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
            f'<g class="series" data-series="{html_escape(name)}">'
            f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2.5"'
            f"{dash}/>"
            + "".join(
                f'<circle cx="{_num(x(k))}" cy="{_num(y(v))}" r="4" fill="{colour}">'
                f"<title>{html_escape(f'{name}: mean {metric}@{k} = {v:.3f}')}</title></circle>"
                for k, v in points
            )
            + "</g>"
        )
    label = f"Mean {metric}@K against K: " + ", ".join(name for name, _ in series)
    return _svg(width, height, label, body)


def ci_svg(low: float, delta: float, high: float, scale: float, colour: str) -> str:
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
    label = (
        f"mean delta {format_delta(delta)}, interval [{format_delta(low)}, {format_delta(high)}]"
    )
    return _svg(width, height, label, body).replace('class="chart"', 'class="ci"', 1)
