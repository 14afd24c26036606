"""The terminal tables a new user reads first: the question beside each regressed id (cut to
the width), deltas coloured by meaning (plain off a terminal or with NO_COLOR), and the
whole-list metrics in a column of their own."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table

from spanchor_core.compare import Comparison, compare
from spanchor_core.corpus import Corpus
from spanchor_core.evaluate import Evaluation, evaluate
from spanchor_core.gold import GoldQuery, GoldSet, anchor_from_text
from spanchor_core.policy import Policy
from spanchor_core.render.terminal import comparison_tables, delta_markup, evaluation_table
from spanchor_core.runs import RetrievalRecord, RetrievedResult, RetrieverInfo, Run, RunHeader

SKY = "The sky is blue because of Rayleigh scattering."
GRASS = "Grass is green due to chlorophyll."
LIGHT = "Chlorophyll absorbs red and blue light."
QUESTION = "Why is grass green, and what does chlorophyll do with the light it absorbs all day?"


def _run(results: dict[str, list[str]]) -> Run:
    return Run(
        RunHeader(retriever=RetrieverInfo(description="test")),
        [
            RetrievalRecord(qid, qid, tuple(RetrievedResult(r, t) for r, t in enumerate(ts, 1)))
            for qid, ts in results.items()
        ],
    )


CORPUS = Corpus.from_texts({"a": f"{SKY} {GRASS} {LIGHT}"})
GOLD = GoldSet(
    [
        GoldQuery("q1", "Why is the sky blue?", (anchor_from_text(CORPUS, SKY),)),
        GoldQuery("q2", QUESTION, (anchor_from_text(CORPUS, GRASS),)),
    ]
)


@pytest.fixture(scope="module")
def baseline() -> Evaluation:
    return evaluate(CORPUS, GOLD, _run({"q1": [SKY], "q2": [GRASS]}), k=(1, 5))


@pytest.fixture(scope="module")
def comparison(baseline: Evaluation) -> Comparison:
    cand = evaluate(CORPUS, GOLD, _run({"q1": [SKY], "q2": [LIGHT]}), k=(1, 5))
    return compare(baseline, cand, Policy(max_drop={"recall@5": 0.0}))


def _render(table: Table, *, width: int, terminal: bool) -> str:
    out = io.StringIO()
    Console(file=out, width=width, force_terminal=terminal).print(table)  # colours: "auto"
    return out.getvalue()


def test_delta_markup_colours_by_meaning() -> None:
    assert delta_markup(-0.25) == "[red]-0.250[/]"
    assert delta_markup(0.25) == "[green]+0.250[/]"
    assert delta_markup(-0.25, "lower") == "[green]-0.250[/]"  # e.g. a latency that fell
    assert delta_markup(0.0) == "+0.000"
    assert delta_markup(-0.0001) == "-0.000"


def test_the_question_sits_beside_the_id_cut_to_the_width(comparison: Comparison) -> None:
    questions = {"q1": "Why is the sky blue?", "q2": QUESTION}
    regressions = comparison_tables(comparison, questions=questions, width=80)[0]
    text = _render(regressions, width=80, terminal=False)
    row = next(line for line in text.splitlines() if "q2" in line)
    assert "Why is grass green" in row
    assert "…" in row
    assert QUESTION not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    wide = _render(
        comparison_tables(comparison, questions=questions, width=200)[0], width=200, terminal=False
    )
    assert QUESTION in wide
    assert "question" not in _render(comparison_tables(comparison)[0], width=80, terminal=False)


def test_deltas_are_red_on_a_terminal_and_plain_off_it_or_with_no_color(
    comparison: Comparison, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    table = comparison_tables(comparison, width=100)[0]
    coloured = _render(table, width=100, terminal=True)
    assert "\x1b[31m-1.000" in coloured  # red
    plain = _render(table, width=100, terminal=False)
    assert "\x1b[" not in plain
    assert "-1.000" in plain
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[31m" not in _render(table, width=100, terminal=True)


def test_whole_list_metrics_have_their_own_column(baseline: Evaluation) -> None:
    table = evaluation_table(baseline)
    headers = [str(column.header) for column in table.columns]
    assert headers[-1] == "all"
    assert headers[1:-1] == ["@1", "@5"]
    text = _render(table, width=120, terminal=False)
    mrr = next(line for line in text.splitlines() if line.startswith("│ mrr"))
    cells = [cell.strip() for cell in mrr.strip("│").split("│")]
    assert cells[-1] == "1.000"  # both queries find their evidence at rank 1 in the baseline
    assert "(all ranks)" not in text


def test_reports_say_once_why_the_interval_and_p_can_disagree(comparison: Comparison) -> None:
    from spanchor_core.render import comparison_html, comparison_markdown
    from spanchor_core.render.text import markdown_escape
    from spanchor_core.render.wording import INTERVAL_AND_P_NOTE

    assert "bootstrap interval" in INTERVAL_AND_P_NOTE
    assert "sign-flip" in INTERVAL_AND_P_NOTE
    markdown = comparison_markdown(comparison)
    assert markdown.count(markdown_escape(INTERVAL_AND_P_NOTE)) == 1
    assert comparison_html(comparison).count("sign-flip test, which asks how often") == 1


def _hit_comparison(changed: int, confidence: float = 0.95) -> Comparison:
    """30 queries, ``changed`` of them going from a miss to a hit (whole steps)."""
    from spanchor_core.compare import MappingMetricTable
    from spanchor_core.policy import BootstrapSettings

    ids = [f"q{i:02}" for i in range(30)]
    baseline = {qid: {"hit@5": 0.0} for qid in ids}
    candidate = {qid: {"hit@5": 1.0 if i < changed else 0.0} for i, qid in enumerate(ids)}
    policy = Policy(max_drop={"hit@5": 0.0}, bootstrap=BootstrapSettings(confidence=confidence))
    return compare(
        MappingMetricTable.from_mapping(baseline),
        MappingMetricTable.from_mapping(candidate),
        policy,
    )


def test_the_terminal_says_why_when_interval_and_p_disagree() -> None:
    from spanchor_core.render.wording import INTERVAL_AND_P_NOTE, interval_and_p_disagree

    # 4 of 30 queries gain a hit: a resample misses all four with probability (26/30)^30,
    # about 1.4 %, so the 95 % interval excludes 0; the sign-flip test over the four changes
    # gives p = 2/16 = 0.125 (estimated by random flips), above 0.05
    disagreeing = _hit_comparison(4)
    row = disagreeing.aggregates[0]
    assert row.ci_low is not None
    assert row.ci_low > 0
    assert row.p_value is not None
    assert row.p_value > 0.05
    assert interval_and_p_disagree(disagreeing) == ["hit@5"]
    table = comparison_tables(disagreeing)[-1]
    text = " ".join(_render(table, width=100, terminal=False).split())
    assert "hit@5: interval and p disagree." in text
    assert " ".join(INTERVAL_AND_P_NOTE.split()) in text
    # 15 of 30: both say the change is real, so the terminal stays quiet
    agreeing = _hit_comparison(15)
    assert interval_and_p_disagree(agreeing) == []
    assert comparison_tables(agreeing)[-1].caption is None


def test_the_interval_column_names_the_policy_confidence() -> None:
    table = comparison_tables(_hit_comparison(15, confidence=0.9))[-1]
    assert [str(column.header) for column in table.columns][4] == "90% CI"


def test_an_invalid_comparison_counts_nothing_as_unchanged(baseline: Evaluation) -> None:
    from spanchor_core.render.terminal import comparison_verdict

    other_k = evaluate(CORPUS, GOLD, _run({"q1": [SKY], "q2": [GRASS]}), k=(1, 3))
    invalid = compare(baseline, other_k, Policy(max_drop={"recall@1": 0.0}))
    assert invalid.verdict == "INVALID"
    line = comparison_verdict(invalid)
    assert "unchanged" not in line
    assert "2 queries not gated" in line
    assert "the comparison itself is invalid (1 error above); fix it" in line
