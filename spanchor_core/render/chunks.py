"""The chunking report (``spanchor chunks report``) as Markdown, HTML, plain text and JSON.

One report, or several side by side (one per chunker, over the same gold set), so that two
chunkers are compared before anything is indexed. The content is built once as plain-text
tables (:func:`_tables`); each format only escapes and lays it out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from spanchor_core.diagnosis import ChunkReport, QueryChunking
from spanchor_core.errors import InputError
from spanchor_core.render.html.page import page, section, table
from spanchor_core.render.text import DASH, escape_control, html_escape, markdown_escape

__all__ = [
    "chunk_report_html",
    "chunk_report_json",
    "chunk_report_lines",
    "chunk_report_markdown",
]


@dataclass(frozen=True, slots=True)
class _Table:
    heading: str
    caption: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[bool, ...]


def _names(reports: Sequence[ChunkReport], names: Sequence[str] | None) -> list[str]:
    if not reports:
        raise InputError("a chunking report needs at least one report")
    if names is not None:
        if len(names) != len(reports):
            raise InputError(
                f"{len(names)} names for {len(reports)} reports", hint="name each report once"
            )
        return list(names)
    if len(reports) == 1:
        return [reports[0].description]
    return [r.description or f"chunking {n}" for n, r in enumerate(reports, start=1)]


def _labels(n: int) -> list[str]:
    """``A``, ``B``, ... naming the chunkings in column headers (a legend names them)."""
    return [chr(ord("A") + i) if i < 26 else f"#{i + 1}" for i in range(n)]


def _ratio(value: float, spec: str = ".3f") -> str:
    return format(value, spec) if math.isfinite(value) else DASH


def size_line(report: ChunkReport) -> str:
    """``"120 chunks (118 mapped, 2 unmapped); size ... covers 98.0% of the corpus"``."""
    s = report.sizes
    mean = f"{s.mean:.0f}" if math.isfinite(s.mean) else DASH
    return (
        f"{s.chunks} chunks ({s.mapped} mapped, {s.unmapped} unmapped); size in characters: "
        f"min {s.min}, median {s.median}, mean {mean}, p90 {s.p90}, max {s.max}; they cover "
        f"{s.corpus_coverage:.1%} of the corpus (redundancy {s.redundancy:.2f})"
    )


def _ks(reports: Sequence[ChunkReport]) -> list[int]:
    shared = set(reports[0].k).intersection(*(r.k for r in reports[1:]))
    return sorted(shared)


def _query_cells(row: QueryChunking | None, ks: Sequence[int]) -> list[str]:
    if row is None:
        return [DASH] * (2 + len(ks))
    pieces = ", ".join(str(cut.pieces) for cut in row.anchors)
    best = ", ".join(f"{cut.best_single:.0%}" for cut in row.anchors)
    return [pieces, best, *(f"{row.oracle[k].recall:.3f}" for k in ks)]


def _tables(reports: Sequence[ChunkReport], names: Sequence[str]) -> list[_Table]:
    ks = _ks(reports)
    several = len(reports) > 1
    labels = _labels(len(names))

    def tag(index: int, text: str) -> str:
        return f"{text} {labels[index]}" if several else text

    oracle_header = ["K"]
    for index in range(len(names)):
        oracle_header += [tag(index, "mean oracle recall@K"), tag(index, "fully served")]
    oracle_rows = []
    for k in ks:
        cells = [str(k)]
        for report in reports:
            cells += [
                _ratio(report.mean_oracle(k)),
                f"{report.fully_served(k)} of {len(report.queries)}",
            ]
        oracle_rows.append(tuple(cells))
    tables = [
        _Table(
            "Oracle recall: the best any ranking could reach",
            "Per K, the mean over the queries of the best recall@K any ranking of these chunks "
            "reaches, and the queries whose whole evidence the best K chunks hold.",
            tuple(oracle_header),
            tuple(oracle_rows),
            (True,) * len(oracle_header),
        )
    ]
    unservable_rows: list[tuple[str, ...]] = []
    for label, report in zip(labels, reports, strict=True):
        for row in report.queries:
            if not row.servable:
                found = (row.query_id, f"{row.ceiling:.1%}")
                unservable_rows.append((label, *found) if several else found)
    tables.append(
        _Table(
            "Queries no K can serve",
            "Part of their evidence lies in no chunk at all: no retriever can find it."
            if unservable_rows
            else "None: every query's evidence lies inside the chunks.",
            ("chunking", "query", "evidence in any chunk")[0 if several else 1 :],
            tuple(unservable_rows),
            (False, False, True)[0 if several else 1 :],
        )
    )
    per_query_header = ["query"]
    for index in range(len(names)):
        per_query_header += [
            tag(index, "chunks per anchor"),
            tag(index, "best single chunk"),
            *(tag(index, f"oracle@{k}") for k in ks),
        ]
    lookups = [{row.query_id: row for row in report.queries} for report in reports]
    order = list(dict.fromkeys(row.query_id for report in reports for row in report.queries))
    per_query_rows = []
    for qid in order:
        cells = [qid]
        for lookup in lookups:
            cells += _query_cells(lookup.get(qid), ks)
        per_query_rows.append(tuple(cells))
    tables.append(
        _Table(
            "Per query",
            "Chunks per anchor: the fewest chunks that hold the anchor (1: one chunk holds it "
            "whole; 0: none overlaps it).",
            tuple(per_query_header),
            tuple(per_query_rows),
            (False, *([True] * (len(per_query_header) - 1))),
        )
    )
    return tables


def _title(names: Sequence[str]) -> str:
    shown = " vs ".join(name for name in names if name)
    return f"Chunking report: {shown}" if shown else "Chunking report"


def _skipped(report: ChunkReport) -> str | None:
    return f"skipped (no anchors): {', '.join(report.skipped)}" if report.skipped else None


def chunk_report_markdown(
    reports: ChunkReport | Sequence[ChunkReport], *, names: Sequence[str] | None = None
) -> str:
    """The report(s) as Markdown: sizes, oracle recall by K, unservable queries, per query."""
    items = [reports] if isinstance(reports, ChunkReport) else list(reports)
    shown = _names(items, names)
    lines = [f"# {markdown_escape(_title(shown))}", ""]
    for label, name, report in zip(_labels(len(items)), shown, items, strict=True):
        prefix = f"**{label}** = {markdown_escape(name)}: " if len(items) > 1 else ""
        lines.append(f"- {prefix}{markdown_escape(size_line(report))}")
        skipped = _skipped(report)
        if skipped:
            lines.append(f"- {prefix}{markdown_escape(skipped)}")
    for item in _tables(items, shown):
        lines += ["", f"## {item.heading}", "", markdown_escape(item.caption)]
        if not item.rows:
            continue
        lines.append("")
        lines.append("| " + " | ".join(markdown_escape(h) for h in item.header) + " |")
        lines.append("| " + " | ".join("---:" if n else "---" for n in item.numeric) + " |")
        lines += ["| " + " | ".join(markdown_escape(c) for c in row) + " |" for row in item.rows]
    return "\n".join(lines) + "\n"


def chunk_report_html(
    reports: ChunkReport | Sequence[ChunkReport], *, names: Sequence[str] | None = None
) -> str:
    """The report(s) as one self-contained HTML page (no script, offline)."""
    items = [reports] if isinstance(reports, ChunkReport) else list(reports)
    shown = _names(items, names)
    summary = []
    for label, name, report in zip(_labels(len(items)), shown, items, strict=True):
        prefix = f"<strong>{label}</strong> = {html_escape(name)}: " if len(items) > 1 else ""
        summary.append(f"<li>{prefix}{html_escape(size_line(report))}</li>")
        skipped = _skipped(report)
        if skipped:
            summary.append(f"<li>{prefix}{html_escape(skipped)}</li>")
    body = [f"<h1>{html_escape(_title(shown))}</h1>", f'<ul class="sizes">{"".join(summary)}</ul>']
    for n, item in enumerate(_tables(items, shown)):
        content = [f'<p class="caption">{html_escape(item.caption)}</p>']
        if item.rows:
            content.append(
                table(
                    [html_escape(h) for h in item.header],
                    [[html_escape(c) for c in row] for row in item.rows],
                    item.numeric,
                )
            )
        body.append(section(f"chunks-{n}", html_escape(item.heading), *content))
    return page(_title(shown), body)


def chunk_report_lines(
    reports: ChunkReport | Sequence[ChunkReport], *, names: Sequence[str] | None = None
) -> list[str]:
    """Plain lines for a terminal: sizes, oracle recall by K and the unservable queries.

    Control characters in ids and descriptions are shown escaped; no markup.
    """
    items = [reports] if isinstance(reports, ChunkReport) else list(reports)
    shown = _names(items, names)
    labels = _labels(len(items)) if len(items) > 1 else [""]
    lines = []
    for label, name, report in zip(labels, shown, items, strict=True):
        head = f"{label} = {name}" if label else (name or "chunks")
        lines.append(escape_control(f"{head}: {size_line(report)}"))
    lines.append("oracle recall@K (the best any ranking could reach), queries fully served:")
    for k in _ks(items):
        parts = [
            f"{label + ' ' if label else ''}{_ratio(r.mean_oracle(k))} "
            f"({r.fully_served(k)} of {len(r.queries)})"
            for label, r in zip(labels, items, strict=True)
        ]
        lines.append(f"  @{k}: " + ", ".join(parts))
    for label, report in zip(labels, items, strict=True):
        ids = report.unservable
        where = f" ({label})" if label else ""
        if ids:
            shown_ids = ", ".join(ids[:10]) + (
                f" and {len(ids) - 10} more" if len(ids) > 10 else ""
            )
            lines.append(escape_control(f"no K can serve{where}: {shown_ids}"))
        else:
            lines.append(f"every query can be served{where}")
    return lines


def chunk_report_json(
    reports: ChunkReport | Sequence[ChunkReport], *, names: Sequence[str] | None = None
) -> str:
    """One report's JSON (``kind: spanchor.chunk_report``), or several as
    ``{"kind": "spanchor.chunk_reports", "reports": [{"name": ..., **report}, ...]}``."""
    if isinstance(reports, ChunkReport):
        data = reports.to_json()
    else:
        items = list(reports)
        shown = _names(items, names)
        data = {
            "kind": "spanchor.chunk_reports",
            "schema_version": 1,
            "reports": [
                {"name": name, **report.to_json()}
                for name, report in zip(shown, items, strict=True)
            ],
        }
    return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
