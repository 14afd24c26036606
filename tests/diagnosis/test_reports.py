"""Causes and the chunking / ranking split in the Markdown, JUnit, HTML and summary reports,
checked on the comparison whose five regressions have one cause of each kind."""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

from spanchor_core.compare import compare
from spanchor_core.diagnosis import MissingCause
from spanchor_core.render import (
    comparison_html,
    comparison_junit,
    comparison_markdown,
    comparison_summary_lines,
)
from spanchor_core.render.text import markdown_escape
from tests.diagnosis.cases import BASELINE, CANDIDATE, CORPUS, GOLD, KINDS, POLICY, diagnosed

WHY = "5 regressed: 1 missing, 1 unmapped, 1 split, 1 rank, 1 dropped"
SPLIT = "recall@1 -0.90: -0.50 chunking (oracle 1.00 → 0.50), -0.40 ranking"
CLAUSES = {
    "q-split": "split: a[10:30] is cut at 20 and [20:30] left the top 1; the best single chunk "
    "covers 100% → 50% of it",
    "q-rank": "rank: a[10:30] ranked 1 → 2 (K = 1)",
    "q-dropped": "dropped: none of the candidate's 1 results overlaps a[10:30] (rank 1 before)",
    "q-unmapped": "unmapped: 0 → 1 unmapped results in the top 1 (ranks 1)",
    "q-missing": "missing: the candidate has no record for this query",
}


def test_markdown_shows_the_counts_the_split_and_a_cause_per_regression() -> None:
    text = comparison_markdown(diagnosed(chunks=True), baseline=BASELINE, candidate=CANDIDATE)
    assert f"**{WHY}**" in text
    assert f"- {SPLIT}" in text
    assert text.index("### Why") < text.index("### Regressions")
    header = next(line for line in text.splitlines() if line.startswith("| # | Query"))
    assert "| Cause |" in header
    for qid, clause in CLAUSES.items():
        row = next(line for line in text.splitlines() if f"| {qid} |" in line)
        assert markdown_escape(clause) in row, row


def test_markdown_computes_causes_for_an_undiagnosed_comparison_given_both_sides() -> None:
    plain = compare(BASELINE, CANDIDATE, POLICY)
    assert plain.diagnosis is None
    with_sides = comparison_markdown(plain, baseline=BASELINE, candidate=CANDIDATE)
    assert f"**{WHY}**" in with_sides
    assert "### Why" not in comparison_markdown(plain)  # nothing to judge the causes by


def test_junit_failures_say_why_and_properties_hold_the_counts_and_split() -> None:
    root = ET.fromstring(comparison_junit(diagnosed(chunks=True)))
    properties = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert properties["why"] == WHY
    assert properties["split.recall@1"] == SPLIT
    failures = {case.get("name"): case.find("failure") for case in root.iter("testcase")}
    for qid, clause in CLAUSES.items():
        failure = failures[qid]
        assert failure is not None
        assert clause in (failure.get("message") or "")
        assert f"cause: {clause}" in (failure.text or "")


class _Text(HTMLParser):
    """The page's text and the tags it opens (a well-formedness check of what we emit)."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.badges: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "span" and values.get("data-cause"):
            self.badges.append(values["data-cause"] or "")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_html_shows_causes_as_badges_and_escapes_every_clause() -> None:
    page = comparison_html(
        diagnosed(chunks=True), baseline=BASELINE, candidate=CANDIDATE, gold=GOLD, corpus=CORPUS
    )
    parser = _Text()
    parser.feed(page)
    text = re.sub(r"\s+", " ", "".join(parser.text))
    assert f"why: {WHY}" in text
    assert SPLIT in text
    assert sorted(parser.badges) == sorted(KINDS)
    assert "rank 1 before" in text
    assert "ranked 1 → 2 (K = 1)" in text
    assert "→ 50% of it" in text


def test_html_escapes_markup_inside_a_cause() -> None:
    comparison = diagnosed()
    assert comparison.diagnosis is not None
    row = comparison.diagnosis["q-missing"]
    (cause,) = row.causes
    assert isinstance(cause, MissingCause)
    hostile = dataclasses.replace(cause, reason="error", error='<script>alert("x")</script>')
    queries = {
        **comparison.diagnosis.queries,
        "q-missing": dataclasses.replace(row, causes=(hostile,)),
    }
    comparison = dataclasses.replace(
        comparison, diagnosis=dataclasses.replace(comparison.diagnosis, queries=queries)
    )
    page = comparison_html(comparison)
    assert "<script>" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    markdown = comparison_markdown(comparison)
    assert "<script>" not in markdown
    junit = comparison_junit(comparison)
    assert "<script>" not in junit
    assert 'alert("x")' in (
        ET.fromstring(junit).find(".//testcase[@name='q-missing']/failure").get("message") or ""  # type: ignore[union-attr]
    )


def test_summary_lines_end_with_why_and_the_split() -> None:
    lines = comparison_summary_lines(diagnosed(chunks=True))
    assert f"why: {WHY}" in lines
    assert SPLIT in lines
    assert not any(
        line.startswith("why")
        for line in comparison_summary_lines(compare(BASELINE, CANDIDATE, POLICY))
    )


def test_a_diagnosed_pass_prints_no_why_line_but_keeps_the_split() -> None:
    from spanchor_core.diagnosis import with_diagnosis
    from tests.diagnosis.cases import BASELINE_CHUNKS

    same = with_diagnosis(
        compare(BASELINE, BASELINE, POLICY),
        BASELINE,
        BASELINE,
        baseline_chunks=BASELINE_CHUNKS,
        candidate_chunks=BASELINE_CHUNKS,
    )
    assert same.diagnosis is not None
    assert same.diagnosis.summary.regressed == 0
    lines = comparison_summary_lines(same)
    assert not any(line.startswith("why") for line in lines)  # "why: 0 regressed" was printed
    assert any(line.startswith("recall@1 ") for line in lines)  # the split still shows


def test_terminal_lines_count_the_causes_left_out() -> None:
    from spanchor_core.render.terminal import diagnosis_lines

    diagnosis = diagnosed(chunks=True).diagnosis
    assert diagnosis is not None
    lines = diagnosis_lines(diagnosis, limit=2)
    assert lines[0] == f"[bold]why[/]: {WHY}"
    assert sum(": " in line and line.startswith("  q-") for line in lines) == 2
    assert lines[-1].startswith("  … and 3 more causes")
    assert diagnosis_lines(diagnosis, limit=5)[-1].startswith("  q-")  # all shown, no tail line
