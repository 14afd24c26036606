"""The import layering of spanchor_core, checked from the source (ARCHITECTURE.md draws it).

Each module belongs to a layer; a module may import its own layer and the ones below, never a
higher one, and the package has no import cycle (lazy imports inside functions count too: a
cycle that only closes at call time is still a cycle a reader has to untangle). The core never
imports a framework, and nothing below the CLI imports typer, rich or click.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "spanchor_core"

# Lowest first. A module's layer is that of the longest prefix that names it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "exit_codes", "_version", "_display", "_escape", "_fill", "_heap", "spans"),
    ("_io", "_kind", "outputs"),
    ("corpus", "offsets"),
    ("gold", "runs", "grouping"),
    ("locate", "metrics"),
    ("evaluate", "index_store"),
    ("policy", "compare", "diagnosis", "distributed", "parallel"),
    ("settings", "pipeline", "schema"),
    ("render", "authoring", "importers"),
    ("testing", "cli"),
)
TOP = ("__init__",)  # the curated public surface re-exports from every layer
FRAMEWORKS = ("langchain", "langchain_core", "llama_index", "langsmith", "langgraph")
FRONT_END = ("typer", "rich", "click")
# The only modules allowed to use the front-end libraries.
FRONT_END_OK = ("cli", "render.terminal", "testing")
# Logic that must not do file I/O: it may not import the reading/writing layer.
NO_IO = ("spans", "metrics", "locate", "grouping")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def _imports(path: Path, name: str) -> Iterator[str]:
    """Every module imported anywhere in ``path`` (absolute names, relative ones resolved).

    ``from package import submodule`` imports the submodule, not the package's namespace.
    """
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # Imports under ``if TYPE_CHECKING:`` exist for annotations only; they never run.
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
        for stmt in node.body
        for inner in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
                module = f"spanchor_core.{target}" if target else "spanchor_core"
            elif node.module:
                module = node.module
            else:
                continue
            for alias in node.names:
                inner = _internal(f"{module}.{alias.name}")
                if (
                    inner is not None
                    and (ROOT / Path(*inner.split("."))).with_suffix(".py").exists()
                ) or (
                    inner is not None and (ROOT / Path(*inner.split(".")) / "__init__.py").exists()
                ):
                    yield f"{module}.{alias.name}"
                else:
                    yield module


def _layer(name: str) -> int:
    best, best_len = -1, -1
    for index, names in enumerate(LAYERS):
        for prefix in names:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    return best


def _internal(target: str) -> str | None:
    if target == "spanchor_core":
        return "__init__"
    if target.startswith("spanchor_core."):
        return target.removeprefix("spanchor_core.")
    return None


def _own_module(target: str, modules: dict[str, Path]) -> str:
    # ``from spanchor_core.runs import x`` names a package: that is the module imported.
    while target not in modules and "." in target:
        target = target.rpartition(".")[0]
    return target


def test_every_module_has_a_layer() -> None:
    unplaced = [name for name in _modules() if name not in TOP and _layer(name) < 0]
    assert unplaced == [], "add these modules to LAYERS (and to ARCHITECTURE.md)"


def test_lower_layers_never_import_higher_ones() -> None:
    modules = _modules()
    violations = []
    for name, path in modules.items():
        if name in TOP:
            continue
        for target in _imports(path, name):
            inner = _internal(target)
            if inner is None:
                continue
            if inner == "__init__":
                violations.append(f"{name} imports the top-level package (import the module)")
            elif _layer(inner) > _layer(name):
                violations.append(f"{name} (layer {_layer(name)}) imports {inner}")
    assert violations == []


def test_no_import_cycles() -> None:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges = set()
        for target in _imports(path, name):
            inner = _internal(target)
            if inner is not None and inner != "__init__":
                own = _own_module(inner, modules)
                # A package importing its submodules (re-exports) is an edge like any other:
                # leaving it out would hide a cycle that runs through the package.
                if own != name:
                    edges.add(own)
        graph[name] = edges
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*trail[trail.index(nxt) :], nxt] if nxt in trail else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []


@pytest.mark.parametrize("banned", FRAMEWORKS)
def test_the_core_never_imports_a_framework(banned: str) -> None:
    found = [
        name
        for name, path in _modules().items()
        if any(t == banned or t.startswith(banned + ".") for t in _imports(path, name))
    ]
    assert found == []


def test_only_the_distributed_engine_imports_ray_and_only_inside_functions() -> None:
    # ``import spanchor_core`` must work without the [ray] extra: ray is imported where a
    # cluster is used, in distributed/, never at module level.
    anywhere, at_top = [], []
    for name, path in _modules().items():
        if any(t == "ray" or t.startswith("ray.") for t in _imports(path, name)):
            anywhere.append(name)
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in tree.body:
                if isinstance(node, ast.Import | ast.ImportFrom):
                    names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                    module = node.module if isinstance(node, ast.ImportFrom) else None
                    if module == "ray" or "ray" in names:
                        at_top.append(name)
    assert anywhere, "the Ray engine imports ray somewhere"
    assert all(n.startswith("distributed.") for n in anywhere), anywhere
    assert at_top == []


def test_only_front_ends_import_typer_rich_or_click() -> None:
    found = []
    for name, path in _modules().items():
        if any(name == ok or name.startswith(ok + ".") for ok in FRONT_END_OK):
            continue
        for target in _imports(path, name):
            if target.partition(".")[0] in FRONT_END:
                found.append(f"{name} imports {target}")
    assert found == []


def test_logic_modules_do_no_file_io() -> None:
    found = []
    for name, path in _modules().items():
        if not any(name == p or name.startswith(p + ".") for p in NO_IO):
            continue
        for target in _imports(path, name):
            inner = _internal(target)
            if inner is not None and (inner == "_io" or inner.startswith("_io.")):
                found.append(f"{name} imports {inner}")
        source = path.read_text(encoding="utf-8")
        if "open(" in source.replace("os.open(", ""):
            found.append(f"{name} opens files")
    assert found == []
