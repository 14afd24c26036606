"""``spanchor chunks report`` end to end on the quickstart: terminal, Markdown, HTML and JSON
outputs, two chunkers side by side, and bad input as one line with exit code 2."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from spanchor_core.cli import main
from spanchor_core.corpus import load_corpus
from spanchor_core.diagnosis import chunk_report, load_inventory
from spanchor_core.gold import read_gold

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
GOLD = str(QUICKSTART / "gold.jsonl")
DOCS = str(QUICKSTART / "docs")
WINDOWS = str(QUICKSTART / "chunks" / "windows-200.jsonl")
PARAGRAPHS = str(QUICKSTART / "chunks" / "paragraphs.jsonl")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_one_inventory_prints_oracle_recall_and_writes_every_format(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    md, page, data = tmp_path / "r.md", tmp_path / "r.html", tmp_path / "r.json"
    code, out, err = run(
        capsys, "chunks", "report", GOLD, WINDOWS, DOCS, "--k", "1,3",
        "--markdown", str(md), "--html", str(page), "--json", str(data),
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert "@1: 0.884 (34 of 57)" in out
    assert "@3: 1.000 (57 of 57)" in out
    assert "every query can be served" in out
    # The JSON is the library's report, byte for byte the same numbers.
    corpus = load_corpus(DOCS)
    expected = chunk_report(
        corpus, read_gold(GOLD), load_inventory(WINDOWS, corpus), k=[1, 3]
    ).to_json()
    assert json.loads(data.read_text(encoding="utf-8")) == expected
    text = md.read_text(encoding="utf-8")
    assert "| 1 | 0.884 | 34 of 57 |" in text
    assert re.search(r"\| q05 \| 2 \| \d+% \| ", text)  # q05's evidence is cut in two
    html = page.read_text(encoding="utf-8")
    HTMLParser().feed(html)
    assert "<script" not in html
    assert "0.884" in html


def test_two_chunkers_side_by_side(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    md, data = tmp_path / "r.md", tmp_path / "r.json"
    code, out, _ = run(
        capsys, "chunks", "report", GOLD, WINDOWS, DOCS, "--against", PARAGRAPHS,
        "--k", "1,5", "--markdown", str(md), "--json", str(data),
    )  # fmt: skip
    assert code == 0
    assert "@1: A 0.884 (34 of 57), B 0.992 (56 of 57)" in out
    assert "| 1 | 0.884 | 34 of 57 | 0.992 | 56 of 57 |" in md.read_text(encoding="utf-8")
    both = json.loads(data.read_text(encoding="utf-8"))
    assert both["kind"] == "spanchor.chunk_reports"
    assert [r["oracle_recall"]["1"]["fully_served"] for r in both["reports"]] == [34, 56]


def test_a_foreign_file_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "chunks", "report", GOLD, GOLD, DOCS)
    assert code == 2
    assert err.count("\n") == 1
    assert "not a chunk inventory" in err
    assert "gold.jsonl:1:" in err
