"""A run torn by a crash (its last line cut inside a multi-byte character) is read up to the
torn line by every command, and gate and compare say so on stderr as evaluate does."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.workspace import build, run_cli


def _tear(run: Path) -> None:
    record = '{"query_id": "q9", "query": "café café"}'.encode()
    run.write_bytes(run.read_bytes() + record[: record.index(b"\xc3") + 1])


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "docs", "gold.jsonl", "runs/candidate.jsonl", "--k", "1,3"],
        ["gate", "--config", "pyproject.toml"],
        [
            "compare", "runs/baseline.jsonl", "runs/candidate.jsonl", "--docs", "docs",
            "--gold", "gold.jsonl", "--k", "1,3",
        ],
    ],
    ids=["evaluate", "gate", "compare"],
)  # fmt: skip
def test_a_torn_tail_is_skipped_with_one_warning(tmp_path: Path, argv: list[str]) -> None:
    root = build(tmp_path / "project")
    clean = run_cli(argv, root)
    _tear(root / "runs" / "candidate.jsonl")
    torn = run_cli(argv, root)
    assert torn.code == clean.code == 0, torn
    warnings = [line for line in torn.stderr.splitlines() if "incomplete last line" in line]
    assert len(warnings) == 1, torn.stderr
    assert "runs/candidate.jsonl:5:" in warnings[0]
    assert warnings[0].startswith("warning: ")
