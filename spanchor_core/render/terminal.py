"""What the ``spanchor`` command prints to a terminal: rich tables and summary lines of an
evaluation or a comparison.

Each function returns something to print (a :class:`rich.table.Table`, or text with rich
markup where it says so); the CLI decides where it goes. Text from the inputs (query ids,
metric names, finding messages) goes through :func:`~spanchor_core.render.text.escape_control`
and then rich's markup escape, so it can neither inject escape sequences nor markup.

Deltas are coloured by what they mean — red when the metric got worse, green when it got
better, whichever way the metric points — with rich markup, which rich prints as plain text
when the output is not a terminal or ``NO_COLOR`` is set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from spanchor_core.evaluate import Evaluation
from spanchor_core.metrics import DEFAULT_METRICS, metric_parts
from spanchor_core.render.text import escape_control, metric_grid
from spanchor_core.render.wording import (
    INTERVAL_AND_P_NOTE,
    REPEATED_NOTE,
    coverage_lines,
    grouped_note,
    interval_and_p_disagree,
    several_records,
)

if (
    TYPE_CHECKING
):  # the comparison side, imported by its functions: an evaluation's table needs none
    from spanchor_core.compare import Comparison
    from spanchor_core.diagnosis import RegressionDiagnosis
    from spanchor_core.policy import Direction, Policy

__all__ = [
    "comparison_findings",
    "comparison_tables",
    "comparison_verdict",
    "coverage_line",
    "default_policy_line",
    "delta_markup",
    "evaluation_table",
    "mapping_line",
    "noise_lines",
]


def _shown(text: str) -> str:
    """Input text safe inside rich markup on one terminal line."""
    return escape(escape_control(text))


def delta_markup(delta: float, direction: Direction = "higher") -> str:
    """``delta`` as ``+0.125`` in rich markup: red when worse, green when better, plain when 0
    (``direction`` says which way is better)."""
    text = f"{delta:+.3f}"
    if text in ("+0.000", "-0.000"):
        return text
    better = delta > 0 if direction == "higher" else delta < 0
    return f"[{'green' if better else 'red'}]{text}[/]"


def default_policy_line(policy: Policy) -> str | None:
    """The one line saying which policy a comparison applied when none was given (rich markup
    escaped), e.g. ``no policy given: recall@10 may not drop (default policy)``; ``None`` when
    the policy gates nothing (the comparison then says why itself)."""
    limits = [
        f"{name} may not drop" if drop == 0 else f"{name} may drop by at most {drop:g}"
        for name, drop in sorted(policy.max_drop.items())
    ]
    limits += [
        f"mean {name} may not drop"
        if gate.max_drop == 0
        else f"mean {name} may drop by at most {gate.max_drop:g}"
        for name, gate in sorted(policy.aggregate.items())
    ]
    if not limits:
        return None
    return _shown(f"no policy given: {', '.join(limits)} (default policy)")


def evaluation_table(evaluation: Evaluation) -> Table:
    """Aggregate means as a metric × K grid (:func:`~spanchor_core.render.text.metric_grid`),
    scores only, with a last column "all" for the metrics over the whole ranked list (MRR,
    average precision), so that no whole-list value sits under a cutoff."""
    ks = evaluation.settings.k
    table = Table(title=f"{len(evaluation)} queries", title_justify="left")
    scores = {
        base
        for base, _ in map(metric_parts, evaluation.metric_names)
        if (metric := DEFAULT_METRICS.get(base)) is None or metric.score
    }
    grid = metric_grid(evaluation, scores)
    column = {k: index for index, k in enumerate(grid.columns)}
    whole = None in column and any(means[column[None]] is not None for _, means in grid.rows)
    table.add_column("metric")
    for k in ks:
        table.add_column(f"@{k}", justify="right")
    if whole:
        table.add_column("all", justify="right")
    for base, means in grid.rows:
        cells = [means[column[k]] if k in column else None for k in ks]
        if whole:
            cells.append(means[column[None]])
        if any(mean is not None for mean in cells):
            table.add_row(_shown(base), *("" if m is None else f"{m:.3f}" for m in cells))
    return table


def mapping_line(evaluation: Evaluation) -> str:
    """How the results were mapped, in one line of plain text."""
    stats = evaluation.mapping
    parts = [f"{status} {count}" for status, count in stats.counts.items() if count]
    if stats.hint_rejected:
        parts.append(f"wrong offsets re-anchored {stats.hint_rejected}")
    return (
        f"mapping: {stats.total} results — {', '.join(parts) or 'none'}; "
        f"unmapped rate {stats.unmapped_rate:.1%}"
    )


def coverage_line(evaluation: Evaluation) -> str:
    """Which queries were scored and which records were left out, in one line of plain text."""
    parts = [f"queries: {len(evaluation)} scored"]
    grouped, repeated = several_records(evaluation)
    for label, items in (
        ("missing from the run (scored 0)", evaluation.missing_in_run),
        ("run records not in the gold set", evaluation.not_in_gold),
        ("unresolved query texts", evaluation.unresolved),
        (f"with several records in one asking ({grouped_note(evaluation)})", grouped),
        (f"asked more than once ({REPEATED_NOTE})", repeated),
        ("failed retrievals (scored 0)", evaluation.errors),
        ("skipped gold queries", tuple(evaluation.skipped)),
    ):
        if items:
            parts.append(f"{len(items)} {label}")
    return ", ".join(parts)


def comparison_tables(
    comparison: Comparison,
    limit: int = 20,
    questions: Mapping[str, str] | None = None,
    width: int | None = None,
) -> list[Table]:
    """The regressions (worst first) and the aggregate deltas with their intervals; when an
    interval and its p-value disagree (:func:`~.wording.interval_and_p_disagree`), the
    aggregates table says why in its caption.

    With ``questions`` (query id -> question), each regressed query shows its question,
    cut with "…" to what a terminal ``width`` characters wide leaves for it.
    """
    from spanchor_core.compare import ChangeStatus

    tables: list[Table] = []
    regressions = sorted(
        (row for row in comparison.queries if row.status is ChangeStatus.REGRESSION),
        key=lambda row: (-row.severity, row.query_id),
    )
    if regressions:
        table = Table(title="regressions (worst first)", title_justify="left")
        asked = questions is not None
        shown = regressions[:limit]
        # every column but the question keeps its width; the question is cut to what is left
        ids = max(len(_shown(row.query_id)) + (8 if row.flaky else 0) for row in shown)
        table.add_column("query", no_wrap=True, min_width=max(5, ids))
        names = max(len(_shown(metric)) for row in shown for metric in row.regressed)
        if asked:
            # the other columns and the borders: 3 characters a column and one more
            others = max(5, ids) + max(6, names) + len("baseline") + len("candidate") + 6
            room = None if width is None else max(10, width - others - 3 * 6 - 1)
            table.add_column("question", no_wrap=True, overflow="ellipsis", max_width=room)
        table.add_column("metric", no_wrap=True, min_width=max(6, names))
        for column in ("baseline", "candidate", "delta"):
            table.add_column(column, justify="right", no_wrap=True, min_width=len(column))
        for row in shown:
            for number, metric in enumerate(row.regressed):
                change = row.change(metric)
                flaky = " (flaky)" if row.flaky else ""
                first = number == 0
                cells = [_shown(row.query_id) + flaky if first else ""]
                if questions is not None:
                    question = questions.get(row.query_id, "") if first else ""
                    cells.append(_shown(" ".join(question.split())))
                table.add_row(
                    *cells,
                    _shown(metric),
                    f"{change.baseline:.3f}",
                    f"{change.candidate:.3f}",
                    f"[red]{change.delta:+.3f}[/]",  # a regressed metric got worse
                )
        if len(regressions) > limit:
            table.caption = f"… and {len(regressions) - limit} more"
        tables.append(table)
    aggregates = Table(title="aggregates", title_justify="left", caption_justify="left")
    level = f"{comparison.policy.bootstrap.confidence:.0%} CI"
    for column in ("metric", "baseline", "candidate", "delta", level, "p"):
        aggregates.add_column(column, justify="left" if column == "metric" else "right")
    for agg in comparison.aggregates:
        interval = (
            f"[{agg.ci_low:+.3f}, {agg.ci_high:+.3f}]"
            if agg.ci_low is not None and agg.ci_high is not None
            else ""
        )
        aggregates.add_row(
            _shown(agg.metric),
            "" if agg.baseline_mean is None else f"{agg.baseline_mean:.3f}",
            "" if agg.candidate_mean is None else f"{agg.candidate_mean:.3f}",
            "" if agg.delta is None else delta_markup(agg.delta, agg.direction),
            interval,
            "" if agg.p_value is None else f"{agg.p_value:.3g}",
        )
    # The sentence the reports always show, here only when it explains a row on the screen:
    # on every run it would be a paragraph of noise under a table that needs none.
    disagree = interval_and_p_disagree(comparison)
    if disagree:
        aggregates.caption = _shown(
            f"{', '.join(disagree)}: interval and p disagree. {INTERVAL_AND_P_NOTE}"
        )
    tables.append(aggregates)
    return tables


def comparison_findings(comparison: Comparison, *, untrusted_shown: bool = False) -> list[str]:
    """One line (rich markup) per finding, coloured by severity; with ``untrusted_shown``,
    not the untrusted ones, which :func:`trust_lines` printed first (a CI log that says the
    same long line twice in a row is harder to read, not safer)."""
    lines = []
    skipped = set(map(id, comparison.untrusted)) if untrusted_shown else set()
    for finding in comparison.findings:
        if id(finding) in skipped:
            continue
        colour = "red" if finding.severity == "error" else "yellow"
        lines.append(f"[{colour}]{finding.severity}[/]: {_shown(finding.message)}")
    return lines


_VERDICT_STYLE = {"PASS": "bold green", "FAIL": "bold red", "UNTRUSTED": "bold magenta"}


def comparison_verdict(comparison: Comparison) -> str:
    """The verdict word (always the exit code's) and the counts, in one line of rich markup;
    an invalid comparison says so instead of counting queries as unchanged."""
    counts = comparison.counts
    word = comparison.verdict
    verdict = f"[{_VERDICT_STYLE.get(word, 'bold red')}]{word}[/]"
    if word == "INVALID":  # counts of a comparison that was not made would read as a result
        errors = counts["errors"]
        return (
            f"{verdict}: {counts['compared']} queries not gated — the comparison itself is "
            f"invalid ({errors} error{'' if errors == 1 else 's'} above); fix "
            f"{'it' if errors == 1 else 'them'} and compare again"
        )
    line = (
        f"{verdict}: {counts['compared']} queries compared — {counts['regressed']} regressed, "
        f"{counts['improved']} improved, {counts['unchanged']} unchanged"
    )
    untrusted = comparison.untrusted
    if untrusted:
        line += f" — but the comparison cannot be trusted ({_shown(untrusted[0].message)})"
    return line


def trust_lines(comparison: Comparison) -> list[str]:
    """What the first lines of a comparison say: each side's coverage, then why it is untrusted."""
    lines = [_shown(line) for line in coverage_lines(comparison)]
    for finding in comparison.untrusted:
        lines.append(f"[bold magenta]untrusted[/]: {_shown(finding.message)}")
    return lines


_FLAKY_SHOWN = 5


def noise_lines(comparison: Comparison) -> list[str]:
    """With several baselines: how many, and the flaky queries (count and the first ids)."""
    noise = comparison.noise
    if noise is None:
        return []
    ids = noise.flaky_ids
    line = f"[bold]noise[/]: {noise.baselines} baselines, {len(ids)} flaky quer"
    line += "y" if len(ids) == 1 else "ies"
    if ids:
        more = f" and {len(ids) - _FLAKY_SHOWN} more" if len(ids) > _FLAKY_SHOWN else ""
        line += f" ({_shown(', '.join(ids[:_FLAKY_SHOWN]))}{more})"
    line += ": a candidate inside a query's band of baseline values is not a regression"
    return [line]


def diagnosis_lines(diagnosis: RegressionDiagnosis, limit: int = 10) -> list[str]:
    """Why the regressed queries regressed: the summary, then one line per cause (escaped)."""
    lines = [f"[bold]why[/]: {_shown(diagnosis.summary.line())}"]
    if diagnosis.note:
        lines.append(f"  {_shown(diagnosis.note)}")
    lines += [f"  {_shown(split.line())}" for split in diagnosis.splits if split.queries]
    shown = 0
    total = sum(len(query.causes) for query in diagnosis.values())
    for query_id, query in diagnosis.items():
        for cause in query.causes:
            if shown == limit:
                rest = total - limit
                lines.append(
                    f"  … and {rest} more cause{'' if rest == 1 else 's'}"
                    " (every one is in the --report, --html and --json outputs)"
                )
                return lines
            lines.append(f"  {_shown(query_id)}: {_shown(cause.describe())}")
            shown += 1
    return lines
