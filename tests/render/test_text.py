"""The shared rendering helpers: terminal escaping that no control character survives, the other
escapers, formatting, the one lost-evidence depth rule, the metric × K grid, and the package's
shape (I/O in one module, no matplotlib, the models never import rendering, shims intact)."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spanchor_core.errors import InputError
from spanchor_core.pipeline import GateOutcome, run_gate
from spanchor_core.render import comparison_summary_lines, evaluation_summary_lines
from spanchor_core.render.text import (
    DASH,
    capped_list,
    check_count,
    escape_control,
    evidence_depth,
    excerpt,
    format_delta,
    format_interval,
    format_number,
    format_percent,
    html_escape,
    markdown_escape,
    metric_grid,
    more_text,
    one_line,
    truncate,
    xml_text,
)
from spanchor_core.settings import gate_config_from_pyproject

ROOT = Path(__file__).resolve().parents[2]
RENDER = ROOT / "spanchor_core" / "render"
CONTROLS = [chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))]


@pytest.fixture(scope="module")
def outcome() -> GateOutcome:
    return run_gate(gate_config_from_pyproject(ROOT / "examples" / "quickstart" / "spanchor.toml"))


# -- terminal escaping ----------------------------------------------------------------------------


def _visible(text: str) -> bool:
    """No control character, no line or paragraph separator: safe on one terminal line."""
    return not any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in text)


@pytest.mark.parametrize("char", CONTROLS, ids=lambda c: f"U+{ord(c):04X}")
def test_every_c0_and_c1_control_character_becomes_a_visible_escape(char: str) -> None:
    shown = escape_control(f"a{char}b")
    assert _visible(shown)
    assert shown.startswith("a\\")
    assert shown.endswith("b")


def test_escape_hand_examples() -> None:
    assert escape_control("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m"
    assert escape_control("\x9b2J") == "\\x9b2J"  # the 8-bit CSI
    assert escape_control("\x07\x08\x7f") == "\\x07\\x08\\x7f"
    assert escape_control("a\nb\r\tc") == "a\\nb\\r\\tc"
    assert escape_control("x\u2028y\u2029z") == "x\\u2028y\\u2029z"
    assert escape_control("plain é ünïcode") == "plain é ünïcode"


@given(st.text())
def test_escaped_text_holds_no_control_character(text: str) -> None:
    shown = escape_control(text)
    assert _visible(shown)
    assert len(shown.splitlines()) <= 1


@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Zl", "Zp"))))
def test_text_without_controls_passes_unchanged(text: str) -> None:
    assert escape_control(text) == text


def test_one_line_folds_whitespace_then_escapes_then_cuts() -> None:
    assert one_line("  a \n\n b\tc ") == "a b c"
    assert one_line("id\x1b[2J") == "id\\x1b[2J"
    assert one_line("abcdefgh", 5) == "abcd…"


def test_summary_lines_escape_every_piece_of_user_text(outcome: GateOutcome) -> None:
    hostile = "recall@5\x1b]0;pwned\x07\n"
    comparison = outcome.comparison
    rows = tuple(dataclasses.replace(row, metric=hostile) for row in comparison.aggregates)
    findings = tuple(
        dataclasses.replace(f, code=f"{f.code}\x1b[1A", message=f"{f.message}\x1b[2K")
        for f in comparison.findings
    )
    lines = comparison_summary_lines(
        dataclasses.replace(comparison, aggregates=rows, findings=findings)
    )
    assert any("\\x1b]0;pwned\\x07\\n" in line for line in lines)
    assert any("\\x1b[1A" in line and "\\x1b[2K" in line for line in lines)
    for line in lines:
        assert _visible(line)
    evaluation = dataclasses.replace(outcome.baseline, warnings=("bad\x1b[31m\r\nthing",))
    for line in evaluation_summary_lines(evaluation):
        assert _visible(line)


# -- the other escapers ---------------------------------------------------------------------------


def test_markdown_xml_and_html_escapers_leave_no_control_character() -> None:
    text = "".join(CONTROLS) + "<&>\"'"
    for escaped in (markdown_escape(text), xml_text(text), html_escape(text)):
        assert "\x1b" not in escaped
        assert "\x00" not in escaped
    assert xml_text("a\x1bb\tc") == "a\ufffdb\tc"
    assert html_escape('<a href="x">\x1b') == "&lt;a href=&quot;x&quot;&gt;\ufffd"


# -- formatting -----------------------------------------------------------------------------------


def test_number_formatting() -> None:
    assert format_number(0.12345) == "0.123"
    assert format_number(None) == DASH
    assert format_number(float("nan")) == DASH
    assert format_number(0.5, ".3g") == "0.5"
    assert format_delta(0.25) == "+0.250"
    assert format_delta(-0.25) == "-0.250"
    assert format_percent(0.125) == "12.5%"
    assert format_interval(-0.1, 0.05) == "[-0.100, +0.050]"
    assert format_interval(None, 0.05) == DASH


def test_truncation_excerpts_and_capped_lists() -> None:
    assert truncate("abc", 3) == "abc"
    assert truncate("abcd", 3) == "ab…"
    shown = excerpt("one  two\nthree four", 8)  # the cut's trailing space is dropped
    assert shown == ("one two", 18)
    assert shown.cut
    assert not excerpt("short", 9).cut
    assert more_text(2, 5) == "… and 3 more"
    assert more_text(2, 5, "pieces") == "… and 3 more pieces"
    assert capped_list(["a", "b", "c"], 2, str.upper) == "A, B … and 1 more"
    assert capped_list(["a", "b"], 2, str.upper) == "A, B"


@pytest.mark.parametrize("value", [0, -1, True, 1.5, "3"])
def test_check_count_refuses_what_is_not_a_whole_number(value: object) -> None:
    with pytest.raises(InputError, match="limit must be a whole number of at least 1"):
        check_count(value, "limit")  # type: ignore[arg-type]
    check_count(0, "context_chars", minimum=0)


# -- the lost-evidence depth rule and the metric grid -------------------------------------------


def test_evidence_depth_is_the_deepest_regressed_k_else_the_deepest_scored_k(
    outcome: GateOutcome,
) -> None:
    evaluation = outcome.candidate
    assert evidence_depth(["recall@3", "hit@1"], evaluation) == 3
    deepest = max(evaluation.settings.k)
    assert evidence_depth(["mrr"], evaluation) == deepest  # whole-list metric: the scored depth
    assert evidence_depth([], evaluation) == deepest
    no_k = dataclasses.replace(
        evaluation, settings=dataclasses.replace(evaluation.settings, k=()), metric_names=("mrr",)
    )
    assert evidence_depth(["mrr"], no_k) is None  # nothing has a K: the whole ranked list


def test_metric_grid_holds_every_mean_once(outcome: GateOutcome) -> None:
    evaluation = outcome.baseline
    grid = metric_grid(evaluation)
    ks = [k for k in grid.columns if k is not None]
    assert ks == sorted(ks)
    assert grid.labels == ["whole list" if k is None else f"@{k}" for k in grid.columns]
    cells = 0
    for base, means in grid.rows:
        for k, mean in zip(grid.columns, means, strict=True):
            name = base if k is None else f"{base}@{k}"
            if mean is None:
                assert name not in evaluation.metric_names
            else:
                cells += 1
                assert mean == pytest.approx(evaluation.mean(name), nan_ok=True)
    assert cells == len(evaluation.metric_names)
    recall_only = metric_grid(evaluation, ["recall"])
    assert [base for base, _ in recall_only.rows] == ["recall"]


# -- the package's shape --------------------------------------------------------------------------


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_only_the_files_module_does_file_io() -> None:
    for path in sorted(RENDER.rglob("*.py")):
        if path.name == "files.py":
            assert "spanchor_core._io" in _imports(path)
            continue
        source = path.read_text(encoding="utf-8")
        assert "spanchor_core._io" not in _imports(path), path
        for call in ("open(", ".write_text(", ".write_bytes(", ".read_text("):
            assert call not in source, (path, call)


def test_no_rendering_module_is_over_500_lines() -> None:
    for path in sorted(RENDER.rglob("*.py")):
        assert len(path.read_text(encoding="utf-8").splitlines()) <= 500, path


def test_the_models_never_import_rendering() -> None:
    # Notebook display goes through spanchor_core._display, which rendering fills in.
    models = RENDER.parent / "compare" / "model.py", RENDER.parent / "evaluate" / "model.py"
    for path in models:
        assert not [name for name in _imports(path) if name.startswith("spanchor_core.render")]


def test_notebook_display_is_registered_by_importing_the_core() -> None:
    code = (
        "from spanchor_core import Evaluation, evaluate, load_corpus, read_gold, read_run\n"
        "import sys\n"
        "q = 'examples/quickstart/'\n"
        "ev = evaluate(load_corpus(q + 'docs'), read_gold(q + 'gold.jsonl'),"
        " read_run(q + 'runs/baseline.jsonl'))\n"
        "shown = ev._repr_html_()\n"
        "assert isinstance(ev, Evaluation) and shown is not None and '<div' in shown, shown\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in {'matplotlib', 'rich'}]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
