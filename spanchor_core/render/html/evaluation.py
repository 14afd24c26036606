"""The HTML evaluation page and its notebook fragment: means by K, recall-vs-K curves,
mapping health, query coverage, the worst queries' missed evidence in context, the per-query
table and the settings.

Everything a user wrote is HTML-escaped; ``redact=True`` removes questions, evidence text,
retriever error messages and unresolved query texts (ids and numbers stay).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from spanchor_core.corpus import Corpus
from spanchor_core.evaluate import Evaluation
from spanchor_core.gold import GoldSet
from spanchor_core.render.html.comparison import DEFAULT_HTML_LIMIT
from spanchor_core.render.html.evidence import (
    DEFAULT_CONTEXT_CHARS,
    check_context_chars,
    context_legend,
    missed_evidence_html,
)
from spanchor_core.render.html.page import (
    code,
    curves_panel,
    footer,
    fragment,
    mapping_table,
    page,
    section,
    table,
)
from spanchor_core.render.text import (
    DASH,
    check_count,
    deepest_k,
    format_number,
    format_percent,
    html_escape,
    metric_grid,
    more_text,
)
from spanchor_core.render.wording import (
    coverage_entries,
    headline_metrics,
    question_for,
    retriever_description,
    retriever_parameters,
)

__all__ = ["evaluation_html", "evaluation_summary_html"]


def _metric_grid(evaluation: Evaluation, bases: Sequence[str] | None = None) -> str:
    """Means as a metric × K table (whole-list metrics in their own column)."""
    grid = metric_grid(evaluation, bases)
    if not grid.rows:
        return "<p>No metrics.</p>"
    rows = [
        [code(base), *("" if v is None else format_number(v) for v in means)]
        for base, means in grid.rows
    ]
    return table(["Metric", *grid.labels], rows, [False, *([True] * len(grid.columns))])


def _coverage_items(evaluation: Evaluation, *, redact: bool, limit: int) -> list[str]:
    items = []
    for entry in coverage_entries(evaluation, redact=redact):
        text = f"<li><strong>{entry.title}</strong> ({entry.note}): {len(entry.items)}"
        if entry.listed:
            text += f" — {entry.items_text(limit, code, html_escape)}"
        items.append(text + "</li>")
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
    k = deepest_k(evaluation)
    name = f"recall@{k}"
    if name not in evaluation.metric_names:
        return ""
    worst = sorted(
        (q for q in evaluation.queries.values() if q.metrics[name] < 1.0),
        key=lambda q: (q.metrics[name], q.query_id),
    )
    if not worst:
        return section(
            "missed", "Missed evidence", f"<p>Every query's top {k} covers all its gold.</p>"
        )
    intro = (
        f'<p class="caption">Queries whose top {k} misses gold evidence, lowest {name} first.'
        "</p>"
        + (
            ""
            if redact
            else context_legend(
                ("lost", "missed", f"gold the top {k} does not cover"),
                ("kept", "found", f"gold the top {k} covers"),
            )
        )
    )
    articles = []
    for number, query in enumerate(worst[:_MISSED_QUERIES], start=1):
        parts = [
            f'<article class="query missed" data-query="{html_escape(query.query_id)}">'
            f"<h3>#{number} {code(query.query_id)} · {html_escape(name)} "
            f"{format_number(query.metrics[name])}</h3>"
        ]
        question = question_for(gold, query.query_id, redact=redact)
        if question:
            parts.append(f'<p class="question">{html_escape(question)}</p>')
        parts.append(
            missed_evidence_html(query, k, gold, corpus, redact=redact, context_chars=context_chars)
        )
        articles.append("".join(parts) + "</article>")
    if len(worst) > _MISSED_QUERIES:
        articles.append(f"<p>{more_text(_MISSED_QUERIES, len(worst), 'queries')}</p>")
    return section("missed", "Missed evidence", intro, *articles)


def _per_query_table(
    evaluation: Evaluation, gold: GoldSet | None, *, redact: bool, limit: int
) -> str:
    columns = [name for name in headline_metrics(evaluation) if name in evaluation.metric_names]
    show_question = gold is not None and not redact
    header = [
        "Query",
        *(["Question"] if show_question else []),
        "Status",
        *(f"{code(name)}" for name in columns),
    ]
    rows = []
    items = list(evaluation.queries.values())
    for query in items[:limit]:
        row = [f"{code(query.query_id)}"]
        if show_question:
            row.append(html_escape(question_for(gold, query.query_id) or ""))
        row.append(html_escape(query.status.value.replace("_", " ")))
        row += [format_number(query.metrics.get(name)) for name in columns]
        rows.append(row)
    numeric = [False, *([False] if show_question else []), False, *([True] * len(columns))]
    more = f"<p>{more_text(limit, len(items), 'queries')}</p>" if len(items) > limit else ""
    return table(header, rows, numeric) + more


def _settings_table(evaluation: Evaluation) -> str:
    s = evaluation.settings
    rows = [
        ("K", ", ".join(str(k) for k in s.k)),
        ("min_overlap", f"{s.min_overlap:g}"),
        ("corpus fingerprint", html_escape(s.corpus_fingerprint or DASH)),
        ("gold-set hash", html_escape(s.gold_sha256 or DASH)),
        ("retriever", html_escape(retriever_description(evaluation) or DASH)),
    ]
    params = retriever_parameters(evaluation)
    if params:
        rows.append(("retriever parameters", f"{code(params)}"))
    if not evaluation.has_result_spans:
        rows.append(("read from", html_escape(s.source_format)))
    return table(["Setting", "Value"], rows)


def _evaluation_head(evaluation: Evaluation, tag: str) -> str:
    description = retriever_description(evaluation)
    skipped = f", {len(evaluation.skipped)} skipped" if evaluation.skipped else ""
    title = "spanchor evaluation" + (f": {html_escape(description)}" if description else "")
    return (
        f'<{tag} class="head"><h1>{title}</h1><p><strong>{len(evaluation)} queries scored'
        f"</strong>{skipped} · unmapped rate {format_percent(evaluation.mapping.unmapped_rate)}</p>"
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
    check_count(limit, "limit")
    check_context_chars(context_chars)
    body = [
        _evaluation_head(evaluation, "header"),
        (f"<p>{html_escape(title)}</p>" if title else ""),
        section("summary", "Means over the scored queries", _metric_grid(evaluation)),
        section(
            "curves",
            "Recall against K",
            curves_panel([("this run", evaluation)], None, width=370, with_table=False),
        ),
        section("mapping", "Mapping health", mapping_table([("run", evaluation.mapping)])),
    ]
    coverage = _coverage_items(evaluation, redact=redact, limit=limit)
    body.append(
        section(
            "coverage",
            "Query coverage",
            "<ul>" + "".join(coverage) + "</ul>"
            if coverage
            else "<p>Every gold query had exactly one record, and every record a gold query.</p>",
        )
    )
    if evaluation.warnings:
        body.append(
            section(
                "warnings",
                "Warnings",
                "<ul>"
                + "".join(f"<li>{html_escape(w)}</li>" for w in evaluation.warnings)
                + "</ul>",
            )
        )
    if corpus is not None:
        body.append(
            _missed_section(evaluation, gold, corpus, redact=redact, context_chars=context_chars)
        )
    body += [
        section(
            "queries",
            "Per-query results",
            _per_query_table(evaluation, gold, redact=redact, limit=limit),
        ),
        section("settings", "Settings", _settings_table(evaluation)),
        footer(None),
    ]
    return page(title or "spanchor evaluation", body)


_SUMMARY_BASES: Final = ("recall", "precision", "hit", "full_evidence", "mrr", "ndcg")


def evaluation_summary_html(evaluation: Evaluation) -> str:
    """A compact HTML fragment for notebooks: headline means by K, a small recall-vs-K curve,
    mapping health. Needs nothing but the evaluation; used by ``Evaluation._repr_html_``."""
    m = evaluation.mapping
    body = [
        _evaluation_head(evaluation, "div"),
        _metric_grid(evaluation, _SUMMARY_BASES),
        curves_panel([("this run", evaluation)], None, width=300, with_table=False),
        f'<p class="muted">Mapping: {m.total} results, {m.unmapped} unmapped '
        f"({format_percent(m.unmapped_rate)}), {m.counts.get('ambiguous', 0)} ambiguous, "
        f"{m.counts.get('fuzzy', 0)} fuzzy, {m.hint_rejected} hints rejected.</p>",
    ]
    return fragment(body)
