"""Tests for handing the C heap's free pages back (spanchor_core._heap), and where scoring does."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from spanchor_core import _heap
from spanchor_core.corpus import Corpus
from spanchor_core.evaluate import evaluate
from spanchor_core.gold import Anchor, GoldQuery, GoldSet
from spanchor_core.runs import RetrievalRecord, RetrievedResult, Run, RunHeader

scoring = importlib.import_module("spanchor_core.evaluate.scoring")

GLIBC = sys.platform.startswith("linux") and _heap._malloc_trim() is not None


def _rss_anon_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    raise AssertionError("no RssAnon in /proc/self/status")


@pytest.mark.skipif(not GLIBC, reason="malloc_trim is glibc's (Linux)")
def test_free_pages_inside_the_heap_are_given_back() -> None:
    # 48 MiB of 4 kB blocks (malloc's, not pymalloc's), every 16th kept: the holes between
    # the kept ones are free but resident, and sit below the heap's top, so free() keeps them
    blocks = [bytearray(4096) for _ in range(12_288)]
    for block in blocks:
        block[::512] = b"x" * 8  # touch every page
    kept = blocks[::16]
    del blocks
    before = _rss_anon_kib()
    assert _heap.release_free_heap() is True
    after = _rss_anon_kib()
    assert before - after > 16 * 1024  # most of the 45 MiB of holes
    assert all(block[0] == ord("x") and len(block) == 4096 for block in kept)  # live data intact


def test_other_platforms_do_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    _heap._malloc_trim.cache_clear()
    try:
        assert _heap._malloc_trim() is None
        assert _heap.release_free_heap() is False
    finally:
        monkeypatch.undo()
        _heap._malloc_trim.cache_clear()
    assert (_heap._malloc_trim() is not None) == GLIBC


def test_scoring_gives_pages_back_before_scoring_and_after_the_collector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    finish = scoring._finish

    def spy_finish(*args: object) -> object:
        calls.append("finish")
        return finish(*args)

    def spy_release() -> bool:
        calls.append("release")
        return True

    monkeypatch.setattr(scoring, "release_free_heap", spy_release)
    monkeypatch.setattr(scoring, "_finish", spy_finish)
    text = "The sky is blue because of Rayleigh scattering of sunlight."
    corpus = Corpus.from_texts({"sky": text})
    gold = GoldSet([GoldQuery("q1", "Why blue?", (Anchor.from_span(corpus, "sky", 0, 15),))])
    run = Run(
        header=RunHeader(),
        records=[RetrievalRecord("q1", "Why blue?", (RetrievedResult(1, "The sky is blue"),))],
    )
    evaluation = evaluate(corpus, gold, run, k=(1,))
    assert calls == ["release", "finish", "release"]
    assert evaluation["q1"]["recall@1"] == 1.0
