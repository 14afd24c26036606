"""The HTML page skeleton and the parts both pages share: inline CSS, the document and
notebook-fragment wrappers, sections, tables, legends, the curves panel, mapping health and
the footer.

A page is self-contained: inline CSS and SVG, no JavaScript, no external URL, so it opens
offline in any browser and can be attached to a CI run as one file. Cells passed to these
helpers are already escaped; text from users goes through ``html_escape`` first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from spanchor_core._version import __version__
from spanchor_core.compare import Comparison
from spanchor_core.evaluate import Evaluation, MappingStats
from spanchor_core.render.html.svg import curve_svg
from spanchor_core.render.series import SERIES_COLOURS, metric_curve, metric_cutoffs
from spanchor_core.render.text import (
    DASH,
    capped_list,
    format_delta,
    format_number,
    html_escape,
)
from spanchor_core.render.wording import (
    MAPPING_COLUMNS,
    mapping_cells,
    policy_text,
    retriever_description,
)

__all__ = [
    "CSS",
    "code",
    "curves_panel",
    "footer",
    "fragment",
    "id_list",
    "legend",
    "mapping_table",
    "page",
    "section",
    "side_label",
    "table",
]


def code(text: str) -> str:
    """``text`` escaped inside ``<code>``: how ids and metric names appear."""
    return f"<code>{html_escape(text)}</code>"


def table(
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


def id_list(items: Sequence[str], limit: int) -> str:
    """Ids as ``<code>`` joined by commas, capped at ``limit`` ("… and N more")."""
    return capped_list(items, limit, code)


CSS: Final = """
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
.spanchor ul.causes{padding-left:20px;margin:4px 0}
.spanchor .badge.cause{background:#57606a}
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


def page(title: str, body: Sequence[str]) -> str:
    """A whole HTML document around the (already rendered) ``body`` parts; empty parts drop."""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="spanchor {html_escape(__version__)}">\n'
        f"<title>{html_escape(title)}</title>\n<style>{_PAGE_CSS}{CSS}</style>\n</head>\n<body>\n"
        '<main class="spanchor">\n' + "\n".join(part for part in body if part) + "\n</main>\n"
        "</body>\n</html>\n"
    )


def fragment(body: Sequence[str]) -> str:
    """A ``<div>`` with its own CSS for a notebook cell; empty parts drop."""
    return (
        f'<div class="spanchor fragment"><style>{CSS}</style>'
        + "\n".join(part for part in body if part)
        + "</div>"
    )


def section(anchor: str, heading: str, *content: str) -> str:
    """A ``<section id=anchor>`` headed ``heading`` (both already safe)."""
    return f'<section id="{anchor}"><h2>{heading}</h2>' + "".join(content) + "</section>"


def legend(items: Iterable[tuple[str, str]]) -> str:
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


def series_legend(names: Sequence[str]) -> str:
    """Line swatches for the curves, one per (escaped) series name, in series order."""
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


def curves_panel(
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
        common = set(metric_cutoffs(sides[0][1], base))
        for _, evaluation in sides[1:]:
            common &= set(metric_cutoffs(evaluation, base))
        ks = sorted(common)
        series = [
            (name, metric_curve(evaluation, base, ks=ks, query_ids=query_ids))
            for name, evaluation in sides
        ]
        if not ks or not any(points for _, points in series):
            continue
        panels.append(
            f"<figure><figcaption>Mean {html_escape(base)}@K</figcaption>"
            f"{curve_svg(series, base, width=width)}</figure>"
        )
        values = [dict(points) for _, points in series]
        rows = [
            [name, *(format_number(v.get(k)) for k in ks)]
            for (name, _), v in zip(series, values, strict=True)
        ]
        if len(values) == 2:
            a, b = values
            rows.append(
                ["Δ", *(format_delta(b[k] - a[k]) if k in a and k in b else DASH for k in ks)]
            )
        tables.append(
            table(
                [f"Mean {html_escape(base)}", *(f"@{k}" for k in ks)],
                rows,
                [False, *([True] * len(ks))],
            )
        )
    if not panels:
        return '<p class="muted">No recall@K or hit@K metric to draw.</p>'
    out = (
        series_legend([name for name, _ in sides])
        + '<div class="charts">'
        + "".join(panels)
        + "</div>"
    )
    if with_table:
        out += '<div class="charts">' + "".join(tables) + "</div>"
    return out


def side_label(side: str, evaluation: Evaluation) -> str:
    """``baseline (bm25, 200-char chunks)``: a side named with its retriever, escaped."""
    description = retriever_description(evaluation)
    return f"{side} ({html_escape(description)})" if description else side


def mapping_table(rows: Sequence[tuple[str, MappingStats]]) -> str:
    """Mapping health, one row per ``(side label, stats)``, with the caption explaining it."""
    return (
        table(
            ["Side", *MAPPING_COLUMNS],
            [[label, *mapping_cells(stats)] for label, stats in rows],
            [False, *([True] * len(MAPPING_COLUMNS))],
        )
        + '<p class="caption">Unmapped: results that got no span in the corpus (unmapped or '
        "invalid); they count as misses. Hints rejected: offsets or document ids that did not "
        "match the result's text.</p>"
    )


def footer(comparison: Comparison | None) -> str:
    """The page's last line: the spanchor version and, for a comparison, its policy."""
    text = f"spanchor {html_escape(__version__)}"
    if comparison is not None:
        text += f" · {policy_text(comparison, html_escape)}"
    return f"<footer>{text}</footer>"
