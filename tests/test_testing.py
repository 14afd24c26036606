"""The pytest plugin and assertion helpers of spanchor_core.testing.

Message formats are checked on a three-sentence corpus whose numbers are worked out by hand;
the plugin is checked end to end with ``pytester`` on the bundled quickstart example.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import spanchor_core.testing
from spanchor_core.corpus import Corpus
from spanchor_core.errors import InputError
from spanchor_core.evaluate import Evaluation, evaluate, write_evaluation
from spanchor_core.gold import Anchor, GoldQuery, GoldSet
from spanchor_core.policy import BootstrapSettings, Policy
from spanchor_core.runs import RetrievalRecord, RetrievedResult, Run, RunHeader
from spanchor_core.testing import (
    RetrievalBelowFloor,
    RetrievalRegression,
    assert_evaluation,
    assert_no_regression,
    regression_message,
)

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "examples" / "quickstart"

# 0         1         2         3         4         5         6         7
# 0123456789012345678901234567890123456789012345678901234567890123456789012345
TEXT = "The kettle holds 1.7 litres. It boils in four minutes. Descale it monthly."
HOLDS = (0, 28)  # "The kettle holds 1.7 litres."
BOILS = (29, 54)  # "It boils in four minutes."
DESCALE = (55, 74)  # "Descale it monthly."
QUESTIONS = {"q1": "How much does it hold?", "q2": "How long to boil?", "q3": "How often?"}
SPANS = {"q1": HOLDS, "q2": BOILS, "q3": DESCALE}
NO_STATS = BootstrapSettings(n_resamples=0)
RECALL_5 = Policy(max_drop={"recall@5": 0.0}, bootstrap=NO_STATS)


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus.from_texts({"manual": TEXT})


@pytest.fixture(scope="module")
def gold(corpus: Corpus) -> GoldSet:
    return GoldSet(
        GoldQuery(qid, QUESTIONS[qid], (Anchor.from_span(corpus, "manual", *SPANS[qid]),))
        for qid in QUESTIONS
    )


def _run(answers: dict[str, str]) -> Run:
    records = [
        RetrievalRecord(qid, QUESTIONS[qid], (RetrievedResult(1, text),))
        for qid, text in answers.items()
    ]
    return Run(RunHeader(), records)


def _evaluation(corpus: Corpus, gold: GoldSet, answers: dict[str, str]) -> Evaluation:
    return evaluate(corpus, gold, _run(answers), k=(1, 5))


EVIDENCE = {qid: TEXT[start:end] for qid, (start, end) in SPANS.items()}
# q1 retrieves the wrong sentence (recall 0), q2 a cut-off piece (16 of 25 characters: 0.64).
REGRESSED = {"q1": EVIDENCE["q3"], "q2": "It boils in four", "q3": EVIDENCE["q3"]}


@pytest.fixture(scope="module")
def baseline(corpus: Corpus, gold: GoldSet) -> Evaluation:
    return _evaluation(corpus, gold, EVIDENCE)


@pytest.fixture(scope="module")
def candidate(corpus: Corpus, gold: GoldSet) -> Evaluation:
    return _evaluation(corpus, gold, REGRESSED)


# -- assert_no_regression and its message ------------------------------------------------------


def test_the_message_lists_regressions_worst_first_with_the_evidence_they_lost(
    baseline: Evaluation, candidate: Evaluation, gold: GoldSet, corpus: Corpus
) -> None:
    with pytest.raises(RetrievalRegression) as caught:
        assert_no_regression(baseline, candidate, RECALL_5, gold=gold, corpus=corpus)
    assert str(caught.value) == (
        "spanchor retrieval gate: FAIL — 2 of 3 compared queries regressed, 0 improved, "
        "1 unchanged\n"
        "policy: max drop per query: recall@5 0\n"
        "regressed queries, worst first:\n"
        "  q1 “How much does it hold?”\n"
        "    recall@5  1.000 → 0.000 (-1.000)\n"
        "    lost 28 gold characters from the top 5:\n"
        "      manual[0:28] “The kettle holds 1.7 litres.”\n"
        "  q2 “How long to boil?”\n"
        "    recall@5  1.000 → 0.640 (-0.360)\n"
        "    lost 9 gold characters from the top 5:\n"
        "      manual[45:54] “minutes.”\n"
        "mean recall@5: 1.000 → 0.547 (-0.453)"
    )
    assert isinstance(caught.value, AssertionError)
    assert caught.value.comparison.exit_code == 1
    assert [row.query_id for row in caught.value.comparison.regressions()] == ["q1", "q2"]
    assert caught.value.candidate is candidate


def test_a_passing_candidate_returns_the_comparison(
    baseline: Evaluation, corpus: Corpus, gold: GoldSet
) -> None:
    same = _evaluation(corpus, gold, EVIDENCE)
    comparison = assert_no_regression(baseline, same, RECALL_5)
    assert comparison.passed
    assert comparison.counts["unchanged"] == 3


def test_each_metric_that_fell_gets_a_line_and_the_deepest_k_judges_the_evidence(
    baseline: Evaluation, candidate: Evaluation
) -> None:
    policy = Policy(max_drop={"recall@5": 0.0, "hit@1": 0.0}, bootstrap=NO_STATS)
    with pytest.raises(RetrievalRegression) as caught:
        assert_no_regression(baseline, candidate, policy)
    text = str(caught.value)
    # q1 lost its hit; q2 still overlaps its evidence at rank 1, so only its recall fell.
    assert "  q1\n    hit@1     1.000 → 0.000 (-1.000)\n    recall@5  1.000 → 0.000" in text
    assert "lost 28 gold characters from the top 5:\n      manual[0:28]\n" in text
    assert "  q2\n    recall@5  1.000 → 0.640 (-0.360)\n    lost 9 gold" in text
    assert "(pass corpus= to see the text of the lost evidence)" in text


def test_long_lists_and_long_evidence_are_cut(
    baseline: Evaluation, candidate: Evaluation, corpus: Corpus
) -> None:
    with pytest.raises(RetrievalRegression) as caught:
        assert_no_regression(
            baseline, candidate, RECALL_5, corpus=corpus, limit=1, excerpt_chars=10
        )
    text = str(caught.value)
    assert "manual[0:28] “The kettle…” (10 of 28 characters)" in text
    assert "  … and 1 more regressed queries: q2\n" in text
    assert "q2 “" not in text
    assert "manual[45:54]" not in text


def test_findings_that_are_not_per_query_are_listed(
    corpus: Corpus, gold: GoldSet, baseline: Evaluation
) -> None:
    # Scored at other cutoffs and without q3: settings mismatch and a missing query.
    other = evaluate(corpus, gold, _run({"q1": EVIDENCE["q1"], "q2": EVIDENCE["q2"]}), k=(5,))
    short = Evaluation(
        queries={qid: q for qid, q in other.queries.items() if qid != "q3"},
        settings=other.settings,
        metric_names=other.metric_names,
    )
    policy = Policy(max_drop={"recall@5": 0.0}, min_queries=3, bootstrap=NO_STATS)
    with pytest.raises(RetrievalRegression) as caught:
        assert_no_regression(baseline, short, policy)
    lines = str(caught.value).splitlines()
    assert lines[0] == (
        "spanchor retrieval gate: INVALID — 0 of 2 compared queries regressed, 0 improved, "
        "2 unchanged"
    )
    assert "regressed queries, worst first:" not in lines
    errors = lines[lines.index("errors:") + 1 :]
    assert errors[0].startswith("  settings_mismatch: the evaluations differ in K: ")
    assert errors[1] == "  missing_queries: 1 query is only in the baseline: q3"
    assert errors[2] == (
        "  too_few_queries: 2 queries are in both evaluations; the policy needs at least 3"
    )


def test_an_unmapped_rate_above_the_limit_fails_even_without_regressions(
    corpus: Corpus, gold: GoldSet, baseline: Evaluation
) -> None:
    wobbly = evaluate(
        corpus,
        gold,
        Run(
            RunHeader(),
            [
                RetrievalRecord(
                    qid, QUESTIONS[qid], (RetrievedResult(1, text), RetrievedResult(2, "nowhere"))
                )
                for qid, text in EVIDENCE.items()
            ],
        ),
        k=(1, 5),
    )
    assert (wobbly.mapping.unmapped, wobbly.mapping.total) == (3, 6)  # "nowhere" maps nowhere
    assert assert_no_regression(baseline, wobbly, RECALL_5).passed
    with pytest.raises(RetrievalRegression) as caught:
        assert_no_regression(baseline, wobbly, RECALL_5, max_unmapped_rate=0.25)
    text = str(caught.value)
    assert text.startswith("spanchor retrieval gate: UNTRUSTED — 0 of 3 compared queries regressed")
    assert text.endswith(
        "errors:\n"
        "  unmapped_rate: 50.0% of the candidate's results (3 of 6) could not be mapped onto "
        "the corpus; at most 25.0% is allowed\n"
        "mean recall@5: 1.000 → 1.000 (+0.000)"
    )


def test_query_ids_and_evidence_cannot_write_control_sequences_into_the_log() -> None:
    corpus = Corpus.from_texts({"doc": "safe \x1b[2J text here"})
    anchor = Anchor.from_span(corpus, "doc", 0, 19)
    gold = GoldSet([GoldQuery("q\x1b[31m", "what?\n\tnow", (anchor,))])
    record = RetrievalRecord("q\x1b[31m", "what?", (RetrievedResult(1, "safe \x1b[2J text here"),))
    before = evaluate(corpus, gold, Run(RunHeader(), [record]), k=(5,))
    after = evaluate(corpus, gold, Run(RunHeader(), []), k=(5,))
    with pytest.raises(RetrievalRegression) as caught:
        assert_no_regression(before, after, RECALL_5, gold=gold, corpus=corpus)
    text = str(caught.value)
    assert "\x1b" not in text
    assert "  q\\x1b[31m “what? now”\n" in text
    assert "lost 19 gold characters from the top 5 (the candidate run has no record" in text
    assert "doc[0:19] “safe \\x1b[2J text here”" in text


def test_files_and_runs_are_accepted_as_sides(
    tmp_path: Path, baseline: Evaluation, corpus: Corpus, gold: GoldSet
) -> None:
    write_evaluation(baseline, tmp_path / "baseline.json")
    with pytest.raises(RetrievalRegression, match="q1"):
        assert_no_regression(
            tmp_path / "baseline.json", _run(REGRESSED), RECALL_5, corpus=corpus, gold=gold
        )
    with pytest.raises(InputError, match="needs the documents and the gold set"):
        assert_no_regression(str(tmp_path / "baseline.json"), _run(REGRESSED), RECALL_5)


def test_the_quickstart_candidate_regresses_with_its_evidence_named() -> None:
    with pytest.raises(RetrievalRegression) as caught:
        assert_no_regression(
            QUICKSTART / "runs" / "baseline.jsonl",
            QUICKSTART / "runs" / "candidate.jsonl",
            QUICKSTART / "spanchor.toml",
            gold=QUICKSTART / "gold.jsonl",
            corpus=QUICKSTART / "docs",
        )
    text = str(caught.value)
    assert "14 of 57 compared queries regressed" in text
    assert (
        "  q01 “How much water can the kettle hold at most?”\n"
        "    hit@5     1.000 → 0.000 (-1.000)\n"
        "    recall@5  1.000 → 0.000 (-1.000)\n"
        "    lost 25 gold characters from the top 5:\n"
        "      kettle-manual[151:176] “the MAX mark (1.7 litres)”\n"
    ) in text


def test_the_message_can_be_rendered_for_a_passing_comparison(
    baseline: Evaluation, corpus: Corpus, gold: GoldSet
) -> None:
    again = _evaluation(corpus, gold, EVIDENCE)  # the same answers, recorded once more
    comparison = assert_no_regression(baseline, again, RECALL_5)
    text = regression_message(comparison, baseline, again)
    assert text.splitlines()[0].startswith("spanchor retrieval gate: PASS — 0 of 3")
    with pytest.raises(InputError, match="limit must be a whole number"):
        regression_message(comparison, baseline, baseline, limit=0)


# -- assert_evaluation --------------------------------------------------------------------------


def test_floors_list_the_queries_below_them(candidate: Evaluation, gold: GoldSet) -> None:
    assert assert_evaluation(candidate, min_mean={"recall@5": 0.5}) is candidate
    with pytest.raises(RetrievalBelowFloor) as caught:
        assert_evaluation(
            candidate, min_mean={"recall@5": 0.9, "recall@1": 0.5}, gold=gold, limit=1
        )
    assert str(caught.value) == (
        "retrieval below its floor: 1 of 2 checks failed\n"
        "mean recall@5 = 0.547 over 3 queries, below the floor 0.9; "
        "2 queries score below it, lowest first:\n"
        "  q1  0.000 “How much does it hold?”\n"
        "  … and 1 more: q2"
    )
    assert caught.value.evaluation is candidate
    assert len(caught.value.failures) == 1


def test_floors_name_queries_the_run_missed(corpus: Corpus, gold: GoldSet) -> None:
    partial = _evaluation(corpus, gold, {"q1": EVIDENCE["q1"]})
    with pytest.raises(RetrievalBelowFloor) as caught:
        assert_evaluation(partial, min_mean={"hit@1": 1.0})
    assert str(caught.value).endswith(
        "note: 2 gold queries have no record in the run and score 0: q2, q3"
    )


def test_a_floor_on_an_unknown_metric_or_no_floor_is_a_usage_error(candidate: Evaluation) -> None:
    with pytest.raises(InputError, match=r"no metric 'recall@50'.*known: recall@1"):
        assert_evaluation(candidate, min_mean={"recall@50": 0.5})
    with pytest.raises(InputError, match="nothing to assert"):
        assert_evaluation(candidate)
    with pytest.raises(InputError, match="max_unmapped_rate must be a number from 0 to 1"):
        assert_evaluation(candidate, max_unmapped_rate=5)


# -- packaging ----------------------------------------------------------------------------------


def test_importing_the_core_does_not_import_pytest() -> None:
    code = (
        "import sys, spanchor_core, spanchor_core.pipeline, spanchor_core.render\n"
        "print(any(m == 'pytest' or m.startswith('_pytest') for m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout.strip()
    assert out == "False"


def test_the_entry_point_module_holds_the_hook_and_every_fixture() -> None:
    # pytest registers the module the entry point names and looks for hooks and fixtures there.
    assert callable(spanchor_core.testing.pytest_addoption)
    fixtures = [name for name in dir(spanchor_core.testing) if name.startswith("spanchor_")]
    assert sorted(fixtures) == [
        "spanchor_assert_no_regression",
        "spanchor_baseline",
        "spanchor_config",
        "spanchor_corpus",
        "spanchor_evaluate",
        "spanchor_gold",
        "spanchor_locator",
        "spanchor_policy",
    ]


def test_a_side_that_is_neither_an_object_nor_a_path_is_an_input_error(
    baseline: Evaluation,
) -> None:
    with pytest.raises(InputError, match="candidate must be an object of its type or a path"):
        assert_no_regression(baseline, 42)  # type: ignore[arg-type]


def test_pyproject_declares_the_pytest11_entry_point() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    entry_points = data["project"].get("entry-points", {})
    assert entry_points.get("pytest11") == {"spanchor": "spanchor_core.testing"}


# -- the plugin, end to end -----------------------------------------------------------------------

USER_TESTS = """
from spanchor_core.testing import assert_no_regression


def test_candidate(spanchor_evaluate, spanchor_baseline, spanchor_policy, spanchor_gold,
                   spanchor_corpus):
    candidate = spanchor_evaluate("runs/candidate.jsonl")
    assert_no_regression(spanchor_baseline, candidate, spanchor_policy,
                         gold=spanchor_gold, corpus=spanchor_corpus)


def test_candidate_overlap(spanchor_assert_no_regression):
    comparison = spanchor_assert_no_regression("runs/candidate-overlap.jsonl")
    assert comparison.counts["improved"] == 0
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester directory holding a copy of the quickstart example, the plugin loaded.

    Inner runs (:func:`_pytest_run`) disable plugin autoloading and register the plugin
    module themselves, so they mean the same whether or not the entry point is installed.
    """
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    for name in ("docs", "runs"):
        shutil.copytree(QUICKSTART / name, pytester.path / name)
    shutil.copy(QUICKSTART / "gold.jsonl", pytester.path / "gold.jsonl")
    # under another name, so that the plugin does not find it unasked (see the discovery test)
    shutil.copy(QUICKSTART / "spanchor.toml", pytester.path / "settings.toml")
    return pytester


def _pytest_run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    """``pytest -p spanchor_core.testing ARGS``, in process (registering the imported module
    avoids the warning that an already imported plugin cannot be assertion-rewritten)."""
    return project.runpytest(*args, plugins=[spanchor_core.testing])


def _check_regression_output(result: pytest.RunResult) -> None:
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    expected = [
        "RetrievalRegression: spanchor retrieval gate: FAIL — 14 of 57 compared queries",
        "regressed queries, worst first:",
        "q01 “How much water can the kettle hold at most?”",
        "kettle-manual[151:176] “the MAX mark (1.7 litres)”",
        "q02 “What is the minimum amount of water to boil?”",
        "kettle-manual[87:146] “The water level must stay between the MIN mark (0.5 litres)”",
        "FAILED test_user.py::test_candidate",
    ]
    positions = [out.find(text) for text in expected]
    assert -1 not in positions, [text for text in expected if text not in out]
    assert positions == sorted(positions)
    assert "test_candidate_overlap FAILED" not in out


def test_fixtures_configured_by_ini_keys(project: pytest.Pytester) -> None:
    project.makeini(
        "[pytest]\n"
        "spanchor_docs = docs\n"
        "spanchor_gold = gold.jsonl\n"
        "spanchor_baseline = runs/baseline.jsonl\n"
        "spanchor_policy = settings.toml\n"
    )
    project.makepyfile(test_user=USER_TESTS)
    _check_regression_output(_pytest_run(project))


def test_fixtures_configured_by_the_pyproject_table(project: pytest.Pytester) -> None:
    table = (project.path / "settings.toml").read_text(encoding="utf-8")
    # A table written for pytest alone: no candidate (spanchor gate's other run).
    table = table.replace('candidate = "runs/candidate.jsonl"\n', "")
    project.makepyprojecttoml(table)
    project.makepyfile(test_user=USER_TESTS)
    _check_regression_output(_pytest_run(project))


def test_a_spanchor_toml_is_found_as_the_gate_finds_it(project: pytest.Pytester) -> None:
    """No option, no ini key: spanchor.toml in the start directory (or a parent) is read,
    and it wins over a pyproject.toml table there, as for ``spanchor gate``."""
    (project.path / "settings.toml").rename(project.path / "spanchor.toml")
    project.makepyprojecttoml('[tool.spanchor]\ngold = "no-such-gold.jsonl"\n')
    project.makepyfile(test_user=USER_TESTS)
    _check_regression_output(_pytest_run(project))
    inner = project.mkdir("sub")
    (inner / "test_sub.py").write_text(
        "def test_gold(spanchor_gold, spanchor_config):\n"
        "    assert len(spanchor_gold) == 57\n"
        "    assert spanchor_config.config_file.name == 'spanchor.toml'\n",
        encoding="utf-8",
    )
    os.chdir(inner)  # pytest started in a subdirectory: the parent's spanchor.toml is found
    project.runpytest_inprocess("test_sub.py", plugins=[spanchor_core.testing]).assert_outcomes(
        passed=1
    )


def test_the_config_option_names_another_toml_file_and_options_win(
    project: pytest.Pytester,
) -> None:
    project.makeini("[pytest]\nspanchor_gold = no-such-gold.jsonl\n")
    project.makepyfile(test_user=USER_TESTS)
    result = _pytest_run(
        project, "--spanchor-config", "settings.toml", "--spanchor-gold", "gold.jsonl"
    )
    _check_regression_output(result)


def test_a_missing_setting_errors_the_test_with_the_keys_to_set(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_user="""
        def test_needs_gold(spanchor_gold):
            pass

        def test_unrelated():
            pass
        """
    )
    result = _pytest_run(project)
    result.assert_outcomes(passed=1, errors=1)
    out = result.stdout.str()
    assert "ERROR at setup of test_needs_gold" in out
    assert (
        "\nspanchor: the spanchor_gold fixture needs the gold set (JSONL), and none is "
        "configured. Set the ini key `spanchor_gold = PATH` (in [pytest] or "
        "[tool.pytest.ini_options]), pass `--spanchor-gold PATH`, or set "
        '`gold = "PATH"` in [tool.spanchor] of spanchor.toml or pyproject.toml (or the file '
        "named by --spanchor-config).\n"
    ) in out
    assert "Traceback" not in result.stdout.str()


def test_a_broken_setting_errors_the_test_naming_the_file(project: pytest.Pytester) -> None:
    (project.path / "broken.jsonl").write_text('{"query_id": \n', encoding="utf-8")
    project.makeini("[pytest]\nspanchor_gold = broken.jsonl\n")
    project.makepyfile(test_user="def test_needs_gold(spanchor_gold):\n    pass\n")
    result = _pytest_run(project)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*spanchor: cannot load the gold set: *broken.jsonl:1: *"])


def test_the_locator_is_built_once_per_session(project: pytest.Pytester) -> None:
    project.makepyprojecttoml((project.path / "settings.toml").read_text(encoding="utf-8"))
    project.makeconftest(
        """
        import pytest
        import spanchor_core.locate as locate

        BUILT = []

        @pytest.fixture(scope="session", autouse=True)
        def count_locators():
            # the fixture imports Locator from spanchor_core.locate when it runs
            original = locate.Locator

            class Counting(original):
                def __init__(self, *args, **kwargs):
                    BUILT.append(1)
                    super().__init__(*args, **kwargs)

            locate.Locator = Counting
            yield
            locate.Locator = original
        """
    )
    project.makepyfile(
        test_user="""
        import conftest

        def test_one(spanchor_baseline, spanchor_evaluate):
            spanchor_evaluate("runs/candidate.jsonl")

        def test_two(spanchor_evaluate, spanchor_assert_no_regression):
            spanchor_assert_no_regression(spanchor_evaluate("runs/candidate-overlap.jsonl"))

        def test_count():
            assert conftest.BUILT == [1]
        """
    )
    _pytest_run(project).assert_outcomes(passed=3)


def test_the_plugin_registers_its_options(project: pytest.Pytester) -> None:
    result = _pytest_run(project, "--help")
    result.stdout.fnmatch_lines(
        ["*spanchor retrieval regression tests*", "*--spanchor-docs=PATH*", "*spanchor_gold*"]
    )


def test_evaluation_files_alone_are_enough_for_a_comparison(
    project: pytest.Pytester, baseline: Evaluation, candidate: Evaluation
) -> None:
    write_evaluation(baseline, project.path / "baseline.json")
    write_evaluation(candidate, project.path / "candidate.json")
    project.makeini("[pytest]\nspanchor_baseline = baseline.json\n")
    project.makepyfile(
        test_user="""
        def test_file(spanchor_assert_no_regression):
            spanchor_assert_no_regression("candidate.json")

        def test_run(spanchor_assert_no_regression):
            spanchor_assert_no_regression("runs/candidate.jsonl")
        """
    )
    result = _pytest_run(project)
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    # Without documents the lost evidence is located but not quoted.
    assert "lost 28 gold characters from the top 5:\n" in out
    assert "manual[0:28]\n" in out
    assert "(pass corpus= to see the text of the lost evidence)" in out
    assert "spanchor: a run as the candidate needs the documents directory" in out


def test_an_unparsable_tool_spanchor_table_errors_the_test(project: pytest.Pytester) -> None:
    # Not pyproject.toml: pytest itself reads that one and would fail before the plugin.
    bad = project.path / "bad.toml"
    bad.write_text('[tool.spanchor]\ngold = "gold.jsonl"\nseed = ' + "1" * 4_400, encoding="utf-8")
    project.makepyfile(test_user="def test_needs_gold(spanchor_gold):\n    pass\n")
    result = _pytest_run(project, "--spanchor-config", "bad.toml")
    result.assert_outcomes(errors=1)
    assert "spanchor: bad configuration: " in result.stdout.str()
    assert "not valid TOML: an integer of more than" in result.stdout.str()
    assert "Traceback" not in result.stdout.str()


def test_a_bad_tool_spanchor_table_is_reported_once_per_test(project: pytest.Pytester) -> None:
    project.makepyprojecttoml('[tool.spanchor]\ngold = "gold.jsonl"\nk = "five"\n')
    project.makepyfile(test_user="def test_needs_gold(spanchor_gold):\n    pass\n")
    result = _pytest_run(project)
    result.assert_outcomes(errors=1)
    assert "spanchor: bad configuration: " in result.stdout.str()
    assert "pyproject.toml: [tool.spanchor] k" in result.stdout.str()
