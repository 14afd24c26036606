"""The evaluation writer's per-query text is exactly the standard encoder's, errors included."""

from __future__ import annotations

import json
import math

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.evaluate.file_text import (
    _ORJSON_DIFFERS,
    _query_text,
    queries_text,
    query_json,
)
from spanchor_core.evaluate.model import (
    Evaluation,
    EvaluationSettings,
    LocatedResult,
    MappingStats,
    MetricSummary,
    QueryEvaluation,
    QueryStatus,
    TraceSummary,
)
from spanchor_core.spans import DocSpan

TEXTS = st.text(alphabet=st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ['a"b', "back\\slash", "line\nbreak\t\x00\x1f\x7f", "\u2028", "naïve 🙂"]
)
NUMBERS = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [0.0, -0.0, 1e-07, 1e16, 1e300, 0.1 + 0.2, 5e-324]
)
OPTIONAL_INT = st.none() | st.integers(-(2**70), 2**70)

RESULTS = st.builds(
    LocatedResult,
    rank=st.integers(0, 10**20),
    status=st.sampled_from(["exact", "unmapped", "fuzzy"]) | TEXTS,
    document_id=st.none() | TEXTS,
    start=OPTIONAL_INT,
    end=OPTIONAL_INT,
    confidence=NUMBERS | st.integers(0, 3),
    hint_rejected=st.booleans(),
    resolved_by=st.none() | TEXTS,
    reason=st.none() | TEXTS,
)
QUERIES = st.builds(
    QueryEvaluation,
    query_id=TEXTS,
    metrics=st.dictionaries(TEXTS, NUMBERS | st.integers(-5, 5), max_size=6),
    status=st.sampled_from(list(QueryStatus)),
    gold=st.lists(
        st.builds(DocSpan, TEXTS, st.integers(0, 99), st.integers(0, 99)), max_size=3
    ).map(tuple),
    results=st.lists(RESULTS, max_size=4).map(tuple),
    mapping=st.lists(RESULTS, max_size=4).map(MappingStats.of),
    error=st.none() | TEXTS,
    traces=st.just(()) | st.just((TraceSummary("t", 2, ("a", "b"), "context", None),)),
)


@settings(max_examples=300, deadline=None)
@given(QUERIES)
def test_query_text_is_the_standard_encoders(query: QueryEvaluation) -> None:
    assert _query_text(query) == json.dumps(query_json(query), ensure_ascii=False, allow_nan=False)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_metric_fails_as_before(bad: float) -> None:
    query = QueryEvaluation("q", {"recall@1": bad})
    with pytest.raises(ValueError, match="not JSON compliant") as expected:
        json.dumps(query_json(query), ensure_ascii=False, allow_nan=False)
    with pytest.raises(ValueError, match="not JSON compliant") as got:
        _query_text(query)
    assert str(got.value) == str(expected.value)


def test_odd_keys_and_values_take_the_standard_path() -> None:
    query = QueryEvaluation("q", {"recall@1": 1.0}, mapping=MappingStats({1: 2}))  # type: ignore[dict-item]
    assert _query_text(query) == json.dumps(query_json(query), ensure_ascii=False)
    assert '"counts": {"1": 2}' in _query_text(query)


@settings(max_examples=200, deadline=None)
@given(st.lists(NUMBERS.filter(lambda x: abs(x) < 1e150), min_size=1, max_size=50))
def test_summaries_are_the_plain_formulas(values: list[float]) -> None:
    summary = MetricSummary.of(values)
    mean = math.fsum(values) / len(values)
    variance = math.fsum((value - mean) ** 2 for value in values) / len(values)
    assert (summary.mean, summary.std, summary.min, summary.max, summary.n) == (
        mean,
        math.sqrt(variance),
        min(values),
        max(values),
        len(values),
    )


NAMES = ("recall@1", "mrr", 'odd "name"')
ROW_VALUES = NUMBERS | st.sampled_from([3e-05, 9.99e-05, 1e-4, 10.00001, 1e17, 615.0, 1.0, 0.0])
SAME_NAMES_QUERIES = st.builds(
    QueryEvaluation,
    query_id=TEXTS,
    metrics=st.tuples(*[ROW_VALUES] * len(NAMES)).map(
        lambda values: dict(zip(NAMES, values, strict=True))
    ),
    results=st.lists(RESULTS, max_size=3).map(tuple),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(SAME_NAMES_QUERIES | QUERIES, min_size=1, max_size=8))
def test_a_batch_of_queries_is_the_standard_encoders(queries: list[QueryEvaluation]) -> None:
    # the batch writes its metrics through orjson: every value, tiny, huge or not a float,
    # must come out as the standard encoder writes it
    expected = "".join(
        ",\n" + json.dumps(query_json(q), ensure_ascii=False, allow_nan=False) for q in queries
    )
    assert queries_text(queries, ",\n") == expected


@settings(max_examples=500, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_orjson_writes_a_float_as_repr_unless_marked(value: float) -> None:
    # what _metrics_texts relies on: orjson's text is repr's, or it holds a mark
    text = orjson.dumps(value).decode()
    assert text == repr(value) or any(mark in text for mark in _ORJSON_DIFFERS)


def _one_metric_at_a_time(evaluation: Evaluation) -> dict[str, MetricSummary]:
    return {
        name: MetricSummary.of([query.metrics[name] for query in evaluation.queries.values()])
        for name in evaluation.metric_names
    }


def test_the_written_aggregates_are_one_metric_at_a_time() -> None:
    # the writer takes evaluation.aggregates(), read in one pass: the same numbers
    queries = {
        f"q{n}": QueryEvaluation(f"q{n}", {"a": n / 7, "b": float(n % 3)}) for n in range(50)
    }
    evaluation = Evaluation(queries, EvaluationSettings(), ("a", "b"))
    assert evaluation.aggregates() == _one_metric_at_a_time(evaluation)
    reordered = dict(queries, q3=QueryEvaluation("q3", {"b": 1.0, "a": 0.5}))
    other = Evaluation(reordered, EvaluationSettings(), ("a", "b"))
    assert other.aggregates() == _one_metric_at_a_time(other)
