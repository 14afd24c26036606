"""The fast paths of the evaluation reader and the comparison writer give what the model gives.

``read_evaluation`` builds well-formed files without pydantic (orjson, plain checks) and leaves
everything else to the strict path; ``write_comparison`` writes the queries by hand in the bytes
``json.dumps(indent=2)`` of the file model gives them.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from spanchor_core._io import loads_strict
from spanchor_core.compare import compare, write_comparison
from spanchor_core.compare.file import _float_text, _to_file
from spanchor_core.errors import EvaluationFileError
from spanchor_core.evaluate import (
    Evaluation,
    EvaluationSettings,
    LocatedResult,
    MappingStats,
    QueryEvaluation,
    QueryStatus,
    read_evaluation,
    write_evaluation,
)
from spanchor_core.evaluate import file_read as evaluation_file
from spanchor_core.evaluate.file_models import EvaluationFile
from spanchor_core.evaluate.model import TraceSummary
from spanchor_core.policy import Policy
from spanchor_core.spans import DocSpan

NAMES = ("recall@1", "recall@5", "mrr", "retrieved_chars@5", "mine:custom")


def _evaluation(shift: float = 0.0) -> Evaluation:
    queries = {}
    for n, qid in enumerate(["q1", "q:2", "fråga 3", 'q"4', "q5"]):
        results = (
            LocatedResult(1, "exact", "docs/a:b.md", 0, 10, 1.0),
            LocatedResult(2, "unmapped", None, None, None, 0.0, hint_rejected=True),
        )
        queries[qid] = QueryEvaluation(
            query_id=qid,
            metrics={
                "recall@1": min(1.0, 0.25 * n + shift),
                "recall@5": 1.0,
                "mrr": 0.5,
                "retrieved_chars@5": 1234.0,
                "mine:custom": -3.5,
            },
            status=QueryStatus.ERROR if n == 2 else QueryStatus.SCORED,
            gold=(DocSpan("docs/a:b.md", 2, 8),),
            results=results,
            mapping=MappingStats.of(results),
            error="Timeout: 30 s" if n == 2 else None,
            traces=(TraceSummary("t:1", 2, ("a", "b:c"), "retrieve", None),) if n == 1 else (),
        )
    return Evaluation(
        queries=queries,
        settings=EvaluationSettings(
            k=(1, 5), corpus_fingerprint="c" * 64, created_at="2026-01-01T00:00:00+00:00"
        ),
        metric_names=NAMES,
        skipped={"q:9": "no anchors: none"},
        records=5,
    )


def _slow(path: Path) -> Evaluation:
    model = EvaluationFile.model_validate(loads_strict(path.read_text(encoding="utf-8"), path=path))
    return evaluation_file._from_file(model)


def test_fast_path_reads_what_the_model_reads(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(), path)
    fast = evaluation_file._read_fast(path)
    assert fast is not None  # our own file takes the fast path
    slow = _slow(path)
    assert dict(fast.queries) == dict(slow.queries)
    for field in ("settings", "metric_names", "skipped", "mapping", "records", "warnings"):
        assert getattr(fast, field) == getattr(slow, field)
    assert read_evaluation(path).queries == slow.queries


def test_whole_numbers_where_floats_go_are_read_as_floats(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(), path)
    path.write_text(path.read_text().replace('"recall@5": 1.0', '"recall@5": 1'))
    fast = evaluation_file._read_fast(path)
    assert fast is not None
    value = fast["q1"]["recall@5"]
    assert type(value) is float
    assert value == 1.0


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('"rank": 2, ', '"rank": 9, "rank": 2, '),  # inside a result
        ('"query_id": "q5", ', '"query_id": "q5", "query_id": "q5", '),
        ('"recall@5": 1.0, ', '"recall@5": 0.0, "recall@5": 1.0, '),
    ],
)
def test_a_repeated_key_is_refused_by_the_fast_reader_too(
    tmp_path: Path, old: str, new: str
) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(), path)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    assert evaluation_file._read_fast(path) is None
    with pytest.raises(EvaluationFileError, match="appears twice in one object"):
        read_evaluation(path)


def test_an_escaped_colon_goes_the_strict_way(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(), path)
    path.write_text(path.read_text().replace('"q:2"', '"q\\u003a2"'))
    assert evaluation_file._read_fast(path) is None
    assert "q:2" in read_evaluation(path)


@pytest.mark.parametrize(("name", "value"), [("recall@5", 1.5), ("mrr", -0.25)])
def test_a_built_in_score_outside_0_1_is_refused_with_its_line(
    tmp_path: Path, name: str, value: float
) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(), path)
    text = path.read_text()
    old = f'"{name}": {0.5 if name == "mrr" else 1.0}'
    lines = text.splitlines()
    line = next(i for i, row in enumerate(lines, 1) if '"query_id": "q5"' in row)
    lines[line - 1] = lines[line - 1].replace(old, f'"{name}": {value}')
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(EvaluationFileError) as caught:
        read_evaluation(path)
    message = str(caught.value)
    assert f"{path}:{line}:" in message
    assert f"{name} is {value!r}, outside [0, 1]" in message
    assert "'q5'" in message


def test_counts_and_custom_metrics_may_lie_outside_0_1(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(), path)
    evaluation = read_evaluation(path)
    assert evaluation["q1"]["retrieved_chars@5"] == 1234.0
    assert evaluation["q1"]["mine:custom"] == -3.5


def test_write_comparison_bytes_are_those_of_the_model(tmp_path: Path) -> None:
    policy = Policy(max_drop={"recall@1": 0.0, "mrr": 0.1}, flaky_queries=("q5",))
    policy_all = Policy(max_drop={"recall@1": 0.0}, aggregate={})
    for base, cand, chosen in (
        (_evaluation(), _evaluation(-0.2), policy),
        (_evaluation(-0.2), _evaluation(), policy),
        (_evaluation(), _evaluation(), policy_all),
        (_evaluation(), _evaluation(-0.2), policy_all),  # one gated metric, regressions
        (_evaluation(-0.2), _evaluation(), policy_all),
    ):
        comparison = compare(base, cand, chosen)
        path = tmp_path / "c.json"
        write_comparison(comparison, path)
        expected = json.dumps(
            _to_file(comparison).model_dump(mode="json"),
            indent=2,
            ensure_ascii=False,
            allow_nan=False,
        )
        assert path.read_text(encoding="utf-8") == expected + "\n"


def test_float_texts_are_json_dumps_s_whatever_was_written_before() -> None:
    values = [0.5, -0.0, 0.0, 1e-05, 0.5, -0.0, 1.0, 1, True, 2.5e16, 0.1 + 0.2, 5e-324]
    for value in values * 2:  # the second round from the texts kept by the first
        assert _float_text(value) == json.dumps(float(value))
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match="not JSON compliant"):
            _float_text(bad)


def test_our_layout_is_read_a_line_at_a_time_and_any_other_whole(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(), path)
    slow = _slow(path)
    lines = evaluation_file._read_lines(path)
    assert lines is not None
    assert dict(lines.queries) == dict(slow.queries)
    assert lines.settings == slow.settings
    assert lines.mapping == slow.mapping
    # the same document in another layout: one line, or indented throughout
    for text in (
        json.dumps(json.loads(path.read_text(encoding="utf-8")), ensure_ascii=False),
        json.dumps(json.loads(path.read_text(encoding="utf-8")), indent=4),
    ):
        other = tmp_path / "other.json"
        other.write_text(text, encoding="utf-8")
        with pytest.raises(evaluation_file._Layout):
            evaluation_file._read_lines(other)
        whole = evaluation_file._read_fast(other)
        assert whole is not None or ":" in text  # ':' inside strings: the strict path decides
        assert dict(read_evaluation(other).queries) == dict(slow.queries)


@pytest.mark.parametrize(
    ("old", "new", "fragment"),
    [
        ('"records": 5,', '"records": 5, "records": 5,', "appears twice"),  # in the head
        ('"q5", "status"', '"q5", "query_id": "q5", "status"', "appears twice"),
        ("}]}\n  ]", "}]},\n  ]", "not valid JSON"),  # a comma before the end of the list
        ("}]}\n  ]\n}", "}]}\n  ]\n", "not valid JSON"),  # the top-level object not closed
        ('"status": "scored"', '"status": "done"', "status"),
    ],
)
def test_the_line_reader_leaves_what_is_wrong_to_the_strict_path(
    tmp_path: Path, old: str, new: str, fragment: str
) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(), path)
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    assert evaluation_file._read_fast(path) is None
    with pytest.raises(EvaluationFileError, match=fragment):
        read_evaluation(path)


def test_a_line_reader_file_with_a_nested_queries_member_is_read_whole(tmp_path: Path) -> None:
    evaluation = _evaluation()
    header = {"queries": [1, 2], "note": "x"}
    settings = dataclasses.replace(evaluation.settings, run_header=header)
    path = tmp_path / "e.json"
    write_evaluation(dataclasses.replace(evaluation, settings=settings), path)
    read = read_evaluation(path)
    assert read.settings.run_header == header
    assert dict(read.queries) == dict(_slow(path).queries)


def _old_evaluation() -> dict[str, object]:
    """A spanchor 0.x evaluation (schema 0.2.0) of three queries, a ':' in one id."""
    return {
        "schema_version": "0.2.0",
        "timestamp": "2024-01-15T10:00:00+00:00",
        "queries": [{"query_id": "q:1", "anchors": [{"document_id": "d", "start": 0, "end": 5}]}],
        "per_query_metrics": {
            "q:1": {"recall@5": 0.5, "hit@5": 1, "iou": 0.0},
            "q2": {"recall@5": 1.0, "hit@5": 1, "iou": 0.5},
            "q3": {"iou": 0.25, "recall@5": 0.0, "hit@5": 0},
        },
        "config": {"k": [5]},
        "mapper_stats": {"MAPPED_EXACT": 7, "UNMAPPED": 1},
    }


def test_a_0x_evaluation_is_parsed_once_and_read_as_the_strict_path_reads_it(
    tmp_path: Path,
) -> None:
    from spanchor_core.evaluate.legacy import evaluation_from_0x

    path = tmp_path / "old.json"
    data = _old_evaluation()
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    fast = evaluation_file._read_fast(path)
    assert fast is not None  # from the one orjson parse
    strict = evaluation_from_0x(loads_strict(path.read_text(), path=path), path)
    assert dict(fast.queries) == dict(strict.queries)
    assert fast.metric_names == strict.metric_names == ("recall@5", "hit@5", "iou")
    assert fast.settings == strict.settings
    assert fast.mapping == strict.mapping
    del data["per_query_metrics"]["q:1"]["iou"]  # type: ignore[index]
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    with pytest.raises(EvaluationFileError, match="'q:1' lacks iou"):
        read_evaluation(path)


def test_a_repeated_key_in_a_0x_evaluation_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    text = json.dumps(_old_evaluation(), indent=2).replace(
        '"hit@5": 0', '"hit@5": 0, "hit@5": 1', 1
    )
    path.write_text(text, encoding="utf-8")
    assert evaluation_file._read_fast(path) is None
    with pytest.raises(EvaluationFileError, match="appears twice in one object"):
        read_evaluation(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{\n  "kind": "spanchor.run",\n  "kind": "spanchor.evaluation"\n}\n', True),
        ('{\n  "kind": "spanchor.evaluation",\n  "kind": "spanchor.run"\n}\n', True),
        ('{\n  "note": 1,\n  "kind": "spanchor.evaluation",\n  "kind": "x"\n}\n', True),
        ('{\n  "note": 1,\n  "\\u006bind": "spanchor.evaluation",\n  "kind": "x"\n}\n', True),
        ('{\n  "note": 1,\n  "kind": "spanchor.run"\n}\n', False),
        ('{\n  "note": NaN,\n  "kind": "spanchor.evaluation"\n}\n', True),
        ('\ufeff{\n  "note": 1,\n  "per_query_metrics": {}\n}\n', True),
        ('[\n  {"kind": "spanchor.evaluation"}\n]\n', False),
    ],
)
def test_the_kind_of_a_whole_document_is_that_of_the_lenient_parse(
    tmp_path: Path, text: str, expected: bool
) -> None:
    from spanchor_core.evaluate.kind import holds_evaluation

    path = tmp_path / "doc.json"
    path.write_text(text, encoding="utf-8")
    assert holds_evaluation(path) is expected


def test_shared_metric_values_keep_the_sign_of_zero(tmp_path: Path) -> None:
    import math

    path = tmp_path / "e.json"
    write_evaluation(_evaluation(), path)
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    line = next(i for i, row in enumerate(lines) if '"query_id": "q5"' in row)
    lines[line] = lines[line].replace('"mine:custom": -3.5', '"mine:custom": -0.0')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    read = evaluation_file._read_fast(path)
    assert read is not None
    assert math.copysign(1.0, read["q5"]["mine:custom"]) == -1.0
    assert read["q1"]["mine:custom"] == -3.5
    assert dict(read.queries) == dict(_slow(path).queries)
    assert math.copysign(1.0, read.metric("mine:custom")["q5"]) == -1.0  # the column's value
