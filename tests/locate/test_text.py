"""The text helpers: the ASCII fast path of ``normalise`` equals the general rule."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from spanchor_core.locate.text import fold, normalise, normalise_with_positions


def _general(text: str) -> str:
    return "".join(fold(text).split())


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_ascii_normalise_is_fold_without_whitespace(text: str) -> None:
    assert text.isascii()
    assert normalise(text) == _general(text)


@given(st.text())
def test_normalise_any_text(text: str) -> None:
    assert normalise(text) == _general(text)


def test_every_ascii_whitespace_is_dropped() -> None:
    spaces = "".join(chr(c) for c in range(128) if chr(c).isspace())
    assert normalise(f"A{spaces}b\x00C") == "ab\x00c"


@given(st.text(alphabet=st.characters(max_codepoint=127)) | st.text())
def test_normalise_with_positions_points_at_each_kept_character(text: str) -> None:
    norm, kept = normalise_with_positions(text)
    assert norm == _general(text)
    assert len(kept) == len(norm)
    assert [fold(text[int(i)]) for i in kept] == list(norm)
    dropped = set(range(len(text))) - set(kept.tolist())
    assert all(text[i].isspace() for i in dropped)


def test_every_ascii_character_folds_as_the_general_rule() -> None:
    # the ASCII path lowers and drops in one translation: each of the 128 characters alone
    # and between letters, against ``fold`` and ``str.split``
    for c in map(chr, range(128)):
        assert normalise(c) == _general(c)
        assert normalise(f"Q{c}Z") == _general(f"Q{c}Z")
        assert normalise_with_positions(f"Q{c}Z")[0] == _general(f"Q{c}Z")
