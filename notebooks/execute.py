"""Re-execute the notebooks in this folder and store them with their outputs, in a normal form.

    python notebooks/execute.py                  # every notebook, concurrently, in place
    python notebooks/execute.py llamaindex_eval  # only the named ones

Each notebook runs top to bottom in a fresh kernel on this interpreter, from this folder, with
this checkout first on the kernel's path. Its outputs are then normalised, so that a run on
another machine stores the same file: no execution counts or timings, adjacent stream outputs
merged, the checkout's path, the temporary folder and memory addresses masked, and matplotlib's
SVG ids salted and dated from ``SOURCE_DATE_EPOCH``. A notebook whose run fails is not written.
``tests/test_notebooks.py`` runs the notebooks through the same functions and compares the
fresh run with what is stored (:func:`digest`) and with what the prose says (:func:`claims`).

The prose convention. A markdown cell that states a verdict carries a comment, invisible when
rendered, that says it in a form the tests read::

    <!-- expect: verdict=FAIL exit_code=1 regressed=5 -->

``verdict`` is the word the verdict line starts with, ``exit_code`` the number on the
``exit code N`` line printed after it, and any other key a count on the verdict line
(``57 queries compared — 5 regressed, 0 improved, 52 unchanged`` gives ``compared``,
``regressed``, ``improved`` and ``unchanged``). The n-th comment in a notebook describes the
n-th verdict line its code prints; every printed verdict needs one. A markdown cell whose text
says "exit code N" must carry a comment with that ``exit_code``.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import html
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nbformat import NotebookNode

NOTEBOOKS = Path(__file__).resolve().parent
ROOT = NOTEBOOKS.parent

CELL_TIMEOUT_SECONDS = 120
"""A hung cell fails the run instead of blocking it forever."""

# -- running ------------------------------------------------------------------------------------


def notebook_paths(names: Sequence[str] = ()) -> list[Path]:
    """The notebooks of this folder, sorted by name, or only those named (without ``.ipynb``)."""
    every = {path.stem: path for path in sorted(NOTEBOOKS.glob("*.ipynb"))}
    unknown = sorted(set(names) - set(every))
    if unknown:
        raise SystemExit(f"no such notebook: {', '.join(unknown)} (have: {', '.join(every)})")
    return [every[name] for name in names] if names else list(every.values())


def kernel_environment(state: Path, base: Mapping[str, str]) -> dict[str, str]:
    """``base`` plus what makes a kernel reproducible and keeps its files under ``state``."""
    state.mkdir(parents=True, exist_ok=True)
    matplotlibrc = state / "matplotlibrc"
    # A fixed salt makes the ids in matplotlib's SVG output the same on every run; this file
    # also stands in for any matplotlibrc or style of the user's, so the figures do not vary.
    matplotlibrc.write_text("svg.hashsalt: spanchor-notebooks\n", encoding="utf-8")
    env = dict(base)
    env.pop("MPLBACKEND", None)  # the kernel's inline backend draws the plots
    env.update(
        {
            # Some jupyter_core 5.x releases warn (DeprecationWarning) about their move to
            # platformdirs unless this is set; under -W error that would fail the run.
            "JUPYTER_PLATFORM_DIRS": "1",
            # Connection files and IPython's profile go to ``state``, not the home folder.
            "JUPYTER_RUNTIME_DIR": str(state / "runtime"),
            "IPYTHONDIR": str(state / "ipython"),
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",  # debugpy's frozen-modules note
            "MATPLOTLIBRC": str(matplotlibrc),
            "SOURCE_DATE_EPOCH": "0",  # the date matplotlib writes into SVG metadata
            "PYTHONHASHSEED": "0",  # set and dict-of-set ordering in anything printed
        }
    )
    return env


def checkout_first(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with this checkout's packages first on ``PYTHONPATH``."""
    paths = [str(ROOT), str(ROOT / "integrations")]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    return {**env, "PYTHONPATH": os.pathsep.join(paths)}


def _kernel_manager_class() -> type[Any]:
    from jupyter_client.kernelspec import KernelSpec
    from jupyter_client.manager import AsyncKernelManager

    class ThisInterpreterKernelManager(AsyncKernelManager):
        """A python3 kernel on ``sys.executable``: a user-level kernelspec cannot redirect it."""

        @property
        def kernel_spec(self) -> KernelSpec:
            return KernelSpec(
                argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                display_name="spanchor notebooks",
                language="python",
            )

    return ThisInterpreterKernelManager


@dataclass(frozen=True, slots=True)
class Executed:
    """One notebook after its run, as the kernel left it (not normalised), or why it stopped."""

    path: Path
    notebook: NotebookNode
    seconds: float
    error: str | None = None


def read(path: Path) -> NotebookNode:
    import nbformat

    # nbformat.read and nbformat.writes are unannotated.
    notebook: NotebookNode = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    return notebook


async def _execute(path: Path, manager: type[Any], env: Mapping[str, str]) -> Executed:
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    notebook = read(path)
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_SECONDS,
        kernel_name="python3",
        kernel_manager_class=manager,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
        record_timing=False,
    )
    start = time.perf_counter()
    error: str | None = None
    try:
        await client.async_execute(env=dict(env))
    except CellExecutionError as err:
        error = str(err)
    return Executed(path, notebook, time.perf_counter() - start, error)


async def execute_all(paths: Sequence[Path], env: Mapping[str, str]) -> list[Executed]:
    """Run every notebook at once, each in its own kernel started with ``env``."""
    manager = _kernel_manager_class()
    return list(await asyncio.gather(*(_execute(path, manager, env) for path in paths)))


# -- the stored form ----------------------------------------------------------------------------


MASKS = (
    (re.compile(re.escape(str(ROOT))), "<repository>"),
    (
        re.compile(re.escape(tempfile.gettempdir().rstrip("/\\")) + r"[/\\][^\s'\"<>)\]]*"),
        "<temporary>",
    ),
    (re.compile(r"\b0x[0-9a-fA-F]{6,}\b"), "0x…"),  # reprs with memory addresses
)
"""What :func:`mask` replaces: the notebooks print none of it, this is the safety net."""


def mask(text: str) -> str:
    """``text`` without this machine's paths or memory addresses."""
    for pattern, replacement in MASKS:
        text = pattern.sub(replacement, text)
    return text


def _merged_streams(outputs: Sequence[Any]) -> list[Any]:
    """Adjacent writes to one stream as one output: how they are split depends on timing."""
    merged: list[Any] = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (
            output["output_type"] == "stream"
            and previous is not None
            and previous["output_type"] == "stream"
            and previous["name"] == output["name"]
        ):
            previous["text"] += output["text"]
        else:
            merged.append(output)
    return merged


def _normalised_output(output: Any) -> Any:
    if output["output_type"] == "stream":
        output["text"] = mask(output["text"])
    if "data" in output:
        for mime, value in output["data"].items():
            if isinstance(value, str):
                output["data"][mime] = mask(value)
    if output["output_type"] == "execute_result":
        output["execution_count"] = None
    return output


def normalise(notebook: NotebookNode) -> NotebookNode:
    """A copy of ``notebook`` in the stored form: the same on every machine and every run."""
    result = copy.deepcopy(notebook)
    # Kept: which kernel and language; dropped: versions and anything a front end adds.
    metadata = result.metadata
    language = metadata.get("language_info", {}).get("name", "python")
    result.metadata = type(metadata)(language_info={"name": language})
    if "kernelspec" in metadata:
        result.metadata["kernelspec"] = metadata["kernelspec"]
    for cell in result.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.execution_count = None
            cell.outputs = [_normalised_output(o) for o in _merged_streams(cell.outputs)]
    return result


def dumps(notebook: NotebookNode) -> str:
    """The file text of ``notebook``, as nbformat writes it, ending in a newline."""
    import nbformat

    text: str = nbformat.writes(notebook)  # type: ignore[no-untyped-call]
    return text if text.endswith("\n") else text + "\n"


def _write(path: Path, text: str) -> None:
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


# -- what the outputs say -----------------------------------------------------------------------

VERDICT_LINE = re.compile(r"^(?P<word>[A-Z][A-Z-]*[A-Z]): (?P<rest>.*\bquer(?:y|ies)\b.*)$")
"""A verdict line: ``FAIL: 57 queries compared — 5 regressed, 0 improved, 52 unchanged``."""
COUNT = re.compile(r"(\d+) (?:queries )?(?!of\b)([a-z_]+)")
"""A count on a verdict line, ``5 regressed``; ``57 queries compared`` counts as ``compared``."""
EXIT_CODE_LINE = re.compile(r"\bexit code (\d+)\b")
CLAIM = re.compile(r"<!--\s*expect:(?P<body>.*?)-->", re.DOTALL)
PROSE_EXIT_CODE = re.compile(r"\bexit\s+code\s+(?:is\s+)?(\d+)\b", re.IGNORECASE)
VOLATILE = re.compile(r"\(\d+ KiB\)")
"""Figures a change elsewhere moves without changing what a notebook shows (report sizes)."""


def _source(cell: Any) -> str:
    source = cell["source"]
    return source if isinstance(source, str) else "".join(source)


def cell_stdout(cell: Any) -> str:
    """Everything a code cell printed to standard output, in order."""
    return "".join(
        output["text"]
        for output in cell.get("outputs", ())
        if output["output_type"] == "stream" and output["name"] == "stdout"
    )


@dataclass(frozen=True, slots=True)
class Verdict:
    """A verdict line a code cell printed, its counts, and the exit code printed after it."""

    cell_id: str
    word: str
    counts: dict[str, int]
    exit_code: int | None

    def __str__(self) -> str:
        counts = " ".join(f"{name}={n}" for name, n in sorted(self.counts.items()))
        return f"verdict={self.word} exit_code={self.exit_code} {counts}"


def verdicts(notebook: NotebookNode) -> list[Verdict]:
    """Every verdict line printed to stdout, in notebook order."""
    found: list[Verdict] = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        lines = [line.strip() for line in cell_stdout(cell).splitlines()]
        for index, line in enumerate(lines):
            verdict = VERDICT_LINE.match(line)
            if verdict is None:
                continue
            exit_code: int | None = None
            for later in lines[index + 1 :]:
                if VERDICT_LINE.match(later):
                    break
                if printed := EXIT_CODE_LINE.search(later):
                    exit_code = int(printed[1])
                    break
            counts = {name: int(n) for n, name in COUNT.findall(verdict["rest"])}
            found.append(Verdict(cell.id, verdict["word"], counts, exit_code))
    return found


@dataclass(frozen=True, slots=True)
class Claim:
    """What a markdown cell's ``<!-- expect: ... -->`` comment says a verdict is."""

    cell_id: str
    expected: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return " ".join(f"{key}={value}" for key, value in self.expected.items())

    def mismatches(self, verdict: Verdict) -> list[str]:
        """How ``verdict`` differs from this claim (empty when it agrees)."""
        actual: dict[str, object] = {"verdict": verdict.word, "exit_code": verdict.exit_code}
        actual.update(verdict.counts)
        problems = []
        for key, value in self.expected.items():
            if key not in actual:
                known = ", ".join(actual)
                problems.append(f"{key}: no such figure on the verdict line (known: {known})")
            elif str(actual[key]) != value:
                problems.append(f"{key}: the prose says {value}, the output says {actual[key]}")
        return problems


class ClaimSyntaxError(ValueError):
    """An ``<!-- expect: ... -->`` comment that is not a list of ``key=value`` words."""


def claims(notebook: NotebookNode) -> list[Claim]:
    """Every ``<!-- expect: ... -->`` comment of the markdown cells, in notebook order."""
    found: list[Claim] = []
    for cell in notebook.cells:
        if cell.cell_type != "markdown":
            continue
        for match in CLAIM.finditer(_source(cell)):
            words = match["body"].split()
            if not words or not all(re.fullmatch(r"\w+=\S+", word) for word in words):
                raise ClaimSyntaxError(
                    f"cell {cell.id}: {match[0]!r}: write key=value words, "
                    "e.g. <!-- expect: verdict=FAIL exit_code=1 regressed=5 -->"
                )
            found.append(Claim(cell.id, dict(word.split("=", 1) for word in words)))
    return found


def check_claims(notebook: NotebookNode) -> list[str]:
    """Where the prose of an executed ``notebook`` and its printed verdicts disagree."""
    problems: list[str] = []
    try:
        stated = claims(notebook)
    except ClaimSyntaxError as err:
        return [str(err)]
    for claim, verdict in zip_longest(stated, verdicts(notebook)):
        if verdict is None:
            problems.append(f"cell {claim.cell_id} states '{claim}', but no verdict is printed")
        elif claim is None:
            problems.append(
                f"cell {verdict.cell_id} prints '{verdict}' and no prose states it: add "
                "<!-- expect: ... --> to the markdown that explains it"
            )
        else:
            problems.extend(
                f"cell {claim.cell_id} (verdict of cell {verdict.cell_id}): {problem}"
                for problem in claim.mismatches(verdict)
            )
    claimed = {claim.cell_id: claim for claim in stated}
    for cell in notebook.cells:
        if cell.cell_type != "markdown":
            continue
        prose = CLAIM.sub("", _source(cell))
        for said in PROSE_EXIT_CODE.findall(prose):
            claim = claimed.get(cell.id)
            if claim is None or claim.expected.get("exit_code") != said:
                problems.append(
                    f"cell {cell.id} says 'exit code {said}' without a matching "
                    f"<!-- expect: exit_code={said} ... --> comment"
                )
    return problems


def _html_text(markup: str) -> str:
    markup = re.sub(r"<(style|script|svg)\b.*?</\1>", " ", markup, flags=re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", "\n", markup))


def _digest_lines(output: Any) -> Iterator[str]:
    kind = output["output_type"]
    if kind == "stream":
        for line in output["text"].splitlines():
            line = " ".join(line.split())
            if output["name"] != "stdout":
                yield f"{output['name']}: {line}"
            elif verdict := VERDICT_LINE.match(line):
                counts = COUNT.findall(verdict["rest"])
                yield f"verdict={verdict['word']} " + " ".join(f"{k}={n}" for n, k in counts)
            elif re.search(r"\d", line):
                yield VOLATILE.sub("(… KiB)", line)
    elif kind == "error":
        yield f"error: {output['ename']}"
    else:
        data = output.get("data", {})
        shown = f"{kind.replace('_', ' ')}: {', '.join(sorted(data))}"
        word = re.search(r"\b(PASS|FAIL)\b", _html_text(data.get("text/html", "")))
        yield f"{shown} (verdict {word[1]})" if word else shown


def digest(notebook: NotebookNode) -> list[str]:
    """What the stored outputs must keep saying: ``cell id | line`` for each verdict (as its
    word and counts), each stdout line with a figure in it, each rich output's kinds and
    verdict word, each error and each stderr line. Tables inside rich outputs are left out."""
    return [
        f"{cell.id} | {line}"
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        for line in _digest_lines(output)
    ]


# -- command line -------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Re-execute the notebooks and store them with their outputs, in a normal form."
    )
    parser.add_argument("names", nargs="*", help="notebook names without .ipynb (default: all)")
    args = parser.parse_args(argv)
    paths = notebook_paths(args.names)
    try:
        import nbclient  # noqa: F401
        import nbformat  # noqa: F401
    except ModuleNotFoundError as err:
        print(f"{err.name} is not installed: pip install -e '.[dev]'", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="spanchor-kernels-") as state:
        env = checkout_first(kernel_environment(Path(state), os.environ))
        results = asyncio.run(execute_all(paths, env))
    status = 0
    for result in results:
        name = result.path.relative_to(ROOT).as_posix()
        if result.error is not None:
            print(f"{name}: a cell failed, the file is left as it was\n{result.error}")
            status = 1
            continue
        stored = normalise(result.notebook)
        text = dumps(stored)
        changed = result.path.read_text(encoding="utf-8") != text
        if changed:
            _write(result.path, text)
        print(f"{name}: {'updated' if changed else 'unchanged'} ({result.seconds:.1f} s)")
        for problem in check_claims(stored):
            print(f"{name}: prose and output disagree: {problem}")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
