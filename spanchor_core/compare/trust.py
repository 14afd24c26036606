"""Whether each side of a comparison can be trusted at all, before any delta is believed.

The gate's one promise is no false PASS. A run that missed gold queries (a crashed job, a
recorder that saw nothing), or whose results mostly could not be mapped onto the documents,
says nothing reliable about retrieval — for the baseline as much as for the candidate, since a
broken baseline makes any candidate look like an improvement. Such a side produces an *untrusted*
finding, which makes the comparison exit 3 whatever its deltas say.

* ``incomplete_run`` — the side holds no record for some gold queries. With
  ``policy.on_missing == "fail"`` (the default) any missing query counts, except allow-listed
  flaky ones (a warning); with ``"warn"`` it is a warning.
* ``unmapped_rate`` — more than ``max_unmapped_rate`` of the side's results got no span
  (spanchor 0.x's exit 3).
* ``no_results`` — the side returned no result at all for any query it recorded (an empty
  index, a retriever that was down), or the grouping rule kept none of its records (``--group
  source:NAME`` naming a source only the other run has): every score is 0 and nothing can
  regress from it, so a PASS would rest on no evidence.
* ``group_emptied`` — the grouping rule kept none of the records of some recorded queries
  (``--group source:NAME`` naming a retriever that only some questions used): each is scored
  as an empty retrieval, as unknown as a missing query, and follows the same policy.
* ``failed_retrievals`` — more than ``max_unmapped_rate`` of the side's recorded queries hold
  a failed retrieval (an ``error``): what the retriever would have returned is as unknown as
  an unmapped result's span, and a baseline that failed where the candidate failed too hides
  any regression there.
* ``stage_mismatch`` — the candidate was scored at an earlier recording stage than the
  baseline (its raw ``retrieval`` where the baseline has what a reranker or context builder
  made of it, ``postprocessed``/``context``), for all questions or some: its recording missed
  the step the model sees, and the deltas compare different steps of the app. Compared as
  the share of askings at each later stage, from the stage counts each evaluation keeps
  (:attr:`~spanchor_core.evaluate.Evaluation.stages`). The other way round (the candidate
  scored on a later step: a reranker added) is the ``stage_change`` warning. Unknown on
  either side (older files, 0.x): no finding.
* ``repeated_queries`` (a warning) — some questions were asked in more than one trace, so
  their scores are means over the askings (:mod:`spanchor_core.grouping`). That is right for a
  question the app really asked twice, but it is also what a recording gives that holds one
  line per retrieval and no trace ids (a hybrid or a reranker recorded as separate retrievals),
  where a mean can halve a regression. The gate says so rather than pass quietly.
* ``unmatched_repeats`` — one side holds several trace-less records for questions the other
  side answered once: the shape of the recording changed between the runs (a hybrid or a
  reranker now recorded as separate lines), and the mean over those "askings" compares
  something else than the other side's one list. Untrusted.
* ``unmatched_askings`` — one side asked questions in several traces, whose askings scored
  differently, that the other side asked once. Each trace is a real asking (the integrations
  write trace ids), but differing askings on one side only is what a run file gives when a
  second recording was appended to it (the LangChain handler and ``SPANCHOR_RUN_FILE`` append
  by default, as LangChain's own ``FileCallbackHandler`` does): yesterday's askings of another
  configuration averaged with today's, where a mean halves a regression. Untrusted: the two
  sides were not recorded the same way. Askings that all scored the same (a deterministic
  retriever asked again: a test re-run by pytest-rerunfailures) hide nothing and, like repeats
  on both sides (a harness asking each question N times), are the ``repeated_queries``
  warning. Unknown agreement (evaluation files older than the ``divergent`` list) is
  untrusted.
* ``merge_change`` (a warning) — one side scores some questions from several retrievals of
  one asking merged into one list (a hybrid, two tool calls, a pre- and a post-reranker list
  both recorded as retrievals) where the other side scored one retrieval. The merge is the
  documented interleave of their ranks, which need not be the list the app gave the model,
  so the gate names the queries and their sources rather than compare quietly. Both sides
  merging the same questions is the same shape, but still not necessarily what the model saw:
  the ``merged_retrievals`` warning, once.

Tables that do not know their coverage or mapping (plain metric tables) produce no finding.
Both sides scored from one recording (``same_recording``) is :mod:`.same_recording`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from spanchor_core.compare.model import UNTRUSTED_FINDINGS, Coverage, Finding, Severity
from spanchor_core.policy import Policy
from spanchor_core.runs.model import STAGES

__all__ = [
    "UNTRUSTED_FINDINGS",
    "Coverage",
    "coverage_of",
    "merge_findings",
    "repeat_findings",
    "stage_findings",
    "trust_findings",
]

_SHOWN_IDS = 5


class _Rate(Protocol):
    @property
    def unmapped_rate(self) -> float: ...
    @property
    def total(self) -> int: ...


@runtime_checkable
class _KnowsCoverage(Protocol):
    """What an :class:`~spanchor_core.evaluate.Evaluation` offers about its own completeness."""

    @property
    def missing_in_run(self) -> tuple[str, ...]: ...
    @property
    def mapping(self) -> _Rate: ...
    @property
    def records(self) -> int | None: ...
    def __len__(self) -> int: ...


def coverage_of(table: object) -> Coverage | None:
    """The coverage of an evaluation-like table, or None when it does not know it."""
    if not isinstance(table, _KnowsCoverage):
        return None
    total = len(table)
    return Coverage(
        total - len(table.missing_in_run), total, table.records, table.mapping.unmapped_rate
    )


def _listed(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:_SHOWN_IDS])
    more = len(ids) - _SHOWN_IDS
    return shown + (f" and {more} more" if more > 0 else "")


def _by_policy(
    ids: Sequence[str], policy: Policy, flaky: set[str]
) -> tuple[tuple[list[str], Severity], tuple[list[str], Severity]]:
    """Queries we know nothing about (no record, or none the grouping rule kept), split the
    way the policy treats them: the others at ``on_missing``'s severity, the allow-listed
    flaky ones as warnings only. One place, so that missing and emptied queries can never be
    judged by two rules."""
    severity: Severity = "error" if policy.on_missing == "fail" else "warning"
    strict = [qid for qid in ids if qid not in flaky]
    lenient = [qid for qid in ids if qid in flaky]
    return (strict, severity), (lenient, "warning")


def trust_findings(
    side: str, table: object, policy: Policy, max_unmapped_rate: float | None
) -> list[Finding]:
    """The untrusted (or warning) findings of one side of a comparison (see the module doc)."""
    if not isinstance(table, _KnowsCoverage):
        return []
    findings: list[Finding] = []
    flaky = set(policy.flaky_queries)
    missing = list(table.missing_in_run)
    (strict, severity), (lenient, _) = _by_policy(missing, policy, flaky)
    total = len(table)
    if strict:
        findings.append(
            Finding(
                severity,
                "incomplete_run",
                f"the {side} run is incomplete: {len(strict)} of {total} gold queries have no "
                f"record ({_listed(strict)}); was the job interrupted, or a retrieval made "
                "outside the recording scope?",
                query_ids=tuple(strict),
            )
        )
    if lenient:
        findings.append(
            Finding(
                "warning",
                "incomplete_run",
                f"the {side} run has no record for {len(lenient)} allow-listed flaky "
                f"quer{'y' if len(lenient) == 1 else 'ies'} ({_listed(lenient)})",
                query_ids=tuple(lenient),
            )
        )
    findings.extend(_emptied_findings(side, table, policy, flaky, total - len(missing)))
    repeated = tuple(getattr(table, "repeated", ()))
    if repeated:
        if _repeats(table)[1]:
            advice = (
                "if these are several retrievals of one asking, record them with trace ids "
                "(the integrations do) or pick one with --group"
            )
        else:  # every asking has a trace id of its own: several askings, or several files
            advice = (
                "if the run file holds several recordings, record each into a fresh file (mode='w')"
            )
        findings.append(
            Finding(
                "warning",
                "repeated_queries",
                f"the {side} run asked {len(repeated)} of {total} gold queries in more than "
                f"one trace ({_listed(repeated)}): each is scored as the mean of its askings; "
                + advice,
                query_ids=repeated,
            )
        )
    rate = table.mapping.unmapped_rate
    if max_unmapped_rate is not None and rate > max_unmapped_rate:
        findings.append(
            Finding(
                "error",
                "unmapped_rate",
                f"the {side} run cannot be trusted: {rate:.1%} of its results could not be "
                f"mapped onto the documents (limit {max_unmapped_rate:.1%}); were they recorded "
                "against other documents?",
            )
        )
    findings.extend(_failure_findings(side, table, total - len(missing), max_unmapped_rate))
    return findings


def _emptied_findings(
    side: str, table: object, policy: Policy, flaky: set[str], answered: int
) -> list[Finding]:
    """``group_emptied``: recorded queries of which the grouping rule kept no record. Each is
    scored as an empty retrieval, so it is as unknown as a missing query — nothing can regress
    from a baseline's, and a candidate's "regression" is the rule's — and follows the same
    policy (``on_missing``, flaky allow-list). When the rule kept nothing at all,
    ``no_results`` says so instead."""
    emptied = list(getattr(table, "emptied", ()))
    if not emptied or len(emptied) >= answered:
        return []
    rule = getattr(getattr(table, "settings", None), "group", None)
    named = f" {rule!r}" if isinstance(rule, str) else ""
    findings: list[Finding] = []
    for ids, level in _by_policy(emptied, policy, flaky):
        if not ids:
            continue
        counted = f"{len(ids)} of its {answered} recorded quer{'y' if answered == 1 else 'ies'}"
        findings.append(
            Finding(
                level,
                "group_emptied",
                f"the {side} run's grouping rule{named} kept none of the records of {counted} "
                f"({_listed(ids)}): they are scored as if nothing was retrieved, so a "
                "regression there cannot be seen; choose a rule that every question's records "
                "match (their source and stage names are in the run files)",
                query_ids=tuple(ids),
            )
        )
    return findings


def _failure_findings(
    side: str, table: _KnowsCoverage, answered: int, max_unmapped_rate: float | None
) -> list[Finding]:
    """``no_results`` and ``failed_retrievals`` of one side (see the module docstring); only
    for evaluations scored from a run, which know their records and results (not spanchor 0.x
    files, not tables built by hand)."""
    if not answered or table.records is None or not getattr(table, "has_result_spans", False):
        return []
    failed = tuple(getattr(table, "errors", ()))
    stages = getattr(table, "stages", None)
    if isinstance(stages, Mapping) and not failed and sum(stages.values()) == 0:
        # records were read, but the grouping rule kept none of them: every query was scored
        # as an empty retrieval, and anything looks like an improvement over that
        rule = getattr(getattr(table, "settings", None), "group", None)
        named = f" {rule!r}" if isinstance(rule, str) else ""
        return [
            Finding(
                "error",
                "no_results",
                f"the {side} run cannot be trusted: the grouping rule{named} kept none of its "
                f"records, so its {answered} recorded "
                f"{'query was' if answered == 1 else 'queries were'} scored as if nothing was "
                "retrieved; choose a rule that both runs' records match (their source and "
                "stage names are in the run files)",
            )
        ]
    # query ids only: error texts may hold what --redact keeps out of every output
    if table.mapping.total == 0:
        why = (
            f" ({len(failed)} of them failed: {_listed(failed)})"
            if failed
            else "; was the index empty, or the retriever given no documents?"
        )
        return [
            Finding(
                "error",
                "no_results",
                f"the {side} run cannot be trusted: it returned no result for any of its "
                f"{answered} recorded {'query' if answered == 1 else 'queries'}{why}",
            )
        ]
    rate = len(failed) / answered
    if max_unmapped_rate is None or rate <= max_unmapped_rate:
        return []
    return [
        Finding(
            "error",
            "failed_retrievals",
            f"the {side} run cannot be trusted: the retrieval failed for {len(failed)} of its "
            f"{answered} recorded queries ({rate:.1%}, limit {max_unmapped_rate:.1%}: "
            f"{_listed(failed)}); was the retriever or its service down?",
            query_ids=failed,
        )
    ]


def _stage_profile(table: object) -> tuple[dict[str, int], list[int], int] | None:
    """A table's stage counts, for each stage after the first the askings at it or later, and
    all askings; None when unknown (no counts) or not ours to read (a stage of a newer
    version)."""
    stages = getattr(table, "stages", None)
    if not isinstance(stages, Mapping) or not stages or not set(stages) <= set(STAGES):
        return None
    later = [sum(stages.get(name, 0) for name in STAGES[at:]) for at in range(1, len(STAGES))]
    return dict(stages), later, sum(stages.values())


def _stages_text(stages: Mapping[str, int]) -> str:
    return ", ".join(f"{name} ({n} asking{'s' if n != 1 else ''})" for name, n in stages.items())


def stage_findings(baselines: Sequence[tuple[str, object]], candidate: object) -> list[Finding]:
    """The stage findings of each baseline (named side, table) against the candidate: an
    untrusted ``stage_mismatch`` when the candidate holds a smaller share of its askings at a
    later stage than the baseline (its recording lost the reranker or context step, for some
    questions or all), a ``stage_change`` warning when it only holds more (the app gained a
    step, or the baseline's recording missed one). Shares, not counts: missing queries are
    reported on their own."""
    cand = _stage_profile(candidate)
    if cand is None:
        return []
    cand_stages, cand_later, cand_total = cand
    findings: list[Finding] = []
    for side, table in baselines:
        base = _stage_profile(table)
        if base is None:
            continue
        base_stages, base_later, base_total = base
        # c / cand_total against b / base_total, in integers
        pairs = list(zip(base_later, cand_later, strict=True))
        fewer = any(c * base_total < b * cand_total for b, c in pairs)
        more = any(c * base_total > b * cand_total for b, c in pairs)
        said = f"the {side} was scored at stage {_stages_text(base_stages)}, the candidate at "
        said += _stages_text(cand_stages)
        if fewer:
            findings.append(
                Finding(
                    "error",
                    "stage_mismatch",
                    f"{said}: the candidate's recording holds less of the app's later steps "
                    "(after a reranker, the context the model saw) than the baseline's; did it "
                    "miss them? Record both the same way, or score one stage on both with "
                    "--group stage:NAME",
                )
            )
        elif more:
            findings.append(
                Finding(
                    "warning",
                    "stage_change",
                    f"{said}: the candidate is scored on a later step of the app (a reranker "
                    "or context step added, or the baseline's recording missed it)",
                )
            )
    return findings


def _repeats(table: object) -> tuple[set[str], set[str]]:
    """The queries a table repeats, and those of them with a trace-less asking."""
    repeated = tuple(getattr(table, "repeated", ()))
    if not repeated or not isinstance(table, Mapping):
        return set(repeated), set()
    untraced = {
        qid
        for qid in repeated
        if any(t.trace_id is None for t in getattr(table[qid], "traces", ()))
    }
    return set(repeated), untraced


def repeat_findings(baselines: Sequence[tuple[str, object]], candidate: object) -> list[Finding]:
    """``unmatched_repeats`` and ``unmatched_askings`` for each side whose repeats the other
    side does not share (see the module docstring); each baseline (named side, table) against
    the candidate."""
    cand_all, cand_untraced = _repeats(candidate)
    findings: list[Finding] = []
    for side, table in baselines:
        base_all, base_untraced = _repeats(table)
        for name, own, repeated, untraced, other, other_all, other_table in (
            (side, table, base_all, base_untraced, "candidate", cand_all, candidate),
            ("candidate", candidate, cand_all, cand_untraced, side, base_all, table),
        ):
            # a query the other side never recorded is not compared (it is reported as
            # missing), so its repeats cannot hide anything and "answered once" would be false
            once = repeated - other_all - set(getattr(other_table, "missing_in_run", ()))
            lone = sorted(once & untraced)
            if lone:
                findings.append(
                    Finding(
                        "error",
                        "unmatched_repeats",
                        f"the {name} run holds several records without a trace id for "
                        f"{_counted(lone)} that the {other} answered once ({_listed(lone)}): "
                        "they may be several retrievals of one asking rather than repeats, and "
                        "their mean can hide a regression; record trace ids (the integrations "
                        "do) or one record per question, or choose one retrieval with --group "
                        "source:NAME or --group stage:NAME",
                        query_ids=tuple(lone),
                    )
                )
            asked = sorted(_divergent(own, once - untraced))
            if asked:
                findings.append(
                    Finding(
                        "error",
                        "unmatched_askings",
                        f"the {name} run asked {_counted(asked)} in several traces that scored "
                        f"differently, where the {other} asked once ({_listed(asked)}): a run "
                        "file that a second recording appended to mixes two recordings (the "
                        "LangChain handler and SPANCHOR_RUN_FILE append by default), and the "
                        "mean of their askings can hide a regression; start the run file "
                        "afresh for each recording (mode='w', or delete it first), or record "
                        "both sides the same way",
                        query_ids=tuple(asked),
                    )
                )
    return findings


def _divergent(table: object, ids: set[str]) -> set[str]:
    """Those of ``ids`` (repeated queries) whose askings did not all score the same; all of
    them when the table does not know (older evaluation files): an unknown mean is not
    trusted."""
    known = getattr(table, "divergent", None)
    return ids if known is None else ids & set(known)


def _counted(ids: Sequence[str]) -> str:
    return f"{len(ids)} {'query' if len(ids) == 1 else 'queries'}"


def _merged_shape(table: object, ids: Sequence[str]) -> tuple[set[str], set[str]]:
    """The sources and stages of the merged askings of the first few of ``ids`` (the message
    names them; building every query of a 100,000-query table for it would cost more than it
    tells)."""
    sources: set[str] = set()
    stages: set[str] = set()
    if not isinstance(table, Mapping):
        return sources, stages
    for qid in ids[:20]:
        for trace in getattr(table[qid], "traces", ()):
            if trace.records > 1:
                sources.update(source for source in trace.sources if source)
                stages.add(trace.stage or "retrieval")
    return sources, stages


def _merge_finding(
    code: str, lead: str, after: str, tables: Sequence[object], ids: list[str]
) -> Finding:
    """A merge warning about ``ids``: ``lead`` (who merges), the merged sources found in
    ``tables``, ``after`` (against what), the queries and what to do. When the merged records
    are all ``context`` lines already (a sub-question engine records each sub-engine's
    context and the final one), recording "the list the model saw" is no advice: choosing
    one of them by its source is."""
    sources: set[str] = set()
    stages: set[str] = set()
    for table in tables:
        more_sources, more_stages = _merged_shape(table, ids)
        sources |= more_sources
        stages |= more_stages
    named = f" (from {', '.join(sorted(sources))})" if sources else ""
    counted = f"{len(ids)} {'query' if len(ids) == 1 else 'queries'}"
    if stages == {"context"}:
        advice = (
            "if one of these context lists is what your app gave the model, score it on both "
            "sides with --group source:NAME"
        )
    else:
        advice = (
            "record that list (stage context) to gate exactly it, or score one retriever on "
            "both sides with --group source:NAME"
        )
    return Finding(
        "warning",
        code,
        f"{lead} {counted} from several retrievals of one asking merged into one list{named}"
        f"{after} ({_listed(ids)}): the merge interleaves their ranks, which may not be the "
        f"list your app gave the model; {advice}",
        query_ids=tuple(ids),
    )


def merge_findings(baselines: Sequence[tuple[str, object]], candidate: object) -> list[Finding]:
    """``merge_change`` for each side that merges several retrievals per asking for queries
    the other side scored from one, and one ``merged_retrievals`` for queries both sides merge
    (see the module docstring); each baseline (named side, table) against the candidate.
    Queries missing on either side are not compared, so not named."""
    cand_merged = set(getattr(candidate, "merged", ()))
    findings: list[Finding] = []
    for side, table in baselines:
        base_merged = set(getattr(table, "merged", ()))
        missing = set(getattr(table, "missing_in_run", ())) | set(
            getattr(candidate, "missing_in_run", ())
        )
        for name, merged, other, other_merged, own, other_table in (
            (side, base_merged, "candidate", cand_merged, table, candidate),
            ("candidate", cand_merged, side, base_merged, candidate, table),
        ):
            lone = sorted(
                qid
                for qid in merged - other_merged - missing
                if not isinstance(other_table, Mapping) or qid in other_table
            )
            if lone:
                lead, after = f"the {name} run scores", f", where the {other} scored one retrieval"
                findings.append(_merge_finding("merge_change", lead, after, [own], lone))
        shared = sorted((cand_merged & base_merged) - missing)
        if shared:
            tables = [table, candidate]
            findings.append(
                _merge_finding("merged_retrievals", "both runs score", "", tables, shared)
            )
    return findings
