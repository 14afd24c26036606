"""The gate finds each side's chunk inventory through its run header (tag ``spanchor.chunks``)
and shows the chunking / ranking split in the terminal, the comparison file and the reports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from spanchor_core.cli import main
from spanchor_core.corpus import load_corpus
from spanchor_core.diagnosis import INVENTORY_TAG, ChunkInventoryError, inventory_path
from spanchor_core.runs import read_run, write_run

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
PAIRS = {"baseline": "paragraphs", "candidate": "windows-200"}


def _tagged_copy(tmp_path: Path) -> Path:
    """The quickstart's runs, each header pointing to its index's inventory (relative path)."""
    (tmp_path / "runs").mkdir()
    shutil.copytree(QUICKSTART / "chunks", tmp_path / "chunks")
    for run, chunks in PAIRS.items():
        found = read_run(QUICKSTART / "runs" / f"{run}.jsonl")
        header = found.header.model_copy(
            update={"tags": {**found.header.tags, INVENTORY_TAG: f"../chunks/{chunks}.jsonl"}}
        )
        write_run(type(found)(header, found.records), tmp_path / "runs" / f"{run}.jsonl")
    return tmp_path


def test_the_gate_splits_recall_when_both_headers_point_to_an_inventory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _tagged_copy(tmp_path)
    out = root / "comparison.json"
    report = root / "report.md"
    code = main(
        [
            "compare",
            str(root / "runs" / "baseline.jsonl"),
            str(root / "runs" / "candidate.jsonl"),
            "--docs", str(QUICKSTART / "docs"),
            "--gold", str(QUICKSTART / "gold.jsonl"),
            "--policy", str(QUICKSTART / "spanchor.toml"),
            "-o", str(out),
            "--report", str(report),
        ]
    )  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 1
    line = "recall@5 -0.12: +0.00 chunking (oracle 1.00 → 1.00), -0.12 ranking"
    assert line in printed
    assert "why: 14 regressed: 12 split, 2 dropped" in printed
    data = json.loads(out.read_text(encoding="utf-8"))
    metrics = [split["metric"] for split in data["diagnosis"]["splits"]]
    assert "recall@5" in metrics
    assert f"- {line}" in report.read_text(encoding="utf-8")


def test_a_header_pointing_nowhere_is_an_error_naming_the_run(tmp_path: Path) -> None:
    header = {"tags": {INVENTORY_TAG: "missing.jsonl"}}
    with pytest.raises(ChunkInventoryError, match=r"run\.jsonl:1: .*missing\.jsonl"):
        inventory_path(header, tmp_path / "run.jsonl")
    with pytest.raises(ChunkInventoryError, match="must be a path"):
        inventory_path({"tags": {INVENTORY_TAG: 3}}, tmp_path / "run.jsonl")
    assert inventory_path({"tags": {}}, tmp_path / "run.jsonl") is None
    assert inventory_path(None, tmp_path / "run.jsonl") is None
    assert load_corpus(QUICKSTART / "docs")  # the quickstart is there


def test_a_run_copied_without_its_inventory_gates_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the runs moved to a folder without ../chunks/: the verdict stands, the split is gone
    root = _tagged_copy(tmp_path)
    shutil.rmtree(root / "chunks")
    argv = [
        "gate",
        "--docs", str(QUICKSTART / "docs"),
        "--gold", str(QUICKSTART / "gold.jsonl"),
        "--baseline", str(root / "runs" / "baseline.jsonl"),
        "--candidate", str(root / "runs" / "candidate.jsonl"),
        "--policy", str(QUICKSTART / "spanchor.toml"),
    ]  # fmt: skip
    assert main(argv) == 1  # the quickstart's regression, as with the inventories
    out, err = capsys.readouterr()
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 2
    assert warnings[0].startswith("warning: baseline: ")
    assert "paragraphs.jsonl" in warnings[0]
    assert "which does not exist" in warnings[0]
    assert warnings[0].endswith("no chunking/ranking split")
    assert "chunking (oracle" not in out
    # a malformed tag is still bad input
    bad = read_run(root / "runs" / "baseline.jsonl")
    header = bad.header.model_copy(update={"tags": {INVENTORY_TAG: 3}})
    write_run(type(bad)(header, bad.records), root / "runs" / "baseline.jsonl")
    assert main(argv) == 2
