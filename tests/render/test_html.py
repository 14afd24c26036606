"""HTML reports over the bundled quickstart (a real regression) and over a small hostile
example: section order, lost evidence in <mark>, redaction, escaping, well-formed markup, the
delta bars, determinism, notebook display and light imports."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from spanchor_core.compare import Comparison, compare, read_comparison, write_comparison
from spanchor_core.corpus import Corpus
from spanchor_core.errors import InputError
from spanchor_core.evaluate import Evaluation, evaluate, read_evaluation, write_evaluation
from spanchor_core.gold import GoldQuery, GoldSet, anchor_from_text
from spanchor_core.pipeline import GateOutcome, run_gate
from spanchor_core.policy import AggregateGate, Policy
from spanchor_core.render import (
    DELTA_COLOURS,
    comparison_html,
    comparison_summary_html,
    evaluation_html,
    evaluation_summary_html,
    lost_evidence,
    metric_curve,
    primary_metric,
    query_deltas,
    write_html,
)
from spanchor_core.runs import RetrievalRecord, RetrievedResult, RetrieverInfo, Run, RunHeader
from spanchor_core.settings import gate_config_from_pyproject

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


@pytest.fixture(scope="module")
def outcome() -> GateOutcome:
    return run_gate(gate_config_from_pyproject(QUICKSTART / "spanchor.toml"))


def _full(outcome: GateOutcome, **options: object) -> str:
    return comparison_html(
        outcome.comparison,
        baseline=outcome.baseline,
        candidate=outcome.candidate,
        gold=outcome.gold,
        corpus=outcome.corpus,
        **options,  # type: ignore[arg-type]
    )


@pytest.fixture(scope="module")
def page(outcome: GateOutcome) -> str:
    return _full(outcome)


# -- reading HTML the way a browser would ---------------------------------------------------------

_VOID = {"meta", "br", "hr", "img", "input", "link", "col", "wbr", "area", "base", "source"}


class _Checker(HTMLParser):
    """Fails on unbalanced or mis-nested tags; collects the text in document order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        pass  # <rect .../> in SVG: opened and closed

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if data.strip() and "style" not in self.stack[-1:] and "title" not in self.stack[-1:]:
            self.text.append(data.strip())


def check_html(text: str) -> list[str]:
    checker = _Checker()
    checker.feed(text)
    checker.close()
    assert checker.problems == []
    assert checker.stack == []
    return checker.text


def _article(page: str, query_id: str) -> str:
    start = page.index(f'data-query="{html.escape(query_id)}"', page.index('id="regressions"'))
    return page[start : page.index("</article>", start)]


def _marked(fragment: str) -> str:
    return "".join(
        html.unescape(m) for m in re.findall(r'<mark class="lost">(.*?)</mark>', fragment, re.S)
    )


# -- the quickstart comparison --------------------------------------------------------------------


def test_quickstart_regresses(outcome: GateOutcome) -> None:
    # the premise of every test below
    assert not outcome.comparison.passed
    assert len(outcome.comparison.regressions()) >= 2


def test_verdict_comes_first_then_sections_in_reading_order(page: str) -> None:
    text = check_html(page)
    assert text[0].startswith("FAIL: ")  # the first text a reader sees (titles excluded)
    order = ["verdict", "findings", "deltas", "curves", "regressions", "mapping", "aggregates"]
    positions = [page.index(f'id="{name}"') for name in order]
    assert positions == sorted(positions)
    assert page.startswith("<!DOCTYPE html>")


def test_every_regression_shows_its_lost_evidence_in_mark(outcome: GateOutcome, page: str) -> None:
    corpus = outcome.corpus
    assert corpus is not None
    assert outcome.gold is not None
    for row in outcome.comparison.regressions():
        article = _article(page, row.query_id)
        k = max(int(name.split("@")[1]) for name in row.regressed)
        anchors = [a.span for a in outcome.gold[row.query_id].anchors]
        lost = lost_evidence(
            outcome.baseline[row.query_id], outcome.candidate[row.query_id], k=k, gold=anchors
        )
        assert lost, row.query_id
        marked = _marked(article)
        for span in lost[:3]:
            assert corpus.text(span.document_id)[span.start : span.end] in marked
        assert f"<strong>Lost {sum(s.length for s in lost)} of" in article


def test_hand_checked_evidence_of_q01_and_q05(page: str) -> None:
    # q01's only anchor, "the MAX mark (1.7 litres)", is wholly lost at top 5
    q01 = _article(page, "q01")
    assert _marked(q01) == "the MAX mark (1.7 litres)"
    assert "Lost 25 of 25 gold characters in the top 5" in q01
    # q05: the candidate still finds the start of the sentence, loses the rest
    q05 = _article(page, "q05")
    kept = "".join(re.findall(r'<span class="kept">(.*?)</span>', q05, re.S))
    assert "A full kettle boils" in kept
    assert "in about four minutes on a 230 V supply." in _marked(q05)
    assert "How long does a full kettle take to boil?" in q05  # the question, from gold


def test_delta_svg_has_one_bar_per_changed_query_and_counts_the_rest(
    outcome: GateOutcome, page: str
) -> None:
    comparison = outcome.comparison
    metric = primary_metric(comparison)
    assert metric == "recall@5"  # first in the example's policy
    section = page[page.index('id="deltas"') : page.index('id="curves"')]
    bars = re.findall(
        r'<g class="bar" data-query="([^"]*)" data-delta="([^"]*)" data-kind="([^"]*)">'
        r'<title>[^<]*</title><rect [^>]*fill="([^"]*)"',
        section,
    )
    unchanged = re.findall(r'<g class="unchanged" data-count="(\d+)">', section)
    assert len(unchanged) == 1
    assert len(bars) + int(unchanged[0]) == len(comparison.queries)
    assert len({qid for qid, *_ in bars}) == len(bars)
    regressed = {row.query_id for row in comparison.regressions()}
    for qid, delta, kind, fill in bars:
        change = comparison.query(qid).change(metric)
        assert float(delta) == change.delta != 0.0
        if qid in regressed and metric in comparison.query(qid).regressed:
            assert (kind, fill) == ("regressed", DELTA_COLOURS["regressed"])
            assert change.delta < 0
        elif change.delta < 0:
            assert (kind, fill) == ("worse", DELTA_COLOURS["worse"])
        else:
            assert fill in (DELTA_COLOURS["improved"], DELTA_COLOURS["better"])
    deltas = [float(delta) for _, delta, _, _ in bars]
    assert deltas[: len(regressed)] == sorted(deltas[: len(regressed)])  # worst first
    assert DELTA_COLOURS["regressed"] == "#c62828"


def test_curves_are_means_over_the_compared_queries(outcome: GateOutcome, page: str) -> None:
    baseline = outcome.baseline
    curve = metric_curve(baseline, "recall")
    assert [k for k, _ in curve] == [1, 3, 5, 10]
    for k, value in curve:
        assert value == pytest.approx(baseline.mean(f"recall@{k}"))
    assert metric_curve(baseline, "recall", ks=[5, 7]) == [curve[2]]  # 7 is not measured
    section = page[page.index('id="curves"') : page.index('id="regressions"')]
    assert section.count("<polyline") == 4  # recall and hit, baseline and candidate
    assert f"{outcome.candidate.mean('recall@5'):.3f}" in section


def test_redact_removes_questions_evidence_and_context(outcome: GateOutcome) -> None:
    assert outcome.gold is not None
    assert outcome.corpus is not None
    pages = [
        _full(outcome, redact=True),
        evaluation_html(outcome.candidate, gold=outcome.gold, corpus=outcome.corpus, redact=True),
    ]
    for text in pages:
        check_html(text)
        assert "<blockquote>" not in text
        assert "<mark" not in text
        for query in outcome.gold.values():
            assert query.question not in text
            assert html.escape(query.question) not in text
            for anchor in query.anchors:
                evidence = outcome.corpus.text(anchor.document_id)[anchor.start : anchor.end]
                assert evidence not in text
                assert html.escape(evidence) not in text
    # ids and numbers stay, so the page still says what failed
    assert "q01" in pages[0]
    assert "text redacted" in pages[0]


def test_renders_are_deterministic(outcome: GateOutcome, page: str) -> None:
    assert _full(outcome) == page
    again = run_gate(gate_config_from_pyproject(QUICKSTART / "spanchor.toml"))
    assert _full(again) == page
    assert evaluation_html(outcome.baseline) == evaluation_html(again.baseline)


def test_self_contained_offline_page(page: str) -> None:
    for forbidden in ("<script", "http://", "https://", "src=", "href=", "@import", "url("):
        assert forbidden not in page


def test_without_evaluations_or_corpus_the_page_says_what_is_missing(
    outcome: GateOutcome,
) -> None:
    bare = comparison_html(outcome.comparison)
    check_html(bare)
    assert "Pass both evaluations" in bare
    assert "<polyline" not in bare
    no_text = comparison_html(
        outcome.comparison, baseline=outcome.baseline, candidate=outcome.candidate
    )
    check_html(no_text)
    assert "pass the corpus to see the text" in no_text
    assert "<blockquote>" not in no_text
    assert "kettle-manual[" in no_text  # the offsets of lost evidence


def test_limit_caps_the_bars(outcome: GateOutcome) -> None:
    capped = comparison_html(outcome.comparison, limit=3)
    section = capped[capped.index('id="deltas"') : capped.index('id="curves"')]
    assert section.count('<g class="bar"') == 3
    changed = [d for d in query_deltas(outcome.comparison) if d.kind != "unchanged"]
    assert f"The {len(changed) - 3} smallest of {len(changed)} changes" in section
    with pytest.raises(InputError):
        comparison_html(outcome.comparison, limit=0)
    with pytest.raises(InputError):
        comparison_html(outcome.comparison, context_chars=-1)


def test_query_deltas_order_and_unknown_metric(outcome: GateOutcome) -> None:
    deltas = query_deltas(outcome.comparison, "hit@5")
    assert len(deltas) == len(outcome.comparison.queries)
    assert [d.delta for d in deltas] == sorted(d.delta for d in deltas)
    with pytest.raises(InputError, match="not compared"):
        query_deltas(outcome.comparison, "ndcg@3")


def test_primary_metric_prefers_per_query_gates_then_mean_gates(
    outcome: GateOutcome,
) -> None:
    comparison = compare(
        outcome.baseline,
        outcome.candidate,
        Policy(aggregate={"hit@3": AggregateGate(max_drop=0.5)}),
    )
    assert primary_metric(comparison) == "hit@3"
    assert query_deltas(comparison)[0].kind in ("worse", "unchanged")  # no per-query gate


def test_evaluation_page(outcome: GateOutcome) -> None:
    evaluation = outcome.candidate
    text = evaluation_html(evaluation, gold=outcome.gold, corpus=outcome.corpus)
    check_html(text)
    assert f"{evaluation.mean('recall@5'):.3f}" in text
    assert text.count("<polyline") == 2  # recall and hit
    for qid in evaluation:
        assert f"<code>{qid}</code>" in text
    assert 'id="missed"' in text
    assert '<mark class="lost">' in text
    assert "bm25s BM25 over windows" in text


def test_write_html_is_atomic_and_reports_failures(tmp_path: Path, page: str) -> None:
    target = tmp_path / "out" / "report.html"
    write_html(page, target)
    assert target.read_text(encoding="utf-8") == page
    assert [p.name for p in target.parent.iterdir()] == ["report.html"]
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError, match="cannot write the HTML report"):
        write_html(page, blocker / "report.html")


# -- notebook display -------------------------------------------------------------------------


def test_repr_html_needs_no_corpus(outcome: GateOutcome, tmp_path: Path) -> None:
    write_comparison(outcome.comparison, tmp_path / "c.json")
    write_evaluation(outcome.candidate, tmp_path / "e.json")
    comparison = read_comparison(tmp_path / "c.json")
    evaluation = read_evaluation(tmp_path / "e.json")
    shown = comparison._repr_html_()
    assert shown == comparison_summary_html(comparison)
    check_html(shown)
    assert shown.startswith('<div class="spanchor fragment">')
    assert "FAIL: " in shown
    assert '<g class="bar"' in shown
    assert "<!DOCTYPE" not in shown
    shown = evaluation._repr_html_()
    assert shown == evaluation_summary_html(evaluation)
    check_html(shown)
    assert "<polyline" in shown
    assert f"{evaluation.mean('recall@5'):.3f}" in shown


def test_core_and_reports_import_no_matplotlib() -> None:
    code = (
        "import sys, spanchor_core, spanchor_core.render, spanchor_core.render.plots\n"
        "from spanchor_core.compare import compare\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'matplotlib'], 'matplotlib'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- hostile text ---------------------------------------------------------------------------------

HOSTILE_ID = 'q"><script>alert(1)</script>&amp;'
HOSTILE_QUESTION = "Why <script>alert('q')</script> & \"quotes\"?"
HOSTILE_EVIDENCE = "Evidence <img onerror=x> & \"more\" 'here'\x07."
OTHER = "Unrelated filler text about kettles and toasters that is never gold."


@pytest.fixture(scope="module")
def hostile() -> tuple[Comparison, Evaluation, Evaluation, GoldSet, Corpus]:
    corpus = Corpus.from_texts({"doc": f"{OTHER} {HOSTILE_EVIDENCE} The end."})
    gold = GoldSet(
        [
            GoldQuery(HOSTILE_ID, HOSTILE_QUESTION, (anchor_from_text(corpus, HOSTILE_EVIDENCE),)),
            GoldQuery("plain", "A plain question?", (anchor_from_text(corpus, OTHER),)),
        ]
    )

    def run(description: str, found: bool) -> Run:
        header = RunHeader(retriever=RetrieverInfo(description=description))
        first = HOSTILE_EVIDENCE if found else OTHER
        return Run(
            header,
            [
                RetrievalRecord(HOSTILE_ID, HOSTILE_QUESTION, (RetrievedResult(1, first),)),
                RetrievalRecord(
                    "plain",
                    "A plain question?",
                    (RetrievedResult(1, OTHER if not found else "never in the corpus"),),
                ),
            ],
        )

    baseline = evaluate(corpus, gold, run("<b>bold</b> & co", True), k=(1, 3))
    candidate = evaluate(corpus, gold, run('it\'s "quoted"', False), k=(1, 3))
    comparison = compare(baseline, candidate, Policy(max_drop={"recall@3": 0.0}))
    return comparison, baseline, candidate, gold, corpus


def test_hostile_text_is_escaped(
    hostile: tuple[Comparison, Evaluation, Evaluation, GoldSet, Corpus],
) -> None:
    comparison, baseline, candidate, gold, corpus = hostile
    assert {row.query_id for row in comparison.regressions()} == {HOSTILE_ID}
    assert comparison.query("plain").status.value == "IMPROVED"
    pages = [
        comparison_html(
            comparison,
            baseline=baseline,
            candidate=candidate,
            gold=gold,
            corpus=corpus,
            title="<title>&",
        ),
        evaluation_html(baseline, gold=gold, corpus=corpus, title="x</title>"),
        comparison._repr_html_(),
        baseline._repr_html_(),
    ]
    for text in pages:
        assert text is not None
        check_html(text)
        for raw in ("<script", "<img", "<b>", "\x07", 'q">'):
            assert raw not in text
    page = pages[0]
    assert page is not None
    assert html.escape(HOSTILE_QUESTION) in page
    assert "&lt;title&gt;&amp;" in page
    marked = _marked(_article(page, HOSTILE_ID))
    assert marked == HOSTILE_EVIDENCE.replace("\x07", "\ufffd")
    section = page[page.index('id="deltas"') : page.index('id="curves"')]
    assert f'data-query="{html.escape(HOSTILE_ID)}"' in section
    improved = re.search(
        r'data-query="plain"[^>]*><title>[^<]*</title><rect [^>]*fill="([^"]*)"', section
    )
    assert improved is not None
    assert improved.group(1) == DELTA_COLOURS["improved"]


def test_charts_of_non_finite_values_are_drawn_not_crashed() -> None:
    # issue 12: a 1e400 metric (read as infinity) crashed --html in nice_ticks (OverflowError)
    from spanchor_core.render.html.svg import curve_svg, delta_svg, nice_ticks
    from spanchor_core.render.series import QueryDelta

    inf, nan = float("inf"), float("nan")
    assert nice_ticks(0.0, inf) == nice_ticks(0.0, 1.0)
    assert nice_ticks(nan, 1.0) == nice_ticks(0.0, 1.0)
    assert nice_ticks(-1e308, 1e308)[-1] <= 1e12
    curve = curve_svg([("candidate", [(1, 0.5), (3, inf), (5, nan)])], "recall")
    deltas = [
        QueryDelta("q1", 0.0, inf, inf, "improved"),
        QueryDelta("q2", 1.0, 0.0, -1.0, "regressed"),
    ]
    bars = delta_svg(deltas, "recall@5")
    coordinate = r'\b(x|y|x1|x2|y1|y2|cx|cy|width|height|points)="[^"]*(inf|nan)'
    for svg in (curve, bars):
        assert svg.startswith("<svg")
        assert svg.endswith("</svg>")
        assert not re.search(coordinate, svg)
