"""The evaluation writer's text from a scored evaluation's columns is exactly the text of the
queries built from them (which tests/test_evaluation_writer_text.py pins to the standard
encoder's), errors included; and the whole file, redacted or not, is the one written from
the same evaluation held as query objects."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.corpus import Corpus
from spanchor_core.evaluate import Evaluation, evaluate, write_evaluation
from spanchor_core.evaluate.file import _scored_columns, redact_evaluation
from spanchor_core.evaluate.file_text import queries_text
from spanchor_core.evaluate.file_text_columns import scored_queries_text
from spanchor_core.evaluate.model import LocatedResult, QueryStatus, TraceSummary
from spanchor_core.evaluate.scored_columns import ResultColumns, ScoredQueries
from spanchor_core.gold import Anchor, GoldQuery, GoldSet
from spanchor_core.runs import RetrievalRecord, RetrievedResult, Run, RunHeader
from spanchor_core.spans import DocSpan

TEXTS = st.text(alphabet=st.characters(codec="utf-8"), max_size=8) | st.sampled_from(
    ['a"b', "back\\slash", "line\nbreak\t\x00\x1f", "\u2028", "naïve 🙂"]
)
FLOATS = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [0.0, -0.0, 3e-05, 9.99e-05, 1e-4, 1e16, 1e17, 5e-324, 0.1 + 0.2, 1.0]
)
ODD_FLOATS = FLOATS | st.sampled_from([math.nan, math.inf, -math.inf])
OFFSETS = st.none() | st.integers(-(2**62), 2**62)

RESULTS = st.builds(
    LocatedResult,
    rank=st.integers(-(2**62), 2**62),
    status=st.sampled_from(["exact", "unmapped", "fuzzy"]) | TEXTS,
    document_id=st.none() | st.sampled_from(["doc-1", "doc-2"]) | TEXTS,
    start=OFFSETS,
    end=OFFSETS,
    confidence=FLOATS,
    hint_rejected=st.booleans(),
    resolved_by=st.none() | st.sampled_from(["gold", "first"]),
    reason=st.none() | TEXTS,
)
QUERY = st.tuples(
    TEXTS,  # id
    st.sampled_from(list(QueryStatus)),
    st.lists(st.builds(DocSpan, TEXTS, st.integers(0, 99), st.integers(0, 99)), max_size=3),
    st.lists(RESULTS, max_size=5),
    st.none() | TEXTS,  # error
    st.just(()) | st.just((TraceSummary("t", 2, ("a", "b"), "context", "boom"),)),
)


def _table(
    queries: list[tuple[object, ...]], names: tuple[str, ...], values: list[list[float]]
) -> ScoredQueries:
    """The queries in columns, their results added in reverse order (not contiguous in query
    order, as grouped queries are)."""
    columns = ResultColumns()
    firsts = {}
    for row in reversed(range(len(queries))):
        firsts[row] = columns.add_results(queries[row][3])  # type: ignore[arg-type]
    table = ScoredQueries([str(q[0]) for q in queries], names, columns)
    for row, (_, status, gold, results, error, traces) in enumerate(queries):
        mapping = columns.mapping(firsts[row], len(results))  # type: ignore[arg-type]
        table.add(tuple(gold), status, firsts[row], len(results), mapping, error, traces)  # type: ignore[arg-type]
    table.matrix = np.array(values, dtype=np.float64).reshape(len(queries), len(names))
    return table


def _text_or_error(write: Callable[[], str]) -> str:
    try:
        return write()
    except ValueError as err:  # a non-finite number: the same error from both
        return f"ValueError: {err}"


def _same_text_or_error(table: ScoredQueries, start: int, stop: int) -> None:
    built = [table(row) for row in range(start, stop)]
    expected = _text_or_error(lambda: queries_text(built, ",\n    "))
    assert _text_or_error(lambda: scored_queries_text(table, start, stop, ",\n    ")) == expected


@settings(max_examples=300, deadline=None)
@given(
    st.lists(QUERY, min_size=1, max_size=6),
    st.lists(TEXTS, max_size=4, unique=True),
    st.data(),
)
def test_the_columns_text_is_the_built_queries_text(
    queries: list[tuple[object, ...]], names: list[str], data: st.DataObject
) -> None:
    values = [
        data.draw(st.lists(ODD_FLOATS, min_size=len(names), max_size=len(names))) for _ in queries
    ]
    table = _table(queries, tuple(names), values)
    _same_text_or_error(table, 0, len(queries))
    start = data.draw(st.integers(0, len(queries) - 1))
    _same_text_or_error(table, start, len(queries))


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_a_non_finite_confidence_fails_as_the_built_query_does(bad: float) -> None:
    result = LocatedResult(1, "exact", "doc-1", 0, 5, bad)
    table = _table([("q", QueryStatus.SCORED, [], [result], None, ())], ("hit@1",), [[1.0]])
    _same_text_or_error(table, 0, 1)
    with pytest.raises(ValueError, match="not JSON compliant"):
        scored_queries_text(table, 0, 1, "")


TEXT = " ".join(
    f"Sentence {i} is about topic {i * 7 % 13}; the quick brown fox." for i in range(60)
)
CORPUS = Corpus.from_texts({"a": TEXT, "b": TEXT[::-1]})


def _evaluation() -> Evaluation:
    queries, records = [], []
    for q in range(40):
        start = (q * 37) % (len(TEXT) - 60)
        queries.append(
            GoldQuery(
                f"q{q}", f"question {q}?", (Anchor.from_span(CORPUS, "a", start, start + 40),)
            )
        )
        if q % 7 == 3:
            continue  # missing in the run
        results = (
            RetrievedResult(1, TEXT[start : start + 50]),
            RetrievedResult(2, "nothing like it at all"),
            RetrievedResult(3, None, None, "b", 5, 25),
            RetrievedResult(4, "The quick brown fox"),  # everywhere: ambiguous
        )
        records.append(
            RetrievalRecord(
                f"q{q}", f"question {q}?", results, error="timeout: x" if q % 9 == 1 else None
            )
        )
        if q % 11 == 2:  # asked twice: traces
            records.append(
                RetrievalRecord(
                    f"q{q}", f"question {q}?", results[:2], trace_id=f"t{q}", error="slow"
                )
            )
    records.append(RetrievalRecord(None, "an unknown question", ()))
    return evaluate(CORPUS, GoldSet(queries), Run(RunHeader(), records), group="auto")


@pytest.mark.parametrize("redact", [False, True])
def test_the_file_from_columns_is_the_file_from_objects(tmp_path: Path, redact: bool) -> None:
    scored = _evaluation()
    assert _scored_columns(scored) is not None
    objects = Evaluation(
        queries=dict(scored.queries),
        settings=scored.settings,
        metric_names=scored.metric_names,
        missing_in_run=scored.missing_in_run,
        not_in_gold=scored.not_in_gold,
        unresolved=scored.unresolved,
        duplicates=scored.duplicates,
        errors=scored.errors,
        skipped=scored.skipped,
        mapping=scored.mapping,
        warnings=scored.warnings,
        records=scored.records,
        stages=scored.stages,
    )
    assert _scored_columns(objects) is None
    write_evaluation(scored, tmp_path / "columns.json", redact=redact)
    write_evaluation(objects, tmp_path / "objects.json", redact=redact)
    text = (tmp_path / "columns.json").read_text(encoding="utf-8")
    assert text == (tmp_path / "objects.json").read_text(encoding="utf-8")
    data = json.loads(text)
    statuses = {r["status"] for q in data["queries"] for r in q["results"]}
    assert {"exact", "unmapped", "ambiguous"} <= statuses  # the shapes occurred
    assert any("traces" in q for q in data["queries"])
    errors = {q["error"] for q in data["queries"]} - {None}
    assert errors == ({"[redacted]"} if redact else {"timeout: x"})
    assert data["unresolved"] == (["[redacted]"] if redact else ["an unknown question"])


def test_redaction_keeps_the_columns_and_leaves_the_evaluation_as_it_was() -> None:
    scored = _evaluation()
    redacted = redact_evaluation(scored)
    assert _scored_columns(redacted) is not None
    assert list(redacted) == list(scored)
    for qid, query in scored.items():
        other = redacted[qid]
        assert other.error == (None if query.error is None else "[redacted]")
        assert [t.error for t in other.traces] == [
            None if t.error is None else "[redacted]" for t in query.traces
        ]
        assert (other.results, other.metrics, other.mapping) == (
            query.results,
            query.metrics,
            query.mapping,
        )
    assert any(q.error == "timeout: x" for q in scored.values())  # the original is untouched
    assert redacted.mapping == scored.mapping
