"""``spanchor gate`` finds its settings: ``spanchor.toml``, then ``[tool.spanchor]`` in
``pyproject.toml``, in the working directory and its parents; misses are one clear line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from spanchor_core.cli import main
from spanchor_core.settings import find_settings_file, settings_keys

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart"


def _gate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["gate", "-q", *argv])
    return code, capsys.readouterr().err


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("spanchor: error: ")
    return lines[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the quickstart whose settings live in ``spanchor.toml``."""
    shutil.copytree(QUICKSTART, tmp_path / "qs")
    return tmp_path / "qs"


def test_gate_finds_spanchor_toml_in_the_working_directory(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    assert _gate(capsys, "--json", "out.json")[0] == 1
    assert (project / "out.json").is_file()


def test_gate_finds_settings_in_a_parent(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "sub" / "deeper").mkdir(parents=True)
    monkeypatch.chdir(project / "sub" / "deeper")
    assert _gate(capsys)[0] == 1
    assert find_settings_file() == project / "spanchor.toml"


def test_spanchor_toml_wins_over_pyproject(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "pyproject.toml").write_text(
        "[tool.spanchor]\nbaseline = 'nope.jsonl'\ncandidate = 'nope.jsonl'\n", encoding="utf-8"
    )
    monkeypatch.chdir(project)
    assert find_settings_file() == project / "spanchor.toml"
    assert _gate(capsys)[0] == 1


def test_a_pyproject_without_the_table_is_passed_over(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # settings in the parent's pyproject.toml; the working directory's has no table
    text = (project / "spanchor.toml").read_text(encoding="utf-8")
    (project / "spanchor.toml").unlink()
    (project / "pyproject.toml").write_text(text, encoding="utf-8")
    (project / "pkg").mkdir()
    (project / "pkg" / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    monkeypatch.chdir(project / "pkg")
    assert find_settings_file() == project / "pyproject.toml"
    assert _gate(capsys)[0] == 1


def test_no_settings_anywhere_says_what_was_searched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = _gate(capsys)
    assert code == 2
    line = _one_error_line(err)
    assert "no spanchor settings found" in line
    assert "spanchor.toml" in line
    assert "pyproject.toml" in line
    assert str(tmp_path) in line
    assert "Field required" not in line


def test_flags_alone_need_no_settings_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    runs = QUICKSTART / "runs"
    code, err = _gate(
        capsys,
        "--docs",
        str(QUICKSTART / "docs"),
        "--gold",
        str(QUICKSTART / "gold.jsonl"),
        "--baseline",
        str(runs / "baseline.jsonl"),
        "--candidate",
        str(runs / "candidate-overlap.jsonl"),
    )
    assert code == 0, err


def test_a_missing_config_is_not_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = _gate(capsys, "--config", "nonexist.toml")
    assert code == 2
    line = _one_error_line(err)
    assert "nonexist.toml: not found" in line


def test_an_unknown_key_is_named_with_a_suggestion(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = project / "spanchor.toml"
    text = path.read_text(encoding="utf-8").replace("candidate =", "candiate =")
    path.write_text(text, encoding="utf-8")
    monkeypatch.chdir(project)
    code, err = _gate(capsys)
    assert code == 2
    line = _one_error_line(err)
    assert "unknown key 'candiate'" in line
    assert "did you mean 'candidate'?" in line


def test_a_spanchor_toml_without_the_table_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "spanchor.toml").write_text("baseline = 'b.jsonl'\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, err = _gate(capsys)
    assert code == 2
    assert "no [tool.spanchor] table" in _one_error_line(err)


def test_settings_keys_are_the_table_keys() -> None:
    keys = settings_keys()
    assert "json" in keys
    assert "json_output" not in keys
    assert {"docs", "gold", "baseline", "candidate", "policy", "allow_mismatch"} <= set(keys)


def test_a_missing_required_key_names_the_flag_that_gives_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    text = (QUICKSTART / "spanchor.toml").read_text(encoding="utf-8")
    kept = [line for line in text.splitlines() if not line.startswith("candidate")]
    (tmp_path / "spanchor.toml").write_text("\n".join(kept) + "\n", encoding="utf-8")
    code, err = _gate(capsys)
    assert code == 2
    line = _one_error_line(err)
    assert "[tool.spanchor] candidate: Field required" in line
    assert line.endswith("set candidate in [tool.spanchor] of this file or pass --candidate FILE")
