"""What evaluations and comparisons say in words, the same in every format: the verdict and
counts, metric changes, gate and policy lines, the retriever a run names, the headline metrics
and the query-coverage entries.

Each helper returns raw text or takes the format's escaper (``markdown_escape``,
``html_escape``, ``escape_control``), so the sentence is written once and escaped per format.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Final, NamedTuple

from spanchor_core.evaluate import Evaluation, MappingStats
from spanchor_core.gold import GoldSet
from spanchor_core.render.text import (
    DASH,
    Escape,
    deepest_k,
    format_delta,
    format_number,
    format_percent,
    more_text,
    truncate,
)

if TYPE_CHECKING:  # the comparison side, imported by the functions that need it at run time
    from spanchor_core.compare import AggregateChange, Comparison, QueryChange

__all__ = [
    "FLAKY_BAND_NOTE",
    "INTERVAL_AND_P_NOTE",
    "MAPPING_COLUMNS",
    "REPEATED_NOTE",
    "CoverageEntry",
    "aggregate_headings",
    "change_text",
    "counts_text",
    "coverage_entries",
    "gate_text",
    "grouped_note",
    "headline_metrics",
    "improved_metrics",
    "improvements",
    "interval_and_p_disagree",
    "mapping_cells",
    "policy_text",
    "question_for",
    "regressed_text",
    "retriever_description",
    "retriever_parameters",
    "several_records",
    "verdict_word",
]


def _retriever_info(evaluation: Evaluation | None) -> Mapping[str, object]:
    header = None if evaluation is None else evaluation.settings.run_header
    retriever = header.get("retriever") if isinstance(header, Mapping) else None
    return retriever if isinstance(retriever, Mapping) else {}


def retriever_description(evaluation: Evaluation | None) -> str | None:
    """The retriever description the evaluation's run header names, if any (raw text)."""
    description = _retriever_info(evaluation).get("description")
    return description if isinstance(description, str) and description else None


def retriever_parameters(evaluation: Evaluation) -> str | None:
    """The run header's retriever parameters as compact sorted JSON, cut at 200 characters."""
    parameters = _retriever_info(evaluation).get("parameters")
    if not isinstance(parameters, Mapping) or not parameters:
        return None
    text = json.dumps(parameters, sort_keys=True, ensure_ascii=False, default=str)
    return truncate(text, 200)


def headline_metrics(evaluation: Evaluation) -> list[str]:
    """The metrics a summary shows per query: recall, precision, hit and full evidence at the
    deepest K, then MRR (whole list if the evaluation has it). Not filtered by presence."""
    k = deepest_k(evaluation)
    names = [f"{base}@{k}" for base in ("recall", "precision", "hit", "full_evidence")]
    names.append("mrr" if "mrr" in evaluation.metric_names else f"mrr@{k}")
    return names


class CoverageEntry(NamedTuple):
    """One line of an evaluation's query coverage: queries not scored as plain retrievals."""

    title: str
    """What the queries are: ``Missing in run``, ``Retriever errors``, ``Skipped``, ..."""
    note: str
    """How they count: ``scored as empty retrievals``, ``ignored``, ..."""
    items: tuple[tuple[str, str | None], ...]
    """``(id or text, detail)``: the detail is an error message or skip reason, if shown."""
    listed: bool = True
    """Whether the items may be shown (unresolved query texts are not, when redacted)."""
    detailed: bool = False
    """Whether items are separated by ``;`` (they carry details) rather than ``,``."""

    def items_text(self, limit: int, escape_id: Escape, escape_detail: Escape) -> str:
        """The first ``limit`` items, ``id (detail)``, then ``"… and N more"`` if cut."""
        shown = [
            escape_id(item) + (f" ({escape_detail(detail)})" if detail else "")
            for item, detail in self.items[:limit]
        ]
        text = ("; " if self.detailed else ", ").join(shown)
        if len(self.items) > limit:
            text += " " + more_text(limit, len(self.items))
        return text


REPEATED_NOTE: Final = "scored as the mean of the askings"
"""How a query asked in several traces counts (:mod:`spanchor_core.grouping`)."""


def grouped_note(evaluation: Evaluation) -> str:
    """How the records of one asking became one list: the evaluation's grouping rule."""
    return f"grouped by the {evaluation.settings.group} rule"


def several_records(evaluation: Evaluation) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The queries with several records (``evaluation.duplicates``, in its order), split into
    those asked once — their records grouped into one list by the evaluation's rule — and those
    asked in several traces, scored as the mean of the askings. Neither is "the last record"."""
    repeated = frozenset(evaluation.repeated)
    return (
        tuple(qid for qid in evaluation.duplicates if qid not in repeated),
        tuple(qid for qid in evaluation.duplicates if qid in repeated),
    )


def coverage_entries(evaluation: Evaluation, *, redact: bool) -> list[CoverageEntry]:
    """The evaluation's coverage problems in report order; empty when every gold query had
    exactly one record and every record a gold query. ``redact`` drops error messages and
    unresolved query texts."""

    def plain(ids: Iterable[str]) -> tuple[tuple[str, str | None], ...]:
        return tuple((qid, None) for qid in ids)

    def error(qid: str) -> str | None:
        message = evaluation.queries[qid].error if qid in evaluation.queries else None
        return truncate(message, 120) if message and not redact else None

    entries = [
        CoverageEntry(
            "Missing in run", "scored as empty retrievals", plain(evaluation.missing_in_run)
        ),
        CoverageEntry(
            "Retriever errors",
            "scored as empty retrievals",
            tuple((qid, error(qid)) for qid in evaluation.errors),
            detailed=not redact,
        ),
        CoverageEntry(
            "Skipped",
            "not scored, not in any mean",
            tuple(evaluation.skipped.items()),
            detailed=True,
        ),
        CoverageEntry("Not in the gold set", "ignored", plain(evaluation.not_in_gold)),
        CoverageEntry(
            "Records without a query id",
            "ignored",
            plain(evaluation.unresolved),
            listed=not redact,
        ),
    ]
    grouped, repeated = several_records(evaluation)
    entries += [
        CoverageEntry("Several records in one asking", grouped_note(evaluation), plain(grouped)),
        CoverageEntry("Asked more than once", REPEATED_NOTE, plain(repeated)),
    ]
    return [entry for entry in entries if entry.items]


# -- comparisons in words -------------------------------------------------------------------------


def question_for(gold: GoldSet | None, query_id: str, *, redact: bool = False) -> str | None:
    """The question of ``query_id`` in ``gold`` (raw text), or ``None`` when redacted, when
    there is no gold set, or when it has no such query."""
    if redact or gold is None or query_id not in gold:
        return None
    return gold[query_id].question


def verdict_word(comparison: Comparison) -> str:
    """``PASS``, ``FAIL``, ``UNTRUSTED`` or ``INVALID``: always the exit code's word."""
    return comparison.verdict


def coverage_lines(comparison: Comparison) -> list[str]:
    """One plain line per side that knows its coverage: ``baseline: 57/57 gold queries ...``."""
    lines = []
    for side, coverage in (
        ("baseline", comparison.baseline_coverage),
        ("candidate", comparison.candidate_coverage),
    ):
        if coverage is not None:
            rate = coverage.unmapped_rate
            unmapped = "" if rate is None else f", {rate:.1%} of results unmapped"
            if side == "baseline" and comparison.noise is not None:  # several baselines
                side = f"baseline ({comparison.noise.baselines} runs, the least complete)"
            lines.append(f"{side}: {coverage}{unmapped}")
    return lines


def regressed_text(comparison: Comparison) -> str:
    """``"2 of 30 compared queries regressed (1 allow-listed flaky)"``."""
    c = comparison.counts
    flaky = f" ({c['flaky_regressed']} allow-listed flaky)" if c["flaky_regressed"] else ""
    return f"{c['regressed']} of {c['compared']} compared queries regressed{flaky}"


def counts_text(comparison: Comparison) -> str:
    """:func:`regressed_text`, then improved and unchanged queries, errors and warnings."""
    c = comparison.counts
    return (
        f"{regressed_text(comparison)}, {c['improved']} improved, {c['unchanged']} unchanged; "
        f"{c['errors']} error{'s' if c['errors'] != 1 else ''}, "
        f"{c['warnings']} warning{'s' if c['warnings'] != 1 else ''}"
    )


def change_text(row: QueryChange, metric: str, escape: Escape, *, emphasise: Escape = str) -> str:
    """``recall@5 1.000 → 0.500 (-0.500)``: one metric's change in a query; ``escape`` makes the
    metric name inert, ``emphasise`` wraps the delta (e.g. in bold)."""
    change = row.change(metric)
    return (
        f"{escape(metric)} {format_number(change.baseline)} → {format_number(change.candidate)} "
        f"({emphasise(format_delta(change.delta))})"
    )


def improved_metrics(row: QueryChange) -> list[str]:
    """The metrics of ``row`` that improved beyond the noise floor."""
    from spanchor_core.compare import ChangeStatus

    return [c.metric for c in row.changes if c.status is ChangeStatus.IMPROVED]


def improvements(comparison: Comparison) -> list[QueryChange]:
    """Improved queries, the largest gain first (ties by query id): the order for reports."""
    from spanchor_core.compare import ChangeStatus

    def gain(row: QueryChange) -> float:
        return max((abs(row.change(name).delta) for name in improved_metrics(row)), default=0.0)

    return sorted(
        (row for row in comparison.queries if row.status is ChangeStatus.IMPROVED),
        key=lambda row: (-gain(row), row.query_id),
    )


def gate_text(row: AggregateChange, *, fail: str, escape: Escape) -> str:
    """An aggregate gate's verdict, ``pass (max drop 0.05 on mean)``; ``fail`` is how the
    format shows ``FAIL`` (e.g. bold), ``escape`` makes the basis inert."""
    if row.gate is None:
        return DASH
    verdict = {True: "pass", False: fail, None: DASH}[row.gate_passed]
    basis = escape(row.gate.basis.replace("_", " "))
    return f"{verdict} (max drop {row.gate.max_drop:g} on {basis})"


def policy_text(comparison: Comparison, escape: Escape) -> str:
    """The footer line: per-query max drops (by metric name), noise floor, resamples, seed."""
    policy = comparison.policy
    gates = ", ".join(
        f"{escape(name)} ≤ {drop:g}" for name, drop in sorted(policy.max_drop.items())
    )
    return (
        f"per-query max drop: {gates or DASH} · noise floor {policy.noise_floor:g} · "
        f"{policy.bootstrap.n_resamples} resamples, seed {comparison.seed}"
    )


MAPPING_COLUMNS: Final = (
    "Results",
    "Unmapped",
    "Unmapped rate",
    "Exact",
    "Verified",
    "Normalised",
    "Fuzzy",
    "Ambiguous",
    "Hints rejected",
)
"""The columns of a mapping-health row (after the side's label), as :func:`mapping_cells`."""


def mapping_cells(stats: MappingStats) -> list[str]:
    """One side's mapping health as the cells of :data:`MAPPING_COLUMNS` (numbers only)."""
    counts = stats.counts
    return [
        str(stats.total),
        str(stats.unmapped),
        format_percent(stats.unmapped_rate),
        *(str(counts.get(status, 0)) for status in ("exact", "verified", "normalised")),
        *(str(counts.get(status, 0)) for status in ("fuzzy", "ambiguous")),
        str(stats.hint_rejected),
    ]


FLAKY_BAND_NOTE = (
    "A candidate value inside a query's band (baseline min..max) is not a regression; "
    "outside it, the change is measured from the nearest edge."
)
"""Why a flaky query's band matters, in the reports that list flaky queries."""

INTERVAL_AND_P_NOTE: Final = (
    "The interval and p answer different questions and can disagree on discrete metrics such "
    "as hit@k: when only a few queries change, by whole steps, the bootstrap interval "
    "(queries resampled, percentile bounds) comes out narrow and may exclude 0 while the "
    "sign-flip test, which asks how often random signs on those few changes give a mean as "
    "far from 0, still finds p above 0.05; with few changed queries, trust p more."
)
"""The one sentence every report shows under its aggregates, on why the bootstrap interval
and the sign-flip p-value of :func:`~spanchor_core.compare.paired_statistics` can disagree."""


def interval_and_p_disagree(comparison: Comparison) -> list[str]:
    """The aggregate metrics whose interval and p-value tell different stories: the interval
    excludes 0 while p is at least 1 - confidence (0.05 for a 95% interval), or the other way
    round. Rows without both statistics never disagree."""
    alpha = 1.0 - comparison.policy.bootstrap.confidence
    names = []
    for row in comparison.aggregates:
        if row.ci_low is None or row.ci_high is None or row.p_value is None:
            continue
        excludes_zero = row.ci_low > 0.0 or row.ci_high < 0.0
        if excludes_zero != (row.p_value < alpha):
            names.append(row.metric)
    return names


def aggregate_headings(comparison: Comparison) -> list[str]:
    """The leading column headings of an aggregates table, the interval's level included."""
    confidence = comparison.policy.bootstrap.confidence
    return ["Metric", "Better", "n", "Baseline", "Candidate", "Δ mean", f"{confidence:.0%} CI of Δ"]
