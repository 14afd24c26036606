"""The notebooks in ``notebooks/`` run top to bottom in a fresh kernel, show what their text
promises, write nothing into the repository, and are committed without outputs.

All notebooks execute once per session, concurrently (module fixture), each in its own kernel
on this interpreter (so it sees exactly the packages under test, whatever kernelspecs the
machine has). Expected numbers are computed here from the library, not copied from a run.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from spanchor_core import (
    ChangeStatus,
    Comparison,
    compare,
    evaluate,
    load_corpus,
    load_policy,
    read_gold,
    read_run,
)

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
QUICKSTART = ROOT / "examples" / "quickstart"
NAMES = sorted(path.stem for path in NOTEBOOKS.glob("*.ipynb"))

CELL_TIMEOUT_SECONDS = 120
"""A hung cell fails the run instead of blocking it forever."""

# What each notebook imports beyond the core: without it, that notebook is skipped, not failed.
REQUIREMENTS: Mapping[str, tuple[str, ...]] = {
    "quickstart": ("matplotlib",),
    "langchain_recording": ("langchain_core", "langchain_text_splitters"),
    "llamaindex_eval": ("llama_index.core", "llama_index.retrievers.bm25"),
}
KERNEL_REQUIREMENTS = ("nbclient", "nbformat", "ipykernel", "jupyter_client")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a missing parent package
        return False


def _missing(modules: tuple[str, ...]) -> list[str]:
    return [module for module in modules if not _installed(module)]


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))
    return data


# -- committed form -----------------------------------------------------------------------------


def test_the_three_notebooks_exist_and_each_has_its_checks() -> None:
    assert NAMES == ["langchain_recording", "llamaindex_eval", "quickstart"]
    assert set(CHECKS) == set(NAMES) == set(REQUIREMENTS)


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_is_stripped(name: str) -> None:
    notebook = _load(name)
    assert (notebook["nbformat"], notebook["metadata"]["kernelspec"]["name"]) == (4, "python3")
    assert set(notebook["metadata"]) <= {"kernelspec", "language_info"}, "no widget state etc."
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert code, "a notebook without code"
    for cell in code:
        where = f"{name}.ipynb cell {cell['id']}"
        assert cell["outputs"] == [], f"{where} has outputs: clear them before committing"
        assert cell["execution_count"] is None, f"{where} has an execution count"
        assert "execution" not in cell["metadata"], f"{where} has execution timing"
    ids = [cell["id"] for cell in notebook["cells"]]
    assert len(ids) == len(set(ids)), "cell ids are unique"


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_is_valid_nbformat(name: str) -> None:
    if _missing(("nbformat",)):
        pytest.skip("nbformat is not installed (pip install -e '.[dev]')")
    import nbformat

    # nbformat's read() is unannotated; validate() raises on any schema violation.
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)  # type: ignore[no-untyped-call]
    nbformat.validate(notebook)


# -- execution ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Executed:
    """One notebook after its run: every output of every code cell, or why it could not run."""

    name: str
    seconds: float
    cells: tuple[dict[str, Any], ...] = ()
    error: str | None = None
    skipped: str | None = None

    def outputs(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for cell in self.cells:
            if cell["cell_type"] == "code":
                for output in cell["outputs"]:
                    yield str(cell["id"]), dict(output)

    @property
    def stdout(self) -> str:
        return "".join(
            str(output["text"])
            for _, output in self.outputs()
            if output["output_type"] == "stream" and output["name"] == "stdout"
        )

    def data(self, mime: str) -> list[str]:
        """Every rich output of one MIME type, in cell order."""
        outputs = [output for _, output in self.outputs()]
        return [str(output["data"][mime]) for output in outputs if mime in output.get("data", {})]


def _snapshot(*folders: Path) -> dict[str, tuple[int, int]]:
    """Size and mtime of every file under ``folders``: proof that a run wrote nothing there."""
    return {
        str(path): (path.stat().st_size, path.stat().st_mtime_ns)
        for folder in folders
        for path in sorted(folder.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def _kernel_manager_class() -> type[Any]:
    from jupyter_client.kernelspec import KernelSpec
    from jupyter_client.manager import AsyncKernelManager

    class ThisInterpreterKernelManager(AsyncKernelManager):
        """A python3 kernel on ``sys.executable``: a user-level kernelspec cannot redirect it."""

        @property
        def kernel_spec(self) -> KernelSpec:
            return KernelSpec(
                argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                display_name="spanchor tests",
                language="python",
            )

    return ThisInterpreterKernelManager


async def _execute(name: str, manager: type[Any], env: Mapping[str, str]) -> Executed:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)  # type: ignore[no-untyped-call]
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_SECONDS,
        kernel_name="python3",
        kernel_manager_class=manager,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    start = time.perf_counter()
    error: str | None = None
    try:
        await client.async_execute(env=dict(env))
    except CellExecutionError as err:
        error = str(err)
    seconds = time.perf_counter() - start
    cells = tuple(dict(cell) for cell in notebook.cells)
    return Executed(name, seconds, cells, error)


async def _execute_all(names: list[str], env: Mapping[str, str]) -> list[Executed]:
    manager = _kernel_manager_class()
    return list(await asyncio.gather(*(_execute(name, manager, env) for name in names)))


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Executed]:
    missing = _missing(KERNEL_REQUIREMENTS)
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (pip install -e '.[dev]')")
    runnable = [name for name in NAMES if not _missing(REQUIREMENTS.get(name, ()))]
    results = {
        name: Executed(name, 0.0, skipped=f"needs {', '.join(_missing(REQUIREMENTS[name]))}")
        for name in NAMES
        if name not in runnable
    }
    state = tmp_path_factory.mktemp("jupyter")
    before = _snapshot(NOTEBOOKS, QUICKSTART)
    with pytest.MonkeyPatch.context() as patch:
        # Some jupyter_core 5.x releases warn (DeprecationWarning) about their move to
        # platformdirs unless this is set; under -W error that would fail the run.
        patch.setenv("JUPYTER_PLATFORM_DIRS", "1")
        # Connection files and IPython's profile go to a temporary folder, not the home.
        patch.setenv("JUPYTER_RUNTIME_DIR", str(state / "runtime"))
        patch.setenv("IPYTHONDIR", str(state / "ipython"))
        patch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # debugpy's frozen-modules note
        patch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend draws the plots
        start = time.perf_counter()
        done = asyncio.run(_execute_all(runnable, dict(os.environ)))
        total = time.perf_counter() - start
    results.update((result.name, result) for result in done)
    timings = ", ".join(f"{r.name} {r.seconds:.1f} s" for r in done)
    print(f"notebooks executed concurrently in {total:.1f} s ({timings})")
    assert _snapshot(NOTEBOOKS, QUICKSTART) == before, "a notebook wrote into the repository"
    return results


def _run(executed: Mapping[str, Executed], name: str) -> Executed:
    result = executed[name]
    if result.skipped is not None:
        pytest.skip(f"{name}.ipynb {result.skipped}")
    return result


WARNING = re.compile(r"\b\w*(Warning|Error)\b|Traceback")


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_top_to_bottom_quickly_and_cleanly(
    executed: Mapping[str, Executed], name: str
) -> None:
    result = _run(executed, name)
    assert result.error is None, f"{name}.ipynb failed:\n{result.error}"
    for cell_id, output in result.outputs():
        assert output["output_type"] != "error", f"{name}.ipynb cell {cell_id} raised"
        if output["output_type"] == "stream" and output["name"] == "stderr":
            text = str(output["text"])
            assert not WARNING.search(text), f"{name}.ipynb cell {cell_id} warns:\n{text}"
    code = [cell for cell in result.cells if cell["cell_type"] == "code"]
    assert all(cell["execution_count"] is not None for cell in code), "every cell ran"
    assert f"repository: {ROOT}\n" in result.stdout, "found the checkout from notebooks/"


# -- what each notebook shows -------------------------------------------------------------------


def _verdict(comparison: Comparison) -> str:
    c = comparison.counts
    word = "PASS" if comparison.passed else "FAIL"
    return (
        f"{word}: {c['compared']} queries compared — {c['regressed']} regressed, "
        f"{c['improved']} improved, {c['unchanged']} unchanged\nexit code {comparison.exit_code}\n"
    )


def check_quickstart(result: Executed) -> None:
    corpus = load_corpus(QUICKSTART / "docs")
    gold = read_gold(QUICKSTART / "gold.jsonl")
    policy = load_policy(QUICKSTART / "spanchor.toml")
    baseline = evaluate(corpus, gold, read_run(QUICKSTART / "runs" / "baseline.jsonl"))
    candidate = evaluate(corpus, gold, read_run(QUICKSTART / "runs" / "candidate.jsonl"))
    fixed = evaluate(corpus, gold, read_run(QUICKSTART / "runs" / "candidate-overlap.jsonl"))
    comparison = compare(baseline, candidate, policy)
    assert comparison.exit_code == 1, "the example's candidate regresses"
    out = result.stdout
    assert _verdict(comparison) in out
    assert _verdict(compare(baseline, fixed, policy)) in out
    assert "PASS: " in out, "the fix passes"
    # The per-query table: one line per query whose scores moved, regressions marked.
    moved = [row for row in comparison.queries if any(c.delta for c in row.changes)]
    rows = re.findall(r"^(q\d+) +(regressed|allowed|improved) ", out, flags=re.MULTILINE)
    assert len(rows) == len(moved)
    assert {qid for qid, what in rows if what == "regressed"} == {
        row.query_id for row in comparison.queries if row.status is ChangeStatus.REGRESSION
    }
    worst = comparison.regressions()[0]
    assert f"worst regression: {worst.query_id} — {gold[worst.query_id].question}\n" in out
    assert "⟦" in out, "the lost evidence is marked in its sentence"
    assert re.search(r"wrote \S+report\.html \(\d+ KiB\)", out)
    # Rich display: two evaluations and a comparison as HTML, two matplotlib figures.
    html = result.data("text/html")
    assert sum("spanchor evaluation" in page for page in html) == 2
    assert any("FAIL: " in page for page in html)
    assert len(result.data("image/png")) == 2


def _recorded_lines(out: str, file_name: str, expected: int) -> None:
    assert f"{file_name}: {expected + 1} lines (1 header + {expected} retrievals)\n" in out


def _gate_printed(out: str, queries: int) -> None:
    assert re.search(rf"^(PASS|FAIL): {queries} queries compared — .*\nexit code [01]$", out, re.M)


def check_langchain_recording(result: Executed) -> None:
    gold = read_gold(QUICKSTART / "gold.jsonl")
    out = result.stdout
    _recorded_lines(out, "callback.jsonl", len(gold))
    assert f"records={len(gold)}, failures=0)" in out
    assert f"{len(gold)} records, retriever 'langchain:VectorStoreRetriever'" in out
    assert "recorded against this corpus: True\n" in out
    assert "both recordings score the same: True\n" in out
    _gate_printed(out, len(gold))
    html = result.data("text/html")
    assert any("spanchor evaluation" in page for page in html)
    assert any(re.search(r"(PASS|FAIL): ", page) for page in html)


def check_llamaindex_eval(result: Executed) -> None:
    gold = read_gold(QUICKSTART / "gold.jsonl")
    out = result.stdout
    assert f"{len(gold)} retrievals recorded, 0 failures\n" in out
    _recorded_lines(out, "llamaindex.jsonl", len(gold))
    means = dict(re.findall(r"^mean (span_\S+) +(\d\.\d{3})$", out, flags=re.MULTILINE))
    assert set(means) == {
        "span_recall@1",
        "span_recall@5",
        "span_hit@5",
        "span_full_evidence@5",
        "span_mrr",
    }
    assert float(means["span_recall@1"]) <= float(means["span_recall@5"])
    # The span metric inside LlamaIndex and spanchor's evaluation of the recorded run agree.
    match = re.search(r"mean recall@5: (\d\.\d+) \(in RetrieverEvaluator: (\d\.\d+)\)", out)
    assert match is not None
    assert match[1] == match[2] == means["span_recall@5"]
    _gate_printed(out, len(gold))
    assert any("spanchor evaluation" in page for page in result.data("text/html"))


CHECKS: Mapping[str, Callable[[Executed], None]] = {
    "quickstart": check_quickstart,
    "langchain_recording": check_langchain_recording,
    "llamaindex_eval": check_llamaindex_eval,
}


@pytest.mark.parametrize("name", NAMES)
def test_notebook_shows_what_its_text_says(executed: Mapping[str, Executed], name: str) -> None:
    result = _run(executed, name)
    if result.error is not None:
        pytest.fail(f"{name}.ipynb did not run to the end (see the test above)")
    CHECKS[name](result)
