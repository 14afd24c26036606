"""A run file read, mapped and kept in parts on forked children (``evaluate/run_parts``): the
same evaluation file as one process reading every line, whatever the cut, whatever crosses
the cut (a query's several records, repeated ids, ids resolved by text, errors, grouping
rules), and whatever becomes of a child (answers, dies, stalls, meets bad input)."""

from __future__ import annotations

import itertools
import os
import re
import time
from contextlib import AbstractContextManager
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanchor_core.corpus import Corpus
from spanchor_core.errors import RunError
from spanchor_core.evaluate import evaluate_file, file_fork, run_parts, write_evaluation
from spanchor_core.evaluate.file_fork import can_fork
from spanchor_core.evaluate.model import Evaluation
from spanchor_core.gold import Anchor, GoldQuery, GoldSet
from spanchor_core.locate import Locator
from spanchor_core.pipeline.evaluation import run_evaluation
from spanchor_core.runs import (
    RetrievalRecord,
    RetrievedResult,
    Run,
    RunHeader,
    RunStream,
    iter_run,
    write_run,
)
from tests.fork_spy import ForkSpy, count_forks

pytestmark = pytest.mark.skipif(not can_fork(), reason="needs fork and two CPUs")

ALPHA = "Alpha one. The sky is blue because of Rayleigh scattering. Alpha two."
BETA = "Beta text about grass. Grass is green due to chlorophyll. End of beta."
CORPUS = Corpus.from_texts({"alpha": ALPHA, "beta": BETA})


def _query(qid: str, question: str, *spans: tuple[str, int, int]) -> GoldQuery:
    return GoldQuery(qid, question, tuple(Anchor.from_span(CORPUS, *span) for span in spans))


GOLD = GoldSet(
    [
        _query("q1", "Why is the sky blue?", ("alpha", 11, 58)),
        _query("q2", "Grass and the second alpha?", ("beta", 23, 57), ("alpha", 59, 69)),
        _query("q3", "Never asked?", ("alpha", 0, 10)),
        _query("q4", "Errored?", ("beta", 0, 22)),
        GoldQuery("q5", "No evidence yet?", ()),
        _query("q6", "Resolved by text?", ("beta", 58, 70)),
    ]
)

_TEXTS = [
    "The sky is blue",
    "Alpha one.",
    "Alpha two.",
    "Grass is green due to chlorophyll.",
    "End of beta.",
    "This sentence is nowhere in the corpus at all.",
    "Beta text abuot grass.",  # a typo: found by the fuzzy stage
]


def _result(rank: int, pick: int) -> RetrievedResult:
    if pick == len(_TEXTS):  # by offsets, no text
        return RetrievedResult(rank=rank, text=None, document_id="beta", start=23, end=57)
    return RetrievedResult(rank=rank, text=_TEXTS[pick])


_ASKED = [
    ("q1", "Why is the sky blue?"),
    ("q2", "Grass and the second alpha?"),
    ("q4", "Errored?"),
    ("q5", "No evidence yet?"),
    ("zzz", "Not a gold query"),
    (None, "  Resolved by text?  "),
    (None, "Unknown question?"),
]

_records = st.builds(
    lambda asked, picks, error, trace, stage, source: RetrievalRecord(
        _ASKED[asked][0],
        _ASKED[asked][1],
        tuple(_result(rank, pick) for rank, pick in enumerate(picks, start=1)),
        error=error,
        trace_id=trace,
        stage=stage,
        source=source,
    ),
    st.integers(0, len(_ASKED) - 1),
    st.lists(st.integers(0, len(_TEXTS)), max_size=4),
    st.sampled_from([None, None, None, "timeout"]),
    st.sampled_from([None, "t1", "t2"]),
    st.sampled_from([None, "retrieval", "context"]),
    st.sampled_from([None, "bm25", "dense"]),
)


def _file_text(evaluation: Evaluation, path: Path) -> str:
    write_evaluation(evaluation, path)
    return re.sub(r'"created_at": "[^"]*"', '"created_at": ""', path.read_text("utf-8"))


def _line_starts(path: Path) -> list[int]:
    """Where each record line starts (the header's end first), and the file's size."""
    data = path.read_bytes()
    starts = [at + 1 for at, byte in enumerate(data) if byte == 0x0A and at + 1 < len(data)]
    return [*starts, len(data)]


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> ForkSpy:
    return count_forks(monkeypatch, run_parts)


def _cut(ranges: list[tuple[int, int]]) -> AbstractContextManager[object]:
    """Every run file read in exactly these parts."""
    return mock.patch.object(RunStream, "record_ranges", return_value=list(ranges))


def _ranges(path: Path, cuts: list[int]) -> list[tuple[int, int]]:
    """The record lines of ``path`` cut before the record lines numbered ``cuts``."""
    starts = _line_starts(path)
    bounds = sorted({starts[0], *(starts[min(c, len(starts) - 1)] for c in cuts), starts[-1]})
    return list(itertools.pairwise(bounds))


def _one_and_parts(
    path: Path, ranges: list[tuple[int, int]], group: str = "auto"
) -> tuple[Evaluation, Evaluation]:
    one = evaluate_file(CORPUS, GOLD, path, k=(1, 3), group=group, jobs=1)
    with _cut(ranges):
        parts = evaluate_file(CORPUS, GOLD, path, k=(1, 3), group=group, jobs=2)
    return one, parts


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(_records, min_size=1, max_size=14),
    cuts=st.lists(st.integers(0, 15), max_size=3),
    group=st.sampled_from(["auto", "first", "union", "stage:context", "source:bm25"]),
    blank=st.booleans(),
)
def test_any_cut_gives_the_one_process_evaluation(
    tmp_path_factory: pytest.TempPathFactory,
    records: list[RetrievalRecord],
    cuts: list[int],
    group: str,
    blank: bool,
) -> None:
    folder = tmp_path_factory.mktemp("cut")
    path = folder / "run.jsonl"
    write_run(Run(RunHeader(), records), path)
    if blank:  # blank lines count in line numbers and are skipped
        path.write_text(path.read_text("utf-8").replace("\n", "\n\n", 3), "utf-8")
    ranges = _ranges(path, cuts)
    one, parts = _one_and_parts(path, ranges, group)
    assert _file_text(parts, folder / "parts.json") == _file_text(one, folder / "one.json")
    assert parts.records == len(records)
    # the line a record was read from (provenance) is the whole file's line
    assert [r.line for r in iter_run(path)] == [
        f.line for start, stop in ranges for f in iter_run(path).part_fields(start, stop)
    ]


def _odd_run(path: Path) -> Path:
    """Every rule that crosses records, each query's records on both sides of any cut."""
    records = [
        RetrievalRecord("q1", "Why is the sky blue?", (_result(1, 0), _result(2, 5))),
        RetrievalRecord("q2", "Grass and the second alpha?", (), error="timeout"),
        RetrievalRecord(None, "  Resolved by text?  ", (_result(1, 4),)),
        RetrievalRecord("zzz", "Not a gold query", (_result(1, 1),)),
        RetrievalRecord(None, "Unknown question?", (_result(1, 1),)),
        RetrievalRecord("q4", "Errored?", (_result(1, 6),), error="boom"),
        RetrievalRecord("q1", "Why is the sky blue?", (_result(1, 1), _result(2, 0))),
        RetrievalRecord("q2", "Grass and the second alpha?", (_result(1, 7), _result(2, 2))),
        RetrievalRecord("zzz", "Not a gold query", ()),
        RetrievalRecord(None, "Unknown question?", ()),
        RetrievalRecord("q6", "Resolved by text?", (_result(1, 5),), trace_id="t9"),
        RetrievalRecord("q6", "Resolved by text?", (_result(1, 4),), trace_id="t9"),
    ]
    write_run(Run(RunHeader(), records), path)
    return path


@pytest.mark.parametrize("group", ["auto", "first", "union"])
def test_every_cut_of_the_odd_cases_gives_the_one_process_file(
    tmp_path: Path, spy: ForkSpy, group: str
) -> None:
    path = _odd_run(tmp_path / "run.jsonl")
    one = _file_text(evaluate_file(CORPUS, GOLD, path, group=group, jobs=1), tmp_path / "1.json")
    assert '"duplicates": [\n    "q1"' in one
    assert '"zzz"' in one
    assert "Unknown question?" in one
    for cut in range(1, 12):  # before each record line but the first
        with _cut(_ranges(path, [cut])):
            parts = evaluate_file(CORPUS, GOLD, path, group=group, jobs=2)
        assert _file_text(parts, tmp_path / "2.json") == one, cut
    assert spy.started == spy.answered == 11


def test_three_parts_on_three_processes(tmp_path: Path, spy: ForkSpy) -> None:
    path = _odd_run(tmp_path / "run.jsonl")
    one, parts = _one_and_parts(path, _ranges(path, [4, 9]))
    assert _file_text(parts, tmp_path / "p.json") == _file_text(one, tmp_path / "o.json")
    assert (spy.started, spy.answered) == (2, 2)


def test_the_ranges_of_a_file_cover_its_records_at_line_starts(tmp_path: Path) -> None:
    path = _odd_run(tmp_path / "run.jsonl")
    starts = _line_starts(path)
    for parts in (2, 3, 5, 40):
        ranges = iter_run(path).record_ranges(parts)
        assert ranges[0][0] == starts[0]
        assert ranges[-1][1] == starts[-1]
        assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
        assert {start for start, _ in ranges} <= set(starts)
        assert 2 <= len(ranges) <= min(parts, 12)
    assert iter_run(path).record_ranges(1) == []


def test_a_file_that_cannot_be_cut_is_read_by_one_process(tmp_path: Path, spy: ForkSpy) -> None:
    legacy = tmp_path / "results.jsonl"  # spanchor 0.x JSONL
    legacy.write_text(
        '{"query_id": "q1", "question": "Why is the sky blue?", "retrieved": '
        '[{"rank": 1, "text": "The sky is blue"}]}\n'
        '{"query_id": "q4", "question": "Errored?", "retrieved": []}\n',
        "utf-8",
    )
    assert iter_run(legacy).record_ranges(2) == []
    header_only = tmp_path / "empty.jsonl"
    write_run(Run(RunHeader(), []), header_only)
    assert iter_run(header_only).record_ranges(2) == []
    one = evaluate_file(CORPUS, GOLD, legacy, jobs=1)
    two = evaluate_file(CORPUS, GOLD, legacy, jobs=2)
    assert _file_text(two, tmp_path / "2.json") == _file_text(one, tmp_path / "1.json")
    assert spy.started == 0


def test_the_default_forks_only_for_a_large_run(
    tmp_path: Path, spy: ForkSpy, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _odd_run(tmp_path / "run.jsonl")
    one = _file_text(evaluate_file(CORPUS, GOLD, path, jobs=1), tmp_path / "1.json")
    assert _file_text(evaluate_file(CORPUS, GOLD, path), tmp_path / "d.json") == one
    assert spy.started == 0  # far below SPLIT_BYTES
    monkeypatch.setattr(run_parts, "SPLIT_BYTES", 1)
    assert _file_text(evaluate_file(CORPUS, GOLD, path), tmp_path / "d.json") == one
    assert spy.started == 1
    monkeypatch.setattr(run_parts, "can_fork", lambda: False)
    assert _file_text(evaluate_file(CORPUS, GOLD, path, jobs=3), tmp_path / "d.json") == one
    assert spy.started == 1


def test_a_locator_that_maps_elsewhere_is_never_used_from_a_child(
    tmp_path: Path, spy: ForkSpy
) -> None:
    class Elsewhere(Locator):
        """Stands for an engine's locator (Ray actors, a worker pool)."""

    path = _odd_run(tmp_path / "run.jsonl")
    one = _file_text(evaluate_file(CORPUS, GOLD, path, jobs=1), tmp_path / "1.json")
    two = evaluate_file(CORPUS, GOLD, path, locator=Elsewhere(CORPUS), jobs=2)
    assert _file_text(two, tmp_path / "2.json") == one
    assert spy.started == 0

    class Safe(Locator):
        fork_safe = True

    two = evaluate_file(CORPUS, GOLD, path, locator=Safe(CORPUS), jobs=2)
    assert _file_text(two, tmp_path / "2.json") == one
    assert spy.started == 1


def test_jobs_must_be_a_positive_integer_or_none(tmp_path: Path) -> None:
    path = _odd_run(tmp_path / "run.jsonl")
    for jobs in (0, -1, True, 1.5):
        with pytest.raises(Exception, match="jobs must be a positive integer"):
            evaluate_file(CORPUS, GOLD, path, jobs=jobs)  # type: ignore[arg-type]


def _dies(*_: object) -> None:
    os._exit(3)


def _hangs(*_: object) -> None:
    time.sleep(60)


@pytest.mark.parametrize("fate", [_dies, _hangs])
def test_a_child_that_dies_or_stalls_leaves_its_part_to_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: ForkSpy, fate: object
) -> None:
    path = _odd_run(tmp_path / "run.jsonl")
    monkeypatch.setattr(file_fork, "STALL_SECONDS", 0.5)
    monkeypatch.setattr(run_parts, "_child_part", fate)
    one, parts = _one_and_parts(path, _ranges(path, [5]))
    assert _file_text(parts, tmp_path / "p.json") == _file_text(one, tmp_path / "o.json")
    assert (spy.started, spy.answered) == (1, 0)
    stream = iter_run(path)
    with _cut(_ranges(path, [5])):
        evaluate_file(CORPUS, GOLD, stream, jobs=2)
    assert stream.records_read == 12


def _bad(path: Path, line: int, text: str) -> Path:
    lines = path.read_text("utf-8").split("\n")
    lines[line - 1] = text
    path.write_text("\n".join(lines), "utf-8")
    return path


@pytest.mark.parametrize(
    ("line", "text"),
    [
        (4, '{"query_id": "q1", "query": "x", "results": [}'),  # the first part
        (9, '{"query_id": "q1", "query": "x", "results": [}'),  # the second
        (12, '{"query_id": "q1", "query": 3, "results": []}'),  # the third
        (13, '{"kind": "spanchor.run", "schema_version": 1}'),  # a second header, last part
    ],
)
def test_bad_input_in_any_part_is_the_one_process_error(
    tmp_path: Path, spy: ForkSpy, line: int, text: str
) -> None:
    path = _bad(_odd_run(tmp_path / "run.jsonl"), line, text)
    with pytest.raises(RunError) as one:
        evaluate_file(CORPUS, GOLD, path, jobs=1)
    with _cut(_ranges(path, [5, 10])), pytest.raises(RunError) as parts:
        evaluate_file(CORPUS, GOLD, path, jobs=2)
    assert str(parts.value) == str(one.value)
    assert (parts.value.line, one.value.line) == (line, line)


def test_a_torn_last_line_in_the_last_part_is_the_one_process_warning(tmp_path: Path) -> None:
    path = _odd_run(tmp_path / "run.jsonl")
    with path.open("ab") as handle:
        handle.write(b'{"query_id": "q3", "query": "Never asked?", "resu')
    one, parts = _one_and_parts(path, _ranges(path, [6]))
    assert parts.warnings == one.warnings
    assert len(one.warnings) == 1
    assert _file_text(parts, tmp_path / "p.json") == _file_text(one, tmp_path / "o.json")


def test_the_pipeline_reads_in_parts_instead_of_a_mapping_pool(
    tmp_path: Path, spy: ForkSpy, monkeypatch: pytest.MonkeyPatch
) -> None:
    import spanchor_core.pipeline.evaluation as pipeline

    pools: list[object] = []

    class Pool:
        def __init__(self, *args: object, **kwargs: object) -> None:
            pools.append(args)
            raise AssertionError("a mapping pool was started")

    monkeypatch.setattr(pipeline, "ProcessLocator", Pool)
    path = _odd_run(tmp_path / "run.jsonl")
    one = run_evaluation(CORPUS, GOLD, path, jobs=1, allow_mismatch=True).evaluation
    two = run_evaluation(CORPUS, GOLD, path, jobs=2, allow_mismatch=True).evaluation
    assert _file_text(two, tmp_path / "2.json") == _file_text(one, tmp_path / "1.json")
    assert spy.started == 1
    assert not pools


def test_runs_scored_in_turn_sharing_their_mappings_are_read_in_parts(
    tmp_path: Path, spy: ForkSpy, monkeypatch: pytest.MonkeyPatch
) -> None:
    from spanchor_core.pipeline.sides import load_pair

    base = _odd_run(tmp_path / "base.jsonl")
    cand = _bad(_odd_run(tmp_path / "cand.jsonl"), 2, "")  # its first record dropped
    monkeypatch.setattr(run_parts, "can_fork", lambda: False)
    alone = load_pair(base, cand, corpus=CORPUS, gold=GOLD, allow_mismatch=True)
    monkeypatch.setattr(run_parts, "can_fork", can_fork)
    monkeypatch.setattr(run_parts, "SPLIT_BYTES", 1)
    parts = load_pair(base, cand, corpus=CORPUS, gold=GOLD, allow_mismatch=True)
    assert spy.started == spy.answered == 2  # one child a side
    for one, two, name in zip(alone, parts, ("b", "c"), strict=True):
        assert _file_text(two, tmp_path / f"{name}2.json") == _file_text(
            one, tmp_path / f"{name}1.json"
        )


def test_the_last_part_is_read_to_the_end_of_a_file_that_grew(tmp_path: Path) -> None:
    path = _odd_run(tmp_path / "run.jsonl")
    stream = iter_run(path)
    ranges = stream.record_ranges(2)
    with path.open("a", encoding="utf-8") as handle:  # appended after the stream was opened
        handle.write('{"query_id": "q3", "query": "Never asked?", "results": []}\n')
    read = [f.query_id for start, stop in ranges for f in stream.part_fields(start, stop)]
    assert read == [f.query_id for f in iter_run(path).fields()]
    assert read[-1] == "q3"
