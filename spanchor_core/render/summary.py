"""Plain summary lines: an evaluation or a comparison in a few lines for a terminal or a log.

No Markdown and no markup (the caller decides how to style them); every piece of user text
(ids, metric names, messages) goes through :func:`~spanchor_core.render.text.escape_control`,
so nothing in the data can inject a terminal escape sequence or break a line.
"""

from __future__ import annotations

from typing import Final

from spanchor_core.compare import Comparison
from spanchor_core.evaluate import Evaluation
from spanchor_core.render.text import (
    capped_list,
    escape_control,
    format_delta,
    format_interval,
    format_number,
    format_percent,
)
from spanchor_core.render.wording import (
    counts_text,
    headline_metrics,
    verdict_word,
)

__all__ = ["comparison_summary_lines", "evaluation_summary_lines"]

_IDS_SHOWN: Final = 10
"""Ids a summary line names before it says "… and N more"."""


def comparison_summary_lines(comparison: Comparison) -> list[str]:
    """A few plain lines for a terminal: verdict and counts, findings, aggregate changes.

    Plain text (no Markdown, no markup): the CLI decides how to style it. Control characters
    in ids, metric names and messages are shown escaped.
    """
    lines = [
        f"{verdict_word(comparison)}: {counts_text(comparison)} (exit code {comparison.exit_code})"
    ]
    for finding in (*comparison.errors, *comparison.warnings):
        code, message = escape_control(finding.code), escape_control(finding.message)
        lines.append(f"{finding.severity} [{code}]: {message}")
    for row in comparison.aggregates:
        metric = escape_control(row.metric)
        if row.delta is None:
            lines.append(f"{metric}: not measured (no compared queries)")
            continue
        text = (
            f"{metric}: mean {format_number(row.baseline_mean)} -> "
            f"{format_number(row.candidate_mean)} (delta {format_delta(row.delta)}"
        )
        if row.ci_low is not None and row.ci_high is not None:
            level = comparison.policy.bootstrap.confidence
            text += f", {level:.0%} CI {format_interval(row.ci_low, row.ci_high)}"
        if row.p_value is not None:
            text += f", p = {row.p_value:.3g}"
        lines.append(text + ")")
    if comparison.diagnosis is not None:  # why, when the comparison was diagnosed
        if comparison.diagnosis.summary.regressed:  # "why: 0 regressed" explains nothing
            lines.append(f"why: {escape_control(comparison.diagnosis.summary.line())}")
        lines += [escape_control(split.line()) for split in comparison.diagnosis.splits]
    return lines


def evaluation_summary_lines(evaluation: Evaluation) -> list[str]:
    """A few plain lines for a terminal: what was scored, the headline means, mapping health."""
    s = evaluation.settings
    skipped = f", {len(evaluation.skipped)} skipped" if evaluation.skipped else ""
    lines = [
        f"{len(evaluation)} queries scored{skipped} "
        f"(K = {', '.join(str(k) for k in s.k)}; min_overlap {s.min_overlap:g})"
    ]
    shown = [
        f"{name} {format_number(evaluation.mean(name))}"
        for name in headline_metrics(evaluation)
        if name in evaluation.metric_names
    ]
    if shown and len(evaluation):
        lines.append("mean " + ", ".join(shown))
    m = evaluation.mapping
    lines.append(
        f"mapping: {m.total} results, {m.unmapped} unmapped ({format_percent(m.unmapped_rate)}), "
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
            lines.append(f"{label}: {len(ids)} ({capped_list(ids, _IDS_SHOWN, escape_control)})")
    if evaluation.unresolved:
        lines.append(f"records without a query id: {len(evaluation.unresolved)}")
    lines += [f"warning: {escape_control(w)}" for w in evaluation.warnings]
    return lines
