"""Reports: Markdown, JUnit XML and plain lines over real evaluations and comparisons, the
lost-evidence computation, and escaping that user text cannot break out of."""

from __future__ import annotations

import dataclasses
import html
import re
import string
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spanchor_core.compare import Comparison, MappingMetricTable, TableSettings, compare
from spanchor_core.corpus import Corpus
from spanchor_core.errors import InputError
from spanchor_core.evaluate import (
    Evaluation,
    EvaluationSettings,
    LocatedResult,
    QueryEvaluation,
    evaluate,
)
from spanchor_core.gold import GoldQuery, GoldSet, anchor_from_text
from spanchor_core.policy import AggregateGate, Policy
from spanchor_core.render import (
    comparison_junit,
    comparison_markdown,
    comparison_summary_lines,
    evaluation_markdown,
    evaluation_summary_lines,
    lost_evidence,
    markdown_escape,
    write_report,
)
from spanchor_core.runs import RetrievalRecord, RetrievedResult, RetrieverInfo, Run, RunHeader
from spanchor_core.spans import DocSpan

SKY = "The sky is blue because of Rayleigh scattering."
SUNSET = "Sunsets look red for the same reason."
GRASS = "Grass is green due to chlorophyll."
LIGHT = "Chlorophyll absorbs red and blue light."
PARIS = "Paris is the capital of France."
SEINE = "It lies on the Seine."

QUESTIONS = {
    "q1": "Why is the sky blue?",
    "q2": "Why is grass green?",
    # a question that would break a table row and inject emphasis if it were not escaped
    "q3": "Where is Paris? | the capital\nof *France* <b>",
}
EVIDENCE = {"q1": SKY, "q2": GRASS, "q3": PARIS}
RECALL_5 = Policy(max_drop={"recall@5": 0.0})


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus.from_texts(
        {"alpha": f"{SKY} {SUNSET}", "beta": f"{GRASS} {LIGHT}", "gamma": f"{PARIS} {SEINE}"}
    )


@pytest.fixture(scope="module")
def gold(corpus: Corpus) -> GoldSet:
    return GoldSet(
        GoldQuery(qid, QUESTIONS[qid], (anchor_from_text(corpus, EVIDENCE[qid]),))
        for qid in ("q1", "q2", "q3")
    )


def _run(description: str, results: Mapping[str, Sequence[str]]) -> Run:
    header = RunHeader(retriever=RetrieverInfo(description=description))
    records = [
        RetrievalRecord(
            qid,
            QUESTIONS.get(qid, qid),
            tuple(RetrievedResult(rank, text) for rank, text in enumerate(texts, start=1)),
        )
        for qid, texts in results.items()
    ]
    return Run(header, records)


BASELINE_RESULTS = {
    "q1": [SKY, SUNSET],
    "q2": [GRASS, LIGHT],
    "q3": ["Paris is the capital", SEINE],  # 20 of 31 gold characters
}
CANDIDATE_RESULTS = {
    "q1": [SKY, SUNSET],  # unchanged
    "q2": [LIGHT, SUNSET],  # loses all its evidence: the regression
    "q3": [PARIS, SEINE],  # finds all its evidence: the improvement
}


@pytest.fixture(scope="module")
def baseline(corpus: Corpus, gold: GoldSet) -> Evaluation:
    return evaluate(corpus, gold, _run("bm25, 200-char chunks", BASELINE_RESULTS), k=(1, 3, 5))


@pytest.fixture(scope="module")
def candidate(corpus: Corpus, gold: GoldSet) -> Evaluation:
    return evaluate(corpus, gold, _run("dense | 500-char chunks", CANDIDATE_RESULTS), k=(1, 3, 5))


@pytest.fixture(scope="module")
def failing(baseline: Evaluation, candidate: Evaluation) -> Comparison:
    return compare(baseline, candidate, RECALL_5)


@pytest.fixture(scope="module")
def passing(baseline: Evaluation, corpus: Corpus, gold: GoldSet) -> Comparison:
    """The baseline's results recorded again (a run of its own): a comparison with no change.
    The baseline against itself would be one recording on both sides, which is untrusted."""
    again = evaluate(
        corpus, gold, _run("bm25, 200-char chunks, again", BASELINE_RESULTS), k=(1, 3, 5)
    )
    return compare(baseline, again, RECALL_5)


def _markdown(
    comparison: Comparison,
    baseline: Evaluation,
    candidate: Evaluation,
    gold: GoldSet,
    corpus: Corpus,
    *,
    redact: bool = False,
) -> str:
    return comparison_markdown(
        comparison, baseline=baseline, candidate=candidate, gold=gold, corpus=corpus, redact=redact
    )


# -- helpers that read Markdown the way a renderer does ---------------------------------------


def unescaped_pipes(line: str) -> int:
    """Pipes a GFM table would split a row at (a backslash escapes the next character)."""
    count = 0
    escaped = False
    for char in line:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "|":
            count += 1
    return count


def table_blocks(markdown: str) -> list[list[str]]:
    """Runs of consecutive lines that start with a pipe: one list per table."""
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in markdown.split("\n"):
        if line.startswith("|"):
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def assert_tables_intact(markdown: str) -> None:
    blocks = table_blocks(markdown)
    assert blocks, "expected at least one table"
    for block in blocks:
        widths = {unescaped_pipes(line) for line in block}
        assert len(widths) == 1, f"ragged table: {block}"
        assert len(block) >= 2
        assert set(block[1]) <= set("|-: "), f"second line is not a delimiter row: {block[1]}"


def markdown_unescape(text: str) -> str:
    """What a renderer shows for :func:`markdown_escape` output (line breaks as ``\\n``)."""
    text = text.replace("<br>", "\n")
    text = re.sub(r"\\(.)", r"\1", text)
    return html.unescape(text)


# -- markdown_escape ----------------------------------------------------------------------------


@given(st.text())
def test_escaped_text_is_one_line_without_unescaped_pipes_or_html(text: str) -> None:
    escaped = markdown_escape(text)
    assert "\n" not in escaped
    assert "\r" not in escaped
    assert len(escaped.splitlines()) <= 1
    assert unescaped_pipes(escaped) == 0
    assert "<" not in escaped.replace("<br>", "")
    assert ">" not in escaped.replace("<br>", "")
    # every emphasis, code or link character is escaped
    for char in "*_`[]~$":
        assert re.search(rf"(?<!\\)(?:\\\\)*{re.escape(char)}", escaped) is None


@given(st.text(alphabet=string.ascii_letters + string.digits + " "))
def test_plain_alphanumerics_pass_unchanged(text: str) -> None:
    assert markdown_escape(text) == text


@given(
    st.text(
        alphabet=st.one_of(
            st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")),
            st.sampled_from("|\n`<>*_\\&[]~$#"),
        )
    )
)
def test_escaping_loses_nothing_a_reader_sees(text: str) -> None:
    assert markdown_unescape(markdown_escape(text)) == text


def test_escape_hand_examples() -> None:
    assert markdown_escape("a|b") == "a\\|b"
    assert markdown_escape("x\r\ny\rz") == "x<br>y<br>z"
    assert markdown_escape("<script>") == "&lt;script&gt;"
    assert markdown_escape("**bold** `code` _em_") == "\\*\\*bold\\*\\* \\`code\\` \\_em\\_"
    assert markdown_escape("a\\|b") == "a\\\\\\|b"  # a literal backslash cannot un-escape a pipe
    assert markdown_escape("tab\there\x00\x1b") == "tab here\ufffd\ufffd"


# -- lost_evidence ------------------------------------------------------------------------------


def _query(qid: str, gold: Sequence[DocSpan], spans: Sequence[DocSpan | None]) -> QueryEvaluation:
    results = tuple(
        LocatedResult(rank, "unmapped", None, None, None, 0.0)
        if span is None
        else LocatedResult(rank, "exact", span.document_id, span.start, span.end, 1.0)
        for rank, span in enumerate(spans, start=1)
    )
    return QueryEvaluation(qid, {}, gold=tuple(gold), results=results)


def test_lost_evidence_hand_computed() -> None:
    gold = [DocSpan("d", 10, 50), DocSpan("e", 0, 10)]
    before = _query("q", gold, [DocSpan("d", 0, 30), DocSpan("e", 0, 10), DocSpan("d", 40, 60)])
    after = _query("q", gold, [None, DocSpan("d", 20, 25), DocSpan("e", 5, 20)])
    # at K=2 the baseline covers d[10,30) and e[0,10); the candidate d[20,25) only
    assert lost_evidence(before, after, k=2) == [
        DocSpan("d", 10, 20),
        DocSpan("d", 25, 30),
        DocSpan("e", 0, 10),
    ]
    # over the whole list the candidate's rank 3 covers e[5,10) and the baseline's d[40,50)
    assert lost_evidence(before, after) == [
        DocSpan("d", 10, 20),
        DocSpan("d", 25, 30),
        DocSpan("d", 40, 50),
        DocSpan("e", 0, 5),
    ]
    assert lost_evidence(after, before, k=2) == []  # nothing the candidate had is missing


_spans = st.lists(
    st.tuples(st.sampled_from("de"), st.integers(0, 40), st.integers(0, 40)).map(
        lambda t: DocSpan(t[0], min(t[1], t[2]), max(t[1], t[2]))
    ),
    max_size=6,
)


@given(_spans, _spans, _spans, st.integers(1, 7))
def test_lost_evidence_matches_character_sets(
    gold: list[DocSpan], before: list[DocSpan], after: list[DocSpan], k: int
) -> None:
    def chars(spans: Sequence[DocSpan]) -> set[tuple[str, int]]:
        return {(s.document_id, i) for s in spans for i in range(s.start, s.end)}

    lost = lost_evidence(_query("q", gold, before), _query("q", gold, after), k=k)
    assert chars(lost) == (chars(gold) & chars(before[:k])) - chars(after[:k])
    assert all(span.length > 0 for span in lost)
    assert lost == sorted(lost)


# -- comparison Markdown ------------------------------------------------------------------------


def test_comparison_fixture_is_what_the_tests_assume(failing: Comparison) -> None:
    assert [(row.query_id, row.status.value) for row in failing.queries] == [
        ("q1", "UNCHANGED"),
        ("q2", "REGRESSION"),
        ("q3", "IMPROVED"),
    ]
    assert failing.query("q3").change("recall@5").baseline == pytest.approx(20 / 31)


def test_failing_markdown_leads_with_the_verdict_and_shows_lost_evidence(
    failing: Comparison,
    baseline: Evaluation,
    candidate: Evaluation,
    gold: GoldSet,
    corpus: Corpus,
) -> None:
    text = _markdown(failing, baseline, candidate, gold, corpus)
    first = text.split("\n", 1)[0]
    assert "FAIL" in first
    assert "PASS" not in first
    assert "1 of 3 compared queries regressed" in first
    assert "1 improved, 1 unchanged" in first

    regressions = text.index("### Regressions")
    improvements = text.index("### Improvements")
    assert text.index("### Findings") < regressions < improvements
    assert improvements < text.index("### Mapping health") < text.index("### Aggregates")

    [q2_row] = [line for line in text.split("\n") if line.startswith("| 1 | q2 |")]
    assert "Why is grass green?" in q2_row
    assert "recall@5 1.000 → 0.000 (-1.000)" in q2_row
    assert f"beta[0:{len(GRASS)}] “**{GRASS}**”" in q2_row  # the lost part marked
    assert "lost 34 gold characters in the top 5" in q2_row
    # evidence is shown for the regressed query only
    assert GRASS in text
    assert SKY not in text
    assert PARIS not in text
    assert "bm25, 200-char chunks" in text
    assert "dense \\| 500-char chunks" in text
    assert_tables_intact(text)


def test_question_with_pipe_and_newline_stays_in_its_cell(
    failing: Comparison,
    baseline: Evaluation,
    candidate: Evaluation,
    gold: GoldSet,
    corpus: Corpus,
) -> None:
    text = _markdown(failing, baseline, candidate, gold, corpus)
    [q3_row] = [line for line in text.split("\n") if "| q3 |" in line]
    assert markdown_escape(QUESTIONS["q3"]) in q3_row
    assert "\\| the capital<br>of \\*France\\* &lt;b&gt;" in q3_row
    assert "<b>" not in text
    assert_tables_intact(text)
    assert_tables_intact(evaluation_markdown(candidate, gold))


def test_redact_removes_every_question_and_evidence_text(
    failing: Comparison,
    baseline: Evaluation,
    candidate: Evaluation,
    gold: GoldSet,
    corpus: Corpus,
) -> None:
    secrets = [*QUESTIONS.values(), *EVIDENCE.values(), "Rayleigh", "chlorophyll", "capital"]
    reports = [
        _markdown(failing, baseline, candidate, gold, corpus, redact=True),
        evaluation_markdown(baseline, gold, redact=True),
        evaluation_markdown(candidate, gold, redact=True),
        comparison_junit(failing, redact=True),
    ]
    for report in reports:
        for secret in secrets:
            assert secret not in report
            assert markdown_escape(secret) not in report
    redacted = reports[0]
    # ids and numbers stay: the reader still learns what failed, where and by how much
    assert redacted.startswith("## ❌ spanchor: FAIL")
    assert "| 1 | q2 | recall@5 1.000 → 0.000 (-1.000) |" in redacted
    assert f"beta[0:{len(GRASS)}]" in redacted
    assert "Question" not in redacted
    assert_tables_intact(redacted)
    # the same call without redact does show them
    plain = _markdown(failing, baseline, candidate, gold, corpus)
    assert QUESTIONS["q2"] in plain


def test_passing_markdown_says_pass(
    passing: Comparison, baseline: Evaluation, gold: GoldSet, corpus: Corpus
) -> None:
    text = _markdown(passing, baseline, baseline, gold, corpus)
    first = text.split("\n", 1)[0]
    assert first.startswith("## ✅ spanchor: PASS")
    assert "0 of 3 compared queries regressed" in first
    assert "### Regressions" not in text
    assert "### Findings" not in text


def test_markdown_without_evaluations_still_reports_regressions(failing: Comparison) -> None:
    text = comparison_markdown(failing)
    assert text.startswith("## ❌ spanchor: FAIL")
    assert "| 1 | q2 | recall@5 1.000 → 0.000 (-1.000) |" in text
    assert "Lost evidence" not in text
    assert "### Mapping health" not in text


def test_evidence_without_a_corpus_shows_coordinates_only(
    failing: Comparison, baseline: Evaluation, candidate: Evaluation
) -> None:
    text = comparison_markdown(failing, baseline=baseline, candidate=candidate)
    assert f"beta[0:{len(GRASS)}]" in text
    assert GRASS not in text


def test_long_lost_evidence_is_cut_and_marked() -> None:
    long = " ".join(f"word{i:03d}" for i in range(60))  # 479 characters
    corpus = Corpus.from_texts({"doc": long + " Tail sentence here."})
    gold = GoldSet([GoldQuery("q", "long?", (anchor_from_text(corpus, long),))])
    before = evaluate(corpus, gold, _run("a", {"q": [long]}), k=(1,))
    after = evaluate(corpus, gold, _run("b", {"q": ["Tail sentence here."]}), k=(1,))
    comparison = compare(before, after, Policy(max_drop={"recall@1": 0.0}))
    text = comparison_markdown(
        comparison, baseline=before, candidate=after, corpus=corpus, excerpt_chars=40
    )
    assert long not in text
    assert "“**word000 word001 word002 word003 word004**…”" in text
    assert f"*(excerpt: 40 of {len(long)} characters)*" in text


def _recall_table(values: Mapping[str, float], **identity: object) -> MappingMetricTable:
    settings = TableSettings(**identity)  # type: ignore[arg-type]
    return MappingMetricTable.from_mapping(
        {qid: {"recall@5": value} for qid, value in values.items()}, settings=settings
    )


def test_long_lists_are_capped() -> None:
    ids = [f"q{i}" for i in range(5)]
    before = _recall_table(dict.fromkeys(ids, 1.0))
    # q4 drops most, so it is listed first; the last three are counted, not listed
    after = _recall_table({qid: 0.9 - 0.1 * i for i, qid in enumerate(ids)})
    comparison = compare(before, after, RECALL_5)
    text = comparison_markdown(comparison, limit=2)
    rows = [line for line in text.split("\n") if re.match(r"\| \d+ \| q\d \|", line)]
    assert [row.split(" | ")[1] for row in rows] == ["q4", "q3"]
    assert "… and 3 more regressions" in text
    with pytest.raises(InputError, match="limit"):
        comparison_markdown(comparison, limit=0)


def test_hostile_query_ids_cannot_break_any_report() -> None:
    hostile = "q|<img src=x>\n`rm`*_\x1b[31m"
    before = _recall_table({hostile: 1.0, "ok": 1.0})
    after = _recall_table({hostile: 0.0, "ok": 1.0})
    comparison = compare(before, after, RECALL_5)
    text = comparison_markdown(comparison)
    assert "<img" not in text
    assert "\x1b" not in text
    assert_tables_intact(text)
    root = ET.fromstring(comparison_junit(comparison))
    names = [case.get("name") for case in root.iter("testcase")]
    assert names == ["ok", hostile.replace("\x1b", "\ufffd")]  # sorted by id
    for line in comparison_summary_lines(comparison):
        assert "\x1b" not in line
        assert "\n" not in line


# -- evaluation Markdown and lines ----------------------------------------------------------------


def test_evaluation_markdown_sections_and_values(baseline: Evaluation, gold: GoldSet) -> None:
    text = evaluation_markdown(baseline, gold)
    assert text.startswith("# spanchor evaluation: bm25, 200-char chunks\n")
    assert "**3 queries scored** · unmapped rate 0.0%" in text
    assert "| K | 1, 3, 5 |" in text
    assert "| min_overlap | 0.5 |" in text
    assert f"| corpus fingerprint | {baseline.settings.corpus_fingerprint[:12]}… |" in text  # type: ignore[index]
    # means over q1 (1.0), q2 (1.0), q3 (20/31) at K=5
    recall = (2 + 20 / 31) / 3
    assert f"| recall | {recall:.3f} | {recall:.3f} | {recall:.3f} |" in text
    assert f"| recall@5 | {recall:.3f} | " in text  # the spread table
    assert "| exact | 6 |" in text
    assert "| **total** | **6** |" in text
    assert "| q2 | Why is grass green? | scored | 1.000 | " in text
    assert "Every gold query had exactly one record" in text
    assert_tables_intact(text)


def test_evaluation_markdown_is_deterministic(corpus: Corpus, gold: GoldSet) -> None:
    run = _run("bm25", BASELINE_RESULTS)
    first = evaluate(corpus, gold, run, k=(1, 3, 5))
    second = evaluate(corpus, gold, run, k=(1, 3, 5))
    assert evaluation_markdown(first, gold) == evaluation_markdown(second, gold)


def test_evaluation_coverage_lists_and_redaction(corpus: Corpus, gold: GoldSet) -> None:
    run = Run(
        RunHeader(),
        [
            RetrievalRecord("q1", QUESTIONS["q1"], (RetrievedResult(1, "not in the corpus"),)),
            RetrievalRecord("q1", QUESTIONS["q1"], (RetrievedResult(1, SKY),)),
            RetrievalRecord("q2", QUESTIONS["q2"], (), error="timeout asking 'grass secret'"),
            RetrievalRecord("zz", "extra?", ()),
            RetrievalRecord(None, "An orphan question?", ()),
        ],
    )
    evaluation = evaluate(corpus, gold, run, k=(1, 5))
    text = evaluation_markdown(evaluation, gold)
    assert "- **Missing in run** (scored as empty retrievals): 1 — q3" in text
    assert "- **Retriever errors** (scored as empty retrievals): 1 — q2 (timeout asking" in text
    assert "- **Not in the gold set** (ignored): 1 — zz" in text
    assert "- **Records without a query id** (ignored): 1 — An orphan question?" in text
    assert "- **Asked more than once** (scored as the mean of the askings): 1 — q1" in text
    assert (
        "| q3 | Where is Paris? \\| the capital<br>of \\*France\\* &lt;b&gt; | missing in run |"
        in text
    )
    redacted = evaluation_markdown(evaluation, gold, redact=True)
    assert "An orphan question?" not in redacted
    assert "grass secret" not in redacted
    assert "- **Records without a query id** (ignored): 1\n" in redacted

    lines = evaluation_summary_lines(evaluation)
    assert lines[0] == "3 queries scored (K = 1, 5; min_overlap 0.5)"
    assert "missing in run: 1 (q3)" in lines
    assert "retriever errors: 1 (q2)" in lines
    assert "records without a query id: 1" in lines
    assert not any("orphan" in line or "grass secret" in line for line in lines)


def test_evaluation_per_query_rows_are_capped(baseline: Evaluation, gold: GoldSet) -> None:
    text = evaluation_markdown(baseline, gold, limit=2)
    assert "| q2 |" in text
    assert "| q3 |" not in text
    assert "… and 1 more queries" in text


def test_evaluation_summary_lines(baseline: Evaluation) -> None:
    recall = (2 + 20 / 31) / 3
    assert evaluation_summary_lines(baseline) == [
        "3 queries scored (K = 1, 3, 5; min_overlap 0.5)",
        f"mean recall@5 {recall:.3f}, precision@5 {baseline.mean('precision@5'):.3f}, "
        "hit@5 1.000, full_evidence@5 1.000, mrr 1.000",
        "mapping: 6 results, 0 unmapped (0.0%), 0 ambiguous, 0 fuzzy, 0 hints rejected",
    ]


# -- comparison lines ---------------------------------------------------------------------------


def test_comparison_summary_lines(failing: Comparison, passing: Comparison) -> None:
    lines = comparison_summary_lines(failing)
    assert lines[0] == (
        "FAIL: 1 of 3 compared queries regressed, 1 improved, 1 unchanged; "
        "1 error, 0 warnings (exit code 1)"
    )
    assert lines[1] == "error [regression]: 1 query regressed (recall@5: 1): q2"
    assert lines[2].startswith("recall@5: mean 0.882 -> 0.667 (delta -0.215, 95% CI [")
    assert comparison_summary_lines(passing)[0].startswith("PASS: 0 of 3 compared queries")


# -- JUnit ------------------------------------------------------------------------------------


def _cases(xml: str) -> dict[tuple[str, str], ET.Element]:
    root = ET.fromstring(xml)
    return {(c.get("classname", ""), c.get("name", "")): c for c in root.iter("testcase")}


def test_junit_counts_tests_and_failures(failing: Comparison) -> None:
    xml = comparison_junit(failing)
    assert xml.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="spanchor"')
    root = ET.fromstring(xml)
    [suite] = root.findall("testsuite")
    for element in (root, suite):
        assert element.get("tests") == "3"
        assert element.get("failures") == "1"
        assert element.get("skipped") == "0"
        assert element.get("errors") == "0"
    cases = _cases(xml)
    assert list(cases) == [("spanchor.recall@5", q) for q in ("q1", "q2", "q3")]
    failure = cases[("spanchor.recall@5", "q2")].find("failure")
    assert failure is not None
    assert failure.get("message") == "recall@5 1.0000 -> 0.0000 (-1.0000)"
    assert "recall@5: 1.0000 -> 0.0000 (delta -1.0000, REGRESSION)" in (failure.text or "")
    assert cases[("spanchor.recall@5", "q1")].find("failure") is None
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["verdict"] == "FAIL"
    assert props["exit_code"] == "1"
    assert comparison_junit(failing) == xml  # deterministic


def test_junit_pass(passing: Comparison) -> None:
    root = ET.fromstring(comparison_junit(passing, suite_name="retrieval"))
    assert root.get("name") == "retrieval"
    assert root.get("tests") == "3"
    assert root.get("failures") == "0"


def test_junit_lists_findings_that_are_not_about_one_query() -> None:
    before = _recall_table({"a": 1.0, "b": 1.0, "c": 1.0}, corpus_fingerprint="x")
    after = _recall_table({"a": 0.9, "b": 0.0, "d": 1.0}, corpus_fingerprint="y")
    policy = Policy(
        max_drop={"recall@5": 0.2},
        aggregate={"recall@5": AggregateGate(max_drop=0.0)},
        flaky_queries=("b",),
    )
    comparison = compare(before, after, policy)
    xml = comparison_junit(comparison)
    cases = _cases(xml)
    assert set(cases) == {
        ("spanchor.recall@5", "a"),
        ("spanchor.recall@5", "b"),
        ("spanchor.missing", "c"),
        ("spanchor.missing", "d"),
        ("spanchor.comparison", "settings_mismatch"),
        ("spanchor.recall@5", "aggregate_gate"),
    }
    assert cases[("spanchor.recall@5", "a")].find("failure") is None  # 0.1 drop allowed
    assert cases[("spanchor.recall@5", "b")].find("skipped") is not None  # flaky
    missing = cases[("spanchor.missing", "c")].find("failure")
    assert missing is not None
    assert missing.get("message") == "only in the baseline: not compared"
    mismatch = cases[("spanchor.comparison", "settings_mismatch")].find("failure")
    assert mismatch is not None
    assert "corpus fingerprint" in (mismatch.get("message") or "")
    root = ET.fromstring(xml)
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("6", "4", "1")


# -- write_report -------------------------------------------------------------------------------


def test_write_report_is_atomic_and_reports_bad_paths(tmp_path: Path) -> None:
    target = tmp_path / "out" / "summary.md"
    write_report("## ✅ spanchor: PASS\n", target)
    write_report("## ❌ spanchor: FAIL\n", target)
    assert target.read_text(encoding="utf-8") == "## ❌ spanchor: FAIL\n"
    assert [p.name for p in target.parent.iterdir()] == ["summary.md"]
    with pytest.raises(InputError, match="cannot write the report") as info:
        write_report("x", tmp_path / "out")  # a directory
    assert info.value.path == str(tmp_path / "out")


def test_evidence_notes_a_candidate_that_skipped_the_query(
    baseline: Evaluation, corpus: Corpus, gold: GoldSet
) -> None:
    skipped = {qid: texts for qid, texts in CANDIDATE_RESULTS.items() if qid != "q2"}
    after = evaluate(corpus, gold, _run("dense", skipped), k=(1, 3, 5))
    comparison = compare(baseline, after, RECALL_5)
    text = comparison_markdown(comparison, baseline=baseline, candidate=after, corpus=corpus)
    [row] = [line for line in text.split("\n") if line.startswith("| 1 | q2 |")]
    assert "*(candidate: missing in run)* **lost 34 gold characters in the top 5**" in row
    assert GRASS in row


def test_evidence_is_not_invented_for_0x_evaluations_without_result_spans(
    failing: Comparison, baseline: Evaluation, candidate: Evaluation, corpus: Corpus
) -> None:
    old = dataclasses.replace(
        candidate,
        settings=dataclasses.replace(candidate.settings, source_format="spanchor-0.x/0.2.0"),
    )
    text = comparison_markdown(failing, baseline=baseline, candidate=old, corpus=corpus)
    assert "the candidate evaluation was read from spanchor-0.x/0.2.0" in text
    assert GRASS not in text


def test_evaluation_with_unusual_metric_names_renders() -> None:
    evaluation = Evaluation(
        queries={"a": QueryEvaluation("a", {"recall@5": 0.5, "odd@x": 2.0})},
        settings=EvaluationSettings(k=(5,)),
        metric_names=("recall@5", "odd@x"),
    )
    text = evaluation_markdown(evaluation)
    assert "| odd@x |  | 2.000 |" in text  # no K of its own: the whole-list column
    assert "| a | scored | 0.500 | – | – | – | – |" in text
    assert_tables_intact(text)
    assert evaluation_summary_lines(evaluation)[1] == "mean recall@5 0.500"
