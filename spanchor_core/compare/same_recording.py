"""Both sides of a comparison scored from one recording: :func:`recording_findings`.

A run file's header carries the moment it was recorded (``created_at``, to the millisecond),
so two evaluations whose run headers are equal, that moment included, and whose scores are
equal for every query and metric scored the same recording — the same file given twice, or a
copy of it (two recorders that opened in the same millisecond with the same description wrote
equal headers, but not equal results as well). That is how a CI job that failed to
record its candidate and fell back to a cached or committed file, or a configuration with the
baseline's path in the candidate's place, looks to the gate: every delta is zero by
construction, and a PASS would say nothing about the candidate. So:

* ``same_recording`` (untrusted, exit 3) — the candidate and a baseline scored one recording
  with the same scoring settings (K, overlap, corpus, gold set, grouping rule, spanchor
  version): the comparison cannot show anything.
* ``same_recording`` (a warning) — one recording scored under different settings on the two
  sides (a corpus edit, another grouping rule, another spanchor version): a legitimate way to
  measure what the settings change, and the message says that this is what is measured.
* ``same_baselines`` (a warning) — two of several baselines are one recording: their agreement
  says nothing about how repeatable the retrieval is, so the noise band is narrower than it
  should be.

A header without ``created_at`` (written by hand, or by another tool) and tables without run
headers (spanchor 0.x files, plain metric tables, even one given twice) produce no finding:
re-recording a deterministic retriever gives equal results but a new ``created_at``, and is a
real run. Runs built in memory (no run file) count only as the same evaluation object given
twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from spanchor_core.compare.model import Finding

__all__ = ["one_recording_pairs", "recording_findings"]

_SCORING = ("k", "min_overlap", "corpus_fingerprint", "gold_sha256", "group", "spanchor_version")
"""The settings fields that decide an evaluation's scores, given its run."""


def _header(table: object) -> Mapping[str, Any] | None:
    """The run header a table was scored from, when it was scored from a run file and the
    header says when it was recorded. Runs built in memory are left out: a notebook that
    builds two ``Run``s with default headers in one millisecond gives equal headers to two
    retrievals (the same evaluation object on both sides is caught apart)."""
    settings = getattr(table, "settings", None)
    header = getattr(settings, "run_header", None)
    if not isinstance(getattr(settings, "run_path", None), str) or not isinstance(header, Mapping):
        return None
    return header if isinstance(header.get("created_at"), str) else None


def _same(one: object, other: object) -> bool:
    """Whether two tables were scored from one recording (see the module doc)."""
    if one is other:  # an evaluation given twice; a plain metric table knows no run
        return hasattr(getattr(one, "settings", None), "run_header")
    header = _header(one)
    return header is not None and header == _header(other) and _same_scores(one, other)


def _same_scores(one: object, other: object) -> bool:
    """Whether two tables hold the same queries with the same value of every metric they
    share (NaN equal to NaN); tables that cannot say are not the same."""
    names = [
        name
        for name in getattr(one, "metric_names", ())
        if name in set(getattr(other, "metric_names", ()))
    ]
    read_one, read_other = getattr(one, "metric", None), getattr(other, "metric", None)
    if not names or not callable(read_one) or not callable(read_other):
        return False
    for name in names:
        first, second = read_one(name), read_other(name)
        if not isinstance(first, Mapping) or not isinstance(second, Mapping):
            return False
        if first.keys() != second.keys():
            return False
        for qid, value in first.items():
            other_value = second[qid]
            if value != other_value and (value == value or other_value == other_value):
                return False
    return True


def _settings_differ(one: object, other: object) -> list[str]:
    """The scoring settings (names) on which two tables differ."""
    first, second = getattr(one, "settings", None), getattr(other, "settings", None)
    return [name for name in _SCORING if getattr(first, name, None) != getattr(second, name, None)]


def one_recording_pairs(tables: Sequence[tuple[str, object]]) -> list[str]:
    """``"A and B"`` for each pair of the named tables scored from one recording (repeated
    baselines, the runs given to ``spanchor noise``)."""
    return [
        f"{first} and {second}"
        for at, (first, table) in enumerate(tables)
        for second, other in tables[at + 1 :]
        if _same(table, other)
    ]


def recording_findings(baselines: Sequence[tuple[str, object]], candidate: object) -> list[Finding]:
    """``same_recording`` for each baseline (named side, table) scored from the candidate's
    recording, ``same_baselines`` once for repeated baselines that share one (module doc)."""
    findings: list[Finding] = []
    for side, table in baselines:
        if not _same(table, candidate):
            continue
        header = _header(candidate)
        when = (
            f"the same run header, recorded at {header['created_at']}"
            if header is not None
            else "the same evaluation on both sides"
        )
        differ = _settings_differ(table, candidate)
        if differ:
            findings.append(
                Finding(
                    "warning",
                    "same_recording",
                    f"the {side} and the candidate were scored from one recording ({when}) "
                    f"with different {', '.join(differ)}: the comparison measures "
                    "that change, not a change of the retriever",
                )
            )
        else:
            findings.append(
                Finding(
                    "error",
                    "same_recording",
                    f"the candidate cannot be trusted: it is the {side}'s own recording "
                    f"({when}), scored the same way, so every delta is zero "
                    "whatever the candidate does; was the candidate recorded at all, or is its "
                    "path the baseline's?",
                )
            )
    twins = one_recording_pairs(baselines)
    if twins:
        findings.append(
            Finding(
                "warning",
                "same_baselines",
                f"repeated baselines are one recording ({'; '.join(twins)}): their agreement "
                "says nothing about how repeatable the retrieval is, so the noise band is too "
                "narrow; record each baseline separately",
            )
        )
    return findings
