"""A small project on disk (documents, gold set, runs, evaluations, policies, config, candidates,
SQuAD file) and a way to run the CLI on it and see what reached stderr."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from spanchor_core.cli import main
from tests.fuzz.checks import Known
from tests.fuzz.seeds import TEXTS, seeds

FILES = {
    "gold.jsonl": "gold",
    "gold-0x.jsonl": "gold_0x",
    "runs/baseline.jsonl": "run",
    "runs/candidate.jsonl": "run_again",
    "runs/results-0x.json": "run_0x_object",
    "b.json": "evaluation",
    "c.json": "evaluation_again",
    "policy.json": "policy_json",
    "policy.toml": "policy_toml",
    "pyproject.toml": "pyproject",
    "candidates.jsonl": "candidates",
    "squad.json": "squad",
}


def build(root: Path, replace: dict[str, bytes] | None = None) -> Path:
    """Write the project under ``root`` (emptied first); ``replace`` swaps files' bytes."""
    if root.exists():
        shutil.rmtree(root)
    (root / "docs").mkdir(parents=True)
    (root / "runs").mkdir()
    for name, text in TEXTS.items():
        (root / "docs" / f"{name}.md").write_text(text, encoding="utf-8")
    files = {name: getattr(seeds(), shape) for name, shape in FILES.items()}
    files.update(replace or {})
    for name, content in files.items():
        (root / name).write_bytes(content)
    return root


def first_candidate_id() -> str:
    line = seeds().candidates.decode("utf-8").splitlines()[1]
    value: str = json.loads(line)["candidate_id"]
    return value


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str


def run_cli(argv: list[str], cwd: Path) -> Outcome:
    """``spanchor_core.cli.main(argv)`` in ``cwd``, capturing what it prints."""
    out, err = io.StringIO(), io.StringIO()
    before = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        os.chdir(before)
    return Outcome(code, out.getvalue(), err.getvalue())


def check_cli(
    argv: list[str], cwd: Path, tolerated: Iterable[Known] = (), *, one_line: bool = True
) -> Outcome:
    """Run the CLI and assert the bad-input contract: an exit code of the table, no traceback,
    no internal error, and on exit 2 exactly one line on stderr. An internal error is re-run
    with ``--debug`` to see whether it is a known one (then it is tolerated)."""
    outcome = run_cli(argv, cwd)
    if "internal error" in outcome.stderr:
        try:
            run_cli(["--debug", *argv], cwd)
        except Exception as err:
            if any(entry.matches(err) for entry in tolerated):
                return outcome
            raise
    assert outcome.code in (0, 1, 2, 3), outcome
    assert "Traceback" not in outcome.stderr, outcome.stderr
    assert "internal error" not in outcome.stderr, outcome.stderr
    if outcome.code == 2 and one_line:
        lines = [line for line in outcome.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, outcome.stderr
    return outcome
