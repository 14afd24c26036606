"""The plain-text messages of the assertions: lines a reviewer can act on from a CI log.

:func:`regression_message` says which queries regressed, worst first, with their questions, the
metrics that fell and the gold evidence the candidate stopped retrieving. Every id and excerpt
is flattened to one line with control characters escaped (the one escaper of
:mod:`spanchor_core.render.text`), so input cannot rewrite the log, and lost evidence is judged
by the one rule of :func:`~spanchor_core.render.text.regression_evidence`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

from spanchor_core.compare import Comparison, QueryChange
from spanchor_core.corpus import Corpus
from spanchor_core.evaluate import Evaluation, QueryStatus
from spanchor_core.gold import GoldSet
from spanchor_core.policy import Policy
from spanchor_core.render.text import (
    check_count,
    escape_control,
    excerpt,
    one_line,
    regression_evidence,
    spanless_side,
)
from spanchor_core.spans import DocSpan

__all__ = ["DEFAULT_EXCERPT_CHARS", "DEFAULT_LIMIT", "regression_message"]

DEFAULT_LIMIT: Final = 10
"""Regressed (or below-floor) queries shown in full before the rest are only counted."""
DEFAULT_EXCERPT_CHARS: Final = 160
"""Characters of one piece of lost evidence shown before it is cut with "…"."""
_PIECES: Final = 3
"""Pieces of lost evidence shown per query; the rest are counted."""
_IDS_AFTER_LIMIT: Final = 20
"""Ids named after the detailed list before the remainder is only a number."""
QUESTION_CHARS: Final = 120


def quoted(text: str, limit: int) -> str:
    """``text`` on one line in quotes, cut at ``limit`` characters (saying how many it had)."""
    shown = excerpt(text, limit)
    if not shown.cut:
        return f"“{escape_control(shown.text)}”"
    return f"“{escape_control(shown.text)}…” ({limit} of {shown.total} characters)"


def format_number(value: float) -> str:
    return f"{value:.3f}" if math.isfinite(value) else str(value)


def listed_ids(ids: Sequence[str]) -> str:
    shown = ", ".join(one_line(qid) for qid in ids[:_IDS_AFTER_LIMIT])
    rest = len(ids) - _IDS_AFTER_LIMIT
    return shown if rest <= 0 else f"{shown} and {rest} more"


def _lost_lines(
    row: QueryChange,
    baseline: Evaluation,
    candidate: Evaluation,
    gold: GoldSet | None,
    corpus: Corpus | None,
    excerpt_chars: int,
) -> list[str]:
    qid = row.query_id
    if qid not in baseline or qid not in candidate:
        return []
    after = candidate[qid]
    note = ""
    if after.status is QueryStatus.MISSING_IN_RUN:
        note = " (the candidate run has no record for this query)"
    elif after.status is QueryStatus.ERROR:
        note = f" (the candidate's retrieval failed: {one_line(after.error or '', 120)})"
    spanless = spanless_side(baseline, candidate)
    if spanless is not None:
        return [f"lost evidence unknown: the {spanless[0]} is a spanchor 0.x evaluation{note}"]
    evidence = regression_evidence(row, baseline, candidate, gold)
    if evidence is None:
        return []
    depth = "the ranked list" if evidence.k is None else f"the top {evidence.k}"
    lost = evidence.lost
    if not lost:
        return [f"no gold characters lost from {depth}{note}"]
    lines = [f"lost {evidence.lost_chars} gold characters from {depth}{note}:"]
    for span in lost[:_PIECES]:
        lines.append("  " + _piece(span, corpus, excerpt_chars))
    if len(lost) > _PIECES:
        lines.append(f"  … and {len(lost) - _PIECES} more pieces")
    return lines


def _piece(span: DocSpan, corpus: Corpus | None, excerpt_chars: int) -> str:
    where = f"{one_line(span.document_id)}[{span.start}:{span.end}]"
    if corpus is None or span.document_id not in corpus:
        return where
    text = corpus.text(span.document_id)[span.start : span.end]
    return f"{where} {quoted(text, excerpt_chars)}"


def _policy_line(policy: Policy) -> str:
    parts = []
    if policy.max_drop:
        drops = ", ".join(f"{name} {drop:g}" for name, drop in sorted(policy.max_drop.items()))
        parts.append(f"max drop per query: {drops}")
    if policy.aggregate:
        gates = ", ".join(
            f"{name} {gate.max_drop:g} ({gate.basis.replace('_', ' ')})"
            for name, gate in sorted(policy.aggregate.items())
        )
        parts.append(f"max drop of the mean: {gates}")
    return "policy: " + ("; ".join(parts) if parts else "gates nothing")


def _verdict_line(comparison: Comparison, unmapped_failure: str | None) -> str:
    c = comparison.counts
    # the gate's own word (UNTRUSTED, INVALID: what `spanchor gate` prints): "FAIL — 0
    # regressed" over a comparison that could not be trusted or made reads as a contradiction;
    # too many unmapped results is the CLI's exit 3 too
    untrusted = unmapped_failure is not None and comparison.passed
    verdict = "UNTRUSTED" if untrusted else comparison.verdict
    return (
        f"spanchor retrieval gate: {verdict} — {c['regressed']} of {c['compared']} compared "
        f"queries regressed, {c['improved']} improved, {c['unchanged']} unchanged"
    )


def regression_message(
    comparison: Comparison,
    baseline: Evaluation,
    candidate: Evaluation,
    *,
    gold: GoldSet | None = None,
    corpus: Corpus | None = None,
    limit: int = DEFAULT_LIMIT,
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS,
    unmapped_failure: str | None = None,
) -> str:
    """The text of a :class:`RetrievalRegression`: plain lines for a CI log.

    The verdict first; then up to ``limit`` regressed queries, worst first, each with its
    question (when ``gold`` is given), the regressed metrics ``baseline → candidate (delta)``
    and the gold evidence covered in the baseline's top K but not in the candidate's (K is the
    deepest cutoff of the regressed metrics), as text when ``corpus`` is given and cut at
    ``excerpt_chars``; then the error findings that are not per query (settings mismatch,
    missing queries, too few queries, aggregate gates), the warnings and the gated means.
    """
    check_count(limit, "limit")
    check_count(excerpt_chars, "excerpt_chars")
    lines = [_verdict_line(comparison, unmapped_failure), _policy_line(comparison.policy)]
    regressed = comparison.regressions(include_flaky=False)
    if regressed:
        lines.append("regressed queries, worst first:")
    for row in regressed[:limit]:
        question = ""
        if gold is not None and row.query_id in gold:
            question = f" {quoted(gold[row.query_id].question, QUESTION_CHARS)}"
        lines.append(f"  {one_line(row.query_id)}{question}")
        width = max(len(name) for name in row.regressed)
        for name in row.regressed:
            change = row.change(name)
            lines.append(
                f"    {name:<{width}}  {format_number(change.baseline)} → "
                f"{format_number(change.candidate)} ({change.delta:+.3f})"
            )
        lines.extend(
            "    " + line
            for line in _lost_lines(row, baseline, candidate, gold, corpus, excerpt_chars)
        )
    if len(regressed) > limit:
        rest = [row.query_id for row in regressed[limit:]]
        lines.append(f"  … and {len(rest)} more regressed queries: {listed_ids(rest)}")
    if regressed and corpus is None:
        lines.append("  (pass corpus= to see the text of the lost evidence)")
    others = [f for f in comparison.errors if f.code != "regression"]
    if unmapped_failure is not None or others:
        lines.append("errors:")
        lines.extend(f"  {f.code}: {one_line(f.message)}" for f in others)
        if unmapped_failure is not None:
            lines.append(f"  unmapped_rate: {unmapped_failure}")
    if comparison.warnings:
        lines.append("warnings:")
        lines.extend(f"  {f.code}: {one_line(f.message)}" for f in comparison.warnings)
    for agg in comparison.aggregates:
        if agg.delta is None or agg.baseline_mean is None or agg.candidate_mean is None:
            continue
        extra = ""
        if agg.ci_low is not None and agg.ci_high is not None:
            level = comparison.policy.bootstrap.confidence
            extra = f", {level:.0%} CI [{agg.ci_low:+.3f}, {agg.ci_high:+.3f}]"
        if agg.p_value is not None:
            extra += f", p = {agg.p_value:.3g}"
        lines.append(
            f"mean {agg.metric}: {format_number(agg.baseline_mean)} → "
            f"{format_number(agg.candidate_mean)} ({agg.delta:+.3f}{extra})"
        )
    return "\n".join(lines)


def unmapped_failure(
    evaluation: Evaluation, max_unmapped_rate: float | None, whose: str
) -> str | None:
    if max_unmapped_rate is None:
        return None
    stats = evaluation.mapping
    if stats.unmapped_rate <= max_unmapped_rate:
        return None
    return (
        f"{stats.unmapped_rate:.1%} of {whose} results ({stats.unmapped} of "
        f"{stats.total}) could not be mapped onto the corpus; at most {max_unmapped_rate:.1%} "
        "is allowed"
    )
