"""Repeated baselines (compare/noise.py): bands, flaky queries, classification from the nearest
band edge, the per-query mean as the reference, independence from the baselines' order."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from spanchor_core.compare import (
    MappingMetricTable,
    TableSettings,
    compare,
    read_comparison,
    write_comparison,
)
from spanchor_core.compare.model import ChangeStatus
from spanchor_core.compare.noise import measure_noise, repeated_baseline
from spanchor_core.compare.statistics import paired_statistics
from spanchor_core.errors import InputError
from spanchor_core.policy import Policy, load_policy, with_noise, write_policy
from spanchor_core.policy.write import check_policy_target

R5 = "recall@5"
POLICY = Policy(max_drop={R5: 0.1}, bootstrap={"n_resamples": 200, "seed": 3})


def _table(values: dict[str, float], gold: str = "g1") -> MappingMetricTable:
    return MappingMetricTable.from_mapping(
        {qid: {R5: v, "hit@5": float(v > 0)} for qid, v in values.items()},
        settings=TableSettings(k=(5,), min_overlap=0.5, corpus_fingerprint="c", gold_sha256=gold),
    )


# q2 is the one flaky query: 0.5 in one baseline, 1.0 in the other two.
B1 = _table({"q1": 1.0, "q2": 0.5, "q3": 0.8})
B2 = _table({"q1": 1.0, "q2": 1.0, "q3": 0.8})
B3 = _table({"q1": 1.0, "q2": 1.0, "q3": 0.8})
BASELINES = [("b1", B1), ("b2", B2), ("b3", B3)]


def test_exactly_the_query_that_differs_is_flaky_with_its_band() -> None:
    combined = repeated_baseline(BASELINES)
    result = compare(combined, _table({"q1": 1.0, "q2": 1.0, "q3": 0.8}), POLICY)
    assert result.noise is not None
    assert result.noise.baselines == 3
    assert result.noise.flaky_ids == ("q2",)
    assert result.noise.flaky[0].bands == ((R5, 0.5, 1.0),)  # hit@5 is 1 in every baseline
    report = measure_noise(BASELINES)
    assert report.flaky_queries() == ("q2",)
    row = next(r for r in report.metrics if r.metric == R5)
    assert row.max_spread == pytest.approx(0.5)
    # baseline means of recall@5: b1 (1 + 0.5 + 0.8) / 3, b2 and b3 (1 + 1 + 0.8) / 3
    assert row.mean_spread == pytest.approx(0.5 / 3)
    assert report.noise_floor([R5]) == pytest.approx(0.5 / 3)


def test_a_candidate_inside_the_band_is_not_a_regression() -> None:
    combined = repeated_baseline(BASELINES)
    # 0.55 is 0.45 below the 1.0 runs (a regression against any one of them), inside [0.5, 1]
    result = compare(combined, _table({"q1": 1.0, "q2": 0.55, "q3": 0.8}), POLICY)
    assert result.query("q2").status is ChangeStatus.UNCHANGED
    assert result.query("q2").change(R5).delta == 0.0
    assert result.passed
    single = compare(B2, _table({"q1": 1.0, "q2": 0.55, "q3": 0.8}), POLICY)
    assert single.query("q2").status is ChangeStatus.REGRESSION


def test_outside_the_band_the_delta_is_measured_from_the_nearest_edge() -> None:
    combined = repeated_baseline(BASELINES)
    # 0.45 is 0.05 below the band's low edge 0.5: within max_drop 0.1
    allowed = compare(combined, _table({"q1": 1.0, "q2": 0.45, "q3": 0.8}), POLICY)
    assert allowed.query("q2").change(R5).delta == pytest.approx(-0.05)
    assert allowed.query("q2").status is ChangeStatus.UNCHANGED
    # 0.3 is 0.2 below it: a regression of 0.2 (not 0.7 from the 1.0 runs, not 0.53 from the mean)
    failed = compare(combined, _table({"q1": 1.0, "q2": 0.3, "q3": 0.8}), POLICY)
    change = failed.query("q2").change(R5)
    assert failed.query("q2").status is ChangeStatus.REGRESSION
    assert change.delta == pytest.approx(-0.2)
    assert change.baseline == pytest.approx(2.5 / 3)  # the shown baseline is the per-query mean
    assert not failed.passed
    # a query that never varied keeps the one-baseline rule: 0.8 -> 0.65 is a drop of 0.15
    strict = compare(combined, _table({"q1": 1.0, "q2": 1.0, "q3": 0.65}), POLICY)
    assert strict.query("q3").status is ChangeStatus.REGRESSION
    # above the band's high edge is an improvement
    better = compare(combined, _table({"q1": 1.0, "q2": 1.0, "q3": 0.9}), POLICY)
    assert better.query("q3").status is ChangeStatus.IMPROVED


def test_the_statistics_use_the_per_query_mean_of_the_baselines() -> None:
    combined = repeated_baseline(BASELINES)
    candidate = _table({"q1": 0.9, "q2": 0.6, "q3": 0.8})
    result = compare(combined, candidate, POLICY)
    row = result.aggregate(R5)
    expected = np.array([[0.9 - 1.0, 0.6 - 2.5 / 3, 0.0]])
    assert row.delta == pytest.approx(float(expected.mean()))
    assert row.baseline_mean == pytest.approx((1.0 + 2.5 / 3 + 0.8) / 3)
    stats = paired_statistics(expected, n_resamples=200, confidence=0.95, seed=3)
    assert row.ci_low == pytest.approx(float(stats.ci_low[0]))
    assert row.p_value == pytest.approx(float(stats.p_value[0]))


def test_the_order_of_the_baselines_does_not_change_the_bytes(tmp_path: Path) -> None:
    candidate = _table({"q1": 0.9, "q2": 0.3, "q3": 0.1 + 0.7})
    # values whose float sum depends on the order: 0.1 + 0.2 + 0.7 != 0.7 + 0.2 + 0.1
    odd = [
        ("x", _table({"q1": 0.1, "q2": 0.5, "q3": 0.8})),
        ("y", _table({"q1": 0.2, "q2": 1.0, "q3": 0.8})),
        ("z", _table({"q1": 0.7, "q2": 1.0, "q3": 0.8})),
    ]
    texts = set()
    for number, order in enumerate(itertools.permutations(odd)):
        path = tmp_path / f"c{number}.json"
        write_comparison(compare(repeated_baseline(list(order)), candidate, POLICY), path)
        texts.add(path.read_bytes())
    assert len(texts) == 1
    noise = json.loads(texts.pop())["noise"]
    assert noise["baselines"] == 3
    assert [row["query_id"] for row in noise["flaky_queries"]] == ["q1", "q2"]


def test_one_baseline_writes_a_null_noise_block(tmp_path: Path) -> None:
    write_comparison(compare(B1, B2, POLICY), tmp_path / "c.json")
    data = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    assert data["noise"] is None  # schema 2 writes every block, null when it does not apply


def test_baselines_of_another_gold_set_are_bad_input_naming_the_file() -> None:
    other = _table({"q1": 1.0, "q2": 1.0, "q3": 0.8}, gold="g2")
    with pytest.raises(InputError) as caught:
        repeated_baseline([("runs/a.json", B1), ("runs/b.json", other)])
    assert str(caught.value).startswith("runs/b.json: this baseline's gold-set hash is 'g2'")
    with pytest.raises(InputError, match="more than once"):
        repeated_baseline([("a", B1), ("a", B2)])
    with pytest.raises(InputError, match="at least two"):
        measure_noise([B1])


def test_a_query_missing_from_one_baseline_is_banded_by_the_others() -> None:
    partial = _table({"q1": 1.0, "q3": 0.8})
    combined = repeated_baseline([("a", B1), ("b", partial)])
    assert combined.metric(R5)["q2"] == 0.5
    assert measure_noise([("a", B1), ("b", partial)]).queries == 2


def test_with_noise_adds_flaky_queries_and_never_lowers_the_floor(tmp_path: Path) -> None:
    policy = Policy(max_drop={R5: 0.1}, flaky_queries=("q9",), noise_floor=0.01)
    updated = with_noise(policy, flaky_queries=["q2", "q9"], noise_floor=0.005)
    assert updated.flaky_queries == ("q2", "q9")
    assert updated.noise_floor == 0.01
    assert with_noise(policy, noise_floor=0.05).noise_floor == 0.05
    target = write_policy(updated, tmp_path / "p.json")
    assert load_policy(target) == updated


def test_a_policy_is_never_written_over_an_input(tmp_path: Path) -> None:
    run = tmp_path / "base.json"
    run.write_text("{}", encoding="utf-8")
    policy = tmp_path / "policy.json"
    policy.write_text("{}", encoding="utf-8")
    with pytest.raises(InputError, match="is an input"):
        check_policy_target(run, inputs=[run])
    with pytest.raises(InputError, match="not the policy being updated"):
        check_policy_target(policy, inputs=[run])
    with pytest.raises(InputError, match="written as JSON"):
        check_policy_target(tmp_path / "pyproject.toml", updates=tmp_path / "pyproject.toml")
    assert check_policy_target(policy, inputs=[run], updates=policy) == policy
    assert check_policy_target(tmp_path / "new.json", inputs=[run]) == tmp_path / "new.json"


def test_the_noise_block_reads_back(tmp_path: Path) -> None:
    result = compare(
        repeated_baseline(BASELINES), _table({"q1": 1.0, "q2": 0.3, "q3": 0.8}), POLICY
    )
    write_comparison(result, tmp_path / "c.json")
    again = read_comparison(tmp_path / "c.json")
    assert again.noise == result.noise
    write_comparison(again, tmp_path / "d.json")
    assert (tmp_path / "c.json").read_bytes() == (tmp_path / "d.json").read_bytes()
