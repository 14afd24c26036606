"""The committed JSON Schemas match the file models."""

from __future__ import annotations

from spanchor_core.schema import SCHEMA_DIR, file_schemas, render_schema


def test_committed_schemas_are_current() -> None:
    expected = file_schemas()
    committed = {path.name for path in SCHEMA_DIR.glob("*.schema.json")}
    assert committed == set(expected), "run `python -m spanchor_core.schema` to regenerate"
    for name, schema in expected.items():
        text = (SCHEMA_DIR / name).read_text(encoding="utf-8")
        assert text == render_schema(schema), f"{name} is stale: python -m spanchor_core.schema"


def test_every_schema_names_its_kind_field() -> None:
    for name, schema in file_schemas().items():
        properties = schema.get("properties", {})
        if name.endswith("header.schema.json") or name.count(".") == 3:
            assert "kind" in properties, name
            assert "schema_version" in properties, name
