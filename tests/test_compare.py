"""compare(): hand-computed classifications, every failing finding, statistics, the JSON file."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.compare import (
    AggregateChange,
    ChangeStatus,
    Comparison,
    MappingMetricTable,
    MetricTable,
    TableSettings,
    compare,
    paired_statistics,
    read_comparison,
    write_comparison,
)
from spanchor_core.errors import EvaluationFileError, InputError
from spanchor_core.exit_codes import ExitCode
from spanchor_core.policy import AggregateGate, BootstrapSettings, Policy

Values = Mapping[str, Mapping[str, float]]


def table(values: Values, **identity: object) -> MappingMetricTable:
    settings = TableSettings(**identity)  # type: ignore[arg-type]
    return MappingMetricTable.from_mapping(values, settings=settings)


def recall(**values: float) -> MappingMetricTable:
    return table({qid: {"recall@5": value} for qid, value in values.items()})


def codes(comparison: Comparison) -> list[tuple[str, str]]:
    return [(f.severity, f.code) for f in comparison.findings]


RECALL_05 = Policy(max_drop={"recall@5": 0.05})


# -- per-query classification -----------------------------------------------------------------


def test_hand_computed_classification() -> None:
    baseline = recall(a=0.8, b=0.8, c=0.5, d=0.4, e=0.5, f=0.3)
    candidate = recall(a=0.75, b=0.7499, c=0.6, d=0.4, e=0.48, f=0.1 + 0.2)
    result = compare(baseline, candidate, RECALL_05)
    status = {row.query_id: row.status for row in result.queries}
    assert status == {
        "a": ChangeStatus.UNCHANGED,  # drop of exactly max_drop (0.05000000000000004 in floats)
        "b": ChangeStatus.REGRESSION,  # 0.0501 > 0.05
        "c": ChangeStatus.IMPROVED,
        "d": ChangeStatus.UNCHANGED,
        "e": ChangeStatus.UNCHANGED,  # a tolerated drop is not an improvement either
        "f": ChangeStatus.UNCHANGED,  # 0.30000000000000004 - 0.3 is float noise
    }
    assert result.query("f").change("recall@5").delta == 0.0
    assert result.query("b").regressed == ("recall@5",)
    assert result.query("b").change("recall@5").delta == pytest.approx(-0.0501)
    assert not result.passed
    assert result.exit_code == 1
    assert codes(result) == [("error", "regression")]
    assert result.findings[0].query_ids == ("b",)
    assert result.counts == {
        "compared": 6,
        "improved": 1,
        "unchanged": 4,
        "regressed": 1,
        "flaky_regressed": 0,
        "only_in_baseline": 0,
        "only_in_candidate": 0,
        "errors": 1,
        "warnings": 0,
    }


def test_zero_max_drop_fails_on_any_real_drop_but_not_on_noise() -> None:
    policy = Policy(max_drop={"recall@5": 0.0})
    assert compare(recall(a=0.3), recall(a=0.1 + 0.2), policy).passed
    assert not compare(recall(a=0.3), recall(a=0.2999), policy).passed


def test_noise_floor_zero_means_raw_float_comparison() -> None:
    policy = Policy(max_drop={"recall@5": 0.05}, noise_floor=0.0)
    result = compare(recall(a=0.8), recall(a=0.75), policy)
    assert result.query("a").status is ChangeStatus.REGRESSION  # 0.05000000000000004 > 0.05


def test_regression_on_one_metric_wins_over_improvement_on_another() -> None:
    baseline = table({"q": {"recall@5": 0.5, "hit@5": 1.0}})
    candidate = table({"q": {"recall@5": 0.9, "hit@5": 0.0}})
    policy = Policy(max_drop={"recall@5": 0.1, "hit@5": 0.5})
    row = compare(baseline, candidate, policy).query("q")
    assert row.status is ChangeStatus.REGRESSION
    assert row.regressed == ("hit@5",)
    assert row.change("recall@5").status is ChangeStatus.IMPROVED
    assert row.change("hit@5").status is ChangeStatus.REGRESSION


def test_identical_runs_pass() -> None:
    values = {f"q{i}": {"recall@5": i / 10} for i in range(10)}
    result = compare(table(values), table(values), RECALL_05)
    assert result.passed
    assert result.exit_code == 0
    assert result.findings == ()
    assert {row.status for row in result.queries} == {ChangeStatus.UNCHANGED}


def test_metrics_outside_the_policy_are_ignored() -> None:
    baseline = table({"q": {"recall@5": 0.5, "hit@5": 1.0}})
    candidate = table({"q": {"recall@5": 0.5, "hit@5": 0.0}})
    result = compare(baseline, candidate, RECALL_05)
    assert result.passed
    assert [c.metric for c in result.query("q").changes] == ["recall@5"]


def test_regressions_are_sorted_by_largest_drop() -> None:
    baseline = recall(a=1.0, b=1.0, c=1.0, d=1.0)
    candidate = recall(a=0.5, b=0.1, c=1.0, d=0.5)
    result = compare(baseline, candidate, Policy(max_drop={"recall@5": 0.0}))
    assert [row.query_id for row in result.regressions()] == ["b", "a", "d"]
    assert result.regressions()[0].severity == pytest.approx(0.9)
    assert result.findings[0].message.endswith(": b, a, d")


# -- lower-is-better metrics ------------------------------------------------------------------


def test_lower_is_better_metric_regresses_when_it_rises() -> None:
    baseline = table(
        {"up": {"unmapped@5": 0.0}, "down": {"unmapped@5": 3.0}, "same": {"unmapped@5": 1.0}}
    )
    candidate = table(
        {"up": {"unmapped@5": 2.0}, "down": {"unmapped@5": 0.0}, "same": {"unmapped@5": 2.0}}
    )
    result = compare(baseline, candidate, Policy(max_drop={"unmapped@5": 1.0}))
    status = {row.query_id: row.status for row in result.queries}
    assert status == {
        "up": ChangeStatus.REGRESSION,  # +2 unmapped results > 1 allowed
        "down": ChangeStatus.IMPROVED,
        "same": ChangeStatus.UNCHANGED,  # +1 is exactly the allowance
    }
    assert result.aggregate("unmapped@5").direction == "lower"


def test_custom_lower_is_better_metric_and_its_aggregate_gate() -> None:
    policy = Policy(
        max_drop={"cost": 10.0},
        aggregate={"cost": AggregateGate(max_drop=1.0)},
        directions={"cost": "lower"},
    )
    baseline = table({f"q{i}": {"cost": 100.0} for i in range(4)})
    cheaper = table({f"q{i}": {"cost": 90.0} for i in range(4)})
    dearer = table({f"q{i}": {"cost": 105.0} for i in range(4)})
    assert compare(baseline, cheaper, policy).passed
    worse = compare(baseline, dearer, policy)
    assert {row.status for row in worse.queries} == {ChangeStatus.UNCHANGED}  # +5 <= 10
    assert codes(worse) == [("error", "aggregate_gate")]  # mean +5 > 1


# -- allow-list, missing queries, min_queries -------------------------------------------------


def test_flaky_query_regressions_warn_and_do_not_fail() -> None:
    policy = Policy(max_drop={"recall@5": 0.0}, flaky_queries=("b",))
    result = compare(recall(a=1.0, b=1.0), recall(a=1.0, b=0.0), policy)
    assert result.passed
    assert result.query("b").status is ChangeStatus.REGRESSION
    assert result.query("b").flaky
    assert codes(result) == [("warning", "flaky_regression")]
    assert result.counts["flaky_regressed"] == 1
    assert result.regressions(include_flaky=False) == []


def test_flaky_and_real_regressions_are_separate_findings() -> None:
    policy = Policy(max_drop={"recall@5": 0.0}, flaky_queries=("b",))
    result = compare(recall(a=1.0, b=1.0), recall(a=0.0, b=0.0), policy)
    assert codes(result) == [("error", "regression"), ("warning", "flaky_regression")]
    assert not result.passed


def test_missing_queries_fail_by_default() -> None:
    result = compare(recall(a=1.0, b=1.0, c=1.0), recall(a=1.0, d=1.0), RECALL_05)
    assert result.only_in_baseline == ("b", "c")
    assert result.only_in_candidate == ("d",)
    assert [q.query_id for q in result.queries] == ["a"]
    assert codes(result) == [("error", "missing_queries"), ("error", "missing_queries")]
    assert "2 queries are only in the baseline: b, c" in result.findings[0].message
    assert not result.passed


def test_missing_queries_warn_when_asked() -> None:
    policy = Policy(max_drop={"recall@5": 0.05}, on_missing="warn")
    result = compare(recall(a=1.0, b=1.0), recall(a=1.0), policy)
    assert result.passed
    assert codes(result) == [("warning", "missing_queries")]
    assert result.findings[0].query_ids == ("b",)


def test_missing_flaky_query_only_warns() -> None:
    policy = Policy(max_drop={"recall@5": 0.05}, flaky_queries=("b",))
    result = compare(recall(a=1.0, b=1.0), recall(a=1.0), policy)
    assert result.passed
    assert codes(result) == [("warning", "missing_queries")]


def test_min_queries() -> None:
    policy = Policy(max_drop={"recall@5": 0.05}, min_queries=3)
    assert compare(recall(a=1, b=1, c=1), recall(a=1, b=1, c=1), policy).passed
    result = compare(recall(a=1, b=1), recall(a=1, b=1), policy)
    assert codes(result) == [("error", "too_few_queries")]
    assert (
        "2 queries are in both evaluations; the policy needs at least 3"
        in result.findings[0].message
    )


def test_no_common_queries_is_an_error_even_by_default() -> None:
    result = compare(recall(a=1.0), recall(b=1.0), RECALL_05)
    assert ("error", "too_few_queries") in codes(result)
    assert result.aggregate("recall@5").n == 0
    assert result.aggregate("recall@5").delta is None


# -- comparability ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "left", "right", "label"),
    [
        ("k", (1, 5), (5, 10), "K"),
        ("min_overlap", 0.5, 0.3, "min_overlap"),
        ("corpus_fingerprint", "sha256:aa", "sha256:bb", "corpus fingerprint"),
        ("gold_sha256", "x", "y", "gold-set hash"),
    ],
)
def test_settings_mismatch_is_an_error(field: str, left: object, right: object, label: str) -> None:
    values = {"q": {"recall@5": 1.0}}
    result = compare(table(values, **{field: left}), table(values, **{field: right}), RECALL_05)
    assert codes(result) == [("error", "settings_mismatch")]
    assert f"differ in {label}" in result.findings[0].message
    assert not result.passed


def test_unknown_settings_on_one_side_are_not_a_mismatch() -> None:
    values = {"q": {"recall@5": 1.0}}
    known = table(values, k=(5,), min_overlap=0.5, corpus_fingerprint="a", gold_sha256="b")
    assert compare(known, table(values), RECALL_05).passed
    assert compare(known, table(values, k=(5, 5)), RECALL_05).passed  # K lists are sets


def test_policy_metric_missing_from_an_evaluation() -> None:
    baseline = table({"q": {"recall@5": 1.0, "hit@5": 1.0}})
    candidate = table({"q": {"recall@5": 1.0}})
    result = compare(baseline, candidate, Policy(max_drop={"hit@5": 0.1, "recall@5": 0.1}))
    assert codes(result) == [("error", "missing_metric")]
    assert result.findings[0].metric == "hit@5"
    assert "which the candidate does not report" in result.findings[0].message
    assert [a.metric for a in result.aggregates] == ["recall@5"]


def test_non_finite_or_missing_values_are_input_errors() -> None:
    with pytest.raises(InputError, match="candidate's recall@5 for query 'b' is nan"):
        compare(recall(a=1.0, b=1.0), recall(a=1.0, b=math.nan), RECALL_05)
    ragged = table({"a": {"recall@5": 1.0, "hit@5": 1.0}, "b": {"hit@5": 1.0}})
    with pytest.raises(InputError, match="baseline has no recall@5 value for query 'b'"):
        compare(ragged, recall(a=1.0, b=1.0), RECALL_05)
    text = table({"a": {"recall@5": "0.5"}})  # type: ignore[dict-item]
    with pytest.raises(InputError, match="not a number"):
        compare(text, recall(a=1.0), RECALL_05)


# -- no policy, empty policy ------------------------------------------------------------------


def test_no_policy_gates_recall_at_the_largest_k_with_no_drop() -> None:
    baseline = table(
        {"q": {"recall@1": 0.0, "recall@10": 1.0}, "r": {"recall@1": 1.0, "recall@10": 1.0}}
    )
    same_at_10 = table(
        {"q": {"recall@1": 0.0, "recall@10": 1.0}, "r": {"recall@1": 0.0, "recall@10": 1.0}}
    )
    worse_at_10 = table(
        {"q": {"recall@1": 0.0, "recall@10": 0.9}, "r": {"recall@1": 1.0, "recall@10": 1.0}}
    )
    passed = compare(baseline, same_at_10)
    assert passed.passed
    assert passed.policy.max_drop == {"recall@10": 0.0}
    assert not compare(baseline, worse_at_10).passed


def test_no_policy_without_recall_is_an_error() -> None:
    result = compare(table({"q": {"mrr": 1.0}}), table({"q": {"mrr": 1.0}}))
    assert codes(result) == [("error", "no_policy")]


def test_empty_policy_is_an_error() -> None:
    result = compare(recall(q=1.0), recall(q=0.0), Policy())
    assert codes(result) == [("error", "empty_policy")]


# -- aggregate statistics ---------------------------------------------------------------------


def shifted(n: int, shift: float, noise: float = 0.0, seed: int = 1) -> tuple[Values, Values]:
    rng = random.Random(seed)
    base = {f"q{i:04d}": {"recall@5": rng.uniform(0.2, 0.8)} for i in range(n)}
    cand = {
        qid: {"recall@5": row["recall@5"] + shift + rng.uniform(-noise, noise)}
        for qid, row in base.items()
    }
    return base, cand


def test_aggregate_row_hand_computed_means() -> None:
    result = compare(recall(a=1.0, b=0.5), recall(a=0.5, b=0.5), Policy(max_drop={"recall@5": 1}))
    row = result.aggregate("recall@5")
    assert (row.n, row.baseline_mean, row.candidate_mean, row.delta) == (2, 0.75, 0.5, -0.25)
    assert row.direction == "higher"
    # Resamples of the deltas (-0.5, 0): means -0.5, -0.25 or 0 -> the 95% interval spans them.
    assert (row.ci_low, row.ci_high) == (-0.5, 0.0)
    # Exact sign-flip test over the 4 patterns: |sum| >= 0.5 for all of them.
    assert row.p_value == 1.0


def test_p_value_is_one_for_identical_runs() -> None:
    base, _ = shifted(500, 0.0)
    row = compare(table(base), table(base), RECALL_05).aggregate("recall@5")
    assert row.p_value == 1.0
    assert (row.ci_low, row.delta, row.ci_high) == (0.0, 0.0, 0.0)


def test_p_value_is_tiny_for_a_consistent_large_shift() -> None:
    base, cand = shifted(500, -0.1, noise=0.02)
    row = compare(table(base), table(cand), RECALL_05).aggregate("recall@5")
    assert row.p_value == 1 / 2001  # the smallest a 2,000-flip test can report
    assert row.ci_high is not None
    assert row.ci_high < -0.09


def test_exact_p_value_for_few_queries() -> None:
    # Three deltas of +0.25: of the 8 sign patterns only all-plus and all-minus reach |0.75|.
    baseline = recall(a=0.0, b=0.25, c=0.5)
    row = compare(baseline, recall(a=0.25, b=0.5, c=0.75), RECALL_05).aggregate("recall@5")
    assert row.p_value == 2 / 8
    assert row.ci_low == row.ci_high == 0.25  # constant deltas resample to themselves


def test_bootstrap_is_deterministic_for_a_seed_and_varies_with_it() -> None:
    base, cand = shifted(300, -0.01, noise=0.2)
    first = compare(table(base), table(cand), RECALL_05)
    again = compare(table(base), table(cand), RECALL_05)
    other = compare(table(base), table(cand), RECALL_05, seed=1)
    assert first == again
    assert first.seed == 0
    assert other.seed == 1
    assert (first.aggregates[0].ci_low, first.aggregates[0].ci_high) != (
        other.aggregates[0].ci_low,
        other.aggregates[0].ci_high,
    )
    assert first.queries == other.queries


def test_policy_seed_is_used_unless_overridden() -> None:
    base, cand = shifted(100, 0.0, noise=0.2)
    policy = Policy(max_drop={"recall@5": 0.5}, bootstrap=BootstrapSettings(seed=7))
    assert (
        compare(table(base), table(cand), policy).aggregates
        == compare(table(base), table(cand), RECALL_05, seed=7).aggregates
    )


def test_adding_a_metric_leaves_the_other_intervals_unchanged() -> None:
    rng = random.Random(3)
    base = {f"q{i}": {"recall@5": rng.random(), "mrr": rng.random()} for i in range(200)}
    cand = {q: {m: v + rng.uniform(-0.1, 0.1) for m, v in row.items()} for q, row in base.items()}
    one = compare(table(base), table(cand), RECALL_05).aggregate("recall@5")
    two = compare(table(base), table(cand), Policy(max_drop={"recall@5": 0.05, "mrr": 0.05}))
    assert two.aggregate("recall@5") == one


def test_statistics_can_be_switched_off() -> None:
    policy = Policy(max_drop={"recall@5": 0.05}, bootstrap=BootstrapSettings(n_resamples=0))
    row = compare(recall(a=1.0, b=0.5), recall(a=0.9, b=0.5), policy).aggregate("recall@5")
    assert row.delta == pytest.approx(-0.05)
    assert (row.ci_low, row.ci_high, row.p_value) == (None, None, None)


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.text(alphabet="abcdefgh", min_size=1, max_size=4),
        st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1), st.floats(0, 1)),
        min_size=1,
        max_size=30,
    ),
    st.randoms(use_true_random=False),
)
def test_comparison_is_independent_of_query_order(
    rows: dict[str, tuple[float, float, float, float]], shuffler: random.Random
) -> None:
    base = {q: {"recall@5": r[0], "mrr": r[1]} for q, r in rows.items()}
    cand = {q: {"recall@5": r[2], "mrr": r[3]} for q, r in rows.items()}
    policy = Policy(
        max_drop={"recall@5": 0.1}, aggregate={"mrr": AggregateGate(max_drop=0.05, alpha=0.2)}
    )
    order = list(rows)
    shuffler.shuffle(order)
    other = list(rows)
    shuffler.shuffle(other)
    first = compare(table(base), table(cand), policy)
    shuffled = compare(
        table({q: base[q] for q in order}), table({q: cand[q] for q in other}), policy
    )
    assert shuffled == first


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=60))
def test_interval_contains_the_observed_mean_delta(pairs: list[tuple[float, float]]) -> None:
    base = {f"q{i}": {"ndcg@10": b} for i, (b, _) in enumerate(pairs)}
    cand = {f"q{i}": {"ndcg@10": c} for i, (_, c) in enumerate(pairs)}
    row = compare(table(base), table(cand), Policy(max_drop={"ndcg@10": 1})).aggregate("ndcg@10")
    assert row.ci_low is not None
    assert row.ci_high is not None
    assert row.delta is not None
    slack = 1e-12
    assert row.ci_low - slack <= row.delta <= row.ci_high + slack
    assert row.p_value is not None
    assert 0 < row.p_value <= 1


def _statistics_on_one_thread(
    deltas: np.ndarray, n_resamples: int, confidence: float, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The documented algorithm, written plainly: blocks of 2**22 draws, one after another."""
    m, n = deltas.shape
    rows = max(1, (1 << 22) // n)
    constant = np.all(deltas == deltas[:, :1], axis=1)
    boot = np.random.Generator(np.random.PCG64(seed))
    sums = np.zeros((m, n_resamples))
    if (~constant).any():
        for start in range(0, n_resamples, rows):
            stop = min(n_resamples, start + rows)
            index = boot.integers(0, n, size=(stop - start, n))
            for j in np.flatnonzero(~constant):
                sums[j, start:stop] = deltas[j][index].sum(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(sums / n, [tail, 1.0 - tail], axis=1)
    low[constant] = high[constant] = deltas[constant, 0]
    totals = deltas.sum(axis=1)
    bound = np.abs(totals) - 1e-9 * np.abs(deltas).sum(axis=1)
    extreme = np.zeros(m, dtype=np.int64)
    if 2**n <= n_resamples:
        patterns = np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)
        signs = (patterns & 1).astype(np.float64) * 2.0 - 1.0
        p_value = (np.abs(signs @ deltas.T) >= bound).sum(axis=0) / 2.0**n
    else:
        flips = np.random.Generator(np.random.PCG64(seed).jumped())
        for start in range(0, n_resamples, rows):
            count = min(n_resamples, start + rows) - start
            raw = np.frombuffer(flips.bytes((count * n + 7) // 8), dtype=np.uint8)
            kept = np.unpackbits(raw)[: count * n].reshape(count, n).astype(np.float64)
            extreme += (np.abs(2.0 * (kept @ deltas.T) - totals) >= bound).sum(axis=0)
        p_value = (1.0 + extreme) / (1.0 + n_resamples)
    p_value[np.all(deltas == 0.0, axis=1)] = 1.0
    return low, high, p_value


@pytest.mark.parametrize(
    ("m", "n", "n_resamples"),
    [(1, 20_000, 700), (3, 20_001, 431), (2, 13, 2000), (3, 9, 2000), (2, 1, 50), (1, 5, 7)],
)
def test_paired_statistics_are_bit_for_bit_those_of_one_thread(
    m: int, n: int, n_resamples: int
) -> None:
    rng = np.random.default_rng(n)
    deltas = np.round(rng.random((m, n)) - 0.5, 4)
    if m > 1:
        deltas[1] = 0.25  # constant: resamples to itself
    if m > 2:
        deltas[2] = 0.0
    for seed in (0, 7):
        got = paired_statistics(deltas, n_resamples=n_resamples, confidence=0.9, seed=seed)
        expected = _statistics_on_one_thread(deltas, n_resamples, 0.9, seed)
        for value, wanted in zip((got.ci_low, got.ci_high, got.p_value), expected, strict=True):
            assert value.tobytes() == wanted.tobytes()


def test_paired_statistics_refuses_empty_input() -> None:
    with pytest.raises(InputError):
        paired_statistics(np.zeros((1, 0)), n_resamples=10, confidence=0.95, seed=0)


# -- aggregate gates --------------------------------------------------------------------------


def gate_result(gate: AggregateGate, shift: float, noise: float, n: int = 200) -> AggregateChange:
    base, cand = shifted(n, shift, noise=noise)
    policy = Policy(aggregate={"recall@5": gate})
    return compare(table(base), table(cand), policy).aggregate("recall@5")


def test_mean_gate() -> None:
    assert gate_result(AggregateGate(max_drop=0.02), -0.01, 0.0).gate_passed is True
    assert gate_result(AggregateGate(max_drop=0.02), -0.03, 0.0).gate_passed is False


def test_ci_gates_on_a_noisy_small_drop() -> None:
    # Mean drop ~0.03 with wide noise: the optimistic bound is within 0.02, the pessimistic not.
    optimistic = gate_result(AggregateGate(max_drop=0.02, basis="ci_upper"), -0.03, 0.3)
    pessimistic = gate_result(AggregateGate(max_drop=0.02, basis="ci_lower"), -0.03, 0.3)
    mean = gate_result(AggregateGate(max_drop=0.02), -0.03, 0.3)
    assert optimistic.ci_low is not None
    assert optimistic.ci_high is not None
    assert optimistic.ci_low < -0.02 < optimistic.ci_high
    assert optimistic.gate_passed is True
    assert pessimistic.gate_passed is False
    assert mean.delta is not None
    assert mean.gate_passed is (mean.delta >= -0.02)


def test_alpha_gate_fails_only_on_a_significant_drop() -> None:
    gate = AggregateGate(max_drop=0.0, alpha=0.05)
    assert gate_result(gate, -0.01, 0.5).gate_passed is True  # a drop, but not significant
    assert gate_result(gate, -0.05, 0.01).gate_passed is False


def test_failed_aggregate_gate_is_an_error_finding() -> None:
    base, cand = shifted(50, -0.1)
    policy = Policy(aggregate={"recall@5": AggregateGate(max_drop=0.05)})
    result = compare(table(base), table(cand), policy)
    assert codes(result) == [("error", "aggregate_gate")]
    assert result.findings[0].metric == "recall@5"
    assert "mean recall@5 changed by -0.1000" in result.findings[0].message
    # Aggregate-only metrics carry deltas but no per-query status.
    assert result.queries[0].changes[0].status is None
    assert result.queries[0].status is ChangeStatus.UNCHANGED


# -- the protocol and the file ----------------------------------------------------------------


def test_mapping_table_satisfies_the_protocol() -> None:
    values = {"b": {"recall@5": 0.5, "mrr": 1.0}, "a": {"mrr": 0.5, "hit@1": 0.0}}
    mapping_table: MetricTable = MappingMetricTable.from_mapping(values)
    assert list(mapping_table) == ["b", "a"]
    assert list(mapping_table.metric_names) == ["recall@5", "mrr", "hit@1"]
    assert mapping_table.metric("mrr") == {"b": 1.0, "a": 0.5}
    assert TableSettings.of(None) == TableSettings()


def sample_comparison() -> Comparison:
    baseline = table(
        {
            "a": {"recall@5": 1.0, "unmapped@5": 0.0},
            "b": {"recall@5": 0.5, "unmapped@5": 1.0},
            "c": {"recall@5": 0.25, "unmapped@5": 0.0},
            "gone": {"recall@5": 1.0, "unmapped@5": 0.0},
        },
        k=(5,),
        corpus_fingerprint="sha256:x",
    )
    candidate = table(
        {
            "a": {"recall@5": 0.0, "unmapped@5": 2.0},
            "b": {"recall@5": 0.75, "unmapped@5": 0.0},
            "c": {"recall@5": 0.25, "unmapped@5": 0.0},
            "new": {"recall@5": 1.0, "unmapped@5": 0.0},
        },
        k=(5,),
    )
    policy = Policy(
        max_drop={"recall@5": 0.1},
        aggregate={"unmapped@5": AggregateGate(max_drop=0.5, basis="ci_lower", alpha=0.5)},
        on_missing="warn",
        flaky_queries=("c",),
    )
    return compare(baseline, candidate, policy, seed=5)


def test_comparison_file_round_trips(tmp_path: Path) -> None:
    comparison = sample_comparison()
    path = tmp_path / "out" / "comparison.json"
    write_comparison(comparison, path)
    assert read_comparison(path) == comparison
    assert [p.name for p in path.parent.iterdir()] == ["comparison.json"]  # no temp file left
    data = path.read_text(encoding="utf-8")
    assert data.startswith('{\n  "kind": "spanchor.comparison",\n  "schema_version": 2,')
    assert data.endswith("}\n")


def test_comparison_file_bytes_are_deterministic(tmp_path: Path) -> None:
    write_comparison(sample_comparison(), tmp_path / "one.json")
    write_comparison(sample_comparison(), tmp_path / "two.json")
    assert (tmp_path / "one.json").read_bytes() == (tmp_path / "two.json").read_bytes()


def test_reading_something_else_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"kind": "spanchor.evaluation", "schema_version": 1}', encoding="utf-8")
    with pytest.raises(EvaluationFileError, match="not a comparison file"):
        read_comparison(path)
    path.write_text('{"kind": "spanchor.comparison", "schema_version": 9}', encoding="utf-8")
    with pytest.raises(EvaluationFileError, match="schema_version 9"):
        read_comparison(path)
    path.write_text('{"kind": "spanchor.comparison", "schema_version": 1}', encoding="utf-8")
    with pytest.raises(EvaluationFileError, match="Field required"):
        read_comparison(path)
    path.write_text("{", encoding="utf-8")
    with pytest.raises(EvaluationFileError, match="not valid JSON"):
        read_comparison(path)


def test_the_exit_code_is_the_one_exit_code_table() -> None:
    policy = Policy(max_drop={"recall@5": 0.0})
    same = table({"a": {"recall@5": 1.0}})
    worse = table({"a": {"recall@5": 0.0}})
    passed, failed = compare(same, same, policy), compare(same, worse, policy)
    assert passed.exit_code is ExitCode.PASS
    assert failed.exit_code is ExitCode.REGRESSION
    assert (passed.exit_code, failed.exit_code) == (0, 1)  # an IntEnum: old callers still work


@pytest.mark.parametrize("module", ["model", "classify", "statistics"])
def test_the_comparison_logic_does_no_file_io(module: str) -> None:
    source = (Path(__file__).parents[1] / "spanchor_core" / "compare" / f"{module}.py").read_text(
        encoding="utf-8"
    )
    for forbidden in ("spanchor_core._io", "import pathlib", "from pathlib", "open(", "import os"):
        assert forbidden not in source, (module, forbidden)


@pytest.mark.parametrize("seed", [-1, True, 1.5])
def test_a_seed_that_is_not_a_non_negative_integer_is_an_input_error(seed: object) -> None:
    # issue 12: --seed -1 reached numpy's SeedSequence as a bare ValueError
    base, cand = shifted(10, 0.0)
    with pytest.raises(InputError, match="seed must be a whole number of at least 0"):
        compare(table(base), table(cand), RECALL_05, seed=seed)  # type: ignore[arg-type]


def test_a_lone_surrogate_in_a_comparison_file_is_an_evaluation_file_error(
    tmp_path: Path,
) -> None:
    # pydantic could not report the bad key and raised UnicodeEncodeError instead
    path = tmp_path / "comparison.json"
    write_comparison(sample_comparison(), path)
    text = path.read_text(encoding="utf-8").replace(
        '"max_drop": {', '"max_drop": {"\\ud800": 0.1, '
    )
    path.write_text(text, encoding="utf-8")
    with pytest.raises(EvaluationFileError, match="lone surrogate U\\+D800"):
        read_comparison(path)


@pytest.mark.parametrize(
    ("base", "cand", "code"),
    [
        ({"context": 57}, {"context": 50}, None),  # one stage, missing queries aside
        ({"context": 57}, {"retrieval": 57}, "stage_mismatch"),  # the context step missed
        ({"postprocessed": 57}, {"retrieval": 57}, "stage_mismatch"),
        ({"retrieval": 57}, {"postprocessed": 57}, "stage_change"),  # a reranker added
        ({"retrieval": 5, "context": 52}, {"retrieval": 5, "context": 52}, None),
        ({"retrieval": 5, "context": 52}, {"retrieval": 10, "context": 104}, None),  # shares
        ({"retrieval": 5, "context": 52}, {"retrieval": 8, "context": 49}, "stage_mismatch"),
        ({"retrieval": 8, "context": 49}, {"retrieval": 5, "context": 52}, "stage_change"),
        ({"context": 57}, {"retrieval": 3, "context": 54}, "stage_mismatch"),
        ({"postprocessed": 57}, {"retrieval": 1, "context": 56}, "stage_mismatch"),
        (None, {"context": 57}, None),  # unknown (an older file, 0.x): nothing to compare
        ({"context": 57}, {}, None),
        ({"context": 57}, {"rewritten": 57}, None),  # a stage of a newer version: unknown
    ],
)
def test_stage_findings(
    base: dict[str, int] | None, cand: dict[str, int] | None, code: str | None
) -> None:
    from types import SimpleNamespace

    from spanchor_core.compare.trust import stage_findings

    found = stage_findings(
        [("baseline", SimpleNamespace(stages=base))], SimpleNamespace(stages=cand)
    )
    assert [f.code for f in found] == ([] if code is None else [code])
    if code is not None:
        assert found[0].severity == ("error" if code == "stage_mismatch" else "warning")
        assert found[0].message.startswith("the baseline was scored at stage ")
