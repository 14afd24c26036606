"""Policy files: every accepted form, and every way a threshold or metric name can be wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from spanchor_core.errors import EvaluationFileError, InputError
from spanchor_core.policy import (
    DEFAULT_N_RESAMPLES,
    AggregateGate,
    BootstrapSettings,
    Policy,
    default_policy,
    load_policy,
    metric_direction,
    policy_from_mapping,
    policy_from_pyproject,
)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# -- accepted forms ---------------------------------------------------------------------------


def test_spanchor_0x_flat_json_is_read_as_is(tmp_path: Path) -> None:
    path = write(tmp_path, "p.json", '{"recall@5": 0.05, "precision@5": 0.05, "hit@5": 0.1}')
    policy = load_policy(path)
    assert policy.max_drop == {"recall@5": 0.05, "precision@5": 0.05, "hit@5": 0.1}
    assert policy.aggregate == {}
    assert policy.min_queries == 1
    assert policy.on_missing == "fail"


def test_spanchor_0x_nested_thresholds_and_min_query_count(tmp_path: Path) -> None:
    path = write(tmp_path, "p.json", '{"thresholds": {"hit@5": 0.1}, "min_query_count": 20}')
    policy = load_policy(path)
    assert policy.max_drop == {"hit@5": 0.1}
    assert policy.min_queries == 20


def test_spanchor_0x_flat_keys_mixed_with_min_query_count(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, "p.json", '{"recall@5": 0, "min_query_count": 3}'))
    assert policy.max_drop == {"recall@5": 0.0}
    assert policy.min_queries == 3


def test_mean_keys_become_aggregate_gates(tmp_path: Path) -> None:
    # spanchor 0.x silently ignored mean_* keys; here they gate the mean.
    path = write(tmp_path, "p.json", '{"recall@5": 0.05, "mean_ndcg@10": 0.01}')
    policy = load_policy(path)
    assert policy.max_drop == {"recall@5": 0.05}
    assert policy.aggregate == {"ndcg@10": AggregateGate(max_drop=0.01)}
    assert policy.gated_metrics == ("ndcg@10", "recall@5")


def test_rich_json_with_every_field(tmp_path: Path) -> None:
    data = {
        "kind": "spanchor.policy",
        "schema_version": 1,
        "max_drop": {"recall@5": 0.05, "unmapped@5": 2},
        "aggregate": {"mean_mrr": {"max_drop": 0.01, "basis": "ci_upper", "alpha": 0.05}},
        "noise_floor": 1e-6,
        "flaky_queries": ["q9", "q2", "q9"],
        "min_queries": 30,
        "on_missing": "warn",
        "bootstrap": {"n_resamples": 500, "confidence": 0.9, "seed": 7},
        "directions": {"cost": "lower"},
    }
    policy = load_policy(write(tmp_path, "p.json", json.dumps(data, indent=2)))
    assert policy.max_drop == {"recall@5": 0.05, "unmapped@5": 2.0}
    assert policy.aggregate == {"mrr": AggregateGate(max_drop=0.01, basis="ci_upper", alpha=0.05)}
    assert policy.noise_floor == 1e-6
    assert policy.flaky_queries == ("q2", "q9")
    assert policy.min_queries == 30
    assert policy.on_missing == "warn"
    assert policy.bootstrap == BootstrapSettings(n_resamples=500, confidence=0.9, seed=7)
    assert policy.direction("cost") == "lower"


def test_rich_json_round_trips_through_model_dump(tmp_path: Path) -> None:
    policy = Policy(max_drop={"recall@5": 0.05}, aggregate={"mrr": AggregateGate(alpha=0.01)})
    path = write(tmp_path, "p.json", policy.model_dump_json())
    assert load_policy(path) == policy


def test_toml_file(tmp_path: Path) -> None:
    text = (
        "min_queries = 10\n"
        'flaky_queries = ["q3"]\n'
        "[max_drop]\n"
        '"recall@10" = 0.02\n'
        '[aggregate."ndcg@10"]\n'
        'max_drop = 0.0\nbasis = "ci_lower"\n'
    )
    policy = load_policy(write(tmp_path, "policy.toml", text))
    assert policy.max_drop == {"recall@10": 0.02}
    assert policy.aggregate == {"ndcg@10": AggregateGate(max_drop=0.0, basis="ci_lower")}
    assert policy.min_queries == 10
    assert policy.flaky_queries == ("q3",)


PYPROJECT = """\
[project]
name = "demo"

[tool.spanchor.policy]
on_missing = "warn"

[tool.spanchor.policy.max_drop]
"recall@5" = 0.05
"""


def test_pyproject_table(tmp_path: Path) -> None:
    path = write(tmp_path, "pyproject.toml", PYPROJECT)
    expected = Policy(max_drop={"recall@5": 0.05}, on_missing="warn")
    assert policy_from_pyproject(path) == expected
    assert load_policy(path) == expected


def test_pyproject_dispatch_is_by_content_not_name(tmp_path: Path) -> None:
    assert load_policy(write(tmp_path, "settings.toml", PYPROJECT)).on_missing == "warn"


def test_pyproject_without_the_table(tmp_path: Path) -> None:
    path = write(tmp_path, "pyproject.toml", '[project]\nname = "demo"\n')
    with pytest.raises(EvaluationFileError, match=r"no \[tool\.spanchor\.policy\] table"):
        policy_from_pyproject(path)
    with pytest.raises(EvaluationFileError, match="no \\[tool"):
        load_policy(path)
    assert policy_from_pyproject(path, missing_ok=True) is None


def test_json_recognised_by_content_without_suffix(tmp_path: Path) -> None:
    assert load_policy(write(tmp_path, "gate", '  {"hit@3": 0.5}')).max_drop == {"hit@3": 0.5}


def test_byte_order_mark_is_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_bytes(b'\xef\xbb\xbf{"recall@5": 0.05}')
    assert load_policy(path).max_drop == {"recall@5": 0.05}


# -- bad thresholds: each kind, with the line -------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("NaN", "got NaN"),
        ("Infinity", "must be finite"),
        ("-Infinity", "must be finite"),
        ("-0.05", "must not be negative"),
        ('"0.05"', "must be a number, got str"),
        ("true", "must be a number, got bool"),
        ("null", "must be a number, got NoneType"),
        ("[0.05]", "must be a number, got list"),
        ("5", "larger than the whole \\[0, 1\\] range"),
    ],
)
def test_bad_threshold_in_0x_json(tmp_path: Path, value: str, message: str) -> None:
    path = write(tmp_path, "p.json", f'{{\n  "hit@5": 0.1,\n  "recall@5": {value}\n}}\n')
    with pytest.raises(EvaluationFileError, match=message) as caught:
        load_policy(path)
    assert caught.value.path == str(path)
    assert caught.value.line == 3
    assert "recall@5" in str(caught.value)


@pytest.mark.parametrize(
    ("value", "message"),
    [("nan", "got NaN"), ("inf", "must be finite"), ("-1", "negative"), ('"x"', "got str")],
)
def test_bad_threshold_in_toml(tmp_path: Path, value: str, message: str) -> None:
    path = write(tmp_path, "p.toml", f'[max_drop]\n"hit@5" = 0.1\n"mrr" = {value}\n')
    with pytest.raises(EvaluationFileError, match=message) as caught:
        load_policy(path)
    assert caught.value.line == 3


def test_bad_aggregate_threshold_in_rich_json(tmp_path: Path) -> None:
    data = {"max_drop": {"recall@5": 0.05}, "aggregate": {"ndcg@10": {"max_drop": -1}}}
    path = write(tmp_path, "p.json", json.dumps(data, indent=2))
    with pytest.raises(EvaluationFileError, match=r"aggregate\.ndcg@10\.max_drop") as caught:
        load_policy(path)
    assert caught.value.line == 7


def test_bad_noise_floor_and_min_queries() -> None:
    with pytest.raises(EvaluationFileError, match="noise_floor"):
        policy_from_mapping({"max_drop": {"recall@5": 0.1}, "noise_floor": float("nan")})
    with pytest.raises(EvaluationFileError, match="min_queries"):
        policy_from_mapping({"max_drop": {"recall@5": 0.1}, "min_queries": 0})
    with pytest.raises(EvaluationFileError, match="min_queries"):
        policy_from_mapping({"max_drop": {"recall@5": 0.1}, "min_queries": "3"})
    with pytest.raises(EvaluationFileError, match="on_missing"):
        policy_from_mapping({"max_drop": {"recall@5": 0.1}, "on_missing": "ignore"})


# -- bad names --------------------------------------------------------------------------------


def test_misspelt_metric_suggests_the_closest_name(tmp_path: Path) -> None:
    path = write(tmp_path, "p.json", '{\n  "recall@5": 0.05,\n  "recal@5": 0.1\n}\n')
    with pytest.raises(EvaluationFileError, match="did you mean 'recall@5'") as caught:
        load_policy(path)
    assert caught.value.line == 3


def test_misspelt_whole_list_metric_suggestion_keeps_its_form() -> None:
    with pytest.raises(InputError, match="did you mean 'mrr'"):
        metric_direction("mmr")
    with pytest.raises(InputError, match="did you mean 'full_evidence@3'"):
        metric_direction("full_evidense@3")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("recall", "needs a cutoff"),
        ("recall@0", "at least 1"),
        ("recall@05", "at least 1"),
        ("recall@x", "at least 1"),
        ("ndcg", "needs a cutoff"),
        ("retrieved_chars@5", "no better direction"),
        ("bogus@5", "unknown metric"),
    ],
)
def test_metric_grammar_rejections(name: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        metric_direction(name)
    with pytest.raises(EvaluationFileError, match=message):
        policy_from_mapping({name: 0.1})


@pytest.mark.parametrize(
    ("name", "direction"),
    [
        ("recall@5", "higher"),
        ("precision@1", "higher"),
        ("hit@10", "higher"),
        ("full_evidence@3", "higher"),
        ("iou@5", "higher"),
        ("iou", "higher"),
        ("mrr", "higher"),
        ("mrr@10", "higher"),
        ("ndcg@10", "higher"),
        ("ap@5", "higher"),
        ("unmapped@5", "lower"),
        ("unmapped_rate", "lower"),
        ("latency_ms", "lower"),
    ],
)
def test_metric_directions(name: str, direction: str) -> None:
    assert metric_direction(name) == direction


def test_custom_directions_add_names_and_override() -> None:
    assert metric_direction("cost", {"cost": "lower"}) == "lower"
    with pytest.raises(InputError):
        metric_direction("cost")
    policy = Policy(max_drop={"cost": 3.5}, directions={"cost": "lower"})
    assert policy.direction("cost") == "lower"  # and > 1 is fine: not a [0, 1] score


def test_count_metric_may_have_thresholds_above_one() -> None:
    assert Policy(max_drop={"unmapped@5": 2}).max_drop == {"unmapped@5": 2.0}


def test_rich_form_unknown_key_is_refused_with_suggestion(tmp_path: Path) -> None:
    text = json.dumps({"max_drop": {"recall@5": 0.05}, "min_query": 3}, indent=2)
    with pytest.raises(EvaluationFileError, match="did you mean 'min_queries'") as caught:
        load_policy(write(tmp_path, "p.json", text))
    assert caught.value.line == 5


def test_a_misspelt_rich_key_alone_is_named_as_a_policy_key(tmp_path: Path) -> None:
    # With no correct rich key the policy would be read as the 0.x form (metric names as keys)
    # and 'max_dorp' reported as an unknown metric; it is named as the key it almost is.
    text = '[tool.spanchor.policy.max_dorp]\n"recall@5" = 0.1\n'
    path = write(tmp_path, "pyproject.toml", "[tool.spanchor]\n" + text)
    with pytest.raises(EvaluationFileError, match="unknown policy key 'max_dorp'") as caught:
        load_policy(path)
    assert "did you mean 'max_drop'?" in str(caught.value)
    # a 0.x policy of metric names is still read as one
    assert policy_from_mapping({"recall@5": 0.1}).max_drop == {"recall@5": 0.1}


def test_rich_form_metric_at_top_level_is_refused() -> None:
    with pytest.raises(EvaluationFileError, match="go under 'max_drop'"):
        policy_from_mapping({"kind": "spanchor.policy", "recall@5": 0.05})


def test_mean_name_under_max_drop_is_refused() -> None:
    with pytest.raises(EvaluationFileError, match="aggregate"):
        policy_from_mapping({"max_drop": {"mean_recall@5": 0.05}})


# -- bad files --------------------------------------------------------------------------------


def test_empty_policy_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EvaluationFileError, match="gates no metric"):
        load_policy(write(tmp_path, "p.json", "{}"))
    with pytest.raises(EvaluationFileError, match="gates no metric"):
        load_policy(write(tmp_path, "q.json", '{"thresholds": {}, "min_query_count": 5}'))


def test_duplicate_key_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "p.json", '{\n  "recall@5": 0.05,\n  "recall@5": 0.5\n}')
    with pytest.raises(EvaluationFileError, match="more than once"):
        load_policy(path)


def test_invalid_json_reports_the_line(tmp_path: Path) -> None:
    with pytest.raises(EvaluationFileError, match="not valid JSON") as caught:
        load_policy(write(tmp_path, "p.json", '{\n  "recall@5": 0.05,\n}'))
    assert caught.value.line == 3


def test_invalid_toml_reports_the_line(tmp_path: Path) -> None:
    with pytest.raises(EvaluationFileError, match="not valid TOML") as caught:
        load_policy(write(tmp_path, "p.toml", "[max_drop]\nrecall@5 = 0.05\n"))
    assert caught.value.line == 2


def test_non_object_policy(tmp_path: Path) -> None:
    with pytest.raises(EvaluationFileError, match="got list"):
        load_policy(write(tmp_path, "p.json", "[0.05]"))


def test_thresholds_must_be_an_object() -> None:
    with pytest.raises(EvaluationFileError, match="'thresholds' must be an object"):
        policy_from_mapping({"thresholds": [0.05]})


def test_wrong_kind_and_schema_version() -> None:
    with pytest.raises(EvaluationFileError, match=r"kind is 'spanchor\.run'"):
        policy_from_mapping({"kind": "spanchor.run", "max_drop": {"recall@5": 0.1}})
    with pytest.raises(EvaluationFileError, match="unsupported policy schema_version 2"):
        policy_from_mapping({"schema_version": 2, "max_drop": {"recall@5": 0.1}})


def test_yaml_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(EvaluationFileError, match="YAML"):
        load_policy(write(tmp_path, "p.yaml", "recall@5: 0.05\n"))
    with pytest.raises(EvaluationFileError, match="not found"):
        load_policy(tmp_path / "absent.json")


# -- hostile files: every failure is an EvaluationFileError, never a bare Python error ---------

_DEEP = 3_000
_LONG = "1" * 4_400  # beyond int()'s 4,300-digit limit


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("arrays.toml", '[max_drop]\n"recall@5" = ' + "[" * _DEEP + "]" * _DEEP + "\n"),
        ("tables.toml", "noise_floor = " + "{a = " * _DEEP + "1" + "}" * _DEEP + "\n"),
        ("pyproject.toml", "[tool.spanchor.policy]\nmax_drop = " + "[" * _DEEP + "]" * _DEEP),
        ("arrays.json", '{"recall@5": ' + "[" * _DEEP + "]" * _DEEP + "}"),
    ],
)
def test_a_policy_nested_3000_deep_is_an_input_error(tmp_path: Path, name: str, text: str) -> None:
    with pytest.raises(EvaluationFileError, match="nested too deeply") as caught:
        load_policy(write(tmp_path, name, text))
    assert caught.value.path == str(tmp_path / name)


def test_deeply_nested_values_are_refused_with_their_line(tmp_path: Path) -> None:
    dotted = ".".join(["a"] * _DEEP)
    path = write(tmp_path, "p.toml", f'[max_drop]\n"recall@5".{dotted} = 1\n')
    with pytest.raises(EvaluationFileError, match="must be a number, got dict") as caught:
        load_policy(path)
    assert caught.value.line == 2
    assert len(str(caught.value)) < 300


@pytest.mark.parametrize("name", ["p.toml", "p.json"])
def test_a_4400_digit_integer_is_an_input_error_with_its_line(tmp_path: Path, name: str) -> None:
    if name.endswith(".toml"):
        text = f'min_queries = 3\n[max_drop]\n"recall@5" = {_LONG}\n'
    else:
        text = f'{{"min_query_count": 3,\n "recall@5": 0.1,\n "hit@5": {_LONG}}}'
    with pytest.raises(EvaluationFileError, match="an integer of more than 4,300 digits") as caught:
        load_policy(write(tmp_path, name, text))
    assert caught.value.line == 3


def test_an_integer_beyond_the_float_range_is_not_finite() -> None:
    for data in ({"recall@5": 10**400}, {"max_drop": {"recall@5": 10**5000}}):
        with pytest.raises(EvaluationFileError, match="must be finite"):
            policy_from_mapping(data)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("p.toml", f'[max_drop]\n"recall@{_LONG}" = 0.1\n'),
        ("q.toml", f'[aggregate]\n"recall@{_LONG}" = {{max_drop = 0.1}}\n'),
        ("p.json", f'{{\n  "recall@{_LONG}": 0.1\n}}'),
        ("q.json", f'{{\n  "mean_recall@{_LONG}": 0.1\n}}'),
    ],
)
def test_a_4400_digit_cutoff_is_an_input_error(tmp_path: Path, name: str, text: str) -> None:
    with pytest.raises(EvaluationFileError, match="needs a whole number of at least 1") as caught:
        load_policy(write(tmp_path, name, text))
    assert caught.value.line == 2
    assert len(str(caught.value)) < 400  # the name is shown cut short


@pytest.mark.parametrize("cutoff", [_LONG, "1" * 19, "\u00b2", "\uff15", " 5"])
def test_metric_direction_refuses_cutoffs_int_cannot_take_as_written(cutoff: str) -> None:
    with pytest.raises(InputError, match="needs a whole number of at least 1"):
        metric_direction(f"recall@{cutoff}")
    assert metric_direction("recall@" + "9" * 18) == "higher"


def test_default_policy_skips_recall_names_with_unusable_cutoffs() -> None:
    names = [f"recall@{_LONG}", "recall@\u00b2", "recall@7"]
    assert default_policy(names).max_drop == {"recall@7": 0.0}


def test_unreadable_policy_paths_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(EvaluationFileError, match="cannot read policy file"):
        load_policy(tmp_path)  # a directory: IsADirectoryError, an OSError
    with pytest.raises(EvaluationFileError, match="cannot read policy file"):
        load_policy(str(tmp_path / "p.json") + "\0")
    latin1 = tmp_path / "p.json"
    latin1.write_bytes(b'{"recall@5": 0.1, "x\xff": 1}')
    with pytest.raises(EvaluationFileError, match="not UTF-8"):
        load_policy(latin1)


def test_non_string_keys_of_a_mapping_are_input_errors() -> None:
    with pytest.raises(EvaluationFileError, match="keys are metric names, not int"):
        policy_from_mapping({5: 0.1})  # type: ignore[dict-item]


# -- the model and the default ----------------------------------------------------------------


def test_defaults_are_documented_values() -> None:
    policy = Policy(max_drop={"recall@5": 0.0})
    assert policy.noise_floor == 1e-9
    assert policy.bootstrap == BootstrapSettings(n_resamples=DEFAULT_N_RESAMPLES, seed=0)
    assert DEFAULT_N_RESAMPLES == 2000
    assert policy.bootstrap.confidence == 0.95


def test_policy_is_frozen() -> None:
    policy = Policy(max_drop={"recall@5": 0.0})
    with pytest.raises(ValidationError):
        policy.min_queries = 5  # type: ignore[misc]


def test_statistical_gates_need_resamples() -> None:
    with pytest.raises(ValidationError, match="n_resamples is 0"):
        Policy(
            aggregate={"mrr": AggregateGate(basis="ci_upper")},
            bootstrap=BootstrapSettings(n_resamples=0),
        )
    assert Policy(aggregate={"mrr": AggregateGate()}, bootstrap=BootstrapSettings(n_resamples=0))


@pytest.mark.parametrize("alpha", [0.0, 1.0, 1.5, -0.1])
def test_alpha_must_lie_strictly_inside_zero_one(alpha: float) -> None:
    with pytest.raises(ValidationError):
        AggregateGate(alpha=alpha)


def test_default_policy_gates_recall_at_the_largest_k() -> None:
    policy = default_policy(["recall@1", "recall@10", "recall@3", "precision@20", "mrr"])
    assert policy.max_drop == {"recall@10": 0.0}
    with pytest.raises(InputError, match="no recall@K"):
        default_policy(["mrr", "hit@5"])


def test_a_lone_surrogate_metric_name_is_an_evaluation_file_error(tmp_path: Path) -> None:
    # pydantic could not report the bad key and raised UnicodeEncodeError instead
    path = write(tmp_path, "p.json", '{"max_drop": {"\\ud800": 0.1}}')
    with pytest.raises(EvaluationFileError, match="lone surrogate U\\+D800") as caught:
        load_policy(path)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize("name", ["\r", "recall@5\n", "a\u2028b", "\x1b[31mrecall@5"])
def test_a_key_with_control_characters_is_named_on_one_line(name: str, tmp_path: Path) -> None:
    # found by the reader fuzz suite: the key was shown raw before the unknown-metric message
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({name: 0.1}), encoding="utf-8")
    with pytest.raises(EvaluationFileError) as caught:
        load_policy(path)
    message = str(caught.value)
    assert not any(c in message for c in "\n\r\u2028\u2029\x1b"), message
    assert repr(name) in message
