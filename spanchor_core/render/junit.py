"""JUnit XML: a comparison as a test report, so CI systems list every regression as a failed test.

The XML holds ids, metric names and numbers only, never questions or evidence; every value goes
through :func:`~spanchor_core.render.text.xml_text`, so no query id can make the file unreadable.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Final

from spanchor_core._version import __version__
from spanchor_core.compare import ChangeStatus, Comparison, QueryChange
from spanchor_core.render.causes import cause_texts, why_line
from spanchor_core.render.text import xml_text
from spanchor_core.render.wording import verdict_word

__all__ = ["comparison_junit"]

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
    return ET.SubElement(parent, tag, {key: xml_text(value) for key, value in attributes.items()})


def comparison_junit(
    comparison: Comparison, *, redact: bool = False, suite_name: str = "spanchor"
) -> str:
    """The comparison as JUnit XML, so CI systems list every regression as a failed test.

    One test case per compared query (a ``<failure>`` if it regressed, ``<skipped>`` if an
    allow-listed flaky query regressed), one per query found on one side only, and one per
    error finding that is not about a single query (settings mismatch, too few queries, a
    failed aggregate gate, ...). The XML holds ids, metric names and numbers only — never
    questions or evidence — so ``redact`` changes nothing; it is accepted so that callers can
    pass the same flag to every renderer. A diagnosed comparison (the gate's, or one read
    from a comparison file) also says why: the cause counts as a ``why`` property, the
    chunking / ranking split per recall@K as ``split.<metric>`` properties, and each failure's
    causes in its message (the first) and text (all).
    """
    del redact  # nothing to remove: see the docstring
    suite = ET.Element("testsuite", {"name": xml_text(suite_name)})
    properties = _sub(suite, "properties")
    _sub(properties, "property", name="verdict", value=verdict_word(comparison))
    _sub(properties, "property", name="exit_code", value=str(comparison.exit_code))
    _sub(properties, "property", name="seed", value=str(comparison.seed))
    _sub(properties, "property", name="spanchor_version", value=__version__)
    if comparison.noise is not None:
        _sub(properties, "property", name="baselines", value=str(comparison.noise.baselines))
        _sub(properties, "property", name="flaky_queries", value=str(len(comparison.noise.flaky)))
    diagnosis = comparison.diagnosis
    if diagnosis is not None:
        _sub(properties, "property", name="why", value=why_line(diagnosis))
        for split in diagnosis.splits:
            if split.queries:
                _sub(properties, "property", name=f"split.{split.metric}", value=split.line())

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
            causes = cause_texts(diagnosis, row.query_id)
            if causes:  # CI shows the message first: the first cause says why
                summary += f" — {causes[0]}" + (
                    f" (+{len(causes) - 1} more)" if len(causes) > 1 else ""
                )
            if row.flaky:
                _sub(case, "skipped", message=f"allow-listed flaky query regressed: {summary}")
                skipped += 1
            else:
                failure = _sub(case, "failure", type="regression", message=summary)
                details = _metric_lines(row)
                if causes:
                    details += "\n" + "\n".join(f"cause: {text}" for text in causes)
                failure.text = xml_text(details)
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
    root = ET.Element("testsuites", {"name": xml_text(suite_name), **counts})
    root.append(suite)
    ET.indent(root, space="  ")
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'
