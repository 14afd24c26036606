"""Progress on a terminal: an indexing step before the first result is mapped, and a
writing step; nothing at all when stderr is not a terminal."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from spanchor_core.cli import console
from spanchor_core.corpus import Corpus, sha256_text
from spanchor_core.evaluate import evaluate_file
from spanchor_core.gold import Anchor, GoldQuery, GoldSet


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


def test_reading_a_streamed_run_has_a_byte_total(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _terminal(monkeypatch)
    with console.progress_bars(False) as for_side:
        update = for_side("candidate")
        assert update is not None
        update("map", 0, 0)
        update("read", 2_500_000, 10_000_000)
        update("map", 1_000, 0)
    shown = out.getvalue()
    assert "candidate: reading the run" in shown
    assert "2.5/10.0 MB" in shown  # bytes read against the file size: a real bar
    assert "candidate: mapping results" in shown
    assert "1000/?" in shown  # results have no total while streaming


def test_evaluate_file_reports_bytes_up_to_the_file_size(tmp_path: Path) -> None:
    corpus = Corpus.from_texts({"d": "alpha beta gamma delta. " * 40})
    gold = GoldSet(
        [
            GoldQuery(
                f"q{n}",
                f"question {n}?",
                (Anchor("d", 0, 10, sha256_text(corpus["d"].text[0:10])),),
            )
            for n in range(600)
        ]
    )
    path = tmp_path / "run.jsonl"
    header = {"kind": "spanchor.run", "schema_version": 1, "created_at": "2025-01-01T00:00:00Z"}
    records = [
        {"query_id": f"q{n}", "query": f"question {n}?", "results": [{"rank": 1, "text": "alpha"}]}
        for n in range(600)
    ]
    path.write_text("".join(json.dumps(obj) + "\n" for obj in [header, *records]), "utf-8")
    calls: list[tuple[str, int, int]] = []
    evaluate_file(corpus, gold, path, progress=lambda *call: calls.append(call))
    size = path.stat().st_size
    reads = [(done, total) for phase, done, total in calls if phase == "read"]
    assert all(total == size for _, total in reads)
    assert [done for done, _ in reads] == sorted(done for done, _ in reads)
    assert reads[0][0] < size
    assert reads[-1] == (size, size)
    assert len(reads) >= 3  # at the start, every 256 records, at the end
    assert ("map", 600, 600) in calls  # the existing phases are still reported
    assert calls[-1] == ("score", 600, 600)
