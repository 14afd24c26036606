"""The optional matplotlib figures, drawn on the Agg backend from the quickstart comparison."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from spanchor_core.errors import InputError
from spanchor_core.pipeline import GateOutcome, run_gate
from spanchor_core.render import DELTA_COLOURS, query_deltas
from spanchor_core.settings import gate_config_from_pyproject

matplotlib = pytest.importorskip(
    "matplotlib", reason="matplotlib is not installed (pip install 'spanchor[plot]')"
)
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from spanchor_core.render.plots import plot_query_deltas, plot_recall_at_k  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart"


@pytest.fixture(scope="module")
def outcome() -> GateOutcome:
    return run_gate(gate_config_from_pyproject(QUICKSTART / "spanchor.toml"))


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    plt.close("all")


def test_query_deltas_bars(outcome: GateOutcome) -> None:
    ax = plot_query_deltas(outcome.comparison)
    deltas = query_deltas(outcome.comparison)
    changed = [d for d in deltas if d.kind != "unchanged"]
    unchanged = len(deltas) - len(changed)
    labels = [tick.get_text() for tick in ax.get_yticklabels()]
    assert labels == [d.query_id for d in changed] + [f"{unchanged} unchanged"]
    widths = [patch.get_width() for patch in ax.patches if isinstance(patch, Rectangle)]
    assert widths == [d.delta for d in changed] + [0.0]
    colours = [to_hex(patch.get_facecolor()) for patch in ax.patches]
    assert colours[: len(changed)] == [DELTA_COLOURS[d.kind] for d in changed]
    assert colours[0] == DELTA_COLOURS["regressed"]
    assert ax.get_xlabel() == "Δ recall@5 (candidate − baseline)"


def test_draws_on_a_given_axes_and_another_metric(outcome: GateOutcome) -> None:
    _, ax = plt.subplots()
    assert plot_query_deltas(outcome.comparison, "hit@5", ax=ax) is ax
    assert "hit@5" in ax.get_title()


def test_recall_at_k_lines(outcome: GateOutcome) -> None:
    ax = plot_recall_at_k(outcome.baseline, outcome.candidate, labels=["before", "after"])
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["before", "after"]
    assert np.asarray(lines[0].get_xdata()).tolist() == [1, 3, 5, 10]
    expected = [outcome.candidate.mean(f"recall@{k}") for k in (1, 3, 5, 10)]
    assert np.asarray(lines[1].get_ydata()).tolist() == pytest.approx(expected)
    hit = plot_recall_at_k(outcome.baseline, metric="hit")
    assert hit.get_ylabel() == "mean hit@K"
    assert hit.get_lines()[0].get_label() == "bm25s BM25 over paragraphs"


def test_recall_at_k_rejects_bad_input(outcome: GateOutcome) -> None:
    with pytest.raises(InputError, match="at least one"):
        plot_recall_at_k()
    with pytest.raises(InputError, match="labels"):
        plot_recall_at_k(outcome.baseline, labels=["a", "b"])
    with pytest.raises(InputError, match="no nonexistent@K"):
        plot_recall_at_k(outcome.baseline, metric="nonexistent")


def test_missing_matplotlib_says_how_to_install(tmp_path: Path) -> None:
    # a module named matplotlib that fails to import stands in for an absent installation
    fake = tmp_path / "matplotlib"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('absent')\n")
    code = (
        "from spanchor_core.pipeline import run_gate\n"
        "from spanchor_core.settings import gate_config_from_pyproject\n"
        "from spanchor_core.render.plots import plot_query_deltas\n"
        f"outcome = run_gate(gate_config_from_pyproject({str(QUICKSTART / 'spanchor.toml')!r}))\n"
        "try:\n"
        "    plot_query_deltas(outcome.comparison)\n"
        "except ImportError as err:\n"
        "    print(err)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])},  # this checkout
    )
    assert "pip install 'spanchor[plot]'" in done.stdout
