"""The notebooks in ``notebooks/`` run top to bottom in a fresh kernel, write nothing into the
repository, say in their prose what their outputs show, and are stored with those outputs.

All notebooks execute once per session, concurrently (module fixture), through the functions
of ``notebooks/execute.py`` — the script that refreshes the stored outputs — each in its own
kernel on this interpreter (so it sees exactly the packages under test). A fresh run is held
against three things:

* the prose: each ``<!-- expect: verdict=... exit_code=... -->`` comment (the convention is in
  execute.py's docstring) against the verdict line it describes;
* the stored outputs: their digests (verdicts, printed figures, kinds of rich output), so that
  the outputs a reader sees cannot go stale;
* the library: expected numbers computed here, not copied from a run.
"""

from __future__ import annotations

import asyncio
import difflib
import importlib.util
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from notebooks import execute as runner
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

if TYPE_CHECKING:
    from nbformat import NotebookNode

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
QUICKSTART = ROOT / "examples" / "quickstart"
NAMES = sorted(path.stem for path in NOTEBOOKS.glob("*.ipynb"))
REFRESH = "run `python notebooks/execute.py` and commit the notebooks it rewrites"

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


def _need_nbformat() -> None:
    if _missing(("nbformat",)):
        pytest.skip("nbformat is not installed (pip install -e '.[dev]')")


def _stored(name: str) -> NotebookNode:
    _need_nbformat()
    return runner.read(NOTEBOOKS / f"{name}.ipynb")


def _notebook(cells: list[tuple[str, str, str | list[str]]]) -> NotebookNode:
    """A notebook of (kind, source, stdout) cells: kind "md" or "code", stdout one text per
    write."""
    _need_nbformat()
    import nbformat

    made: list[dict[str, Any]] = []
    for number, (kind, source, stdout) in enumerate(cells):
        cell: dict[str, Any] = {"id": f"c{number}", "metadata": {}, "source": source}
        if kind == "md":
            cell["cell_type"] = "markdown"
        else:
            writes = [stdout] if isinstance(stdout, str) else stdout
            outputs = [{"output_type": "stream", "name": "stdout", "text": t} for t in writes if t]
            cell.update(cell_type="code", execution_count=None, outputs=outputs)
        made.append(cell)
    data = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": made}
    notebook: NotebookNode = nbformat.from_dict(data)  # type: ignore[no-untyped-call]
    return notebook


def _outputs(notebook: NotebookNode) -> Iterator[tuple[str, dict[str, Any]]]:
    for cell in notebook.cells:
        if cell.cell_type == "code":
            for output in cell.outputs:
                yield str(cell.id), dict(output)


def _texts(output: Mapping[str, Any]) -> Iterator[str]:
    if "text" in output:
        yield str(output["text"])
    for value in output.get("data", {}).values():
        if isinstance(value, str):
            yield value


# -- stored form --------------------------------------------------------------------------------


def test_the_three_notebooks_exist_and_each_has_its_checks() -> None:
    assert NAMES == ["langchain_recording", "llamaindex_eval", "quickstart"]
    assert set(CHECKS) == set(NAMES) == set(REQUIREMENTS)
    assert [path.stem for path in runner.notebook_paths()] == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_stored_notebook_is_valid_nbformat(name: str) -> None:
    import nbformat

    nbformat.validate(_stored(name))


@pytest.mark.parametrize("name", NAMES)
def test_stored_notebook_has_outputs_in_normal_form(name: str) -> None:
    notebook = _stored(name)
    text = (NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8")
    assert runner.dumps(runner.normalise(notebook)) == text, f"{name}.ipynb: {REFRESH}"
    assert (notebook.nbformat, notebook.metadata.kernelspec.name) == (4, "python3")
    ids = [cell.id for cell in notebook.cells]
    assert len(ids) == len(set(ids)), "cell ids are unique"
    assert any(cell.get("outputs") for cell in notebook.cells), f"stored without outputs: {REFRESH}"
    machine = [str(ROOT), tempfile.gettempdir() + os.sep, str(Path.home()) + os.sep]
    leak = re.compile(r"<repository>|<temporary>|(?<![\w.])/(home|Users|tmp|work)/|[A-Z]:\\")
    for cell_id, output in _outputs(notebook):
        for value in _texts(output):
            assert not any(path in value for path in machine), f"cell {cell_id}: a local path"
            found = leak.search(value)
            assert found is None, f"cell {cell_id} shows a path ({found[0]!r}): print it relative"


@pytest.mark.parametrize("name", NAMES)
def test_stored_prose_and_stored_outputs_agree(name: str) -> None:
    notebook = _stored(name)
    assert runner.claims(notebook), "a notebook teaching the gate states its verdicts"
    problems = runner.check_claims(notebook)
    assert not problems, f"{name}.ipynb: prose and stored outputs disagree:\n" + "\n".join(problems)


# -- the convention -----------------------------------------------------------------------------

FAIL_LINE = "FAIL: 57 queries compared — 5 regressed, 0 improved, 52 unchanged\nexit code 1\n"


def test_a_claim_the_output_contradicts_is_reported_with_both_values() -> None:
    # The bug this convention exists for: prose explaining a failure next to a passing run.
    notebook = _notebook(
        [
            ("code", "gate()", "PASS: 57 queries compared — 0 regressed\nexit code 0\n"),
            ("md", "<!-- expect: verdict=FAIL exit_code=1 regressed=5 -->\nWhy it fails", ""),
        ]
    )
    assert runner.check_claims(notebook) == [
        "cell c1 (verdict of cell c0): verdict: the prose says FAIL, the output says PASS",
        "cell c1 (verdict of cell c0): exit_code: the prose says 1, the output says 0",
        "cell c1 (verdict of cell c0): regressed: the prose says 5, the output says 0",
    ]


def test_claims_match_verdicts_in_order_and_every_verdict_needs_one() -> None:
    notebook = _notebook(
        [
            ("md", "It fails. <!-- expect: verdict=FAIL exit_code=1 compared=57 -->", ""),
            ("code", "gate()", FAIL_LINE),
            ("code", "gate()", FAIL_LINE.replace("FAIL", "PASS")),
        ]
    )
    assert runner.check_claims(notebook) == [
        "cell c2 prints 'verdict=PASS exit_code=1 compared=57 improved=0 regressed=5 "
        "unchanged=52' and no prose states it: add <!-- expect: ... --> to the markdown that "
        "explains it"
    ]
    one_claim_too_many = _notebook(
        [("md", "<!-- expect: verdict=FAIL -->\n<!-- expect: exit_code=0 -->", "")]
    )
    assert runner.check_claims(one_claim_too_many) == [
        "cell c0 states 'verdict=FAIL', but no verdict is printed",
        "cell c0 states 'exit_code=0', but no verdict is printed",
    ]


def test_prose_that_names_an_exit_code_needs_a_matching_claim() -> None:
    notebook = _notebook(
        [
            ("code", "gate()", FAIL_LINE),
            ("md", "<!-- expect: verdict=FAIL -->\nOne regression, so the exit\ncode is 0.", ""),
        ]
    )
    assert runner.check_claims(notebook) == [
        "cell c1 says 'exit code 0' without a matching <!-- expect: exit_code=0 ... --> comment"
    ]


def test_a_misspelt_or_malformed_claim_is_named() -> None:
    misspelt = _notebook([("code", "", FAIL_LINE), ("md", "<!-- expect: regresed=5 -->", "")])
    (problem,) = runner.check_claims(misspelt)
    assert problem.startswith("cell c1 (verdict of cell c0): regresed: no such figure")
    assert "regressed" in problem
    malformed = _notebook([("md", "<!-- expect: FAIL -->", "")])
    (problem,) = runner.check_claims(malformed)
    assert "write key=value words" in problem


def test_a_verdict_is_found_whatever_its_word_and_wherever_its_exit_code() -> None:
    stdout = "INCOMPLETE: 50 of 57 queries compared — 2 regressed\n--> exit code 3: unexpected\n"
    (verdict,) = runner.verdicts(_notebook([("code", "", stdout)]))
    assert (verdict.word, verdict.exit_code) == ("INCOMPLETE", 3)
    assert verdict.counts == {"compared": 57, "regressed": 2}


def test_the_digest_keeps_verdict_figures_and_ignores_wording_and_sizes() -> None:
    def digest(stdout: str) -> list[str]:
        return runner.digest(_notebook([("code", "", stdout)]))

    assert digest(FAIL_LINE + "wrote report.html (42 KiB)\nno figures here\n") == [
        "c0 | verdict=FAIL compared=57 regressed=5 improved=0 unchanged=52",
        "c0 | exit code 1",
        "c0 | wrote report.html (… KiB)",
    ]
    reworded = "FAIL: 57 queries compared: 5 regressed, 0 improved, 52 unchanged\nexit code 1\n"
    assert digest(reworded) == digest(FAIL_LINE)
    assert digest(FAIL_LINE.replace("5 regressed", "4 regressed")) != digest(FAIL_LINE)


def test_normalising_merges_streams_drops_counts_and_masks_this_machine() -> None:
    notebook = _notebook([("code", "print(ROOT)", [f"{ROOT}/x\n", "at 0x7f3a2b1c\n"])])
    cell = notebook.cells[0]
    cell.execution_count = 3
    cell.metadata["execution"] = {"iopub.status.idle": "2024-01-01T00:00:00Z"}
    normal = runner.normalise(notebook)
    (output,) = normal.cells[0].outputs
    assert output.text == "<repository>/x\nat 0x…\n"
    assert normal.cells[0].execution_count is None
    assert "execution" not in normal.cells[0].metadata
    assert runner.dumps(runner.normalise(normal)) == runner.dumps(normal), "idempotent"
    assert cell.execution_count == 3, "the input is not changed"


# -- execution ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Result:
    """One notebook's fresh run, raw (as the kernel left it) and normalised, or why it did not
    run."""

    name: str
    run: runner.Executed | None = None
    skipped: str | None = None

    @property
    def executed(self) -> runner.Executed:
        assert self.run is not None
        return self.run

    @property
    def notebook(self) -> NotebookNode:
        return runner.normalise(self.executed.notebook)

    @property
    def stdout(self) -> str:
        return "".join(runner.cell_stdout(cell) for cell in self.notebook.cells)

    def data(self, mime: str) -> list[str]:
        """Every rich output of one MIME type, in cell order."""
        outputs = [output for _, output in _outputs(self.notebook)]
        return [str(output["data"][mime]) for output in outputs if mime in output.get("data", {})]


def _snapshot(*folders: Path) -> dict[str, tuple[int, int]]:
    """Size and mtime of every file under ``folders``: proof that a run wrote nothing there."""
    return {
        str(path): (path.stat().st_size, path.stat().st_mtime_ns)
        for folder in folders
        for path in sorted(folder.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Result]:
    missing = _missing(KERNEL_REQUIREMENTS)
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (pip install -e '.[dev]')")
    runnable = [name for name in NAMES if not _missing(REQUIREMENTS[name])]
    results = {
        name: Result(name, skipped=f"needs {', '.join(_missing(REQUIREMENTS[name]))}")
        for name in NAMES
        if name not in runnable
    }
    env = runner.kernel_environment(tmp_path_factory.mktemp("jupyter"), os.environ)
    before = _snapshot(NOTEBOOKS, QUICKSTART)
    start = time.perf_counter()
    done = asyncio.run(runner.execute_all([NOTEBOOKS / f"{name}.ipynb" for name in runnable], env))
    total = time.perf_counter() - start
    results.update((run.path.stem, Result(run.path.stem, run)) for run in done)
    timings = ", ".join(f"{run.path.stem} {run.seconds:.1f} s" for run in done)
    print(f"notebooks executed concurrently in {total:.1f} s ({timings})")
    assert _snapshot(NOTEBOOKS, QUICKSTART) == before, "a notebook wrote into the repository"
    return results


def _run(executed: Mapping[str, Result], name: str) -> Result:
    result = executed[name]
    if result.skipped is not None:
        pytest.skip(f"{name}.ipynb {result.skipped}")
    if result.executed.error is not None:
        pytest.fail(f"{name}.ipynb did not run to the end:\n{result.executed.error}")
    return result


WARNING = re.compile(r"\b\w*(Warning|Error)\b|Traceback")


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_top_to_bottom_cleanly(executed: Mapping[str, Result], name: str) -> None:
    result = _run(executed, name)
    raw = result.executed.notebook
    for cell_id, output in _outputs(raw):
        assert output["output_type"] != "error", f"{name}.ipynb cell {cell_id} raised"
        if output["output_type"] == "stream" and output["name"] == "stderr":
            text = str(output["text"])
            assert not WARNING.search(text), f"{name}.ipynb cell {cell_id} warns:\n{text}"
    code = [cell for cell in raw.cells if cell.cell_type == "code"]
    assert all(cell.execution_count is not None for cell in code), "every cell ran"
    assert "repository: ..\n" in result.stdout, "found the checkout from notebooks/"


@pytest.mark.parametrize("name", NAMES)
def test_each_verdict_is_the_one_the_prose_states(
    executed: Mapping[str, Result], name: str
) -> None:
    notebook = _run(executed, name).notebook
    assert runner.claims(notebook), f"{name}.ipynb states no verdict"
    problems = runner.check_claims(notebook)
    assert not problems, f"{name}.ipynb: prose and output disagree:\n" + "\n".join(problems)


@pytest.mark.parametrize("name", NAMES)
def test_stored_outputs_are_what_a_fresh_run_shows(
    executed: Mapping[str, Result], name: str
) -> None:
    fresh = runner.digest(_run(executed, name).notebook)
    stored = runner.digest(_stored(name))
    if stored != fresh:
        diff = "\n".join(
            difflib.unified_diff(stored, fresh, "stored", "fresh run", lineterm="", n=1)
        )
        pytest.fail(f"{name}.ipynb: the stored outputs are stale; {REFRESH}\n{diff}")


# -- what each notebook shows -------------------------------------------------------------------


def _verdict(comparison: Comparison) -> str:
    c = comparison.counts
    word = "PASS" if comparison.passed else "FAIL"
    return (
        f"{word}: {c['compared']} queries compared — {c['regressed']} regressed, "
        f"{c['improved']} improved, {c['unchanged']} unchanged\nexit code {comparison.exit_code}\n"
    )


def check_quickstart(result: Result) -> None:
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
    assert re.search(r"^wrote report\.html \(\d+ KiB\) into the temporary folder$", out, re.M)
    # Rich display: two evaluations and a comparison as HTML, two matplotlib figures as SVG.
    html = result.data("text/html")
    assert sum("spanchor evaluation" in page for page in html) == 2
    assert any("FAIL: " in page for page in html)
    assert len(result.data("image/svg+xml")) == 2
    assert result.data("image/png") == [], "figures are stored as SVG"


def _recorded_lines(out: str, file_name: str, expected: int) -> None:
    assert f"{file_name}: {expected + 1} lines (1 header + {expected} retrievals)\n" in out


def check_langchain_recording(result: Result) -> None:
    gold = read_gold(QUICKSTART / "gold.jsonl")
    out = result.stdout
    _recorded_lines(out, "callback.jsonl", len(gold))
    assert f"{len(gold)} retrievals recorded, 0 failures\n" in out
    assert f"{len(gold)} records, retriever 'langchain:VectorStoreRetriever'" in out
    assert "recorded against this corpus: True\n" in out
    assert "both recordings score the same: True\n" in out
    (verdict,) = runner.verdicts(result.notebook)
    assert verdict.counts["compared"] == len(gold)
    html = result.data("text/html")
    assert any("spanchor evaluation" in page for page in html)
    assert any(re.search(r"(PASS|FAIL): ", page) for page in html)


def check_llamaindex_eval(result: Result) -> None:
    gold = read_gold(QUICKSTART / "gold.jsonl")
    out = result.stdout
    assert out.count(f"{len(gold)} retrievals recorded, 0 failures\n") == 3
    for run in ("sentence-128", "sentence-64", "sentence-128-overlap-64"):
        _recorded_lines(out, f"{run}.jsonl", len(gold))
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
    # A gate that fails, then one that passes, each over the whole gold set.
    failed, passed = runner.verdicts(result.notebook)
    assert (failed.word, failed.exit_code, passed.word, passed.exit_code) == ("FAIL", 1, "PASS", 0)
    assert failed.counts["compared"] == passed.counts["compared"] == len(gold)
    # The prose names exactly the questions that regressed.
    printed = set(re.findall(r"^(q\d+) regression: ", out, flags=re.MULTILINE))
    why = next(cell for cell in result.notebook.cells if cell.id == "llamaindex-eval-15a")
    assert set(re.findall(r"\bq\d+\b", why.source)) == printed
    assert len(printed) == failed.counts["regressed"]
    assert any("spanchor evaluation" in page for page in result.data("text/html"))


CHECKS: Mapping[str, Callable[[Result], None]] = {
    "quickstart": check_quickstart,
    "langchain_recording": check_langchain_recording,
    "llamaindex_eval": check_llamaindex_eval,
}


@pytest.mark.parametrize("name", NAMES)
def test_notebook_shows_what_its_text_says(executed: Mapping[str, Result], name: str) -> None:
    CHECKS[name](_run(executed, name))
