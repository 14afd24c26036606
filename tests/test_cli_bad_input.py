"""Every kind of bad input gives exit code 2 and one line `path:line: what is wrong`."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from spanchor_core.cli import main

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart"


@pytest.fixture
def qs(tmp_path: Path) -> Path:
    shutil.copytree(QUICKSTART, tmp_path / "qs")
    return tmp_path / "qs"


def _rewrite_line(path: Path, index: int, edit: Callable[[dict[str, object]], object]) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    data = json.loads(lines[index])
    result = edit(data)
    lines[index] = result if isinstance(result, str) else json.dumps(data)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _set(key: str, value: object) -> Callable[[dict[str, object]], None]:
    def edit(data: dict[str, object]) -> None:
        data[key] = value

    return edit


def _drop(key: str) -> Callable[[dict[str, object]], None]:
    def edit(data: dict[str, object]) -> None:
        del data[key]

    return edit


def _first_anchor_hash(data: dict[str, object]) -> None:
    anchors = data["anchors"]
    assert isinstance(anchors, list)
    anchors[0]["hash"] = "0" * 64


CASES: dict[str, tuple[Callable[[Path], object], str, str, str]] = {
    # name: (break the copy, file the command reads, expected "path:line" suffix, fragment)
    "malformed gold line": (
        lambda q: _rewrite_line(q / "gold.jsonl", 3, lambda d: '{"query_id": "q03", '),
        "gold",
        "gold.jsonl:4",
        "",
    ),
    "gold missing field": (
        lambda q: _rewrite_line(q / "gold.jsonl", 2, _drop("question")),
        "gold",
        "gold.jsonl:3",
        "question",
    ),
    "gold mistyped field": (
        lambda q: _rewrite_line(q / "gold.jsonl", 2, _set("anchors", "nope")),
        "gold",
        "gold.jsonl:3",
        "anchors",
    ),
    "gold unknown kind": (
        lambda q: _rewrite_line(q / "gold.jsonl", 0, _set("kind", "spanchor.bogus")),
        "gold",
        "gold.jsonl:1",
        "kind",
    ),
    "gold unknown schema version": (
        lambda q: _rewrite_line(q / "gold.jsonl", 0, _set("schema_version", 99)),
        "gold",
        "gold.jsonl:1",
        "schema",
    ),
    "gold hash mismatch": (
        lambda q: _rewrite_line(q / "gold.jsonl", 1, _first_anchor_hash),
        "gold",
        "gold.jsonl:2",
        "hash",
    ),
    "gold not utf-8": (
        lambda q: (q / "gold.jsonl").write_bytes(b'{"kind": "spanchor.gold", "x": "\xff"}\n'),
        "gold",
        "gold.jsonl",
        "UTF-8",
    ),
    "empty gold set": (
        lambda q: (q / "gold.jsonl").write_text(
            '{"kind": "spanchor.gold", "schema_version": 1, "spanchor_version": "0.5.0"}\n',
            encoding="utf-8",
        ),
        "gold",
        "gold.jsonl",
        "",
    ),
    "malformed run line": (
        lambda q: _rewrite_line(q / "runs" / "candidate.jsonl", 5, lambda d: "{oops"),
        "run",
        "candidate.jsonl:6",
        "",
    ),
    "run unknown schema version": (
        lambda q: _rewrite_line(q / "runs" / "candidate.jsonl", 0, _set("schema_version", 7)),
        "run",
        "candidate.jsonl:1",
        "schema",
    ),
    "run for another corpus": (
        lambda q: _rewrite_line(
            q / "runs" / "candidate.jsonl", 0, _set("corpus_fingerprint", "f" * 64)
        ),
        "run",
        "candidate.jsonl:1",
        "another corpus",
    ),
    "run for another gold set": (
        lambda q: _rewrite_line(q / "runs" / "candidate.jsonl", 0, _set("gold_sha256", "e" * 64)),
        "run",
        "candidate.jsonl:1",
        "gold set",
    ),
    "missing run file": (
        lambda q: (q / "runs" / "candidate.jsonl").unlink(),
        "run",
        "candidate.jsonl",
        "",
    ),
    "missing docs directory": (
        lambda q: shutil.rmtree(q / "docs"),
        "docs",
        "docs",
        "does not exist",
    ),
    "document not utf-8": (
        lambda q: (q / "docs" / "broken.md").write_bytes(b"ok \xc3\x28 bad"),
        "docs",
        "broken.md",
        "byte 3",
    ),
    "policy names an unknown metric": (
        lambda q: (q / "spanchor.toml").write_text(
            (q / "spanchor.toml").read_text(encoding="utf-8").replace('"hit@5"', '"hti@5"'),
            encoding="utf-8",
        ),
        "policy",
        "spanchor.toml",
        "hti@5",
    ),
    "policy negative threshold": (
        lambda q: (q / "spanchor.toml").write_text(
            (q / "spanchor.toml").read_text(encoding="utf-8").replace("0.10", "-0.1"),
            encoding="utf-8",
        ),
        "policy",
        "spanchor.toml",
        "",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_exit_2_one_line(
    name: str, qs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    breaker, _, where, fragment = CASES[name]
    breaker(qs)
    monkeypatch.chdir(qs)
    code = main(["gate", "--config", "spanchor.toml"])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert where in lines[0]
    assert fragment in lines[0]


def test_unreadable_gold_path(qs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a directory where a file is expected cannot be read, even by root
    (qs / "gold.jsonl").unlink()
    (qs / "gold.jsonl").mkdir()
    code = main(["validate", str(qs / "docs"), str(qs / "gold.jsonl")])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{qs / 'gold.jsonl'}" in err
    assert "Traceback" not in err


def test_debug_shows_the_traceback(qs: Path) -> None:
    shutil.rmtree(qs / "docs")
    with pytest.raises(Exception, match="does not exist"):
        main(["--debug", "info", str(qs / "docs")])
