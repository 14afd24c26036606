"""The README cannot drift: its Python blocks run, and CI runs its two shell commands."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README, flags=re.S | re.M)


@pytest.mark.parametrize("index", range(len(_blocks("python"))))
def test_readme_python_block_runs(index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    code = _blocks("python")[index]
    exec(compile(code, f"README.md python block {index + 1}", "exec"), {"__name__": "__readme__"})


def test_readme_has_exactly_two_commands_and_ci_runs_them() -> None:
    section = README.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^```bash\n(.*?)^```", section, flags=re.S | re.M)
    assert len(commands) == 2
    assert "pip install" in commands[0]
    assert "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "readme-command 1" in ci
    assert "readme-command 2" in ci
    assert os.access(ROOT / ".ci" / "readme-command", os.R_OK)
