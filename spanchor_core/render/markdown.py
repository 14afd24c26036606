"""Markdown reports: an evaluation or a comparison for a GitHub step summary or a PR comment.

Pure functions returning strings; output depends only on the inputs (no timestamps), so a
report can be diffed and snapshot-tested. Text users wrote goes through
:func:`~spanchor_core.render.text.markdown_escape`. ``redact=True`` removes questions, evidence
text, unresolved query texts and retriever error messages; ids and numbers stay.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from spanchor_core._version import __version__
from spanchor_core.compare import AggregateChange, Comparison, QueryChange
from spanchor_core.corpus import Corpus
from spanchor_core.diagnosis import RegressionDiagnosis
from spanchor_core.evaluate import Evaluation, MappingStats, QueryStatus
from spanchor_core.gold import GoldSet
from spanchor_core.metrics import metric_parts
from spanchor_core.render.causes import cause_texts, diagnosis_of, split_lines, why_line
from spanchor_core.render.text import (
    DASH,
    capped_list,
    check_count,
    excerpt,
    format_delta,
    format_interval,
    format_number,
    format_percent,
    in_sentence,
    markdown_escape,
    metric_grid,
    more_text,
    regression_evidence,
    spanless_side,
)
from spanchor_core.render.wording import (
    FLAKY_BAND_NOTE,
    INTERVAL_AND_P_NOTE,
    MAPPING_COLUMNS,
    aggregate_headings,
    change_text,
    counts_text,
    coverage_entries,
    gate_text,
    headline_metrics,
    improved_metrics,
    improvements,
    mapping_cells,
    policy_text,
    question_for,
    retriever_description,
    retriever_parameters,
    verdict_word,
)
from spanchor_core.spans import DocSpan

__all__ = [
    "DEFAULT_EXCERPT_CHARS",
    "DEFAULT_LIST_LIMIT",
    "comparison_markdown",
    "evaluation_markdown",
]

DEFAULT_LIST_LIMIT: Final = 50
"""Rows or ids a report lists before it says "… and N more". GitHub caps a step summary at
1 MiB; a report that lists 10,000 queries is not read anyway."""
DEFAULT_EXCERPT_CHARS: Final = 200
"""Characters of lost evidence shown per piece before the excerpt is cut with "…"."""
_EXCERPT_PIECES: Final = 3
"""Lost-evidence pieces shown per regressed query; the rest are counted."""


def _short(digest: str | None) -> str:
    """The first 12 characters of a hash: enough to tell two apart, short enough to read."""
    if not digest:
        return DASH
    return markdown_escape(digest[:12]) + ("…" if len(digest) > 12 else "")


def _row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], align: str = "") -> list[str]:
    """A GFM table; ``align`` holds one of ``l``/``r`` per column (default: left)."""
    marks = [
        "---:" if (align[i] if i < len(align) else "l") == "r" else "---"
        for i in range(len(header))
    ]
    return [_row(header), _row(marks), *(_row(row) for row in rows)]


def _question(gold: GoldSet | None, query_id: str) -> str:
    return markdown_escape(question_for(gold, query_id) or "")


# -- lost evidence ----------------------------------------------------------------------------


def _where(span: DocSpan) -> str:
    return f"{markdown_escape(span.document_id)}[{span.start}:{span.end}]"


def _excerpt(corpus: Corpus, span: DocSpan, limit: int) -> str:
    """The lost text of ``span`` in bold inside its sentence (escaped, whitespace folded),
    cut at ``limit`` characters with a mark (:func:`~spanchor_core.render.text.in_sentence`)."""
    text = corpus.text(span.document_id)
    shown = excerpt(text[span.start : span.end], limit)
    seen = in_sentence(text, span.start, span.end, limit=limit)
    quoted = (
        f"“{markdown_escape(seen.before)}**{markdown_escape(seen.piece)}**"
        f"{markdown_escape(seen.after)}”"
    )
    if not shown.cut:
        return f"{_where(span)} {quoted}"
    return f"{_where(span)} {quoted} *(excerpt: {limit} of {shown.total} characters)*"


def _evidence_cell(
    row: QueryChange,
    baseline: Evaluation,
    candidate: Evaluation,
    gold: GoldSet | None,
    corpus: Corpus | None,
    *,
    redact: bool,
    excerpt_chars: int,
) -> str:
    if row.query_id not in baseline.queries or row.query_id not in candidate.queries:
        return DASH
    spanless = spanless_side(baseline, candidate)
    if spanless is not None:
        side, evaluation = spanless
        source = markdown_escape(evaluation.settings.source_format)
        return f"*(the {side} evaluation was read from {source}, which keeps no result spans)*"
    evidence = regression_evidence(row, baseline, candidate, gold)
    if evidence is None:  # pragma: no cover - checked above
        return DASH
    note = ""
    if evidence.candidate.status is not QueryStatus.SCORED:
        note = f"*(candidate: {evidence.candidate.status.value.replace('_', ' ')})* "
    if not evidence.lost:
        return f"{note}*(no gold characters lost in the {evidence.depth})*"
    head = f"{note}**lost {evidence.lost_chars} gold characters in the {evidence.depth}**"
    shown = evidence.lost[:_EXCERPT_PIECES]
    if redact or corpus is None:
        pieces = [_where(span) for span in shown]
    else:
        pieces = [_excerpt(corpus, span, excerpt_chars) for span in shown]
    if len(evidence.lost) > _EXCERPT_PIECES:
        pieces.append(more_text(_EXCERPT_PIECES, len(evidence.lost), "pieces"))
    return "<br>".join([head, *pieces])


# -- evaluation Markdown ------------------------------------------------------------------------


def _settings_rows(evaluation: Evaluation) -> list[tuple[str, str]]:
    s = evaluation.settings
    description = retriever_description(evaluation)
    params = retriever_parameters(evaluation)
    rows = [
        ("K", ", ".join(str(k) for k in s.k)),
        ("min_overlap", f"{s.min_overlap:g}"),
        ("corpus fingerprint", _short(s.corpus_fingerprint)),
        ("gold-set hash", _short(s.gold_sha256)),
        ("retriever", markdown_escape(description) if description else DASH),
    ]
    if params:
        rows.append(("retriever parameters", markdown_escape(params)))
    if s.source_format and not evaluation.has_result_spans:
        rows.append(("read from", markdown_escape(s.source_format)))
    return rows


def _aggregate_grid(evaluation: Evaluation) -> list[str]:
    """Means as a metric × K grid, then the spread at the deepest K and of whole-list metrics."""
    grid = metric_grid(evaluation)
    rows = [
        [markdown_escape(base), *("" if v is None else format_number(v) for v in means)]
        for base, means in grid.rows
    ]
    lines = _table(["Metric", *grid.labels], rows, "l" + "r" * len(grid.columns))
    ks = [k for k in grid.columns if k is not None]
    deepest = max(ks) if ks else None
    spread = [name for name in evaluation.metric_names if metric_parts(name)[1] in (deepest, None)]
    if spread:
        summaries = evaluation.aggregates()
        lines += ["", f"Spread over {summaries[spread[0]].n} scored queries:", ""]
        lines += _table(
            ["Metric", "Mean", "Std", "Min", "Max"],
            [
                [
                    markdown_escape(name),
                    *(
                        format_number(value)
                        for value in (
                            summaries[name].mean,
                            summaries[name].std,
                            summaries[name].min,
                            summaries[name].max,
                        )
                    ),
                ]
                for name in spread
            ],
            "lrrrr",
        )
    return lines


def _mapping_lines(stats: MappingStats) -> list[str]:
    rows = [[markdown_escape(status), str(n)] for status, n in stats.counts.items()]
    rows.append(["**total**", f"**{stats.total}**"])
    return [
        *_table(["Status", "Results"], rows, "lr"),
        "",
        f"Unmapped rate: **{format_percent(stats.unmapped_rate)}** ({stats.unmapped} of "
        f"{stats.total} results got no span: unmapped or invalid) · offsets or document ids "
        f"rejected: {stats.hint_rejected}",
    ]


def _listed(items: Sequence[str], limit: int) -> str:
    return capped_list(items, limit, markdown_escape)


def _coverage_lines(evaluation: Evaluation, *, redact: bool, limit: int) -> list[str]:
    lines = []
    for entry in coverage_entries(evaluation, redact=redact):
        line = f"- **{entry.title}** ({entry.note}): {len(entry.items)}"
        if entry.listed:
            line += f" — {entry.items_text(limit, markdown_escape, markdown_escape)}"
        lines.append(line)
    return lines or ["Every gold query had exactly one record, and every record a gold query."]


def evaluation_markdown(
    evaluation: Evaluation,
    gold: GoldSet | None = None,
    *,
    redact: bool = False,
    limit: int = DEFAULT_LIST_LIMIT,
) -> str:
    """One evaluation as a Markdown page: settings, means, mapping health, coverage, queries.

    The sections answer, in order: what was measured (so two reports can be told apart), how
    well, whether the numbers can be trusted (mapping health, missing and failed queries), and
    which queries did badly. ``gold`` supplies question texts; ``limit`` caps every list.
    """
    check_count(limit, "limit")
    description = retriever_description(evaluation)
    title = "# spanchor evaluation"
    if description:
        title += f": {markdown_escape(description)}"
    lines = [
        title,
        "",
        f"**{len(evaluation)} queries scored**"
        + (f", {len(evaluation.skipped)} skipped" if evaluation.skipped else "")
        + f" · unmapped rate {format_percent(evaluation.mapping.unmapped_rate)}",
        "",
        "## Settings",
        "",
        *_table(["Setting", "Value"], _settings_rows(evaluation)),
    ]
    if evaluation.warnings:
        lines += ["", "## Warnings", ""]
        lines += [f"- {markdown_escape(w)}" for w in evaluation.warnings[:limit]]
        if len(evaluation.warnings) > limit:
            lines.append(f"- {more_text(limit, len(evaluation.warnings))}")
    lines += ["", "## Aggregates (mean over scored queries)", ""]
    lines += _aggregate_grid(evaluation) if evaluation.metric_names else ["No metrics."]
    lines += ["", "## Mapping health", "", *_mapping_lines(evaluation.mapping)]
    lines += ["", "## Query coverage", ""]
    lines += _coverage_lines(evaluation, redact=redact, limit=limit)

    lines += ["", "## Per-query results", ""]
    columns = headline_metrics(evaluation)
    show_question = gold is not None and not redact
    header = ["Query", *(["Question"] if show_question else []), "Status"]
    header += [markdown_escape(name) for name in columns]
    rows = []
    items = list(evaluation.queries.values())
    for query in items[:limit]:
        row = [markdown_escape(query.query_id)]
        if show_question:
            row.append(_question(gold, query.query_id))
        row.append(query.status.value.replace("_", " "))
        row += [format_number(query.metrics.get(name)) for name in columns]
        rows.append(row)
    align = "l" + ("l" if show_question else "") + "l" + "r" * len(columns)
    lines += _table(header, rows, align)
    if len(items) > limit:
        lines += ["", more_text(limit, len(items), "queries")]
    lines += ["", f"<sub>spanchor {markdown_escape(__version__)}</sub>", ""]
    return "\n".join(lines)


# -- comparison Markdown ------------------------------------------------------------------------


def _change_text(row: QueryChange, metrics: Iterable[str]) -> str:
    return "<br>".join(change_text(row, name, markdown_escape) for name in metrics)


def _aggregate_row(row: AggregateChange) -> list[str]:
    return [
        markdown_escape(row.metric),
        "↑" if row.direction == "higher" else "↓",
        str(row.n),
        format_number(row.baseline_mean),
        format_number(row.candidate_mean),
        format_delta(row.delta),
        format_interval(row.ci_low, row.ci_high),
        format_number(row.p_value, ".3g"),
        gate_text(row, fail="**FAIL**", escape=markdown_escape),
    ]


def _query_rows(
    rows: Sequence[QueryChange],
    gold: GoldSet | None,
    show_question: bool,
    change: Iterable[str] | None,
) -> list[list[str]]:
    """Numbered table cells of regressed (``change=None``) or improved queries."""
    cells = []
    for number, row in enumerate(rows, start=1):
        flaky = " *(flaky, allowed)*" if change is None and row.flaky else ""
        line = [str(number), markdown_escape(row.query_id) + flaky]
        if show_question:
            line.append(_question(gold, row.query_id))
        line.append(_change_text(row, row.regressed if change is None else improved_metrics(row)))
        cells.append(line)
    return cells


def _band(metric: str, low: float, high: float) -> str:
    return f"{markdown_escape(metric)} {format_number(low)}..{format_number(high)}"


def _flaky_lines(comparison: Comparison, limit: int) -> list[str]:
    """Several baselines: the flaky queries and the band of each metric that differs."""
    noise = comparison.noise
    if noise is None:
        return []
    lines = [f"### Flaky queries ({len(noise.flaky)}, across {noise.baselines} baselines)", ""]
    if not noise.flaky:
        return [*lines, "Every compared query scored the same in every baseline.", ""]
    rows = [
        [markdown_escape(row.query_id), ", ".join(_band(n, lo, hi) for n, lo, hi in row.bands)]
        for row in noise.flaky[:limit]
    ]
    lines += [FLAKY_BAND_NOTE, "", *_table(["Query", "Band"], rows)]
    if len(noise.flaky) > limit:
        lines += ["", more_text(limit, len(noise.flaky), "flaky queries")]
    return [*lines, ""]


def _why_lines(diagnosis: RegressionDiagnosis | None) -> list[str]:
    """The cause counts and the chunking / ranking split of recall (when inventories were known)."""
    if diagnosis is None:
        return []
    lines = ["### Why", "", f"**{markdown_escape(why_line(diagnosis))}**"]
    if diagnosis.note:
        lines += ["", markdown_escape(diagnosis.note)]
    splits = split_lines(diagnosis)
    if splits:
        lines += [
            "",
            "Chunking or ranking (oracle: the best recall@K any ranking could reach):",
            "",
        ]
        lines += [f"- {markdown_escape(line)}" for line in splits]
    return [*lines, ""]


def comparison_markdown(
    comparison: Comparison,
    *,
    baseline: Evaluation | None = None,
    candidate: Evaluation | None = None,
    gold: GoldSet | None = None,
    corpus: Corpus | None = None,
    redact: bool = False,
    limit: int = DEFAULT_LIST_LIMIT,
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS,
) -> str:
    """A comparison as Markdown for a GitHub step summary or a pull-request comment.

    The verdict is the first line, because that is all most readers look at; then what failed,
    then why (the cause counts and, with chunk inventories, the chunking / ranking split of
    recall), then each regression with its causes and the gold evidence the candidate lost
    (causes come with the comparison or need both evaluations; evidence needs both;
    the text needs ``corpus`` too, questions need ``gold``), improvements, mapping health of
    both sides and the aggregate statistics. ``limit`` caps every list; ``excerpt_chars`` caps
    each piece of evidence shown.
    """
    check_count(limit, "limit")
    check_count(excerpt_chars, "excerpt_chars")
    mark = "✅" if comparison.passed else "❌"
    lines = [f"## {mark} spanchor: {verdict_word(comparison)} — {counts_text(comparison)}", ""]
    if baseline is not None or candidate is not None:
        names = []
        for side, evaluation in (("baseline", baseline), ("candidate", candidate)):
            description = retriever_description(evaluation)
            names.append(f"{side}: {markdown_escape(description) if description else DASH}")
        lines += [" · ".join(names), ""]

    if comparison.findings:
        lines += ["### Findings", ""]
        ordered = [*comparison.errors, *comparison.warnings]
        for finding in ordered[:limit]:
            label = "**error**" if finding.severity == "error" else "warning"
            lines.append(
                f"- {label} ({markdown_escape(finding.code)}): {markdown_escape(finding.message)}"
            )
        if len(ordered) > limit:
            lines.append(f"- {more_text(limit, len(ordered))}")
        lines.append("")

    regressions = comparison.regressions()
    diagnosis = diagnosis_of(comparison, baseline, candidate)
    lines += _why_lines(diagnosis)
    show_question = gold is not None and not redact
    question_column = ["Question"] if show_question else []
    if regressions:
        lines += ["### Regressions (largest drop first)", ""]
        header = ["#", "Query", *question_column, "Change"]
        rows = _query_rows(regressions[:limit], gold, show_question, None)
        if diagnosis is not None and diagnosis.queries:
            header.append("Cause")
            for cells, row in zip(rows, regressions, strict=False):
                texts = cause_texts(diagnosis, row.query_id)
                cells.append("<br>".join(markdown_escape(t) for t in texts) or DASH)
        if baseline is not None and candidate is not None:
            header.append("Lost evidence")
            for cells, row in zip(rows, regressions, strict=False):
                cells.append(
                    _evidence_cell(
                        row,
                        baseline,
                        candidate,
                        gold,
                        corpus,
                        redact=redact,
                        excerpt_chars=excerpt_chars,
                    )
                )
        lines += _table(header, rows, "r")
        if len(regressions) > limit:
            lines += ["", more_text(limit, len(regressions), "regressions")]
        lines.append("")

    improved = improvements(comparison)
    if improved:
        lines += ["### Improvements (largest gain first)", ""]
        rows = _query_rows(improved[:limit], gold, show_question, ())
        lines += _table(["#", "Query", *question_column, "Change"], rows, "r")
        if len(improved) > limit:
            lines += ["", more_text(limit, len(improved), "improvements")]
        lines.append("")

    lines += _flaky_lines(comparison, limit)

    for side, ids in (
        ("baseline", comparison.only_in_baseline),
        ("candidate", comparison.only_in_candidate),
    ):
        if ids:
            lines += [f"Only in the {side} ({len(ids)}, not compared): {_listed(ids, limit)}", ""]

    sides = [(name, ev) for name, ev in (("baseline", baseline), ("candidate", candidate)) if ev]
    if sides:
        lines += ["### Mapping health", ""]
        lines += _table(
            ["Side", *MAPPING_COLUMNS],
            [[name, *mapping_cells(ev.mapping)] for name, ev in sides],
            "l" + "r" * len(MAPPING_COLUMNS),
        )
        lines.append("")

    if comparison.aggregates:
        lines += ["### Aggregates", ""]
        lines += _table(
            [*aggregate_headings(comparison), "p", "Gate"],
            [_aggregate_row(row) for row in comparison.aggregates],
            "llrrrrrrl",
        )
        lines += ["", markdown_escape(INTERVAL_AND_P_NOTE), ""]

    lines.append(
        f"<sub>spanchor {markdown_escape(__version__)} · "
        f"{policy_text(comparison, markdown_escape)}</sub>"
    )
    lines.append("")
    return "\n".join(lines)
