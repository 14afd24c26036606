"""The evaluation writer's per-query text is exactly the standard encoder's, errors included."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.evaluate.file import _query_json, _query_text
from spanchor_core.evaluate.model import (
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
    assert _query_text(query) == json.dumps(_query_json(query), ensure_ascii=False, allow_nan=False)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_metric_fails_as_before(bad: float) -> None:
    query = QueryEvaluation("q", {"recall@1": bad})
    with pytest.raises(ValueError, match="not JSON compliant") as expected:
        json.dumps(_query_json(query), ensure_ascii=False, allow_nan=False)
    with pytest.raises(ValueError, match="not JSON compliant") as got:
        _query_text(query)
    assert str(got.value) == str(expected.value)


def test_odd_keys_and_values_take_the_standard_path() -> None:
    query = QueryEvaluation("q", {"recall@1": 1.0}, mapping=MappingStats({1: 2}))  # type: ignore[dict-item]
    assert _query_text(query) == json.dumps(_query_json(query), ensure_ascii=False)
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
