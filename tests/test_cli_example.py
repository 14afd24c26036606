"""``spanchor example quickstart DIR``: the bundled example copied out, identical to the one
source in ``examples/quickstart``, and runnable where it lands."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from spanchor_core.cli import main
from spanchor_core.cli.example import example_source

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "examples" / "quickstart"


def _files(top: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(top)): p.read_bytes()
        for p in sorted(top.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_the_copy_is_the_repository_example_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "q"
    assert main(["example", "quickstart", str(target)]) == 0
    out = capsys.readouterr().out
    assert f"copied the quickstart example to {target}" in out
    assert f"next: cd {target} && spanchor gate" in out
    assert _files(target) == _files(QUICKSTART)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left


def test_the_copied_example_gates_from_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["example", "quickstart", str(tmp_path / "q")]) == 0
    monkeypatch.chdir(tmp_path / "q")
    capsys.readouterr()
    assert main(["gate"]) == 1  # the story: the 200-character windows regress
    assert "FAIL: 57 queries compared — 14 regressed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["example", "nope", "x"], "no example 'nope'; choose one of: quickstart"),
        (["example", "quickstart", "."], ".: already exists; give a directory"),
    ],
)
def test_refusals_are_one_line(
    argv: list[str],
    fragment: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert fragment in err[0]


def test_from_a_checkout_the_source_is_the_examples_folder() -> None:
    source = example_source("quickstart")
    assert source is not None
    assert Path(str(source)) == QUICKSTART
    assert example_source("nope") is None


def test_the_wheel_carries_the_quickstart_as_package_data() -> None:
    build = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["hatch"]
    include = build["build"]["targets"]["wheel"].get("force-include", {})
    assert include.get("examples/quickstart") == "spanchor_core/_examples/quickstart"
