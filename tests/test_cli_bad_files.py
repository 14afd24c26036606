"""Malformed evaluation, comparison, policy and run files: exit 2, one line, no traceback."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

from spanchor_core import read_evaluation
from spanchor_core.cli import main

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart"
DOCS = str(QUICKSTART / "docs")
GOLD = str(QUICKSTART / "gold.jsonl")
BASE = str(QUICKSTART / "runs" / "baseline.jsonl")


@pytest.fixture
def evaluation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    target = tmp_path / "eval.json"
    assert main(["evaluate", DOCS, GOLD, BASE, "--k", "5", "-q", "-o", str(target)]) == 0
    capsys.readouterr()
    return target


def _one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], *fragments: str) -> None:
    code = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert "internal error" not in err
    for fragment in fragments:
        assert fragment in lines[0]


def _edit(path: Path, change: str) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    if change == "missing metric":
        del data["queries"][0]["metrics"]["recall@5"]
    elif change == "duplicate query":
        data["queries"].append(data["queries"][0])
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ("missing metric", "lacks recall@5"),
        ("duplicate query", "appears twice"),
    ],
)
def test_inconsistent_evaluation_files(
    evaluation: Path, capsys: pytest.CaptureFixture[str], change: str, fragment: str
) -> None:
    _edit(evaluation, change)
    _one_line_exit_2(
        capsys, ["compare", str(evaluation), str(evaluation)], str(evaluation), fragment
    )


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"kind": "spanchor.evaluation", "x": ' + "9" * 5000 + "}", "not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "JSON"),
        ('{"kind": "spanchor.evaluation", "schema_version": NaN}', "NaN"),
        ('{"kind": "spanchor.evaluation", "kind": "x"}', "appears twice"),
        ('{"per_query_metrics": {}, "schema_version": "0.2.0", "config": {"k": null}}', "0.x"),
        ('{"per_query_metrics": {}, "schema_version": "0.2.0", "config": {"k": 5.5}}', "0.x"),
    ],
)
def test_malformed_evaluation_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, fragment: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(text, encoding="utf-8")
    _one_line_exit_2(capsys, ["compare", str(bad), str(bad)], str(bad), fragment)


@pytest.mark.parametrize(
    "text",
    ['{"recall@5": ' + "1" * 5000 + "}", "[" * 100_000 + "]" * 100_000],
)
def test_malformed_policy_json(
    evaluation: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text(text, encoding="utf-8")
    argv = ["compare", str(evaluation), str(evaluation), "--policy", str(policy)]
    _one_line_exit_2(capsys, argv, str(policy))


@pytest.mark.parametrize(
    "line",
    ['{"query_id": "q01", "query": "x", "results": [], "n": ' + "7" * 5000 + "}", "[" * 100_000],
)
def test_malformed_run_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str) -> None:
    run = tmp_path / "run.jsonl"
    lines = Path(BASE).read_text(encoding="utf-8").splitlines()
    run.write_text("\n".join([lines[0], line, *lines[1:]]) + "\n", encoding="utf-8")
    _one_line_exit_2(capsys, ["evaluate", DOCS, GOLD, str(run)], f"{run}:2")


def test_gold_line_nested_too_deeply(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = tmp_path / "gold.jsonl"
    head = Path(GOLD).read_text(encoding="utf-8").splitlines()[0]
    gold.write_text(head + "\n" + "[" * 100_000 + "\n", encoding="utf-8")
    _one_line_exit_2(capsys, ["query", "remove", "q1", "--gold", str(gold)], f"{gold}:2")
    # validate reads on past a malformed line and lists it with the other problems
    assert main(["validate", DOCS, str(gold)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"{gold}:2: ")
    assert err[0].endswith("[malformed_line]")
    assert "Traceback" not in "\n".join(err)


def test_query_id_with_rich_markup_is_printed_literally(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(QUICKSTART / "docs", tmp_path / "docs")
    gold = tmp_path / "gold.jsonl"
    args = ["anchor", "add", "[/bad]", "q?", str(tmp_path / "docs"), "two-year warranty"]
    assert main([*args, "--gold", str(gold)]) == 0
    page = tmp_path / "docs" / "warranty.md"
    page.write_text("New intro.\n" + page.read_text(encoding="utf-8"), encoding="utf-8")
    capsys.readouterr()
    assert main(["check-corpus", str(tmp_path / "docs"), str(gold)]) == 2
    assert "[/bad]" in capsys.readouterr().out


def test_written_files_get_ordinary_permissions(evaluation: Path) -> None:
    mode = stat.S_IMODE(evaluation.stat().st_mode)
    assert mode & 0o044 == 0o044, oct(mode)  # readable by group and others, like open() makes
    evaluation.chmod(0o600)
    main(["evaluate", DOCS, GOLD, BASE, "--k", "5", "-q", "-o", str(evaluation)])
    assert stat.S_IMODE(evaluation.stat().st_mode) == 0o600  # a rewrite keeps the mode
    assert len(read_evaluation(evaluation)) == 57
