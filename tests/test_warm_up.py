"""The short-text indexes built once before a run is read on forked processes
(``evaluate/warm_up``): built for a run of short texts (the normalised one on a helper child),
not for an ordinary run, inherited by the children instead of built by each, and never a
change to the evaluation or to the error a bad run file gets."""

from __future__ import annotations

import importlib
import os
import random
import re
from pathlib import Path

import numpy as np
import pytest

from spanchor_core.corpus import Corpus
from spanchor_core.errors import RunError
from spanchor_core.evaluate import evaluate_file, write_evaluation
from spanchor_core.evaluate.file_fork import can_fork
from spanchor_core.evaluate.model import Evaluation
from spanchor_core.evaluate.warm_up import warm_short_indexes
from spanchor_core.gold import Anchor, GoldQuery, GoldSet
from spanchor_core.index_store import persistent_locator
from spanchor_core.locate import Locator
from spanchor_core.locate.sampled import SampledIndex
from spanchor_core.locate.scan import CorpusScanner
from spanchor_core.pipeline.mappings import SharedMappings
from spanchor_core.runs import RetrievalRecord, RetrievedResult, Run, RunHeader, iter_run, write_run
from tests.fork_spy import ForkSpy, count_forks

warm_up = importlib.import_module("spanchor_core.evaluate.warm_up")

pytestmark = pytest.mark.skipif(not can_fork(), reason="needs fork and two CPUs")

_RNG = random.Random(7)
_WORDS = [
    "".join(_RNG.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(_RNG.randint(2, 9)))
    for _ in range(400)
]


def _prose(words: int) -> str:
    return " ".join(_RNG.choice(_WORDS) for _ in range(words)) + "."


CORPUS = Corpus.from_texts({f"d{i}": _prose(3_000) for i in range(4)})
GOLD = GoldSet(
    [
        GoldQuery(
            f"q{i}",
            f"question {i}?",
            (Anchor.from_span(CORPUS, f"d{i % 4}", 100 * i, 100 * i + 60),),
        )
        for i in range(40)
    ]
)


def _run(path: Path, length: tuple[int, int], *, absent: int = 5, offsets: bool = False) -> Path:
    """40 queries x 15 results cut from the corpus, ``length`` characters long; one in
    ``absent`` is fresh prose (found nowhere); with ``offsets``, the others name their document
    and offsets (as a LlamaIndex node or a chunk with ``start_index`` does)."""
    rng = random.Random(11)
    records = []
    for i in range(40):
        results = []
        for rank in range(1, 16):
            size = rng.randint(*length)
            if rank % absent == 0:
                results.append(RetrievedResult(rank=rank, text="zq " * (size // 3)))
                continue
            name = f"d{rng.randrange(4)}"
            doc = CORPUS[name].text
            at = rng.randrange(len(doc) - size)
            text = doc[at : at + size]
            if offsets:
                results.append(
                    RetrievedResult(rank=rank, text=text, document_id=name, start=at, end=at + size)
                )
            else:
                results.append(RetrievedResult(rank=rank, text=text))
        records.append(RetrievalRecord(f"q{i}", f"question {i}?", tuple(results)))
    write_run(Run(RunHeader(), records), path)
    return path


def _text(evaluation: Evaluation, path: Path) -> str:
    write_evaluation(evaluation, path)
    return re.sub(r'"created_at": "[^"]*"', '"created_at": ""', path.read_text("utf-8"))


def _sampled(locator: Locator) -> list[SampledIndex | None]:
    return list(locator._ctx.scanner._sampled)


def _warm(locator: Locator, path: Path) -> bool:
    """The warm-up on the whole of the run file at ``path``."""
    stream = iter_run(path)
    start = stream.record_ranges(2)[0][0]
    return warm_short_indexes(locator, stream, start, stream.bytes_total)


def _warmed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, length: tuple[int, int]
) -> tuple[bool, Locator, ForkSpy]:
    """The warm-up of a fresh locator on a run of texts of ``length``, and the forks it made."""
    path = _run(tmp_path / "run.jsonl", length)
    spy = count_forks(monkeypatch, warm_up)
    locator = Locator(CORPUS)
    return _warm(locator, path), locator, spy


def test_a_run_of_short_texts_gets_both_indexes_the_normalised_one_from_a_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warmed, locator, spy = _warmed(tmp_path, monkeypatch, (20, 50))
    assert warmed
    exact, normalised = _sampled(locator)
    assert exact is not None
    assert normalised is not None
    assert (spy.started, spy.answered) == (1, 1)
    # the child's index is the one this process would have built
    here = Locator(CORPUS).build_short_index(normalised=True)
    assert np.array_equal(normalised.index.packed, here.index.packed)
    assert normalised.pos_bits == here.pos_bits


def test_an_ordinary_run_builds_nothing_and_forks_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warmed, locator, spy = _warmed(tmp_path, monkeypatch, (200, 400))
    assert not warmed
    assert (_sampled(locator), spy.started) == ([None, None], 0)


def test_short_texts_placed_by_their_offsets_are_not_worth_the_indexes(tmp_path: Path) -> None:
    """A run whose short chunks carry their document and offsets is placed by them, not
    searched: none of them counts (before: the indexes were built for it, a second each)."""
    path = _run(tmp_path / "placed.jsonl", (20, 50), absent=40, offsets=True)
    locator = Locator(CORPUS)
    assert not _warm(locator, path)
    assert _sampled(locator) == [None, None]


@pytest.mark.parametrize(("short", "warmed"), [(1, False), (18, False), (19, True)])
def test_a_few_short_texts_among_long_ones_are_not_worth_the_indexes(
    tmp_path: Path, short: int, warmed: bool
) -> None:
    """600 results: the indexes are built from one short text in ``SHORT_SHARE`` (19), not
    below (18, or a single one)."""
    path = _run(tmp_path / "long.jsonl", (200, 400))
    lines = path.read_text("utf-8").split("\n")
    for n in range(short):  # the first result of the first ``short`` records made short
        head, rest = lines[1 + n].split('"text":"', 1)
        lines[1 + n] = head + '"text":"tiny text.' + rest[rest.index('"') :]
    path.write_text("\n".join(lines), "utf-8")
    locator = Locator(CORPUS)
    assert _warm(locator, path) is warmed
    assert (_sampled(locator) == [None, None]) is not warmed


def test_a_helper_that_gives_nothing_leaves_the_build_to_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _run(tmp_path / "short.jsonl", (20, 50))
    monkeypatch.setattr(warm_up.Forked, "result", lambda self: None)
    locator = Locator(CORPUS)
    assert _warm(locator, path)
    assert all(index is not None for index in _sampled(locator))


def test_a_bad_first_record_is_left_to_the_real_read(tmp_path: Path) -> None:
    path = _run(tmp_path / "short.jsonl", (20, 50))
    lines = path.read_text("utf-8").split("\n")
    lines[1] = '{"query_id": "q1", "query": "x", "results": [}'
    path.write_text("\n".join(lines), "utf-8")
    locator = Locator(CORPUS)
    assert not _warm(locator, path)
    with pytest.raises(RunError) as one:
        evaluate_file(CORPUS, GOLD, path, jobs=1)
    with pytest.raises(RunError) as parts:
        evaluate_file(CORPUS, GOLD, path, jobs=2)
    assert str(parts.value) == str(one.value)
    assert parts.value.line == 2


def test_the_children_inherit_the_indexes_and_the_evaluation_is_the_one_process_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the parent and the reading child built both indexes each (four builds); now
    two, the exact one here and the normalised one on the helper child."""
    path = _run(tmp_path / "short.jsonl", (20, 50))
    one = _text(evaluate_file(CORPUS, GOLD, path, jobs=1), tmp_path / "one.json")
    log = tmp_path / "builds.log"
    build = CorpusScanner._build_sampled

    def logged(self: CorpusScanner, view: int) -> SampledIndex:
        with open(log, "a", encoding="utf-8") as out:  # the children append too
            out.write(f"{os.getpid()} {view}\n")
        return build(self, view)

    monkeypatch.setattr(CorpusScanner, "_build_sampled", logged)
    parts = _text(evaluate_file(CORPUS, GOLD, path, jobs=2), tmp_path / "parts.json")
    assert parts == one
    # (pid, view) of each build, in whatever order the two processes logged them
    builds = sorted(
        (int(view), int(pid))
        for pid, view in (line.split() for line in log.read_text("utf-8").splitlines())
    )
    assert [view for view, _ in builds] == [0, 1]
    # the canonical text's here, the normalised stream's on the helper child
    assert builds[0][1] == os.getpid()
    assert builds[1][1] != os.getpid()


def test_shared_mappings_hand_the_indexes_to_their_base(tmp_path: Path) -> None:
    base = Locator(CORPUS)
    shared = SharedMappings(base)
    built = shared.build_short_index(normalised=False)
    assert _sampled(base)[0] is built
    other = Locator(CORPUS)
    SharedMappings(other).use_short_index(built, normalised=True)
    assert _sampled(other)[1] is built


def test_indexes_kept_in_the_cache_are_mapped_here_without_a_helper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _run(tmp_path / "short.jsonl", (20, 50))
    cache = tmp_path / "cache"
    first = persistent_locator(CORPUS, cache)
    assert _warm(first, path)
    spy = count_forks(monkeypatch, warm_up)
    again = persistent_locator(CORPUS, cache)
    assert again.short_indexes_kept()
    assert _warm(again, path)
    assert spy.started == 0
    assert all(index is not None for index in _sampled(again))
