"""``[tool.spanchor]``: one reader for the gate and the pytest plugin."""

from __future__ import annotations

from pathlib import Path

import pytest

from spanchor_core.cli import main
from spanchor_core.errors import EvaluationFileError, InputError
from spanchor_core.settings import (
    GateConfig,
    SpanchorSettings,
    gate_config_from_pyproject,
    read_settings,
    settings_table,
)


def _pyproject(tmp_path: Path, table: str) -> Path:
    path = tmp_path / "pyproject.toml"
    path.write_text(f"[project]\nname = 'x'\n\n[tool.spanchor]\n{table}\n", encoding="utf-8")
    return path


def test_paths_are_relative_to_the_file(tmp_path: Path) -> None:
    path = _pyproject(tmp_path, 'docs = "docs"\nbaseline = "b.jsonl"\ncandidate = "c.jsonl"')
    config = gate_config_from_pyproject(path)
    assert isinstance(config, GateConfig)
    assert config.docs == tmp_path / "docs"
    assert config.baseline == tmp_path / "b.jsonl"


def test_settings_need_not_name_both_sides(tmp_path: Path) -> None:
    path = _pyproject(tmp_path, 'baseline = "b.jsonl"\njson = "out.json"\nk = [1, 5]')
    settings = read_settings(path)
    assert isinstance(settings, SpanchorSettings)
    assert settings.candidate is None
    assert settings.model_fields_set == {"baseline", "json_output", "k"}
    assert settings_table(path) == {
        "baseline": tmp_path / "b.jsonl",
        "json": tmp_path / "out.json",
        "k": [1, 5],
    }
    with pytest.raises(EvaluationFileError, match=r"\[tool.spanchor\] candidate"):
        gate_config_from_pyproject(path)


def test_a_file_without_the_table(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text("[project]\nname = 'x'\n", encoding="utf-8")
    assert settings_table(path) is None
    assert settings_table(tmp_path / "absent.toml") is None
    assert read_settings(path) == SpanchorSettings()
    assert gate_config_from_pyproject(path, baseline="b", candidate="c").baseline == Path("b")


def test_a_path_that_is_not_a_string_is_a_settings_error(tmp_path: Path) -> None:
    with pytest.raises(EvaluationFileError, match=r"\[tool.spanchor\] docs"):
        read_settings(_pyproject(tmp_path, "docs = 5"))


def test_unreadable_settings_file_is_input_error(tmp_path: Path) -> None:
    # Regression: an OSError reading the gate config escaped as "internal error".
    directory = tmp_path / "pyproject.toml"
    directory.mkdir()
    with pytest.raises(InputError, match="cannot read") as caught:
        gate_config_from_pyproject(directory)
    assert str(directory) in str(caught.value)


def test_cli_gate_with_an_unreadable_config_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "spanchor.toml"
    directory.mkdir()
    assert main(["gate", "--config", str(directory)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spanchor: error: ")
    assert "internal error" not in err
    assert len(err.strip().splitlines()) == 1


def test_not_toml(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.spanchor\n", encoding="utf-8")
    with pytest.raises(EvaluationFileError, match="not valid TOML"):
        read_settings(path)


def test_jobs_defaults_to_one_process(tmp_path: Path) -> None:
    assert read_settings(None).jobs == 1
    assert read_settings(_pyproject(tmp_path, "jobs = 0")).jobs == 0  # one per CPU


def test_jobs_from_the_file_and_the_command_line_wins(tmp_path: Path) -> None:
    path = _pyproject(tmp_path, 'baseline = "b.jsonl"\ncandidate = "c.jsonl"\njobs = 3')
    assert gate_config_from_pyproject(path).jobs == 3
    assert gate_config_from_pyproject(path, jobs=1).jobs == 1


@pytest.mark.parametrize("value", ["-1", "true", "2.5", '"2"'])
def test_bad_jobs_is_a_settings_error_naming_the_key(tmp_path: Path, value: str) -> None:
    path = _pyproject(tmp_path, f"jobs = {value}")
    with pytest.raises(EvaluationFileError, match=r"\[tool.spanchor\] jobs"):
        read_settings(path)


def test_cli_gate_reads_jobs_from_the_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quickstart = Path(__file__).parents[1] / "examples" / "quickstart"
    outputs = []
    for jobs in (1, 2):
        settings = tmp_path / f"spanchor-{jobs}.toml"
        text = (quickstart / "spanchor.toml").read_text(encoding="utf-8")
        text = text.replace('docs = "docs"', f'docs = "{quickstart / "docs"}"\njobs = {jobs}')
        for name in ("gold.jsonl", "runs/baseline.jsonl", "runs/candidate.jsonl"):
            text = text.replace(f'"{name}"', f'"{quickstart / name}"')
        settings.write_text(text, encoding="utf-8")
        assert gate_config_from_pyproject(settings).jobs == jobs
        assert main(["gate", "--config", str(settings), "-q"]) == 1  # the candidate regresses
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
