"""The command line starts without the library: ``spanchor --help`` / ``--version`` load typer
(and rich for the help) only, and a command imports what it uses when it runs.

Checked on ``sys.modules`` in a fresh interpreter, never on time (speed lives in bench/).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from spanchor_core.authoring import CandidateStatus
from spanchor_core.cli import defaults
from spanchor_core.metrics import DEFAULT_K, DEFAULT_MIN_OVERLAP
from spanchor_core.pipeline import GoldHashPolicy

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "pydantic", "pydantic_core", "rapidfuzz", "orjson", "matplotlib", "pyarrow")
# What of spanchor_core may load before a command runs: the package (its names are lazy), the
# command line itself, and the two modules every error and exit needs.
LIGHT = (
    "spanchor_core",
    "spanchor_core._version",
    "spanchor_core.errors",
    "spanchor_core.exit_codes",
)


def _loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code`` (its output discarded)."""
    probe = (
        "import contextlib, io, sys\n"
        "quiet = contextlib.redirect_stdout(io.StringIO())\n"
        "with quiet, contextlib.redirect_stderr(io.StringIO()):\n"
        f"    {code}\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True, cwd=ROOT
    )
    return set(done.stdout.split())


def _library(modules: set[str]) -> set[str]:
    return {
        m
        for m in modules
        if m.split(".")[0] == "spanchor_core" and not m.startswith("spanchor_core.cli")
    } - set(LIGHT)


def _third_party(modules: set[str], names: tuple[str, ...]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in names}


def test_importing_the_command_line_loads_no_library_and_no_heavy_dependency() -> None:
    loaded = _loaded_after("import spanchor_core.cli")
    assert "spanchor_core.cli.app" in loaded  # the probe saw the import
    assert _library(loaded) == set()
    assert _third_party(loaded, (*HEAVY, "rich")) == set()


@pytest.mark.parametrize(
    "argv", [["--version"], ["--help"], ["evaluate", "--help"], ["gate", "-h"]]
)
def test_help_and_version_load_no_library(argv: list[str]) -> None:
    loaded = _loaded_after(f"from spanchor_core.cli import main; main({argv!r})")
    assert "typer" in loaded
    assert _library(loaded) == set()
    # typer 0.29 checks option values with pydantic (its TypeAdapter) once a command's options
    # are parsed; --version and the root's --help parse none
    heavy = HEAVY if argv[0].startswith("-") else tuple(m for m in HEAVY if "pydantic" not in m)
    assert _third_party(loaded, heavy) == set()


def test_version_loads_no_rich() -> None:
    loaded = _loaded_after("from spanchor_core.cli import main; main(['--version'])")
    assert _third_party(loaded, ("rich",)) == set()


def test_a_command_loads_what_it_uses_only_when_it_runs() -> None:
    # `info` reads a corpus: not the pipeline, the process pool, Ray or the settings file
    loaded = _loaded_after(
        "from spanchor_core.cli import main; main(['info', 'examples/quickstart/docs'])"
    )
    assert "spanchor_core.corpus" in loaded
    unused = {
        "spanchor_core.pipeline",
        "spanchor_core.parallel",
        "spanchor_core.distributed",
        "spanchor_core.settings",
        "spanchor_core.index_store",
    }
    assert unused.isdisjoint(loaded)


def test_the_light_defaults_are_the_librarys() -> None:
    assert ",".join(map(str, DEFAULT_K)) == defaults.DEFAULT_K_TEXT
    assert defaults.DEFAULT_MIN_OVERLAP == DEFAULT_MIN_OVERLAP
    assert tuple(status.value for status in CandidateStatus) == defaults.CANDIDATE_STATUSES
    assert [c.value for c in defaults.GoldHashChoice] == [p.value for p in GoldHashPolicy]


def test_a_quiet_evaluate_loads_nothing_of_the_comparison_side(tmp_path: Path) -> None:
    # `spanchor evaluate -q` (what CI runs) scores and writes one evaluation: not the gate's
    # comparison, noise bands, diagnosis, policy or settings, nor a renderer
    out = tmp_path / "evaluation.json"
    example = "examples/quickstart"
    loaded = _loaded_after(
        "from spanchor_core.cli import main; main(['evaluate', "
        f"'{example}/docs', '{example}/gold.jsonl', '{example}/runs/candidate.jsonl', "
        f"'-q', '-o', {str(out)!r}])"
    )
    assert "spanchor_core.pipeline.evaluation" in loaded  # the probe ran the command
    assert out.is_file()
    unused = {
        "spanchor_core.compare",
        "spanchor_core.diagnosis",
        "spanchor_core.policy",
        "spanchor_core.settings",
        "spanchor_core.render",
        "spanchor_core.pipeline.gate",
        "spanchor_core.pipeline.noise",
    }
    assert unused.isdisjoint(loaded), unused & loaded


def test_evaluate_prints_its_table_without_the_comparison_renderers(tmp_path: Path) -> None:
    example = "examples/quickstart"
    loaded = _loaded_after(
        "from spanchor_core.cli import main; main(['evaluate', "
        f"'{example}/docs', '{example}/gold.jsonl', '{example}/runs/candidate.jsonl'])"
    )
    assert "spanchor_core.render.terminal" in loaded  # the table was printed
    unused = {
        "spanchor_core.compare",
        "spanchor_core.diagnosis",
        "spanchor_core.policy",
        "spanchor_core.render.html",
        "spanchor_core.render.junit",
        "spanchor_core.render.markdown",
    }
    assert unused.isdisjoint(loaded), unused & loaded


def test_a_clean_quiet_evaluate_loads_no_rich(tmp_path: Path) -> None:
    # -q with nothing to warn about prints nothing: no console is built, so rich is not loaded
    out = tmp_path / "eval.json"
    args = ["evaluate", "docs", "gold.jsonl", "runs/baseline.jsonl", "-q", "-o", str(out)]
    loaded = _loaded_after(
        "import os; os.chdir('examples/quickstart')\n"
        "    from spanchor_core.cli import main\n"
        f"    with contextlib.suppress(SystemExit): main({args!r})"
    )
    assert out.exists()
    assert "spanchor_core.pipeline.evaluation" in loaded
    assert _third_party(loaded, ("rich",)) == set()
