"""JSON Schemas of every file spanchor writes, generated from the pydantic file models.

The generated files live in ``spanchor_core/schemas/`` so that other tools (and people) can
validate spanchor files without Python; ``tests/test_schema.py`` fails when a model changes
and the files were not regenerated. Regenerate with ``python -m spanchor_core.schema``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spanchor_core.compare.file import comparison_json_schema
from spanchor_core.diagnosis import chunk_file_schemas
from spanchor_core.evaluate import evaluation_json_schema
from spanchor_core.gold import gold_json_schemas
from spanchor_core.runs import run_file_schemas

__all__ = ["SCHEMA_DIR", "file_schemas", "render_schema", "write_schema_files"]

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"


def file_schemas() -> dict[str, dict[str, Any]]:
    """``{file name: JSON Schema}`` for each line or file model, named by kind."""
    named: dict[str, dict[str, Any]] = {}
    for key, schema in gold_json_schemas().items():
        named[f"spanchor.{key.replace('-', '.')}.schema.json"] = schema
    for key, schema in run_file_schemas().items():
        named[f"{key}.schema.json"] = schema
    named["spanchor.evaluation.schema.json"] = evaluation_json_schema()
    named["spanchor.comparison.schema.json"] = comparison_json_schema()
    named.update(chunk_file_schemas())
    return dict(sorted(named.items()))


def render_schema(schema: dict[str, Any]) -> str:
    """The exact text written for a schema: stable key order, two-space indent, final newline."""
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_schema_files(directory: Path = SCHEMA_DIR) -> list[Path]:
    """(Re)write every schema file under ``directory``; returns the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in file_schemas().items():
        path = directory / name
        path.write_text(render_schema(schema), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":  # pragma: no cover
    for path in write_schema_files():
        print(path)
