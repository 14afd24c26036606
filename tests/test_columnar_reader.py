"""The columnar reader of evaluation files (``evaluate/file_columns``): metric values in one
matrix, each query built from its text when asked for, and the same evaluation as the strict
(pydantic) path in every case — plain chunks of lines, odd lines among them, bad values."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from spanchor_core._io import loads_strict
from spanchor_core.errors import EvaluationFileError
from spanchor_core.evaluate import (
    Evaluation,
    EvaluationSettings,
    LocatedResult,
    MappingStats,
    QueryEvaluation,
    QueryStatus,
    file_read,
    read_evaluation,
    write_evaluation,
)
from spanchor_core.evaluate import file as evaluation_file
from spanchor_core.evaluate.file_models import EvaluationFile
from spanchor_core.evaluate.file_pattern import PLAIN_LINE
from spanchor_core.evaluate.model import MetricRow, QueryTable, TraceSummary
from spanchor_core.spans import DocSpan

NAMES = ("recall@1", "recall@5", "mrr", "retrieved_chars@5")


def _evaluation(n: int, traced: frozenset[int] = frozenset()) -> Evaluation:
    queries = {}
    for i in range(n):
        results = (
            LocatedResult(1, "exact", f"doc-{i % 7}", i, i + 10, 1.0),
            LocatedResult(2, "normalised", "doc-x", 5, 9, 0.93),
            LocatedResult(3, "unmapped", None, None, None, 0.0, hint_rejected=True),
        )
        qid = f"q{i:03d}"
        queries[qid] = QueryEvaluation(
            query_id=qid,
            metrics={
                "recall@1": (i % 5) / 4,
                "recall@5": 1.0 if i % 3 else 0.0,
                "mrr": 1 / (1 + i % 4),
                "retrieved_chars@5": float(100 * i),
            },
            status=QueryStatus.ERROR if i == 4 else QueryStatus.SCORED,
            gold=tuple(DocSpan(f"doc-{i % 7}", i + 1, i + 5) for _ in range(i % 3)),
            results=results[: 1 + i % 3],
            mapping=MappingStats.of(results[: 1 + i % 3]),
            error="timed out" if i == 4 else None,
            traces=(
                (TraceSummary("t1", 1, ("a",)), TraceSummary("t2", 1, ("b",)))
                if i in traced
                else ()
            ),
        )
    return Evaluation(
        queries=queries,
        settings=EvaluationSettings(k=(1, 5), created_at="2026-01-01T00:00:00+00:00"),
        metric_names=NAMES,
        records=n,
    )


def _strict(path: Path) -> Evaluation:
    model = EvaluationFile.model_validate(loads_strict(path.read_text(encoding="utf-8"), path=path))
    return file_read._from_file(model)


def _same(read: Evaluation, strict: Evaluation) -> None:
    assert list(read) == list(strict)
    assert dict(read.queries) == dict(strict.queries)
    for name in NAMES:
        assert read.metric(name) == strict.metric(name)
        assert read.aggregate(name) == strict.aggregate(name)
    assert read.repeated == strict.repeated
    assert read.settings == strict.settings


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 100])
def test_plain_lines_are_read_by_column_as_the_strict_path_reads_them(
    tmp_path: Path, n: int
) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(n), path)
    read = file_read._read_fast(path)
    assert read is not None
    assert isinstance(read.queries, QueryTable) or n == 0  # "queries": [] is one line
    _same(read, _strict(path))
    if n:
        query = read["q000"]
        assert isinstance(query.metrics, MetricRow)
        assert type(query["mrr"]) is float
        assert query.metrics == dict(query.metrics)
        assert "mrr" in query.metrics
        assert "nope" not in query.metrics
        with pytest.raises(KeyError, match="no metric 'nope'"):
            query["nope"]


def test_odd_lines_among_plain_ones_are_built_at_once(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(70, traced=frozenset({3, 40})), path)
    text = path.read_text(encoding="utf-8")
    # members of a result in another order, and a whole number where a float goes
    text = text.replace('"query_id": "q050", ', '"query_id": "q050", ', 1)
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if '"query_id": "q050"' in line)
    lines[at] = lines[at].replace('"rank": 1, "status": "exact"', '"status": "exact", "rank": 1')
    at = next(i for i, line in enumerate(lines) if '"query_id": "q060"' in line)
    lines[at] = lines[at].replace('"recall@5": 1.0', '"recall@5": 1')
    path.write_text("\n".join(lines), encoding="utf-8")
    read = file_read._read_fast(path)
    assert read is not None
    strict = _strict(path)
    _same(read, strict)
    assert read.repeated == ("q003", "q040")
    assert type(read["q060"]["recall@5"]) is float


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('"recall@1": 1.0', '"recall@1": true'),
        ('"recall@1": 1.0', '"recall@1": null'),
        ('"recall@1": 1.0', '"recall@1": "1.0"'),
        ('"recall@1": 1.0', '"recall@1": 1.5'),  # a score outside [0, 1]
        ('"rank": 1', '"rank": 1.0'),
        ('"rank": 1', '"rank": true'),
        ('"start": 9', '"start": "9"'),
        ('"hint_rejected": false', '"hint_rejected": 0'),
        ('"hint_rejected": 0,', '"hint_rejected": 0, "hint_rejected": 1,'),
        ('"exact": 1', '"exact": 1, "exact": 1'),
        ('"mrr": 0.5', '"mrr": 0.5, "mrr": 0.5'),
        ('"status": "scored"', '"status": "later"'),
    ],
)
def test_a_bad_value_in_a_plain_chunk_is_left_to_the_strict_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str
) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(40), path)
    lines = path.read_text(encoding="utf-8").split("\n")
    at = next(i for i, line in enumerate(lines) if '"query_id": "q009"' in line)
    assert old in lines[at]
    lines[at] = lines[at].replace(old, new, 1)
    path.write_text("\n".join(lines), encoding="utf-8")
    monkeypatch.setattr(evaluation_file, "_read_fast", lambda _: None)
    try:
        strict: Evaluation | None = read_evaluation(path)  # the strict path alone
    except EvaluationFileError:
        strict = None
    monkeypatch.undo()
    read = file_read._read_fast(path)
    if strict is None:
        assert read is None
        with pytest.raises(EvaluationFileError):
            read_evaluation(path)
    else:  # the fast path may leave to the strict path what it converts, never differ
        assert read is None or not isinstance(read.queries, QueryTable)
        _same(read_evaluation(path), strict)


def test_a_repeated_query_id_across_chunks_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(40), path)
    text = path.read_text(encoding="utf-8").replace('"query_id": "q035"', '"query_id": "q002"')
    path.write_text(text, encoding="utf-8")
    assert file_read._read_fast(path) is None
    with pytest.raises(EvaluationFileError, match="q002"):
        read_evaluation(path)


def test_negative_zero_and_tiny_values_keep_their_bits(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(40), path)
    lines = path.read_text(encoding="utf-8").split("\n")
    at = next(i for i, line in enumerate(lines) if '"query_id": "q010"' in line)
    lines[at] = lines[at].replace('"retrieved_chars@5": 1000.0', '"retrieved_chars@5": -0.0')
    at = next(i for i, line in enumerate(lines) if '"query_id": "q011"' in line)
    lines[at] = lines[at].replace('"retrieved_chars@5": 1100.0', '"retrieved_chars@5": 5e-324')
    path.write_text("\n".join(lines), encoding="utf-8")
    read = read_evaluation(path)
    assert isinstance(read.queries, QueryTable)
    assert math.copysign(1.0, read["q010"]["retrieved_chars@5"]) == -1.0
    assert math.copysign(1.0, read.metric("retrieved_chars@5")["q010"]) == -1.0
    assert read["q011"]["retrieved_chars@5"] == 5e-324
    _same(read, _strict(path))


def test_a_columnar_evaluation_is_written_back_byte_for_byte(tmp_path: Path) -> None:
    path, again = tmp_path / "e.json", tmp_path / "again.json"
    write_evaluation(_evaluation(50, traced=frozenset({7})), path)
    write_evaluation(read_evaluation(path), again)
    assert again.read_bytes() == path.read_bytes()


def _query_lines(path: Path) -> list[str]:
    return [
        line.strip().rstrip(",")
        for line in path.read_text(encoding="utf-8").split("\n")
        if line.startswith('    {"query_id"')
    ]


def test_our_writer_s_usual_lines_are_matched_without_parsing_their_results(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(40, traced=frozenset({7})), path)
    lines = _query_lines(path)
    matched = [PLAIN_LINE.fullmatch(line.encode()) is not None for line in lines]
    assert matched == [i != 7 for i in range(40)]  # a traced query is parsed whole
    match = PLAIN_LINE.fullmatch(lines[4].encode())
    assert match is not None
    assert match.group(1, 2, 3) == (b"q004", b"error", b"timed out")
    assert match.group(5).startswith(b'"gold": [')
    read = file_read._read_fast(path)
    assert read is not None
    assert isinstance(read.queries, QueryTable)
    _same(read, _strict(path))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('"start": 9,', '"start": 09,'),  # not JSON
        ('"start": 9,', '"start": ,'),
        ('"rank": 2,', '"rank": 2,,'),
        ('"confidence": 0.93,', '"confidence": 0.93.1,'),
        ('"hint_rejected": false}', '"hint_rejected": nope}'),
        ('"end": 9,', '"end": 1e999,'),  # a whole number where inf would come
        ('"doc-x"', '"doc-\x01"'),  # a raw control character
        ('"results": [', '"results": [[], '),
    ],
)
def test_what_follows_the_metrics_is_checked_though_not_parsed(
    tmp_path: Path, old: str, new: str
) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(40), path)
    lines = path.read_text(encoding="utf-8").split("\n")
    at = next(i for i, line in enumerate(lines) if '"query_id": "q008"' in line)
    assert old in lines[at]
    lines[at] = lines[at].replace(old, new, 1)
    path.write_text("\n".join(lines), encoding="utf-8")
    assert PLAIN_LINE.fullmatch(lines[at].strip().rstrip(",").encode()) is None
    assert file_read._read_fast(path) is None
    with pytest.raises(EvaluationFileError, match=r"e\.json"):
        read_evaluation(path)


def test_lines_with_other_text_are_parsed_whole_and_read_the_same(tmp_path: Path) -> None:
    evaluation = _evaluation(1100)  # more than one batch of matched lines
    queries = dict(evaluation.queries)
    odd = queries["q500"]
    queries["q500"] = QueryEvaluation(
        query_id="q500",
        metrics=dict(odd.metrics),
        gold=(DocSpan("dé:c", 1, 5),),  # non-ASCII and a ':' in a string
        results=odd.results,
        mapping=odd.mapping,
        error='a "quoted" error',
        status=QueryStatus.ERROR,
    )
    path = tmp_path / "e.json"
    write_evaluation(
        Evaluation(
            queries=queries,
            settings=evaluation.settings,
            metric_names=evaluation.metric_names,
            records=evaluation.records,
        ),
        path,
    )
    read = file_read._read_fast(path)
    assert read is not None
    assert isinstance(read.queries, QueryTable)
    _same(read, _strict(path))
    assert read["q500"].gold == (DocSpan("dé:c", 1, 5),)
    assert read["q500"].error == 'a "quoted" error'


def test_a_query_with_no_results_and_no_gold_is_matched_and_read_the_same(
    tmp_path: Path,
) -> None:
    evaluation = _evaluation(5)
    queries = dict(evaluation.queries)
    queries["q002"] = QueryEvaluation(
        query_id="q002",
        metrics=dict(queries["q002"].metrics),
        status=QueryStatus.MISSING_IN_RUN,
        mapping=MappingStats.of(()),
    )
    path = tmp_path / "e.json"
    write_evaluation(
        Evaluation(
            queries=queries,
            settings=evaluation.settings,
            metric_names=evaluation.metric_names,
            records=evaluation.records,
        ),
        path,
    )
    assert all(PLAIN_LINE.fullmatch(line.encode()) for line in _query_lines(path))
    read = read_evaluation(path)
    assert isinstance(read.queries, QueryTable)
    _same(read, _strict(path))
    assert read["q002"].results == ()
    assert read["q002"].status is QueryStatus.MISSING_IN_RUN


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('"recall@1": ', '"recall\\u00401": '),  # an escape: the same name
        ('"mrr": ', '"mr\\u0072": '),
        ('"recall@5": ', '"recall@5":\t'),  # other JSON whitespace
    ],
)
def test_metrics_the_pattern_passes_but_the_columns_do_not_are_read_the_same(
    tmp_path: Path, old: str, new: str
) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(1100), path)
    lines = path.read_text(encoding="utf-8").split("\n")
    at = next(i for i, line in enumerate(lines) if '"query_id": "q600"' in line)
    lines[at] = lines[at].replace(old, new, 1)
    path.write_text("\n".join(lines), encoding="utf-8")
    # the pattern lets it through; the checks of the joined metrics send it the longer way
    assert PLAIN_LINE.fullmatch(lines[at].strip().rstrip(",").encode()) is not None
    read = file_read._read_fast(path)
    assert read is not None
    _same(read, _strict(path))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('"recall@1": ', '"recall@1": ['),  # a list where a number belongs
        ('"recall@5": ', '"recall@5": {"x": 1}, "y": '),  # a nested object
        ('"mrr": ', '"mrr": "é", "z": '),  # non-ASCII, a string value
        ('"mrr": ', '"mrr": 0.5, "mr\\u0072": '),  # a name repeated through an escape
    ],
)
def test_bad_metrics_the_pattern_passes_are_left_to_the_strict_path(
    tmp_path: Path, old: str, new: str
) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(1100), path)
    lines = path.read_text(encoding="utf-8").split("\n")
    at = next(i for i, line in enumerate(lines) if '"query_id": "q600"' in line)
    lines[at] = lines[at].replace(old, new, 1)
    if new.endswith("["):  # close the list after the value
        head, _, rest = lines[at].partition(new)
        value, comma, tail = rest.partition(",")
        lines[at] = head + new + value + "]" + comma + tail
    path.write_text("\n".join(lines), encoding="utf-8")
    assert file_read._read_fast(path) is None
    with pytest.raises(EvaluationFileError, match=r"e\.json"):
        read_evaluation(path)


def _columns_of(read: Evaluation) -> object:
    assert isinstance(read.queries, QueryTable)
    return getattr(read.queries.builder, "__self__", None)


@pytest.mark.parametrize("n", [1, 2, 1023, 1024, 1025, 2100])
def test_our_writer_s_file_is_matched_where_it_stands(tmp_path: Path, n: int) -> None:
    path = tmp_path / "e.json"
    write_evaluation(_evaluation(n), path)
    read = file_read._read_fast(path)
    assert read is not None
    columns = _columns_of(read)
    assert columns is not None
    assert getattr(columns, "buffer", None) is not None
    _same(read, _strict(path))  # the first and the last query (no comma) built alike


def _strict_or_error(path: Path, monkeypatch: pytest.MonkeyPatch) -> Evaluation | str:
    """What the strict reader alone makes of ``path``: its evaluation, or its error's text
    (the fast path switched off for this call only; the caller's other patches stay)."""
    with monkeypatch.context() as patched:
        patched.setattr(evaluation_file, "_read_fast", lambda _: None)
        try:
            return read_evaluation(path)
        except EvaluationFileError as err:
            return str(err)


@pytest.mark.parametrize(
    "edit",
    [
        lambda text: text.replace("\n", "\r\n"),
        lambda text: text.replace('    {"query_id": "q007"', '\t{"query_id": "q007"'),
        lambda text: text.replace('    {"query_id": "q007"', '\n    {"query_id": "q007"'),
        lambda text: text.replace('    {"query_id": "q007"', '     {"query_id": "q007"'),
        lambda text: text.replace('"q006"', '"q006" ', 1),
        lambda text: text.replace('    {"query_id": "q008"', '    {"query_id": "q008" '),
        lambda text: text.replace("\n  ]\n}", "\n  ]}"),
        lambda text: text.replace("\n  ]\n}", "]\n}"),
        lambda text: text.replace("\n  ]\n}", ",\n  ]\n}"),
        lambda text: text.replace("\n  ]\n}", "\n  ]\n}\n\n  "),
        lambda text: text.replace("\n  ]\n}", "\n  ]\n} x"),
        lambda text: text.replace("\n  ]\n}", "\n  ]\n"),
        lambda text: text.replace("},\n    {", "}\n    {", 1),  # no comma between two
        lambda text: text.replace("},\n    {", "},,\n    {", 1),
        lambda text: text.replace('"query_id": "q009"', '"query_id": "q002"'),
        lambda text: text.replace('"recall@1": 1.0', '"recall@1": true', 1),
        lambda text: text.replace('"recall@1": 1.0', '"recall@1": null', 1),
        lambda text: text.replace('"recall@1": 1.0', '"recall@1": [1.0]', 1),
    ],
)
def test_a_file_not_laid_out_as_usual_reads_as_the_strict_path_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: object
) -> None:
    _reads_edited_as_strict(tmp_path / "e.json", monkeypatch, edit)


def _reads_edited_as_strict(path: Path, monkeypatch: pytest.MonkeyPatch, edit: object) -> None:
    """A 40-query evaluation written to ``path``, edited by ``edit`` (which must change it),
    reads as the strict reader reads it: the same evaluation, or the same error."""
    write_evaluation(_evaluation(40), path)
    text = path.read_text(encoding="utf-8")
    edited = edit(text)  # type: ignore[operator]
    assert edited != text
    path.write_bytes(edited.encode("utf-8"))
    strict = _strict_or_error(path, monkeypatch)
    if isinstance(strict, str):
        with pytest.raises(EvaluationFileError) as raised:
            read_evaluation(path)
        assert str(raised.value) == strict
    else:
        read = read_evaluation(path)
        _same(read, strict)
        assert read.queries.keys() == strict.queries.keys()


def test_metric_names_that_say_true_keep_the_value_types_checked(tmp_path: Path) -> None:
    names = ("true_hits", "recall@1")
    queries = {
        f"q{i}": QueryEvaluation(query_id=f"q{i}", metrics={"true_hits": float(i), "recall@1": 0.5})
        for i in range(3)
    }
    evaluation = Evaluation(
        queries=queries,
        settings=EvaluationSettings(k=(1,), created_at="2026-01-01T00:00:00+00:00"),
        metric_names=names,
        records=3,
    )
    path = tmp_path / "e.json"
    write_evaluation(evaluation, path)
    read = file_read._read_fast(path)
    assert read is not None
    assert isinstance(read.queries, QueryTable)
    assert read.metric("true_hits") == {"q0": 0.0, "q1": 1.0, "q2": 2.0}
    text = path.read_text(encoding="utf-8").replace('"true_hits": 1.0', '"true_hits": true')
    path.write_text(text, encoding="utf-8")
    assert file_read._read_fast(path) is None  # a bool: left to the strict path
    assert read_evaluation(path).metric("true_hits") == {"q0": 0.0, "q1": 1.0, "q2": 2.0}


def test_a_columnar_evaluation_is_freed_without_the_garbage_collector(tmp_path: Path) -> None:
    import gc
    import weakref

    path = tmp_path / "e.json"
    write_evaluation(_evaluation(40), path)
    read = file_read._read_fast(path)
    assert read is not None
    columns = _columns_of(read)
    assert columns is not None
    assert read["q003"] == _strict(path)["q003"]
    gone = weakref.ref(columns)
    collecting = gc.isenabled()
    gc.disable()
    try:
        del read, columns
        assert gone() is None  # no cycle between the table and its columns
    finally:
        if collecting:
            gc.enable()
