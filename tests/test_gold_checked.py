"""A gold set is checked once per command: ``gold_checked`` and the checks inside its block."""

from __future__ import annotations

import importlib

import pytest

from spanchor_core.corpus import Corpus
from spanchor_core.errors import GoldError
from spanchor_core.evaluate import check_gold
from spanchor_core.evaluate.checks import gold_checked
from spanchor_core.gold import Anchor, GoldQuery, GoldSet, validate_gold


def _corpus() -> Corpus:
    return Corpus.from_texts({"d": "the evidence text"})


def _gold(corpus: Corpus, start: int = 4, end: int = 12) -> GoldSet:
    return GoldSet([GoldQuery("q", "?", (Anchor.from_span(corpus, "d", start, end),))])


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []

    def counted(gold: GoldSet, corpus: Corpus) -> object:
        calls.append(1)
        return validate_gold(gold, corpus)

    # by module object: ``spanchor_core.evaluate`` as an attribute is the function
    monkeypatch.setattr(
        importlib.import_module("spanchor_core.evaluate.checks"), "validate_gold", counted
    )
    return calls


def test_checked_once_inside_the_block_for_the_same_objects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    corpus = _corpus()
    gold = _gold(corpus)
    calls = _counting(monkeypatch)
    with gold_checked(gold, corpus):
        check_gold(gold, corpus)
        check_gold(gold, corpus)
        assert len(calls) == 1
        other = _gold(corpus)  # equal, but another object: checked
        check_gold(other, corpus)
        assert len(calls) == 2
    check_gold(gold, corpus)  # after the block: checked again
    assert len(calls) == 3


def test_a_bad_gold_set_fails_on_entering_the_block() -> None:
    corpus = _corpus()
    gold = _gold(corpus)
    moved = Corpus.from_texts({"d": "other text entirely"})
    entered = False
    with pytest.raises(GoldError), gold_checked(gold, moved):
        entered = True
    assert not entered
    with pytest.raises(GoldError):  # and nothing was remembered
        check_gold(gold, moved)
