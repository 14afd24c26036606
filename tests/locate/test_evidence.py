"""Locator: the same evidence in several places — hints and documents in every stage, fuzzy
candidates competing, the gold tie-break, confidence over equal places, rejected claims."""

from __future__ import annotations

import pytest

from spanchor_core.corpus import Corpus
from spanchor_core.errors import InputError
from spanchor_core.locate import LocateRequest, Locator, MatchStatus
from spanchor_core.spans import DocSpan
from tests.locate.texts import DUP, DUP_A, DUP_B1, DUP_B2, near, prose

HEADER = "title: Report\nfile_path: a.md\n\n"


def _dropped(text: str) -> str:
    words = text.split(" ")
    del words[3], words[8], words[14]
    return " ".join(words)


# ---------------------------------------------------------------- gold tie-break


def test_identical_copies_are_credited_to_the_one_overlapping_gold(locator: Locator) -> None:
    gold = DocSpan("b", DUP_B2 + 10, DUP_B2 + 60)
    loc = locator.locate(DUP, prefer=(gold,))
    assert (loc.status, loc.resolved_by) == (MatchStatus.AMBIGUOUS, "gold")
    assert loc.span == DocSpan("b", DUP_B2, DUP_B2 + len(DUP))
    assert len(loc.candidates) == 3
    assert loc.confidence == pytest.approx(1 / 3)  # three equally good places


def test_gold_elsewhere_falls_back_to_first(locator: Locator) -> None:
    loc = locator.locate(DUP, prefer=(DocSpan("c", 0, 10),))
    assert (loc.resolved_by, loc.start) == ("first", DUP_A)


def test_position_tie_break_ignores_gold(corpus: Corpus) -> None:
    gold = DocSpan("b", DUP_B2, DUP_B2 + len(DUP))
    loc = Locator(corpus, tie_break="position").locate(DUP, prefer=(gold,))
    assert (loc.resolved_by, loc.start) == ("first", DUP_A)


def test_hint_and_document_come_before_gold(locator: Locator) -> None:
    gold = DocSpan("b", DUP_B2, DUP_B2 + len(DUP))
    by_doc = locator.locate(DUP, document_id="a", prefer=(gold,))
    assert (by_doc.resolved_by, by_doc.start, by_doc.confidence) == ("document_id", DUP_A, 1.0)
    by_hint = locator.locate(DUP, start=DUP_B1 + 2, prefer=(gold,))
    assert (by_hint.resolved_by, by_hint.start) == ("nearest_hint", DUP_B1)
    assert by_hint.confidence == 1.0  # the hint falls on one copy: it tells them apart


def test_gold_tie_break_in_the_normalised_stage(locator: Locator) -> None:
    gold = DocSpan("b", DUP_B1, DUP_B1 + len(DUP))
    loc = locator.locate(DUP.upper(), prefer=(gold,))
    assert (loc.status, loc.resolved_by, loc.start) == (MatchStatus.AMBIGUOUS, "gold", DUP_B1)


def test_prefer_must_be_doc_spans(locator: Locator) -> None:
    with pytest.raises(InputError, match="prefer"):
        locator.locate_many([LocateRequest(DUP, prefer=[("b", 0, 5)])])  # type: ignore[arg-type]


# ---------------------------------------------------------------- fuzzy near-ties and hints


def test_fuzzy_copies_are_ambiguous_with_every_candidate(locator: Locator) -> None:
    loc = locator.locate(HEADER + DUP)
    assert (loc.status, loc.resolved_by) == (MatchStatus.AMBIGUOUS, "first")
    assert [(c.document_id, c.start) for c in loc.candidates] == [
        ("a", DUP_A),
        ("b", DUP_B1),
        ("b", DUP_B2),
    ]
    assert loc.confidence < 0.9 / 2  # a third of the alignment score


@pytest.mark.parametrize("alter", [lambda t: HEADER + t, _dropped], ids=["header", "dropped"])
def test_fuzzy_honours_the_offset_hint_and_the_document(locator: Locator, alter: object) -> None:
    assert callable(alter)
    text = alter(DUP)
    hinted = locator.locate(text, document_id="b", start=DUP_B2)
    assert hinted.resolved_by == "nearest_hint"
    assert near(hinted, "b", DUP_B2, DUP_B2 + len(DUP), slack=3)
    assert hinted.hint_rejected is False or hinted.start != DUP_B2
    in_doc = locator.locate(text, document_id="a")
    assert (in_doc.resolved_by, in_doc.document_id) == ("document_id", "a")
    gold = locator.locate(text, prefer=(DocSpan("b", DUP_B2, DUP_B2 + len(DUP)),))
    assert (gold.resolved_by, gold.document_id, gold.start) == ("gold", "b", DUP_B2)


def test_best_scoring_region_wins_over_an_earlier_weaker_one() -> None:
    passage = prose(20, 60)
    words = passage.split(" ")
    weaker = " ".join(w if i % 6 else "zz" + w for i, w in enumerate(words))  # 1 word in 6 off
    corpus = Corpus.from_texts(
        {"a": prose(21, 30) + " " + weaker, "b": prose(22, 30) + " " + passage}
    )
    loc = Locator(corpus).locate(HEADER + passage)
    assert (loc.status, loc.document_id) == (MatchStatus.FUZZY, "b")
    assert len(loc.candidates) == 1


def test_wrong_document_id_is_a_rejected_hint(locator: Locator) -> None:
    other = prose(1, 30)  # UNIQUE, in document "a"
    assert locator.locate(other, document_id="b").hint_rejected is True
    assert locator.locate(other, document_id="a").hint_rejected is False


# ---------------------------------------------------------------- short texts, edges


def test_short_texts_are_not_fuzzy_matched(locator: Locator) -> None:
    loc = locator.locate("xq" + DUP[:20])
    assert loc.status is MatchStatus.UNMAPPED
    assert loc.reason is not None
    assert "too short" in loc.reason
    assert Locator(locator.corpus, fuzzy_min_chars=12).locate("xq" + DUP[:20]).span is not None


def test_fuzzy_span_covers_words_dropped_near_an_edge() -> None:
    passage = prose(30, 80)
    corpus = Corpus.from_texts({"a": prose(31, 40) + " " + passage + " " + prose(32, 40)})
    start = corpus.text("a").index(passage)
    words = passage.split(" ")
    altered = " ".join(words[:1] + words[4:-4] + words[-1:])  # three words after the first
    loc = Locator(corpus).locate(altered)
    assert near(loc, "a", start, start + len(passage), slack=2)


def test_settings_are_checked(corpus: Corpus) -> None:
    with pytest.raises(InputError, match="tie_break"):
        Locator(corpus, tie_break="nearest")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="fuzzy_tie"):
        Locator(corpus, fuzzy_tie=2.0)
    with pytest.raises(InputError, match="fuzzy_min_chars"):
        Locator(corpus, fuzzy_min_chars=0)


def test_normalised_copies_share_the_confidence(locator: Locator) -> None:
    loc = locator.locate(DUP.upper())
    assert loc.resolved_by == "first"
    assert loc.confidence <= 0.99 / 3
