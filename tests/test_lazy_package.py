"""``import spanchor_core`` is lazy (PEP 562) and still the same public surface: each name is the
very object its module defines, the type checker's imports and the runtime table agree, and
the functions named like their subpackage (``evaluate``, ``compare``) stay functions."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import spanchor_core

ROOT = Path(__file__).resolve().parents[1]
INIT = ROOT / "spanchor_core" / "__init__.py"


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT
    )
    return done.stdout.strip()


def _typing_imports() -> dict[str, str]:
    """name -> module of the imports under ``if TYPE_CHECKING:`` in the package's __init__."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    return {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


def test_importing_the_package_loads_none_of_the_library() -> None:
    out = _run(
        "import sys, spanchor_core\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'spanchor_core', 'numpy', 'pydantic', 'rapidfuzz', 'orjson'})))"
    )
    assert out.split() == ["spanchor_core", "spanchor_core._version"]


def test_every_public_name_is_the_object_its_module_defines() -> None:
    table = spanchor_core._MODULE_OF
    assert set(table) | {"__version__"} == set(spanchor_core.__all__)
    for name, module in table.items():
        assert getattr(spanchor_core, name) is getattr(importlib.import_module(module), name), name


def test_the_type_checkers_imports_match_the_runtime_table() -> None:
    typing_only = _typing_imports()
    assert set(typing_only) == set(spanchor_core._MODULE_OF)
    for name, module in typing_only.items():
        assert getattr(importlib.import_module(module), name) is getattr(spanchor_core, name), name


@pytest.mark.parametrize("name", ["evaluate", "compare"])
def test_a_function_named_like_its_subpackage_stays_the_function(name: str) -> None:
    # the subpackage imported first, as the library's own modules do, then the name used
    out = _run(
        f"import spanchor_core.{name}, spanchor_core.pipeline, spanchor_core\n"
        f"print(type(spanchor_core.{name}).__name__, callable(spanchor_core.{name}))"
    )
    assert out == "function True"
    assert callable(getattr(spanchor_core, name))


def test_names_not_exported_are_attribute_errors_and_subpackages_still_attributes() -> None:
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        _ = spanchor_core.no_such_name  # type: ignore[attr-defined]
    with pytest.raises(ImportError):
        from spanchor_core import no_such_name  # type: ignore[attr-defined] # noqa: F401
    assert spanchor_core.gold is importlib.import_module("spanchor_core.gold")
    assert set(spanchor_core.__all__) <= set(dir(spanchor_core))


def test_the_notebook_display_comes_with_the_first_name_that_brings_the_models() -> None:
    out = _run(
        "import sys, spanchor_core\n"
        "before = 'spanchor_core.render.html' in sys.modules\n"
        "spanchor_core.read_evaluation\n"
        "print(before, 'spanchor_core.render.html' in sys.modules)"
    )
    assert out == "False True"
