"""Progress on a terminal: an indexing step before the first result is mapped, and a
writing step; nothing at all when stderr is not a terminal."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from spanchor_core.cli import console


def _terminal(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    out = io.StringIO()
    fake = Console(file=out, force_terminal=True, width=100)
    monkeypatch.setattr(console, "err_console", lambda: fake)
    return out


def test_mapping_says_it_indexes_until_the_first_result_is_mapped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # each session is drawn once more when it ends, so what it shows last is in the output
    out = _terminal(monkeypatch)
    with console.progress_bars(False) as for_side:
        update = for_side("baseline")
        assert update is not None
        update("map", 0, 0)
    assert "baseline: indexing the documents, then mapping results" in out.getvalue()
    out = _terminal(monkeypatch)
    with console.progress_bars(False) as for_side:
        update = for_side("baseline")
        assert update is not None
        update("map", 0, 0)
        update("map", 10, 0)
        update("score", 3, 5)
    assert "baseline: mapping results" in out.getvalue()
    assert "indexing" not in out.getvalue().rsplit("baseline: mapping", 1)[1]
    assert "baseline: scoring queries" in out.getvalue()


def test_the_writing_step_shows_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _terminal(monkeypatch)
    with console.writing_step(False):
        pass
    assert "writing reports" in out.getvalue()
    plain = io.StringIO()
    monkeypatch.setattr(console, "err_console", lambda: Console(file=plain))
    with console.writing_step(False), console.progress_bars(False) as for_side:
        assert for_side("baseline") is None
    assert plain.getvalue() == ""
