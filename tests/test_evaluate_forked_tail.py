"""An evaluation file written on two processes: the second half of the query lines written on a
forked child (``evaluate/file._evaluation_json_parts``) while this process writes the first.
Either way the file is byte for byte the one process's, whatever the records hold and whatever
becomes of the child (answers, dies, or the write fails)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanchor_core.corpus import Corpus
from spanchor_core.errors import EvaluationFileError
from spanchor_core.evaluate import evaluate_file, write_evaluation
from spanchor_core.evaluate import file as evaluation_file
from spanchor_core.evaluate.file_fork import Forked, can_fork
from spanchor_core.evaluate.model import Evaluation
from spanchor_core.gold import Anchor, GoldQuery, GoldSet
from spanchor_core.runs import RetrievalRecord, RetrievedResult, Run, RunHeader, write_run
from tests.fork_spy import count_forks
from tests.test_evaluate_parts import CORPUS, GOLD, _records

_T = TypeVar("_T")

pytestmark = pytest.mark.skipif(not can_fork(), reason="needs fork and two CPUs")


def _text(evaluation: Evaluation, path: Path) -> str:
    write_evaluation(evaluation, path)
    return re.sub(r'"created_at": "[^"]*"', '"created_at": ""', path.read_text("utf-8"))


def _forking(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    """The lines' second half forked from two queries up (``on``), or never."""
    monkeypatch.setattr(evaluation_file, "_FORK_QUERIES", 2 if on else 10**9)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(_records, min_size=0, max_size=12),
    group=st.sampled_from(["auto", "first", "union", "stage:context"]),
)
def test_any_run_gives_the_one_process_file(
    tmp_path_factory: pytest.TempPathFactory, records: list[RetrievalRecord], group: str
) -> None:
    folder = tmp_path_factory.mktemp("tail")
    path = folder / "run.jsonl"
    write_run(Run(RunHeader(), records), path)
    with pytest.MonkeyPatch.context() as patch:
        _forking(patch, False)
        one = evaluate_file(CORPUS, GOLD, path, k=(1, 3), group=group, jobs=1)
        one_text = _text(one, folder / "one.json")
    with pytest.MonkeyPatch.context() as patch:
        _forking(patch, True)
        lines = count_forks(patch, evaluation_file)
        two = evaluate_file(CORPUS, GOLD, path, k=(1, 3), group=group, jobs=1)
        two_text = _text(two, folder / "two.json")
    assert two_text == one_text
    assert (lines.started, lines.answered) == (1, 1)  # GOLD has five scored queries


def _many() -> tuple[Corpus, GoldSet, Run]:
    """700 queries over three documents (the writer's batches of 256 on both sides of the
    half), each with hits, misses, an unmapped text and now and then an error."""
    words = [f"w{i:04d}" for i in range(3000)]
    texts = {f"d{d}": " ".join(words[d * 1000 : (d + 1) * 1000]) + "\n" for d in range(3)}
    corpus = Corpus.from_texts(texts)
    queries, records = [], []
    for q in range(700):
        doc = f"d{q % 3}"
        start = (q * 37) % 4000
        text = texts[doc][start : start + 60]
        gold_end = start + 30 + q % 50
        queries.append(
            GoldQuery(
                f"q{q:03d}", f"question {q}?", (Anchor.from_span(corpus, doc, start, gold_end),)
            )
        )
        results = (
            RetrievedResult(rank=1, text=text),
            RetrievedResult(rank=2, text=texts[f"d{(q + 1) % 3}"][start : start + 45]),
            RetrievedResult(rank=3, text=f"nowhere in the corpus {q}"),
        )
        records.append(
            RetrievalRecord(
                f"q{q:03d}", f"question {q}?", results, error="timeout" if q % 97 == 5 else None
            )
        )
    return corpus, GoldSet(queries), Run(RunHeader(), records)


def test_many_queries_give_the_one_process_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus, gold, run = _many()
    path = tmp_path / "run.jsonl"
    write_run(run, path)
    _forking(monkeypatch, False)
    one_text = _text(evaluate_file(corpus, gold, path), tmp_path / "one.json")
    _forking(monkeypatch, True)
    lines = count_forks(monkeypatch, evaluation_file)
    two = evaluate_file(corpus, gold, path)
    assert _text(two, tmp_path / "two.json") == one_text
    assert (lines.started, lines.answered) == (1, 1)
    assert one_text.count('"query_id": ') == 700
    assert '"status": "error"' in one_text
    assert '"status": "unmapped"' in one_text


def _dies_on_a_child(work: Callable[..., _T]) -> Callable[..., _T]:
    """``work``, except that on any other process than this one it exits at once."""
    parent = os.getpid()

    def run(*args: object) -> _T:
        if os.getpid() != parent:
            os._exit(3)
        return work(*args)

    return run


def test_a_child_that_dies_leaves_the_same_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus, gold, run = _many()
    path = tmp_path / "run.jsonl"
    write_run(run, path)
    _forking(monkeypatch, False)
    one_text = _text(evaluate_file(corpus, gold, path), tmp_path / "one.json")
    _forking(monkeypatch, True)
    monkeypatch.setattr(
        evaluation_file, "_rows_bytes", _dies_on_a_child(evaluation_file._rows_bytes)
    )
    lines = count_forks(monkeypatch, evaluation_file)
    two = evaluate_file(corpus, gold, path)
    assert _text(two, tmp_path / "two.json") == one_text
    assert (lines.started, lines.answered) == (1, 0)


def test_a_failed_write_lets_the_child_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The target refused after the head was made (a directory): the error, no file, and the
    child started for the lines killed and reaped, not left running."""
    corpus, gold, run = _many()
    path = tmp_path / "run.jsonl"
    write_run(run, path)
    _forking(monkeypatch, True)
    evaluation = evaluate_file(corpus, gold, path)
    target = tmp_path / "out.json"
    target.mkdir()
    started: list[Forked[bytes]] = []

    class Seen(Forked[bytes]):
        def __init__(self, work: Callable[[], bytes]) -> None:
            super().__init__(work)
            self.pid = self._pid
            started.append(self)

    monkeypatch.setattr(evaluation_file, "Forked", Seen)
    with pytest.raises(EvaluationFileError, match=r"out\.json"):
        write_evaluation(evaluation, target)
    assert len(started) == 1
    assert target.is_dir()
    assert list(target.iterdir()) == []
    with pytest.raises(ChildProcessError):  # reaped already: no such child any more
        os.waitpid(started[0].pid, os.WNOHANG)  # type: ignore[attr-defined]
