"""Each distinct result mapped once across the sides of a comparison: the same locations, and
the same evaluation bytes, as mapping every side on its own."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spanchor_core import load_corpus, read_gold, read_run
from spanchor_core.corpus import Corpus
from spanchor_core.evaluate import write_evaluation
from spanchor_core.locate import LocateRequest, Location, Locator
from spanchor_core.pipeline import load_pair, load_side
from spanchor_core.pipeline import sides as sides_module
from spanchor_core.pipeline.mappings import SharedMappings
from spanchor_core.spans import DocSpan

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart"
DOCS = QUICKSTART / "docs"
GOLD = QUICKSTART / "gold.jsonl"
BASE = QUICKSTART / "runs" / "baseline.jsonl"
CAND = QUICKSTART / "runs" / "candidate.jsonl"

TEXTS = {
    "a": "The quick brown fox jumps over the lazy dog. " * 3 + "A unique closing line here.",
    "b": "The quick brown fox jumps over the lazy dog. Another document, another ending.",
}
CORPUS = Corpus.from_texts(TEXTS)


class _Counting(Locator):
    """A locator that counts the requests it really maps."""

    def __init__(self, corpus: Corpus) -> None:
        super().__init__(corpus)
        self.mapped = 0

    def locate_many(self, requests: Sequence[LocateRequest]) -> list[Location]:
        self.mapped += len(requests)
        return super().locate_many(requests)


_PIECES = [
    "The quick brown fox jumps over the lazy dog.",  # in both documents, several times
    "A unique closing line here.",
    "Another document, another ending.",
    "the quick brown fox",  # case differs
    "nowhere in these documents at all",
    "",
]
_REQUESTS = st.builds(
    LocateRequest,
    st.sampled_from(_PIECES),
    st.sampled_from([None, "a", "b"]),
    st.sampled_from([None, 0, 45]),
    st.sampled_from([None, 44, 89]),
    st.sampled_from([(), (DocSpan("a", 45, 89),), (DocSpan("b", 0, 44),)]),
)


@given(first=st.lists(_REQUESTS, max_size=12), second=st.lists(_REQUESTS, max_size=12))
def test_locations_are_the_base_locators_whatever_was_mapped_before(
    first: list[LocateRequest], second: list[LocateRequest]
) -> None:
    shared = SharedMappings(Locator(CORPUS))
    shared.locate_many(first)
    assert shared.locate_many(second) == Locator(CORPUS).locate_many(second)


def test_a_request_seen_before_is_not_mapped_again() -> None:
    base = _Counting(CORPUS)
    shared = SharedMappings(base)
    prefer = (DocSpan("a", 45, 89),)
    requests = [
        LocateRequest(_PIECES[0], None, None, None, prefer),
        LocateRequest(_PIECES[1]),
        LocateRequest(_PIECES[0]),  # other gold spans: its own request
        LocateRequest(_PIECES[0], "b"),  # another document named
    ]
    expected = Locator(CORPUS).locate_many(requests)
    assert shared.locate_many(requests) == expected
    assert (base.mapped, shared.reused) == (4, 0)
    again = [requests[2], LocateRequest(_PIECES[0], None, None, None, prefer), requests[1]]
    assert shared.locate_many(again) == [expected[2], expected[0], expected[1]]
    assert (base.mapped, shared.reused) == (4, 3)
    assert shared.locate_many([LocateRequest(_PIECES[0], None, 0, 44)]) == Locator(
        CORPUS
    ).locate_many([LocateRequest(_PIECES[0], None, 0, 44)])
    assert base.mapped == 5  # offsets make it another request


def _reranked(run: Path, path: Path) -> Path:
    """``run`` with every record's results in reverse order: a candidate of the same chunks."""
    header, *records = run.read_text(encoding="utf-8").splitlines()
    lines = [header]
    for line in records:
        record = json.loads(line)
        results = record["results"][::-1]
        for rank, result in enumerate(results, start=1):
            result["rank"] = rank
        record["results"] = results
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_candidate_of_other_chunks_is_mapped_in_full() -> None:
    corpus, gold = load_corpus(DOCS), read_gold(GOLD)
    counting = _Counting(corpus)
    load_pair(BASE, CAND, corpus=corpus, gold=gold, locator=counting)
    total = sum(len(r.results) for run in (BASE, CAND) for r in read_run(run).records)
    assert counting.mapped == total  # quickstart's candidate shares no request with its baseline


def _without_created_at(path: Path) -> bytes:
    lines = path.read_bytes().split(b"\n")
    return b"\n".join(line for line in lines if b'"created_at"' not in line)


def _record_wrappers(monkeypatch: pytest.MonkeyPatch) -> list[SharedMappings]:
    """The SharedMappings that ``load_labelled`` makes from now on, in the order made."""
    made: list[SharedMappings] = []

    class Recorded(SharedMappings):
        def __init__(self, base: Locator) -> None:
            super().__init__(base)
            made.append(self)

    monkeypatch.setattr(sides_module, "SharedMappings", Recorded)
    return made


def test_two_runs_scored_with_shared_mappings_are_the_runs_scored_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus, gold = load_corpus(DOCS), read_gold(GOLD)
    made = _record_wrappers(monkeypatch)
    reranked = _reranked(BASE, tmp_path / "reranked.jsonl")
    together = load_pair(BASE, reranked, corpus=corpus, gold=gold)
    (shared,) = made
    assert shared.reused == sum(len(r.results) for r in read_run(BASE).records)
    pairs = zip(("base", "cand"), (BASE, reranked), together, strict=True)
    for name, run, evaluation in pairs:
        alone = load_side(run, corpus=corpus, gold=gold, locator=Locator(corpus))
        write_evaluation(evaluation, tmp_path / f"{name}-together.json")
        write_evaluation(alone, tmp_path / f"{name}-alone.json")
        assert _without_created_at(tmp_path / f"{name}-together.json") == _without_created_at(
            tmp_path / f"{name}-alone.json"
        )


def test_an_engines_locator_is_not_wrapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An engine (a Locator subclass, as the Ray engine's) maps its own way and keeps its memory
    bounded: its sides are mapped in full, nothing remembered across them."""
    corpus, gold = load_corpus(DOCS), read_gold(GOLD)
    made = _record_wrappers(monkeypatch)
    reranked = _reranked(BASE, tmp_path / "reranked.jsonl")
    counting = _Counting(corpus)
    load_pair(BASE, reranked, corpus=corpus, gold=gold, locator=counting)
    assert made == []
    assert counting.mapped == 2 * sum(len(r.results) for r in read_run(BASE).records)
