"""Reports: an evaluation or a comparison rendered as Markdown, JUnit XML or short plain lines.

Every renderer is a pure function returning a string; :func:`write_report` is the one helper
that touches a file (atomically). Output depends only on the inputs — no timestamps, no
dictionary-order accidents — so a report can be diffed and snapshot-tested.

Text that users wrote (questions, evidence, query ids, retriever descriptions, error messages)
goes through :func:`markdown_escape` before it reaches Markdown, is sanitised to what XML 1.0
can hold before it reaches JUnit, and loses its control characters before it reaches a terminal
line. ``redact=True`` removes questions, evidence text, unresolved query texts and retriever
error messages from every report; ids and numbers stay, so a redacted report still says what
failed and by how much.
"""

from __future__ import annotations

import json
import math
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from spanchor_core._io import atomic_write
from spanchor_core._version import __version__
from spanchor_core.compare import AggregateChange, ChangeStatus, Comparison, QueryChange
from spanchor_core.corpus import Corpus
from spanchor_core.errors import InputError
from spanchor_core.evaluate import (
    Evaluation,
    MappingStats,
    QueryEvaluation,
    QueryStatus,
)
from spanchor_core.gold import GoldSet
from spanchor_core.metrics import metric_parts
from spanchor_core.spans import (
    DocSpan,
    Span,
    group_by_document,
    intersect_spans,
    subtract_spans,
)

__all__ = [
    "DEFAULT_EXCERPT_CHARS",
    "DEFAULT_LIST_LIMIT",
    "comparison_junit",
    "comparison_markdown",
    "comparison_summary_lines",
    "evaluation_markdown",
    "evaluation_summary_lines",
    "lost_evidence",
    "markdown_escape",
    "write_report",
]

DEFAULT_LIST_LIMIT: Final = 50
"""Rows or ids a report lists before it says "… and N more". GitHub caps a step summary at
1 MiB; a report that lists 10,000 queries is not read anyway."""
DEFAULT_EXCERPT_CHARS: Final = 200
"""Characters of lost evidence shown per piece before the excerpt is cut with "…"."""
_EXCERPT_PIECES: Final = 3
"""Lost-evidence pieces shown per regressed query; the rest are counted."""
_DASH: Final = "–"
"""Shown for a value that does not exist (NaN, a metric a side does not report)."""


# -- escaping ---------------------------------------------------------------------------------

# Characters that Markdown (CommonMark + GitHub extensions) gives a meaning inside a line:
# emphasis, code spans, links, table cells, strikethrough, math. Any ASCII punctuation may be
# backslash-escaped in CommonMark, and GFM honours ``\|`` inside table cells, so escaping is
# always safe even where the character would have been harmless.
_MD_PUNCTUATION: Final = "\\`*_[]|~$"
# Every character Python's str.splitlines() treats as a line break. Markdown itself only
# breaks on \n and \r, but other renderers (and terminals) are less strict.
_LINE_BREAKS: Final = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_MD_TABLE: Final[dict[int, str]] = {
    **{ord(c): "\\" + c for c in _MD_PUNCTUATION},
    ord("&"): "&amp;",
    ord("<"): "&lt;",
    ord(">"): "&gt;",
    **{ord(c): "<br>" for c in _LINE_BREAKS},
    ord("\t"): " ",
    **{
        code: "\ufffd"
        for code in (*range(0x20), *range(0x7F, 0xA0))
        if chr(code) not in _LINE_BREAKS and chr(code) != "\t"
    },
}


def markdown_escape(text: str) -> str:
    """``text`` as inert Markdown: it renders as itself and cannot end a table cell or a line.

    Markdown punctuation is backslash-escaped, ``& < >`` become entities (so no HTML can be
    injected), every line break becomes ``<br>`` (a table row stays one line), a tab becomes a
    space and other control characters become U+FFFD. Letters, digits and spaces pass
    unchanged. Never wrap the result in a code span: backslashes are literal there.
    """
    return text.replace("\r\n", "\n").translate(_MD_TABLE)


# Characters XML 1.0 cannot hold at all, not even as character references.
_XML_INVALID: Final = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    """``text`` with every character XML 1.0 forbids replaced by U+FFFD.

    ElementTree escapes ``< & "`` but writes a NUL or ESC as it is, which makes the file
    unreadable to every XML parser: one odd query id would hide the whole test report.
    """
    return _XML_INVALID.sub("\ufffd", text)


_PLAIN_TABLE: Final[dict[int, str]] = {
    **{code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))},
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def _plain(text: str) -> str:
    """``text`` fit for one terminal line: line breaks and control characters shown escaped.

    A query id carrying an ESC sequence must not be able to rewrite the CI log around it.
    """
    return text.translate(_PLAIN_TABLE)


# -- small formatting helpers -----------------------------------------------------------------


def _check_limit(limit: int, name: str = "limit") -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InputError(f"{name} must be a whole number of at least 1, not {limit!r}")


def _fmt(value: float | None, spec: str = ".3f") -> str:
    if value is None or not math.isfinite(value):
        return _DASH
    return format(value, spec)


def _delta(value: float | None) -> str:
    return _fmt(value, "+.3f")


def _percent(value: float) -> str:
    return f"{100.0 * value:.1f}%"


def _short(digest: str | None) -> str:
    """The first 12 characters of a hash: enough to tell two apart, short enough to read."""
    if not digest:
        return _DASH
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


def _more(shown: int, total: int) -> str:
    return f"… and {total - shown} more"


def _listed(items: Sequence[str], limit: int) -> str:
    """Escaped items joined by commas, capped at ``limit``."""
    shown = ", ".join(markdown_escape(item) for item in items[:limit])
    return shown if len(items) <= limit else f"{shown} {_more(limit, len(items))}"


def _plain_listed(items: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(_plain(item) for item in items[:limit])
    return shown if len(items) <= limit else f"{shown} {_more(limit, len(items))}"


def _max_k(evaluation: Evaluation) -> int:
    """The deepest K the metrics report (the settings' deepest K if no metric has one)."""
    ks = [
        cutoff for name in evaluation.metric_names if (cutoff := metric_parts(name)[1]) is not None
    ]
    return max(ks) if ks else max(evaluation.settings.k)


def _retriever(header: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    """Description and compact parameters of the retriever named in a run header."""
    if not header:
        return None, None
    retriever = header.get("retriever")
    if not isinstance(retriever, Mapping):
        return None, None
    description = retriever.get("description")
    parameters = retriever.get("parameters")
    params = None
    if isinstance(parameters, Mapping) and parameters:
        params = json.dumps(parameters, sort_keys=True, ensure_ascii=False, default=str)
        if len(params) > 200:
            params = params[:199] + "…"
    return (description if isinstance(description, str) and description else None), params


def _question(gold: GoldSet | None, query_id: str) -> str:
    if gold is None or query_id not in gold:
        return ""
    return markdown_escape(gold[query_id].question)


# -- lost evidence ----------------------------------------------------------------------------


def _top_k(query: QueryEvaluation, k: int | None) -> Mapping[str, list[Span]]:
    spans = [
        span
        for result in query.results
        if (k is None or result.rank <= k) and (span := result.span) is not None
    ]
    return group_by_document(spans)


def lost_evidence(
    baseline: QueryEvaluation,
    candidate: QueryEvaluation,
    *,
    k: int | None = None,
    gold: Sequence[DocSpan] | None = None,
) -> list[DocSpan]:
    """Gold characters the baseline's top ``k`` covered and the candidate's top ``k`` does not.

    This is what a reviewer needs to see for a regression: not "recall fell by 0.4" but the
    sentence the retriever stopped finding. ``gold`` defaults to the candidate's gold spans
    (the baseline's if the candidate has none); ``k=None`` means the whole ranked list. Spans
    come back merged, in document-id then offset order.
    """
    gold_spans = gold if gold is not None else (candidate.gold or baseline.gold)
    gold_docs = group_by_document(gold_spans)
    before = _top_k(baseline, k)
    after = _top_k(candidate, k)
    lost: list[DocSpan] = []
    for document_id in sorted(gold_docs):
        covered = intersect_spans(gold_docs[document_id], before.get(document_id, []))
        for start, end in subtract_spans(covered, after.get(document_id, [])):
            lost.append(DocSpan(document_id, start, end))
    return lost


def _excerpt(corpus: Corpus, span: DocSpan, limit: int) -> str:
    """Escaped, whitespace-collapsed text of ``span``, cut at ``limit`` characters with a mark."""
    raw = corpus.text(span.document_id)[span.start : span.end]
    text = " ".join(raw.split())
    where = f"{markdown_escape(span.document_id)}[{span.start}:{span.end}]"
    if len(text) <= limit:
        return f"{where} “{markdown_escape(text)}”"
    cut = markdown_escape(text[:limit].rstrip())
    return f"{where} “{cut}…” *(excerpt: {limit} of {len(text)} characters)*"


def _regression_k(row: QueryChange, evaluation: Evaluation) -> int | None:
    """The cutoff at which lost evidence is judged: the deepest K of the regressed metrics.

    A whole-list metric (``mrr``, ``iou``) has no K of its own; the evaluation's deepest K is
    the depth the user asked to be scored, so it stands in.
    """
    cutoffs = [cutoff for name in row.regressed if (cutoff := metric_parts(name)[1]) is not None]
    if cutoffs:
        return max(cutoffs)
    return _max_k(evaluation)


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
    qid = row.query_id
    if qid not in baseline or qid not in candidate:
        return _DASH
    before, after = baseline[qid], candidate[qid]
    for side, evaluation in (("baseline", baseline), ("candidate", candidate)):
        if not evaluation.has_result_spans:
            source = markdown_escape(evaluation.settings.source_format)
            return f"*(the {side} evaluation was read from {source}, which keeps no result spans)*"
    anchors = None
    if gold is not None and qid in gold:
        anchors = [anchor.span for anchor in gold[qid].anchors]
    k = _regression_k(row, candidate)
    lost = lost_evidence(before, after, k=k, gold=anchors)
    depth = "the whole list" if k is None else f"top {k}"
    note = ""
    if after.status is not QueryStatus.SCORED:
        note = f"*(candidate: {after.status.value.replace('_', ' ')})* "
    if not lost:
        return f"{note}*(no gold characters lost in the {depth})*"
    total = sum(span.length for span in lost)
    head = f"{note}**lost {total} gold characters in the {depth}**"
    if redact or corpus is None:
        pieces = [
            f"{markdown_escape(span.document_id)}[{span.start}:{span.end}]"
            for span in lost[:_EXCERPT_PIECES]
        ]
    else:
        pieces = [_excerpt(corpus, span, excerpt_chars) for span in lost[:_EXCERPT_PIECES]]
    if len(lost) > _EXCERPT_PIECES:
        pieces.append(_more(_EXCERPT_PIECES, len(lost)) + " pieces")
    return "<br>".join([head, *pieces])


# -- evaluation Markdown ------------------------------------------------------------------------


def _settings_rows(evaluation: Evaluation) -> list[tuple[str, str]]:
    s = evaluation.settings
    description, params = _retriever(s.run_header)
    rows = [
        ("K", ", ".join(str(k) for k in s.k)),
        ("min_overlap", f"{s.min_overlap:g}"),
        ("corpus fingerprint", _short(s.corpus_fingerprint)),
        ("gold-set hash", _short(s.gold_sha256)),
        ("retriever", markdown_escape(description) if description else _DASH),
    ]
    if params:
        rows.append(("retriever parameters", markdown_escape(params)))
    if s.source_format and not s.source_format.startswith("spanchor.evaluation"):
        rows.append(("read from", markdown_escape(s.source_format)))
    return rows


def _aggregate_grid(evaluation: Evaluation) -> list[str]:
    """Means as a metric × K grid, then the spread at the deepest K and of whole-list metrics."""
    cells: dict[str, dict[int | None, str]] = {}
    for name in evaluation.metric_names:
        base, cutoff = metric_parts(name)
        cells.setdefault(base, {})[cutoff] = name
    ks = sorted({c for by_k in cells.values() for c in by_k if c is not None})
    whole = any(None in by_k for by_k in cells.values())
    header = ["Metric", *(f"@{k}" for k in ks), *(["whole list"] if whole else [])]
    columns: list[int | None] = [*ks, *([None] if whole else [])]
    summaries = evaluation.aggregates()
    rows = [
        [
            markdown_escape(base),
            *(_fmt(summaries[by_k[c]].mean) if c in by_k else "" for c in columns),
        ]
        for base, by_k in cells.items()
    ]
    lines = _table(header, rows, "l" + "r" * len(columns))
    deepest = max(ks) if ks else None
    spread = [name for name in evaluation.metric_names if metric_parts(name)[1] in (deepest, None)]
    if spread:
        lines += ["", f"Spread over {summaries[spread[0]].n} scored queries:", ""]
        lines += _table(
            ["Metric", "Mean", "Std", "Min", "Max"],
            [
                [
                    markdown_escape(name),
                    _fmt(summaries[name].mean),
                    _fmt(summaries[name].std),
                    _fmt(summaries[name].min),
                    _fmt(summaries[name].max),
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
        f"Unmapped rate: **{_percent(stats.unmapped_rate)}** ({stats.unmapped} of {stats.total} "
        f"results got no span: unmapped or invalid) · offsets or document ids rejected: "
        f"{stats.hint_rejected}",
    ]


def _coverage_lines(evaluation: Evaluation, *, redact: bool, limit: int) -> list[str]:
    lines: list[str] = []
    if evaluation.missing_in_run:
        lines.append(
            f"- **Missing in run** (scored as empty retrievals): {len(evaluation.missing_in_run)} "
            f"— {_listed(evaluation.missing_in_run, limit)}"
        )
    if evaluation.errors:
        if redact:
            detail = _listed(evaluation.errors, limit)
        else:
            shown = []
            for qid in evaluation.errors[:limit]:
                message = evaluation.queries[qid].error if qid in evaluation.queries else None
                text = markdown_escape(qid)
                if message:
                    short = message if len(message) <= 120 else message[:119] + "…"
                    text += f" ({markdown_escape(short)})"
                shown.append(text)
            detail = "; ".join(shown)
            if len(evaluation.errors) > limit:
                detail += " " + _more(limit, len(evaluation.errors))
        lines.append(
            f"- **Retriever errors** (scored as empty retrievals): {len(evaluation.errors)} "
            f"— {detail}"
        )
    if evaluation.skipped:
        items = list(evaluation.skipped.items())
        reasons = "; ".join(
            f"{markdown_escape(qid)} ({markdown_escape(reason)})" for qid, reason in items[:limit]
        )
        if len(items) > limit:
            reasons += " " + _more(limit, len(items))
        lines.append(f"- **Skipped** (not scored, not in any mean): {len(items)} — {reasons}")
    if evaluation.not_in_gold:
        lines.append(
            f"- **Not in the gold set** (ignored): {len(evaluation.not_in_gold)} "
            f"— {_listed(evaluation.not_in_gold, limit)}"
        )
    if evaluation.unresolved:
        count = len(evaluation.unresolved)
        if redact:
            lines.append(f"- **Records without a query id** (ignored): {count}")
        else:
            lines.append(
                f"- **Records without a query id** (ignored): {count} "
                f"— {_listed(evaluation.unresolved, limit)}"
            )
    if evaluation.duplicates:
        lines.append(
            f"- **Several records** (the last one was scored): {len(evaluation.duplicates)} "
            f"— {_listed(evaluation.duplicates, limit)}"
        )
    if not lines:
        lines.append("Every gold query had exactly one record, and every record a gold query.")
    return lines


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
    _check_limit(limit)
    k = _max_k(evaluation)
    description, _ = _retriever(evaluation.settings.run_header)
    title = "# spanchor evaluation"
    if description:
        title += f": {markdown_escape(description)}"
    lines = [
        title,
        "",
        f"**{len(evaluation)} queries scored**"
        + (f", {len(evaluation.skipped)} skipped" if evaluation.skipped else "")
        + f" · unmapped rate {_percent(evaluation.mapping.unmapped_rate)}",
        "",
        "## Settings",
        "",
        *_table(["Setting", "Value"], _settings_rows(evaluation)),
    ]
    if evaluation.warnings:
        lines += ["", "## Warnings", ""]
        lines += [f"- {markdown_escape(w)}" for w in evaluation.warnings[:limit]]
        if len(evaluation.warnings) > limit:
            lines.append(f"- {_more(limit, len(evaluation.warnings))}")
    lines += ["", "## Aggregates (mean over scored queries)", ""]
    lines += _aggregate_grid(evaluation) if evaluation.metric_names else ["No metrics."]
    lines += ["", "## Mapping health", "", *_mapping_lines(evaluation.mapping)]
    lines += ["", "## Query coverage", ""]
    lines += _coverage_lines(evaluation, redact=redact, limit=limit)

    lines += ["", "## Per-query results", ""]
    columns = [f"{base}@{k}" for base in ("recall", "precision", "hit", "full_evidence")]
    columns.append("mrr" if "mrr" in evaluation.metric_names else f"mrr@{k}")
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
        row += [_fmt(query.metrics.get(name)) for name in columns]
        rows.append(row)
    align = "l" + ("l" if show_question else "") + "l" + "r" * len(columns)
    lines += _table(header, rows, align)
    if len(items) > limit:
        lines += ["", _more(limit, len(items)) + " queries"]
    lines += ["", f"<sub>spanchor {markdown_escape(__version__)}</sub>", ""]
    return "\n".join(lines)


# -- comparison Markdown ------------------------------------------------------------------------


def _verdict(comparison: Comparison) -> str:
    return "PASS" if comparison.passed else "FAIL"


def _counts_text(comparison: Comparison) -> str:
    c = comparison.counts
    flaky = f" ({c['flaky_regressed']} allow-listed flaky)" if c["flaky_regressed"] else ""
    return (
        f"{c['regressed']} of {c['compared']} compared queries regressed{flaky}, "
        f"{c['improved']} improved, {c['unchanged']} unchanged; "
        f"{c['errors']} error{'s' if c['errors'] != 1 else ''}, "
        f"{c['warnings']} warning{'s' if c['warnings'] != 1 else ''}"
    )


def _change_text(row: QueryChange, metrics: Iterable[str]) -> str:
    parts = []
    for name in metrics:
        change = row.change(name)
        parts.append(
            f"{markdown_escape(name)} {_fmt(change.baseline)} → {_fmt(change.candidate)} "
            f"({_delta(change.delta)})"
        )
    return "<br>".join(parts)


def _improved_metrics(row: QueryChange) -> list[str]:
    return [c.metric for c in row.changes if c.status is ChangeStatus.IMPROVED]


def _gain(row: QueryChange) -> float:
    return max((abs(row.change(name).delta) for name in _improved_metrics(row)), default=0.0)


def _side_mapping_row(side: str, evaluation: Evaluation) -> list[str]:
    stats = evaluation.mapping
    return [
        side,
        str(stats.total),
        str(stats.unmapped),
        _percent(stats.unmapped_rate),
        str(stats.counts.get("ambiguous", 0)),
        str(stats.counts.get("fuzzy", 0)),
        str(stats.counts.get("normalised", 0)),
        str(stats.hint_rejected),
    ]


def _aggregate_row(row: AggregateChange) -> list[str]:
    ci = _DASH
    if row.ci_low is not None and row.ci_high is not None:
        ci = f"[{_delta(row.ci_low)}, {_delta(row.ci_high)}]"
    if row.gate is None:
        gate = _DASH
    else:
        verdict = {True: "pass", False: "**FAIL**", None: _DASH}[row.gate_passed]
        gate = f"{verdict} (max drop {row.gate.max_drop:g} on {row.gate.basis.replace('_', ' ')})"
    return [
        markdown_escape(row.metric),
        "↑" if row.direction == "higher" else "↓",
        str(row.n),
        _fmt(row.baseline_mean),
        _fmt(row.candidate_mean),
        _delta(row.delta),
        ci,
        _fmt(row.p_value, ".3g"),
        gate,
    ]


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
    then each regression with the gold evidence the candidate lost (needs both evaluations;
    the text needs ``corpus`` too, questions need ``gold``), improvements, mapping health of
    both sides and the aggregate statistics. ``limit`` caps every list; ``excerpt_chars`` caps
    each piece of evidence shown.
    """
    _check_limit(limit)
    _check_limit(excerpt_chars, "excerpt_chars")
    mark = "✅" if comparison.passed else "❌"
    lines = [
        f"## {mark} spanchor: {_verdict(comparison)} — {_counts_text(comparison)}",
        "",
    ]
    if baseline is not None or candidate is not None:
        names = []
        for side, evaluation in (("baseline", baseline), ("candidate", candidate)):
            description = (
                None if evaluation is None else _retriever(evaluation.settings.run_header)[0]
            )
            names.append(f"{side}: {markdown_escape(description) if description else _DASH}")
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
            lines.append(f"- {_more(limit, len(ordered))}")
        lines.append("")

    regressions = comparison.regressions()
    show_question = gold is not None and not redact
    with_evidence = baseline is not None and candidate is not None
    if regressions:
        lines += ["### Regressions (largest drop first)", ""]
        header = ["#", "Query", *(["Question"] if show_question else []), "Change"]
        if with_evidence:
            header.append("Lost evidence")
        rows = []
        for number, row in enumerate(regressions[:limit], start=1):
            qid = markdown_escape(row.query_id) + (" *(flaky, allowed)*" if row.flaky else "")
            cells = [str(number), qid]
            if show_question:
                cells.append(_question(gold, row.query_id))
            cells.append(_change_text(row, row.regressed))
            if baseline is not None and candidate is not None:
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
            rows.append(cells)
        lines += _table(header, rows, "r")
        if len(regressions) > limit:
            lines += ["", _more(limit, len(regressions)) + " regressions"]
        lines.append("")

    improvements = sorted(
        (row for row in comparison.queries if row.status is ChangeStatus.IMPROVED),
        key=lambda row: (-_gain(row), row.query_id),
    )
    if improvements:
        lines += ["### Improvements (largest gain first)", ""]
        header = ["#", "Query", *(["Question"] if show_question else []), "Change"]
        rows = []
        for number, row in enumerate(improvements[:limit], start=1):
            cells = [str(number), markdown_escape(row.query_id)]
            if show_question:
                cells.append(_question(gold, row.query_id))
            cells.append(_change_text(row, _improved_metrics(row)))
            rows.append(cells)
        lines += _table(header, rows, "r")
        if len(improvements) > limit:
            lines += ["", _more(limit, len(improvements)) + " improvements"]
        lines.append("")

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
            [
                "Side",
                "Results",
                "Unmapped",
                "Unmapped rate",
                "Ambiguous",
                "Fuzzy",
                "Normalised",
                "Hints rejected",
            ],
            [_side_mapping_row(name, ev) for name, ev in sides],
            "lrrrrrrr",
        )
        lines.append("")

    if comparison.aggregates:
        confidence = comparison.policy.bootstrap.confidence
        lines += ["### Aggregates", ""]
        lines += _table(
            [
                "Metric",
                "Better",
                "n",
                "Baseline",
                "Candidate",
                "Δ mean",
                f"{confidence:.0%} CI of Δ",
                "p",
                "Gate",
            ],
            [_aggregate_row(row) for row in comparison.aggregates],
            "llrrrrrrl",
        )
        lines.append("")

    policy = comparison.policy
    gates = ", ".join(
        f"{markdown_escape(name)} ≤ {drop:g}" for name, drop in sorted(policy.max_drop.items())
    )
    lines.append(
        f"<sub>spanchor {markdown_escape(__version__)} · per-query max drop: {gates or _DASH} · "
        f"noise floor {policy.noise_floor:g} · {policy.bootstrap.n_resamples} resamples, "
        f"seed {comparison.seed}</sub>"
    )
    lines.append("")
    return "\n".join(lines)


# -- JUnit XML --------------------------------------------------------------------------------

# Findings that a per-query test case already reports.
_PER_QUERY_CODES: Final = frozenset({"regression", "flaky_regression"})


def _query_classname(comparison: Comparison) -> str:
    """``spanchor.<metric>`` when one metric is gated per query, else ``spanchor.query``.

    CI servers keep a test's history under (classname, name); deriving the classname from the
    policy rather than from what regressed keeps one query's history in one place.
    """
    gated = sorted(comparison.policy.max_drop)
    return f"spanchor.{gated[0]}" if len(gated) == 1 else "spanchor.query"


def _metric_lines(row: QueryChange) -> str:
    return "\n".join(
        f"{c.metric}: {c.baseline:.4f} -> {c.candidate:.4f} (delta {c.delta:+.4f}"
        + (f", {c.status.value}" if c.status is not None else "")
        + ")"
        for c in row.changes
    )


def _sub(parent: ET.Element, tag: str, **attributes: str) -> ET.Element:
    return ET.SubElement(parent, tag, {key: _xml_text(value) for key, value in attributes.items()})


def comparison_junit(
    comparison: Comparison, *, redact: bool = False, suite_name: str = "spanchor"
) -> str:
    """The comparison as JUnit XML, so CI systems list every regression as a failed test.

    One test case per compared query (a ``<failure>`` if it regressed, ``<skipped>`` if an
    allow-listed flaky query regressed), one per query found on one side only, and one per
    error finding that is not about a single query (settings mismatch, too few queries, a
    failed aggregate gate, ...). The XML holds ids, metric names and numbers only — never
    questions or evidence — so ``redact`` changes nothing; it is accepted so that callers can
    pass the same flag to every renderer.
    """
    del redact  # nothing to remove: see the docstring
    suite = ET.Element("testsuite", {"name": _xml_text(suite_name)})
    properties = _sub(suite, "properties")
    _sub(properties, "property", name="verdict", value=_verdict(comparison))
    _sub(properties, "property", name="exit_code", value=str(comparison.exit_code))
    _sub(properties, "property", name="seed", value=str(comparison.seed))
    _sub(properties, "property", name="spanchor_version", value=__version__)

    tests = failures = skipped = 0
    classname = _query_classname(comparison)
    for row in comparison.queries:
        case = _sub(suite, "testcase", classname=classname, name=row.query_id)
        tests += 1
        if row.status is ChangeStatus.REGRESSION:
            summary = "; ".join(
                f"{name} {row.change(name).baseline:.4f} -> {row.change(name).candidate:.4f} "
                f"({row.change(name).delta:+.4f})"
                for name in row.regressed
            )
            if row.flaky:
                _sub(case, "skipped", message=f"allow-listed flaky query regressed: {summary}")
                skipped += 1
            else:
                failure = _sub(case, "failure", type="regression", message=summary)
                failure.text = _xml_text(_metric_lines(row))
                failures += 1
        elif row.flaky:
            out = _sub(case, "system-out")
            out.text = "allow-listed as flaky"

    seen: dict[tuple[str, str], int] = {}
    for finding in comparison.findings:
        if finding.code in _PER_QUERY_CODES:
            continue
        if finding.code == "missing_queries":
            for qid in finding.query_ids:
                side = "baseline" if qid in comparison.only_in_baseline else "candidate"
                case = _sub(suite, "testcase", classname="spanchor.missing", name=qid)
                tests += 1
                message = f"only in the {side}: not compared"
                if finding.severity == "error":
                    _sub(case, "failure", type=finding.code, message=message)
                    failures += 1
                else:
                    _sub(case, "skipped", message=message)
                    skipped += 1
            continue
        if finding.severity != "error":
            continue
        group = f"spanchor.{finding.metric}" if finding.metric else "spanchor.comparison"
        count = seen.get((group, finding.code), 0) + 1
        seen[(group, finding.code)] = count
        name = finding.code if count == 1 else f"{finding.code} #{count}"
        case = _sub(suite, "testcase", classname=group, name=name)
        _sub(case, "failure", type=finding.code, message=finding.message)
        tests += 1
        failures += 1

    counts = {
        "tests": str(tests),
        "failures": str(failures),
        "errors": "0",
        "skipped": str(skipped),
    }
    suite.attrib.update(counts)  # serialised in insertion order: name, then the counts
    root = ET.Element("testsuites", {"name": _xml_text(suite_name), **counts})
    root.append(suite)
    ET.indent(root, space="  ")
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'


# -- plain lines ------------------------------------------------------------------------------


def comparison_summary_lines(comparison: Comparison) -> list[str]:
    """A few plain lines for a terminal: verdict and counts, findings, aggregate changes.

    Plain text (no Markdown, no markup): the CLI decides how to style it. Control characters
    in ids are shown escaped.
    """
    lines = [
        f"{_verdict(comparison)}: {_counts_text(comparison)} (exit code {comparison.exit_code})"
    ]
    for finding in (*comparison.errors, *comparison.warnings):
        lines.append(f"{finding.severity} [{finding.code}]: {_plain(finding.message)}")
    for row in comparison.aggregates:
        if row.delta is None:
            lines.append(f"{row.metric}: not measured (no compared queries)")
            continue
        text = (
            f"{row.metric}: mean {_fmt(row.baseline_mean)} -> {_fmt(row.candidate_mean)} "
            f"(delta {_delta(row.delta)}"
        )
        if row.ci_low is not None and row.ci_high is not None:
            level = comparison.policy.bootstrap.confidence
            text += f", {level:.0%} CI [{_delta(row.ci_low)}, {_delta(row.ci_high)}]"
        if row.p_value is not None:
            text += f", p = {row.p_value:.3g}"
        lines.append(text + ")")
    return lines


def evaluation_summary_lines(evaluation: Evaluation) -> list[str]:
    """A few plain lines for a terminal: what was scored, the headline means, mapping health."""
    s = evaluation.settings
    skipped = f", {len(evaluation.skipped)} skipped" if evaluation.skipped else ""
    lines = [
        f"{len(evaluation)} queries scored{skipped} "
        f"(K = {', '.join(str(k) for k in s.k)}; min_overlap {s.min_overlap:g})"
    ]
    k = _max_k(evaluation)
    headline = [f"{base}@{k}" for base in ("recall", "precision", "hit", "full_evidence")]
    headline.append("mrr" if "mrr" in evaluation.metric_names else f"mrr@{k}")
    shown = [
        f"{name} {_fmt(evaluation.mean(name))}"
        for name in headline
        if name in evaluation.metric_names
    ]
    if shown and len(evaluation):
        lines.append("mean " + ", ".join(shown))
    m = evaluation.mapping
    lines.append(
        f"mapping: {m.total} results, {m.unmapped} unmapped ({_percent(m.unmapped_rate)}), "
        f"{m.counts.get('ambiguous', 0)} ambiguous, {m.counts.get('fuzzy', 0)} fuzzy, "
        f"{m.hint_rejected} hints rejected"
    )
    for label, ids in (
        ("missing in run", evaluation.missing_in_run),
        ("retriever errors", evaluation.errors),
        ("skipped", tuple(evaluation.skipped)),
        ("not in gold", evaluation.not_in_gold),
        ("duplicates", evaluation.duplicates),
    ):
        if ids:
            lines.append(f"{label}: {len(ids)} ({_plain_listed(ids)})")
    if evaluation.unresolved:
        lines.append(f"records without a query id: {len(evaluation.unresolved)}")
    lines += [f"warning: {_plain(w)}" for w in evaluation.warnings]
    return lines


# -- writing ----------------------------------------------------------------------------------


def write_report(text: str, path: str | os.PathLike[str]) -> None:
    """Write ``text`` to ``path`` as UTF-8, atomically (a temporary file, then a rename).

    A CI step that reads the report while it is being written, or a job killed mid-write,
    sees the old report or the new one, never half of one.
    """
    atomic_write(path, text, what="the report")
