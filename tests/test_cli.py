"""The CLI through its entry point: exit codes, one-line errors, results read back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from spanchor_core import read_comparison, read_evaluation
from spanchor_core.cli import main

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart"
DOCS = str(QUICKSTART / "docs")
GOLD = str(QUICKSTART / "gold.jsonl")
BASE = str(QUICKSTART / "runs" / "baseline.jsonl")
CAND = str(QUICKSTART / "runs" / "candidate.jsonl")
GOOD = str(QUICKSTART / "runs" / "candidate-overlap.jsonl")


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_info_lists_documents(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "info", DOCS)
    assert code == 0
    assert "kettle-manual" in out
    assert "10 documents" in out


def test_evaluate_writes_an_evaluation_that_the_library_reads(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "eval.json"
    code, out, _ = run_cli(capsys, "evaluate", DOCS, GOLD, CAND, "--k", "1,5", "-o", str(target))
    assert code == 0
    evaluation = read_evaluation(target)
    assert evaluation.settings.k == (1, 5)
    assert len(evaluation) == 57
    assert f"{evaluation.mean('recall@5'):.3f}" in out


def test_evaluate_exit_3_when_unmapped_rate_exceeded(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = tmp_path / "run.jsonl"
    lines = Path(CAND).read_text(encoding="utf-8").splitlines()
    # keep the header, replace every result text with text found in no document
    header, records = lines[0], [json.loads(line) for line in lines[1:]]
    for record in records:
        for result in record["results"]:
            result["text"] = "zzz qqq text that appears in none of the documents at all " * 2
    run.write_text("\n".join([header, *(json.dumps(r) for r in records)]) + "\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "evaluate", DOCS, GOLD, str(run), "--max-unmapped-rate", "0.5")
    assert code == 3
    assert "unmapped rate 100.0%" in err


@pytest.mark.parametrize("differ", [True, False])
def test_evaluate_warns_of_askings_that_differ(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, differ: bool
) -> None:
    """A run appended to twice (every question asked twice, without trace ids): scored as the
    mean of the askings, which evaluate says when the askings differ (and only then)."""
    lines = Path(CAND).read_text(encoding="utf-8").splitlines()
    header, records = lines[0], [json.loads(line) for line in lines[1:]]
    again = [dict(record) for record in records]
    if differ:
        for record in again[:3]:
            record["results"] = record["results"][::-1][:1]
    run = tmp_path / "run.jsonl"
    text = "\n".join([header, *(json.dumps(r) for r in records + again)]) + "\n"
    run.write_text(text, encoding="utf-8")
    code, _, err = run_cli(capsys, "evaluate", DOCS, GOLD, str(run), "-q")
    assert code == 0
    if differ:
        assert "warning: 3 queries were asked more than once and scored differently (" in err
    else:
        assert "asked more than once" not in err


@pytest.mark.parametrize("quiet", [[], ["-q"]])
def test_evaluate_exit_3_on_an_incomplete_run_says_why(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, quiet: list[str]
) -> None:
    run = tmp_path / "run.jsonl"
    lines = Path(CAND).read_text(encoding="utf-8").splitlines()
    run.write_text("\n".join(lines[:11]) + "\n", encoding="utf-8")  # 10 of 57 queries
    code, _, err = run_cli(capsys, "evaluate", DOCS, GOLD, str(run), *quiet)
    assert code == 3
    assert "untrusted: the run is incomplete: 47 of 57 gold queries have no record (" in err
    assert "scored 0" in err


def test_compare_runs_fails_on_regression_and_writes_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "cmp.json"
    code, out, _ = run_cli(
        capsys, "compare", BASE, CAND, "--docs", DOCS, "--gold", GOLD, "-o", str(target)
    )
    assert code == 1
    comparison = read_comparison(target)
    assert not comparison.passed
    assert comparison.counts["regressed"] > 0
    assert "FAIL" in out


def test_compare_accepts_evaluation_files_and_0x_flags(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    base, good = tmp_path / "b.json", tmp_path / "g.json"
    assert run_cli(capsys, "evaluate", DOCS, GOLD, BASE, "--k", "5", "-o", str(base))[0] == 0
    assert run_cli(capsys, "evaluate", DOCS, GOLD, GOOD, "--k", "5", "-o", str(good))[0] == 0
    code, out, _ = run_cli(capsys, "compare", str(base), str(good), "--max-recall-drop", "0.05")
    assert code == 0
    assert "PASS" in out


def test_gate_from_config_fails_then_passes(capsys: pytest.CaptureFixture[str]) -> None:
    config = str(QUICKSTART / "spanchor.toml")
    assert run_cli(capsys, "gate", "--config", config)[0] == 1
    assert run_cli(capsys, "gate", "--config", config, "--candidate", GOOD)[0] == 0


def test_gate_reads_pyproject_in_the_working_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(QUICKSTART, tmp_path / "qs")
    text = (tmp_path / "qs" / "spanchor.toml").read_text(encoding="utf-8")
    (tmp_path / "qs" / "pyproject.toml").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path / "qs")
    assert run_cli(capsys, "gate", "-q", "--json", "out.json")[0] == 1
    assert not read_comparison(tmp_path / "qs" / "out.json").passed


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["info", "nope"], "nope: corpus directory does not exist"),
        (["evaluate", DOCS, "nope.jsonl", CAND], "nope.jsonl"),
        (["evaluate", DOCS, GOLD, CAND, "--k", "0"], "K values must be positive"),
        (["compare", BASE, CAND], "needs the documents and the gold set"),
        (["evaluate", DOCS, GOLD, CAND, "--max-unmapped-rate", "7"], "between 0 and 1"),
        (["bogus"], "No such command"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    code, _, err = run_cli(capsys, *argv)
    assert code == 2
    assert fragment in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("flag", "value", "fragment"),
    [
        ("--group", "bogus", "unknown group rule 'bogus'"),
        ("--max-unmapped-rate", "7", "between 0 and 1"),
    ],
)
@pytest.mark.parametrize("with_file", [True, False])
def test_a_bad_gate_flag_is_blamed_on_the_flag_not_on_the_settings(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    flag: str,
    value: str,
    fragment: str,
    with_file: bool,
) -> None:
    # with a settings file, the error named the file ("fix group in [tool.spanchor] of this
    # file"); without one, it said no settings were found and asked for the --baseline and
    # --candidate that were given
    monkeypatch.chdir(tmp_path)
    sides = ["--docs", DOCS, "--gold", GOLD, "--baseline", BASE, "--candidate", CAND]
    config = ["--config", str(QUICKSTART / "spanchor.toml")] if with_file else sides
    code, out, err = run_cli(capsys, "gate", *config, flag, value)
    assert code == 2
    assert fragment in err
    assert flag in err
    assert "of this file" not in err
    assert "no spanchor settings found" not in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err + out


def test_run_for_another_gold_set_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = Path(CAND).read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["gold_sha256"] = "0" * 64
    run = tmp_path / "run.jsonl"
    run.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "evaluate", DOCS, GOLD, str(run))
    assert code == 2
    assert f"{run}:1: the run was recorded for another version of the gold set" in err
    assert run_cli(capsys, "evaluate", DOCS, GOLD, str(run), "--allow-mismatch")[0] == 0


def test_demo_script_runs(capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("demo", QUICKSTART / "demo.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main() == 0
    assert "exit code 1: as expected" in capsys.readouterr().out


def test_comparing_evaluations_of_different_k_is_bad_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    base, cand = tmp_path / "b.json", tmp_path / "c.json"
    assert run_cli(capsys, "evaluate", DOCS, GOLD, BASE, "--k", "5", "-o", str(base))[0] == 0
    assert run_cli(capsys, "evaluate", DOCS, GOLD, GOOD, "--k", "5,10", "-o", str(cand))[0] == 0
    code, out, _ = run_cli(capsys, "compare", str(base), str(cand), "--max-recall-drop", "0.1")
    assert code == 2
    assert "INVALID" in out  # the verdict word is always the exit code's


def test_policy_metric_absent_from_evaluations_is_bad_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    base = tmp_path / "b.json"
    assert run_cli(capsys, "evaluate", DOCS, GOLD, BASE, "--k", "3", "-o", str(base))[0] == 0
    policy = tmp_path / "policy.json"
    policy.write_text('{"recall@5": 0.05}', encoding="utf-8")
    code, out, _ = run_cli(capsys, "compare", str(base), str(base), "--policy", str(policy))
    assert code == 2
    assert "recall@5" in out


@pytest.mark.parametrize(
    "command",
    [
        ["info"],
        ["validate"],
        ["evaluate"],
        ["compare"],
        ["gate"],
        ["locate"],
        ["check-corpus"],
        ["anchor", "add"],
        ["gold", "extract"],
        ["gold", "review"],
        ["gold", "promote"],
        ["import", "squad"],
        ["import", "legacy"],
    ],
)
def test_every_command_has_help_with_an_example(command: list[str]) -> None:
    from typer.testing import CliRunner

    from spanchor_core.cli import app

    result = CliRunner().invoke(app, [*command, "--help"])
    assert result.exit_code == 0
    assert "Example" in result.output


def test_0x_gold_set_hash_options(capsys: pytest.CaptureFixture[str]) -> None:
    from spanchor_core import read_gold

    gold = read_gold(GOLD)
    args = ["evaluate", DOCS, GOLD, BASE, "--k", "5", "-q"]
    assert run_cli(capsys, *args, "--gold-set-hash", gold.legacy_sha256)[0] == 0
    assert run_cli(capsys, *args, "--gold-set-hash", gold.sha256)[0] == 0
    code, _, err = run_cli(capsys, *args, "--gold-set-hash", "sha256:" + "0" * 64)
    assert code == 0
    assert "warning: the gold set's hash is" in err
    fail = [*args, "--gold-set-hash", "x", "--corpus-mismatch-policy", "fail"]
    assert run_cli(capsys, *fail)[0] == 2
    ignore = [*args, "--gold-set-hash", "x", "--corpus-mismatch-policy", "ignore"]
    assert run_cli(capsys, *ignore) == (0, "", "")


def test_gate_help_shows_the_config_table_name() -> None:
    from typer.testing import CliRunner

    from spanchor_core.cli import app

    result = CliRunner().invoke(app, ["gate", "--help"], terminal_width=200)
    assert "[tool.spanchor] of pyproject.toml" in result.output


def test_gate_writes_every_report(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = str(QUICKSTART / "spanchor.toml")
    out = {name: tmp_path / name for name in ("c.json", "r.md", "j.xml", "h.html")}
    argv = ["gate", "--config", config, "-q", "--json", str(out["c.json"])]
    argv += ["-r", str(out["r.md"]), "--junit", str(out["j.xml"]), "--html", str(out["h.html"])]
    assert run_cli(capsys, *argv)[0] == 1
    comparison = read_comparison(out["c.json"])
    regressed = [row.query_id for row in comparison.queries if row.regressed]
    html = out["h.html"].read_text(encoding="utf-8")
    markdown = out["r.md"].read_text(encoding="utf-8")
    junit = out["j.xml"].read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert "<mark" in html
    assert markdown.splitlines()[0].startswith("## ❌ spanchor: FAIL")
    assert f'failures="{len(regressed)}"' in junit
    for qid in regressed:
        assert qid in html
        assert qid in markdown


@pytest.mark.parametrize(
    ("args", "debug"),
    [
        (["--debug", "info", DOCS], True),
        (["--help", "--debug"], True),
        (["info", DOCS], False),
        (["info", "--debug"], False),  # not a root option there: click says so
        (["locate", "--debug", DOCS], False),
        ([], False),
    ],
)
def test_debug_is_read_from_the_root_options(args: list[str], debug: bool) -> None:
    from spanchor_core.cli.errors import wants_debug

    assert wants_debug(args) is debug


def test_no_global_state_between_calls(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = str(tmp_path / "nope")
    with pytest.raises(Exception, match="does not exist"):
        main(["--debug", "info", missing])
    assert main(["info", missing]) == 2  # the earlier --debug does not stick
    assert "spanchor: error:" in capsys.readouterr().err


def test_compare_without_a_policy_says_which_it_applied(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run_cli(capsys, "compare", BASE, CAND, "--docs", DOCS, "--gold", GOLD)
    assert code == 1
    assert out.splitlines()[0] == "no policy given: recall@10 may not drop (default policy)"
    policy = tmp_path / "policy.json"
    policy.write_text('{"max_drop": {"recall@5": 0.1}}', encoding="utf-8")
    argv = ("compare", BASE, CAND, "--docs", DOCS, "--gold", GOLD, "--policy", str(policy))
    assert "no policy given" not in run_cli(capsys, *argv)[1]
    code, out, _ = run_cli(capsys, "compare", BASE, CAND, "--docs", DOCS, "--gold", GOLD, "-q")
    assert out.splitlines()[0] == "no policy given: recall@10 may not drop (default policy)"


def test_gate_without_a_policy_says_which_it_applied(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ("gate", "--docs", DOCS, "--gold", GOLD, "--baseline", BASE, "--candidate", CAND)
    out = run_cli(capsys, *argv)[1]
    assert out.splitlines()[0] == "no policy given: recall@10 may not drop (default policy)"
    assert (
        "no policy given"
        not in run_cli(capsys, "gate", "--config", str(QUICKSTART / "spanchor.toml"))[1]
    )
