"""The HTML comparison page and its notebook fragment: the verdict, findings, the per-query
delta plot, recall-vs-K curves of both sides, each regression with its lost evidence in
context, improvements, mapping health and the aggregates with their intervals.

Everything a user wrote is HTML-escaped; ``redact=True`` removes questions and evidence text
(ids and numbers stay). Output depends only on the inputs, so two renders are byte-identical.
"""

from __future__ import annotations

import math
from typing import Final

from spanchor_core.compare import Comparison
from spanchor_core.corpus import Corpus
from spanchor_core.diagnosis import RegressionDiagnosis
from spanchor_core.evaluate import Evaluation
from spanchor_core.gold import GoldSet
from spanchor_core.render.causes import diagnosis_of, split_lines, why_line
from spanchor_core.render.html.evidence import (
    DEFAULT_CONTEXT_CHARS,
    check_context_chars,
    context_legend,
    regression_evidence_html,
)
from spanchor_core.render.html.page import (
    code,
    curves_panel,
    footer,
    fragment,
    id_list,
    legend,
    mapping_table,
    page,
    section,
    side_label,
    table,
)
from spanchor_core.render.html.svg import DELTA_LEGEND, ci_svg, delta_svg, nice_ticks
from spanchor_core.render.series import (
    DELTA_COLOURS,
    metric_direction,
    primary_metric,
    query_deltas,
)
from spanchor_core.render.text import (
    DASH,
    check_count,
    format_delta,
    format_interval,
    format_number,
    html_escape,
    more_text,
)
from spanchor_core.render.wording import (
    INTERVAL_AND_P_NOTE,
    aggregate_headings,
    change_text,
    gate_text,
    improved_metrics,
    improvements,
    question_for,
    regressed_text,
    retriever_description,
    verdict_word,
)

__all__ = ["DEFAULT_HTML_LIMIT", "comparison_html", "comparison_summary_html"]

DEFAULT_HTML_LIMIT: Final = 200
"""Rows, bars and sections a page shows before it says "… and N more". A browser copes with
more, but a page listing 10,000 queries is not read either."""
_SUMMARY_BARS: Final = 30
"""Bars in the notebook summary's delta plot."""


def _strong(text: str) -> str:
    return f"<strong>{text}</strong>"


def _verdict_html(
    comparison: Comparison,
    baseline: Evaluation | None,
    candidate: Evaluation | None,
    title: str | None,
) -> str:
    c = comparison.counts
    verdict = verdict_word(comparison)
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
        f"<h1>{verdict}: {regressed_text(comparison)}</h1>",
        '<p class="chips">' + "".join(f"<span>{chip}</span>" for chip in chips) + "</p>",
    ]
    if baseline is not None or candidate is not None:
        sides = " · ".join(
            f"{side}: {html_escape(retriever_description(ev) or DASH)}"
            for side, ev in (("baseline", baseline), ("candidate", candidate))
        )
        lines.append(f"<p>{sides}</p>")
    if title:
        lines.append(f"<p>{html_escape(title)}</p>")
    lines.append("</header>")
    return "".join(lines)


def _findings_html(comparison: Comparison, limit: int) -> str:
    ordered = [*comparison.errors, *comparison.warnings]
    if not ordered:
        return section("findings", "Findings", "<p>No errors and no warnings.</p>")
    items = [
        f'<li><span class="badge {f.severity}">{f.severity}</span> {code(f.code)} '
        f"{html_escape(f.message)}</li>"
        for f in ordered[:limit]
    ]
    if len(ordered) > limit:
        items.append(f"<li>{more_text(limit, len(ordered))}</li>")
    return section("findings", "Findings", '<ul class="findings">', *items, "</ul>")


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
        return section("deltas", "Per-query change", "<p>No compared queries to plot.</p>")
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
        notes.append(f"Unchanged ({len(unchanged)}): {id_list(unchanged, bars)}")
    note = "".join(f'<p class="caption">{text}</p>' for text in notes)
    drop = comparison.policy.max_drop.get(name)
    rule = (
        f"The gate allows each query to lose at most {drop:g} of {html_escape(name)}."
        if drop is not None
        else f"{html_escape(name)} is gated on its mean only."
        if name in comparison.policy.aggregate
        else ""
    )
    caption = (
        f'<p class="caption">One bar per query whose {html_escape(name)} changed, worst first; '
        f"bars left of the line lost {html_escape(name)}"
        + (
            ", right of it gained"
            if metric_direction(comparison, name) == "higher"
            else ", right of it rose (lower is better)"
        )
        + "; the grey row counts the queries that did not change."
        + f" {rule}</p>"
    )
    kinds = {d.kind for d in shown}
    key = legend((DELTA_COLOURS[kind], label) for kind, label in DELTA_LEGEND if kind in kinds)
    chart = delta_svg(shown, name, width=width, gold=gold, redact=redact)
    title = f"Per-query change in {html_escape(name)}"
    if not heading:
        return f"<h2>{title}</h2>{key}{chart}{note}"
    return section("deltas", title, caption, key, chart, note)


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
    diagnosis: RegressionDiagnosis | None = None,
) -> str:
    regressions = comparison.regressions()
    if not regressions:
        return section("regressions", "Regressions", "<p>No query regressed.</p>")
    intro = (
        '<p class="caption">Largest drop first. Each shows why it regressed and the gold '
        "evidence the candidate lost, in its document.</p>"
    )
    intro += _why_html(diagnosis)
    if baseline is None or candidate is None:
        intro += (
            '<p class="muted">Pass both evaluations (baseline=, candidate=) to see the '
            "lost evidence.</p>"
        )
    elif not redact and corpus is not None:
        intro += context_legend(
            ("lost", "lost", "gold the baseline found and the candidate no longer does"),
            ("kept", "kept", "gold the candidate still finds"),
            ("gold", "missed", "gold neither side found"),
        )
    articles = []
    for number, row in enumerate(regressions[:limit], start=1):
        changes = " · ".join(
            change_text(row, name, html_escape, emphasise=_strong) for name in row.regressed
        )
        flaky = ' <span class="badge warning">flaky, allowed</span>' if row.flaky else ""
        parts = [
            f'<article class="query{" flaky" if row.flaky else ""}" '
            f'id="regression-{number}" data-query="{html_escape(row.query_id)}">',
            f"<h3>#{number} {code(row.query_id)}{flaky}</h3>",
        ]
        question = question_for(gold, row.query_id, redact=redact)
        if question:
            parts.append(f'<p class="question">{html_escape(question)}</p>')
        parts.append(f"<p>{changes}</p>")
        parts.append(_causes_html(diagnosis, row.query_id))
        if baseline is not None and candidate is not None:
            parts.append(
                regression_evidence_html(
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
        articles.append(f"<p>{more_text(limit, len(regressions), 'regressions')}</p>")
    return section("regressions", "Regressions", intro, *articles)


def _why_html(diagnosis: RegressionDiagnosis | None) -> str:
    """The cause counts, a note, and the chunking / ranking split of recall per K."""
    if diagnosis is None:
        return ""
    parts = [f'<p class="why">{_strong("why")}: {html_escape(why_line(diagnosis))}</p>']
    if diagnosis.note:
        parts.append(f'<p class="muted">{html_escape(diagnosis.note)}</p>')
    splits = split_lines(diagnosis)
    if splits:
        parts.append(
            '<p class="caption">Chunking or ranking (oracle: the best recall@K any ranking '
            "could reach with that chunking):</p>"
        )
        items = "".join(f"<li>{html_escape(line)}</li>" for line in splits)
        parts.append(f'<ul class="splits">{items}</ul>')
    return "".join(parts)


def _causes_html(diagnosis: RegressionDiagnosis | None, query_id: str) -> str:
    """One item per cause: its kind as a badge, then the rest of its clause."""
    if diagnosis is None or query_id not in diagnosis:
        return ""
    causes = diagnosis[query_id].causes
    if not causes:
        return '<p class="muted">No gold evidence lost at its cutoff (no cause).</p>'
    items = []
    for cause in causes:
        text = cause.describe().removeprefix(f"{cause.kind}: ")
        items.append(
            f'<li><span class="badge cause" data-cause="{cause.kind}">{cause.kind}</span>'
            f"{html_escape(text)}</li>"
        )
    return f'<ul class="causes">{"".join(items)}</ul>'


def _improvements_section(
    comparison: Comparison, gold: GoldSet | None, *, redact: bool, limit: int
) -> str:
    rows = improvements(comparison)
    if not rows:
        return section("improvements", "Improvements", "<p>No query improved.</p>")
    show_question = gold is not None and not redact
    header = ["#", "Query", *(["Question"] if show_question else []), "Change"]
    cells = []
    for number, row in enumerate(rows[:limit], start=1):
        line = [str(number), f"{code(row.query_id)}"]
        if show_question:
            line.append(html_escape(question_for(gold, row.query_id) or ""))
        line.append(
            "<br>".join(change_text(row, name, html_escape) for name in improved_metrics(row))
        )
        cells.append(line)
    more = f"<p>{more_text(limit, len(rows), 'improvements')}</p>" if len(rows) > limit else ""
    return section("improvements", "Improvements", table(header, cells, [True]), more)


def _aggregates_section(comparison: Comparison) -> str:
    if not comparison.aggregates:
        return ""
    extent = max(
        (
            abs(value)
            for row in comparison.aggregates
            for value in (row.ci_low, row.ci_high, row.delta)
            if value is not None and math.isfinite(value)
        ),
        default=0.0,
    )
    scale = nice_ticks(0.0, extent, 4)[-1] if extent > 0 else 1.0
    rows = []
    for row in comparison.aggregates:
        picture = ""
        if row.ci_low is not None and row.ci_high is not None and row.delta is not None:
            gain = row.delta if row.direction == "higher" else -row.delta
            colour = (
                DELTA_COLOURS["regressed"]
                if row.gate_passed is False or gain < 0
                else DELTA_COLOURS["improved"]
                if gain > 0
                else DELTA_COLOURS["unchanged"]
            )
            picture = ci_svg(row.ci_low, row.delta, row.ci_high, scale, colour)
        rows.append(
            [
                f"{code(row.metric)}",
                "higher" if row.direction == "higher" else "lower",
                str(row.n),
                format_number(row.baseline_mean),
                format_number(row.candidate_mean),
                format_delta(row.delta),
                format_interval(row.ci_low, row.ci_high),
                picture,
                format_number(row.p_value, ".3g"),
                gate_text(row, fail="<strong>FAIL</strong>", escape=html_escape),
            ]
        )
    grid = table(
        [*aggregate_headings(comparison), f"Δ and CI (±{scale:g})", "p", "Gate"],
        rows,
        [False, False, True, True, True, True, True, False, True, False],
    ).replace("<td>" + '<svg class="ci"', '<td class="ci"><svg class="ci"')
    caption = (
        '<p class="caption">Means over the compared queries. The interval is a paired '
        "bootstrap interval of the mean change; p is a paired sign-flip test (two-sided). "
        f"The grey line in each picture is zero. {html_escape(INTERVAL_AND_P_NOTE)}</p>"
    )
    return section("aggregates", "Aggregates", caption, grid)


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
    check_count(limit, "limit")
    check_context_chars(context_chars)
    sides = [(name, ev) for name, ev in (("baseline", baseline), ("candidate", candidate)) if ev]
    if baseline is not None and candidate is not None:
        compared = [row.query_id for row in comparison.queries]
        curves = curves_panel(
            [(side_label(n, ev), ev) for n, ev in sides], compared, width=370, with_table=True
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
        section("curves", "Recall against K", curves),
        _regressions_section(
            comparison,
            baseline,
            candidate,
            gold,
            corpus,
            redact=redact,
            limit=limit,
            context_chars=context_chars,
            diagnosis=diagnosis_of(comparison, baseline, candidate),
        ),
        _improvements_section(comparison, gold, redact=redact, limit=limit),
    ]
    if comparison.noise is not None:
        flaky = comparison.noise.flaky_ids
        body.append(
            f"<p>Flaky queries across {comparison.noise.baselines} baselines ({len(flaky)}): "
            f"{id_list(flaky, limit) if flaky else 'none'}</p>"
        )
    for side, ids in (
        ("baseline", comparison.only_in_baseline),
        ("candidate", comparison.only_in_candidate),
    ):
        if ids:
            body.append(
                f"<p>Only in the {side} ({len(ids)}, not compared): {id_list(ids, limit)}</p>"
            )
    if sides:
        body.append(
            section(
                "mapping",
                "Mapping health",
                mapping_table([(name, ev.mapping) for name, ev in sides]),
            )
        )
    body += [_aggregates_section(comparison), footer(comparison)]
    return page(title or "spanchor comparison", body)


def comparison_summary_html(comparison: Comparison, *, metric: str | None = None) -> str:
    """A compact HTML fragment for notebooks: verdict, errors, aggregates, a small delta plot.

    Needs nothing but the comparison (no corpus, no evaluations); used by
    ``Comparison._repr_html_``.
    """
    errors = [
        f'<li><span class="badge error">error</span> {html_escape(f.message)}</li>'
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
    return fragment(body)
