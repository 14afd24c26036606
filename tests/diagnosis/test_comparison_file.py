"""Causes and the chunking / ranking split in the comparison file (schema_version 2), and
version-1 files still read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spanchor_core.compare import read_comparison, write_comparison
from spanchor_core.diagnosis import SplitCause
from spanchor_core.errors import EvaluationFileError
from tests.diagnosis.cases import KINDS, diagnosed


def test_every_cause_and_its_evidence_is_written_and_read_back(tmp_path: Path) -> None:
    comparison = diagnosed(chunks=True)
    path = tmp_path / "comparison.json"
    write_comparison(comparison, path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["schema_version"] == 2
    diagnosis = data["diagnosis"]
    assert diagnosis["summary"]["queries"] == dict.fromkeys(KINDS, 1)
    causes = {row["query_id"]: row["causes"] for row in diagnosis["queries"]}
    assert {qid: [c["cause"] for c in items] for qid, items in causes.items()} == {
        f"q-{kind}": [kind] for kind in KINDS
    }
    (split,) = causes["q-split"]
    assert split["evidence"] == {"document_id": "a", "start": 10, "end": 30}
    assert (split["boundaries"], split["coverage_before"], split["coverage_after"]) == (
        [20],
        1.0,
        0.5,
    )
    assert (split["start"], split["end"], split["also"]) == (20, 30, ["dropped"])
    assert (causes["q-rank"][0]["rank_before"], causes["q-rank"][0]["rank_after"]) == (1, 2)
    assert causes["q-dropped"][0]["results"] == 1
    assert causes["q-unmapped"][0]["ranks"] == [1]
    assert causes["q-missing"][0]["reason"] == "missing_in_run"
    recall1 = next(s for s in diagnosis["splits"] if s["metric"] == "recall@1")
    assert (recall1["oracle_baseline"], recall1["oracle_candidate"]) == (1.0, 0.5)
    assert recall1["chunking"] == pytest.approx(-0.5)

    again = read_comparison(path)
    # every cause, its evidence and the splits round-trip (coverage is not part of the file)
    assert again.diagnosis == comparison.diagnosis
    assert again.diagnosis is not None
    assert isinstance(again.diagnosis["q-split"].causes[0], SplitCause)
    other = tmp_path / "again.json"
    write_comparison(again, other)
    assert other.read_bytes() == path.read_bytes()


def test_a_comparison_without_diagnosis_writes_null(tmp_path: Path) -> None:
    comparison = diagnosed()
    bare = type(comparison)(
        **{f: getattr(comparison, f) for f in comparison.__dataclass_fields__ if f != "diagnosis"}
    )
    path = tmp_path / "c.json"
    write_comparison(bare, path)
    assert json.loads(path.read_text(encoding="utf-8"))["diagnosis"] is None
    assert read_comparison(path).diagnosis is None


def test_version_1_files_still_read_and_may_not_carry_a_diagnosis(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    write_comparison(diagnosed(), path)
    data = json.loads(path.read_text(encoding="utf-8"))
    old = {key: value for key, value in data.items() if key != "diagnosis"}
    old["schema_version"] = 1
    path.write_text(json.dumps(old), encoding="utf-8")
    comparison = read_comparison(path)
    assert comparison.diagnosis is None
    assert sorted(row.query_id for row in comparison.regressions()) == sorted(
        row["query_id"] for row in data["queries"] if row["status"] == "REGRESSION"
    )
    path.write_text(json.dumps({**old, "diagnosis": data["diagnosis"]}), encoding="utf-8")
    with pytest.raises(EvaluationFileError, match="schema_version 1"):
        read_comparison(path)


def test_an_unknown_cause_is_refused_with_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    write_comparison(diagnosed(), path)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["diagnosis"]["queries"][0]["causes"][0]["cause"] = "gremlins"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(EvaluationFileError, match=r"c\.json.*diagnosis\.queries\.0\.causes\.0"):
        read_comparison(path)
