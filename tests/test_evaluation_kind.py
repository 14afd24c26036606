"""A spanchor 0.x results object ``{query_id: [results]}`` is told a run from its first member,
parsed as the run reader parses it, without parsing the rest of the file (one line of hundreds
of megabytes); anything that does not start so is still decided by the whole document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spanchor_core.evaluate import kind
from spanchor_core.evaluate.kind import holds_evaluation
from spanchor_core.pipeline import file_kind


def _results_object(queries: int) -> dict[str, Any]:
    return {
        f"q{q}": [
            {"text": f"chunk {q} {r} " + "x" * 200, "score": 1.0 - r / 10, "doc_id": "d"}
            for r in range(10)
        ]
        for q in range(queries)
    }


@pytest.fixture
def whole_parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The lengths of the texts parsed whole by the lenient parse or orjson."""
    seen: list[int] = []
    lenient, told = kind._parse_leniently, kind._told_by_orjson

    def parse(text: str) -> Any:
        seen.append(len(text))
        return lenient(text)

    def orjson_parse(raw: bytes) -> bool | None:
        seen.append(len(raw))
        return told(raw)

    monkeypatch.setattr(kind, "_parse_leniently", parse)
    monkeypatch.setattr(kind, "_told_by_orjson", orjson_parse)
    return seen


@pytest.mark.parametrize("indent", [None, 2])
def test_a_large_0x_results_object_is_a_run_from_its_first_member(
    tmp_path: Path, whole_parses: list[int], indent: int | None
) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_results_object(800), indent=indent), encoding="utf-8")
    assert path.stat().st_size > 1 << 20  # longer than the first line read
    assert holds_evaluation(path) is False
    assert file_kind(path) == "run"
    assert all(size < 1 << 16 for size in whole_parses)  # never the whole file


def test_a_small_one_line_results_object_is_still_parsed_as_a_whole_line(
    tmp_path: Path, whole_parses: list[int]
) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_results_object(3)), encoding="utf-8")
    assert holds_evaluation(path) is False
    assert whole_parses == [path.stat().st_size]


@pytest.mark.parametrize("indent", [None, 2])
def test_a_large_0x_evaluation_on_one_line_is_still_an_evaluation(
    tmp_path: Path, indent: int | None
) -> None:
    # no first member that reads as results (a 0.x evaluation's fields have fixed names)
    metrics = {f"q{q}": {"recall@5": 0.5, "note": "y" * 300} for q in range(4000)}
    document = {
        "queries": [{"query_id": "q1", "anchors": [{"document_id": "d", "start": 0, "end": 5}]}],
        "schema_version": "0.2.0",
        "per_query_metrics": metrics,
    }
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document, indent=indent), encoding="utf-8")
    assert path.stat().st_size > 1 << 20
    assert holds_evaluation(path) is True


@pytest.mark.parametrize(
    "first",
    [
        '"kind": "spanchor.evaluation"',  # a kind first is never a query id
        '"per_query_metrics": {}',
        '"query_id": "q1"',  # a record field: a 0.x JSONL record, for the whole parse
        '"note": 1',  # not a list of results
    ],
)
def test_a_first_member_that_is_no_query_results_leaves_the_file_to_the_whole_parse(
    tmp_path: Path, whole_parses: list[int], first: str
) -> None:
    path = tmp_path / "doc.json"
    body = json.dumps(_results_object(800))[1:]
    path.write_text("{" + first + ", " + body, encoding="utf-8")
    expected = first.startswith(('"kind"', '"per_query'))
    assert holds_evaluation(path) is expected
    assert max(whole_parses) > 1 << 20  # parsed whole, as before
