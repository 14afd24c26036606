"""Lost evidence shown inside its sentence (render/text.in_sentence) and in the Markdown
report: extended to the sentence's ends, the lost part in bold, every part escaped."""

from __future__ import annotations

from spanchor_core.render.text import InSentence, in_sentence

TEXT = (
    "The kettle is safe. The water level must stay between the MIN mark (0.5 litres) and "
    "the MAX mark. Never boil it dry.\n\nNext part"
)


def test_a_piece_that_starts_mid_word_is_shown_from_its_sentence_start() -> None:
    start = TEXT.index("vel must")
    end = TEXT.index(" and the MAX")
    assert in_sentence(TEXT, start, end, limit=200) == InSentence(
        "The water le", "vel must stay between the MIN mark (0.5 litres)", " and the MAX mark."
    )


def test_a_piece_that_ends_its_sentence_has_nothing_after_it() -> None:
    start = TEXT.index("Never")
    end = TEXT.index("dry.") + 4
    assert in_sentence(TEXT, start, end, limit=200) == InSentence("", "Never boil it dry.", "")


def test_the_context_is_capped_and_marked() -> None:
    long = "word " * 100 + "end of it."
    start = long.index("end")
    seen = in_sentence(long, start, start + 3, limit=200, context=20)
    assert seen.before.startswith("…")
    assert seen.before.endswith("word ")
    assert len(seen.before) <= 21
    assert seen.after == " of it."


def test_a_cut_piece_is_followed_by_the_mark_only() -> None:
    start = TEXT.index("The water")
    assert in_sentence(TEXT, start, len(TEXT), limit=9) == InSentence("", "The water", "…")


def test_whitespace_is_folded_and_paragraph_ends_stop_the_context() -> None:
    start = TEXT.index("Next")
    assert in_sentence(TEXT, start + 2, start + 4, limit=50) == InSentence("Ne", "xt", " part")
