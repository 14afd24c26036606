"""diagnosis sits beside compare: no renderer, CLI or framework imports; file I/O in one module."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import spanchor_core.diagnosis

PACKAGE = Path(spanchor_core.diagnosis.__file__).resolve().parent
ALLOWED = {
    "spanchor_core._io",
    "spanchor_core._version",
    "spanchor_core.compare",
    "spanchor_core.corpus",
    "spanchor_core.diagnosis",
    "spanchor_core.errors",
    "spanchor_core.evaluate",
    "spanchor_core.gold",
    "spanchor_core.locate",
    "spanchor_core.metrics",
    "spanchor_core.runs",
    "spanchor_core.spans",
}


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_modules_import_only_their_layer_and_only_the_file_module_does_io() -> None:
    for path in sorted(PACKAGE.glob("*.py")):
        ours = {name for name in _imports(path) if name.startswith("spanchor_core")}
        outside = {
            name
            for name in ours
            if not any(name == allowed or name.startswith(allowed + ".") for allowed in ALLOWED)
        }
        assert not outside, f"{path.name} imports {sorted(outside)}"
        source = path.read_text(encoding="utf-8")
        if path.name not in ("inventory_file.py", "__init__.py"):
            assert "spanchor_core._io" not in ours, path.name
            assert "open(" not in source, path.name
            assert "read_text(" not in source, path.name


def test_importing_diagnosis_stays_light() -> None:
    code = (
        "import sys, spanchor_core.diagnosis\n"
        "heavy = ('langchain_core', 'llama_index', 'typer', 'rich', 'click',\n"
        "         'spanchor_core.cli', 'spanchor_core.render.terminal')\n"
        "print([m for m in sys.modules if m.split('.')[0] in heavy or m in heavy\n"
        "       or any(m.startswith(h + '.') for h in heavy)])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
