"""Canonical text: newlines unified, then NFC; idempotent."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from spanchor_core.corpus import canonicalize


def test_canonicalize_unifies_newlines_and_composes() -> None:
    assert canonicalize("a\r\nb\rc\n") == "a\nb\nc\n"
    assert canonicalize("e\u0301") == "\u00e9"
    # nothing else changes: tabs, trailing spaces, compatibility characters stay
    assert canonicalize("x\t \ufb01 ") == "x\t \ufb01 "


@given(st.text())
def test_canonicalize_is_idempotent(text: str) -> None:
    once = canonicalize(text)
    assert canonicalize(once) == once
    assert "\r" not in once
