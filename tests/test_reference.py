"""docs/REFERENCE.md is generated from the settings and policy models and kept current."""

from __future__ import annotations

from pathlib import Path

from spanchor_core.policy import AggregateGate, BootstrapSettings, Policy
from spanchor_core.render.reference import (
    _UNDOCUMENTED,
    EXAMPLE_TOML,
    REFERENCE_PATH,
    field_docs,
    reference_markdown,
    write_reference,
)
from spanchor_core.settings import SpanchorSettings, gate_config_from_pyproject, settings_keys

MODELS = (SpanchorSettings, Policy, AggregateGate, BootstrapSettings)


def test_the_committed_reference_is_current() -> None:
    text = REFERENCE_PATH.read_text(encoding="utf-8")
    assert text == reference_markdown(), "stale: run `python -m spanchor_core.render.reference`"


def test_every_key_is_described() -> None:
    text = reference_markdown()
    for key in settings_keys():
        assert f"| `{key}` |" in text, key
    for model in MODELS:
        docs = field_docs(model)
        for name in model.model_fields:
            assert docs.get(name) or (model, name) in _UNDOCUMENTED, f"{model.__name__}.{name}"


def test_words_for_undocumented_fields_go_once_the_model_documents_them() -> None:
    for model, name in _UNDOCUMENTED:
        assert name in model.model_fields, f"{model.__name__}.{name} is gone"
        assert name not in field_docs(model), f"{model.__name__}.{name}: drop the stand-in"


def test_the_example_is_valid_settings(tmp_path: Path) -> None:
    path = tmp_path / "spanchor.toml"
    path.write_text(EXAMPLE_TOML, encoding="utf-8")
    config = gate_config_from_pyproject(path)
    policy = config.resolved_policy(path)
    assert policy is not None
    assert policy.max_drop == {"recall@5": 0.10, "hit@5": 0.0}
    assert policy.aggregate["recall@10"].basis == "ci_upper"


def test_write_reference(tmp_path: Path) -> None:
    target = write_reference(tmp_path / "REFERENCE.md")
    assert target.read_text(encoding="utf-8") == reference_markdown()
