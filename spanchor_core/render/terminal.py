"""What the ``spanchor`` command prints to a terminal: rich tables and summary lines of an
evaluation or a comparison.

Each function returns something to print (a :class:`rich.table.Table`, or text with rich
markup where it says so); the CLI decides where it goes.
"""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from spanchor_core.compare import ChangeStatus, Comparison
from spanchor_core.evaluate import Evaluation
from spanchor_core.metrics import DEFAULT_METRICS, split_metric_name

__all__ = [
    "comparison_findings",
    "comparison_tables",
    "comparison_verdict",
    "coverage_line",
    "evaluation_table",
    "mapping_line",
    "one_line",
]


def one_line(text: str) -> str:
    """``text`` on one line: backslashes, newlines and tabs written as escapes."""
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")


def evaluation_table(evaluation: Evaluation) -> Table:
    """Aggregate means as a metric × K grid, plus the whole-list metrics."""
    ks = evaluation.settings.k
    table = Table(title=f"{len(evaluation)} queries", title_justify="left")
    table.add_column("metric")
    for k in ks:
        table.add_column(f"@{k}", justify="right")
    families: dict[str, dict[int, float]] = {}
    whole: dict[str, float] = {}
    for name in evaluation.metric_names:
        family, cutoff = split_metric_name(name)
        metric = DEFAULT_METRICS.get(family)
        if metric is not None and not metric.score:
            continue
        if cutoff is None:
            whole[family] = evaluation.mean(name)
        else:
            families.setdefault(family, {})[cutoff] = evaluation.mean(name)
    for family, by_k in families.items():
        table.add_row(family, *(f"{by_k[k]:.3f}" if k in by_k else "" for k in ks))
    for family, value in whole.items():
        table.add_row(f"{family} (all ranks)", f"{value:.3f}", *([""] * (len(ks) - 1)))
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
    for label, items in (
        ("missing from the run (scored 0)", evaluation.missing_in_run),
        ("run records not in the gold set", evaluation.not_in_gold),
        ("unresolved query texts", evaluation.unresolved),
        ("duplicate records (last kept)", evaluation.duplicates),
        ("failed retrievals (scored 0)", evaluation.errors),
        ("skipped gold queries", tuple(evaluation.skipped)),
    ):
        if items:
            parts.append(f"{len(items)} {label}")
    return ", ".join(parts)


def comparison_tables(comparison: Comparison, limit: int = 20) -> list[Table]:
    """The regressions (worst first) and the aggregate deltas with their intervals."""
    tables: list[Table] = []
    regressions = sorted(
        (row for row in comparison.queries if row.status is ChangeStatus.REGRESSION),
        key=lambda row: (-row.severity, row.query_id),
    )
    if regressions:
        table = Table(title="regressions (worst first)", title_justify="left")
        for column in ("query", "metric", "baseline", "candidate", "delta"):
            table.add_column(column, justify="left" if column in ("query", "metric") else "right")
        for row in regressions[:limit]:
            for metric in row.regressed:
                change = row.change(metric)
                flaky = " (flaky)" if row.flaky else ""
                table.add_row(
                    escape(row.query_id + flaky),
                    escape(metric),
                    f"{change.baseline:.3f}",
                    f"{change.candidate:.3f}",
                    f"{change.delta:+.3f}",
                )
        if len(regressions) > limit:
            table.caption = f"… and {len(regressions) - limit} more"
        tables.append(table)
    aggregates = Table(title="aggregates", title_justify="left")
    for column in ("metric", "baseline", "candidate", "delta", "95% CI", "p"):
        aggregates.add_column(column, justify="left" if column == "metric" else "right")
    for agg in comparison.aggregates:
        interval = (
            f"[{agg.ci_low:+.3f}, {agg.ci_high:+.3f}]"
            if agg.ci_low is not None and agg.ci_high is not None
            else ""
        )
        aggregates.add_row(
            escape(agg.metric),
            "" if agg.baseline_mean is None else f"{agg.baseline_mean:.3f}",
            "" if agg.candidate_mean is None else f"{agg.candidate_mean:.3f}",
            "" if agg.delta is None else f"{agg.delta:+.3f}",
            interval,
            "" if agg.p_value is None else f"{agg.p_value:.3g}",
        )
    tables.append(aggregates)
    return tables


def comparison_findings(comparison: Comparison) -> list[str]:
    """One line (rich markup) per finding, coloured by severity."""
    lines = []
    for finding in comparison.findings:
        colour = "red" if finding.severity == "error" else "yellow"
        lines.append(f"[{colour}]{finding.severity}[/]: {escape(finding.message)}")
    return lines


def comparison_verdict(comparison: Comparison) -> str:
    """PASS or FAIL and the counts of the comparison, in one line of rich markup."""
    counts = comparison.counts
    verdict = "[bold green]PASS[/]" if comparison.passed else "[bold red]FAIL[/]"
    return (
        f"{verdict}: {counts['compared']} queries compared — {counts['regressed']} regressed, "
        f"{counts['improved']} improved, {counts['unchanged']} unchanged"
    )
