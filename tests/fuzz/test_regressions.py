"""The concrete internal-error sites of issue 12, one case each: exit 2, one line on stderr,
no traceback, inputs byte-identical afterwards.

Every case here failed once (issue 12); all are fixed, and a new failure of one is a
regression.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fuzz.mutations import DEEP, HUGE_DIGITS
from tests.fuzz.seeds import seeds
from tests.fuzz.workspace import build, first_candidate_id, run_cli


def _gold_with_question(question_json: str) -> dict[str, bytes]:
    lines = seeds().gold.decode("utf-8").splitlines()
    record = json.loads(lines[1])
    lines[1] = json.dumps(record).replace(json.dumps(record["question"]), question_json, 1)
    return {"gold.jsonl": ("\n".join(lines) + "\n").encode()}


def _gold_0x_line_with(key: str, value: object) -> dict[str, bytes]:
    lines = seeds().gold_0x.decode("utf-8").splitlines()
    record = json.loads(lines[1])
    record[key] = value
    lines[1] = json.dumps(record)
    return {"gold-0x.jsonl": ("\n".join(lines) + "\n").encode()}


def _pyproject(extra: str) -> dict[str, bytes]:
    return {"pyproject.toml": seeds().pyproject + extra.encode()}


def _evaluation_value(old: str, new: str) -> dict[str, bytes]:
    text = seeds().evaluation.decode("utf-8")
    assert old in text
    return {"c.json": text.replace(old, new, 1).encode()}


def _candidates_header(old: str, new: str) -> dict[str, bytes]:
    lines = seeds().candidates.decode("utf-8").splitlines()
    assert old in lines[0]
    lines[0] = lines[0].replace(old, new, 1)
    return {"candidates.jsonl": ("\n".join(lines) + "\n").encode()}


def _first_metric_value(text: str) -> str:
    found = re.search(r'"recall@1": [0-9.eE+-]+', text)
    assert found is not None
    return found.group()


_EVALUATE = ["evaluate", "docs", "gold.jsonl", "runs/baseline.jsonl", "--k", "1,3"]
_ANCHOR_ADD = ["anchor", "add", "q9", "Is it safe?", "docs", "Unplug it", "--gold", "gold.jsonl"]
_REVIEW = ["gold", "review", "candidates.jsonl", "-c", "CANDIDATE", "-q", "Why?", "--approve"]
_COMPARE_RUNS = ["compare", "runs/baseline.jsonl", "runs/candidate.jsonl", "--docs", "docs"]


Case = tuple[Callable[[], dict[str, bytes]], list[str], str]
"""(the files to break, the command, a fragment the one error line must hold)"""

CASES: list[object] = [
    pytest.param(
        lambda: _gold_with_question('"\\ud800 How much?"'), _EVALUATE, "gold.jsonl",
        id="lone surrogate in a gold question: evaluate",
    ),
    pytest.param(
        lambda: _gold_with_question('"\\ud800 How much?"'), ["gate", "--config", "pyproject.toml"],
        "gold.jsonl",
        id="lone surrogate in a gold question: gate",
    ),
    pytest.param(
        lambda: _gold_with_question('"\\ud800 How much?"'), _ANCHOR_ADD, "gold.jsonl",
        id="lone surrogate in a gold question: anchor add",
    ),
    pytest.param(
        lambda: _gold_with_question('"\\ud800 How much?"'),
        ["query", "remove", "q01", "--gold", "gold.jsonl"], "gold.jsonl",
        id="lone surrogate in a gold question: query remove",
    ),
    pytest.param(
        lambda: _gold_0x_line_with("schema_version", []),
        ["query", "remove", "q01", "--gold", "gold-0x.jsonl"], "gold-0x.jsonl:2",
        id="0.x gold line with schema_version []",
    ),
    pytest.param(
        lambda: {"policy.toml": b"x = " + b"[" * DEEP + b"]" * DEEP + b"\n"},
        ["compare", "b.json", "c.json", "--policy", "policy.toml"], "policy.toml",
        id="TOML policy nested 3,000 deep",
    ),
    pytest.param(
        lambda: _pyproject("deep = " + "[" * DEEP + "]" * DEEP + "\n"),
        ["gate", "--config", "pyproject.toml"], "pyproject.toml",
        id="[tool.spanchor] nested 3,000 deep",
    ),
    pytest.param(
        lambda: {"policy.toml": f'[max_drop]\n"recall@3" = {HUGE_DIGITS}\n'.encode()},
        ["compare", "b.json", "c.json", "--policy", "policy.toml"], "policy.toml:2",
        id="4,400-digit TOML integer in a policy",
    ),
    pytest.param(
        lambda: _pyproject(f"max_unmapped_rate = {HUGE_DIGITS}\n".replace("max_", "[x]\nmax_")),
        ["gate", "--config", "pyproject.toml"], "pyproject.toml",
        id="4,400-digit TOML integer in [tool.spanchor]",
    ),
    pytest.param(
        lambda: {"policy.json": json.dumps({"max_drop": {f"recall@{HUGE_DIGITS}": 0.1}}).encode()},
        ["compare", "b.json", "c.json", "--policy", "policy.json"], "policy.json",
        id="recall@<4,400 digits> in a policy",
    ),
    pytest.param(
        lambda: _evaluation_value('"recall@1"', f'"recall@{HUGE_DIGITS}"'),
        ["compare", "b.json", "c.json"], "c.json",
        id="recall@<4,400 digits> in an evaluation",
    ),
    pytest.param(
        dict, [*_COMPARE_RUNS, "--gold", "gold.jsonl", "--seed", "-1"], "seed",
        id="--seed -1",
    ),
    pytest.param(
        dict, ["gate", "--config", "docs"], "docs",
        id="gate --config given a directory",
    ),
    pytest.param(
        dict, ["info", "d" * 300], "d" * 40,
        id="over-long file name in info",
    ),
    pytest.param(
        lambda: _candidates_header('"min_chars": 10', '"min_chars": NaN'), _REVIEW,
        "candidates.jsonl:1",
        id="NaN in a candidates header",
    ),
    pytest.param(
        lambda: _candidates_header('"min_chars": 10', '"min_chars": 1e400'), _REVIEW,
        "candidates.jsonl:1",
        id="1e400 in a candidates header",
    ),
    pytest.param(
        lambda: _evaluation_value(
            _first_metric_value(seeds().evaluation.decode()), '"recall@1": 1e400'
        ),
        ["compare", "b.json", "c.json", "--html", "report.html"], "c.json",
        id="1e400 metric with --html",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("breaker", "argv", "fragment"), CASES)
def test_issue_12_site(
    tmp_path: Path, breaker: Callable[[], dict[str, bytes]], argv: list[str], fragment: str
) -> None:
    root = build(tmp_path / "project", breaker())
    args = [first_candidate_id() if arg == "CANDIDATE" else arg for arg in argv]
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    outcome = run_cli(args, root)
    lines = [line for line in outcome.stderr.splitlines() if line.strip()]
    assert outcome.code == 2, outcome
    assert len(lines) == 1, outcome.stderr
    assert "Traceback" not in outcome.stderr
    assert "internal error" not in outcome.stderr, outcome.stderr
    assert lines[0].startswith("spanchor: error: "), lines[0]
    assert fragment in lines[0], lines[0]
    assert {p: p.read_bytes() for p in before} == before  # nothing was written over an input


VALIDATE_CASES: list[object] = [
    pytest.param(
        lambda: _gold_with_question('"\\ud800 How much?"'), "gold.jsonl",
        id="lone surrogate in a gold question",
    ),
    pytest.param(
        lambda: _gold_0x_line_with("schema_version", []), "gold-0x.jsonl",
        id="0.x gold line with schema_version []",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("breaker", "gold"), VALIDATE_CASES)
def test_validate_lists_an_unreadable_line_as_a_problem_and_goes_on(
    tmp_path: Path, breaker: Callable[[], dict[str, bytes]], gold: str
) -> None:
    root = build(tmp_path / "project", breaker())
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    outcome = run_cli(["validate", "docs", gold], root)
    lines = [line for line in outcome.stderr.splitlines() if line.strip()]
    assert outcome.code == 2, outcome
    assert "Traceback" not in outcome.stderr
    assert "internal error" not in outcome.stderr, outcome.stderr
    assert lines[0].startswith(f"{gold}:2: "), lines[0]
    assert lines[0].endswith("[malformed_line]"), lines[0]
    assert lines[-1].endswith(f"problem(s) in {gold}"), lines[-1]
    assert {p: p.read_bytes() for p in before} == before
