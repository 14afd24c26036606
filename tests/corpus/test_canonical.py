"""Canonical text: newlines unified, then NFC; idempotent."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from spanchor_core.corpus import Corpus, Document, canonicalize, load_corpus, sha256_text


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


def test_a_leading_byte_order_mark_is_dropped_everywhere_else_kept() -> None:
    assert canonicalize("\ufeffab") == "ab"
    assert canonicalize("\ufeff\ufeffab") == "ab"  # idempotent: no BOM survives at the start
    assert canonicalize("a\ufeffb") == "a\ufeffb"  # inside a text U+FEFF is a character


def test_every_corpus_entry_point_shares_the_bom_rule(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"\xef\xbb\xbfhello")
    loaded = load_corpus(tmp_path)
    built = Corpus.from_texts({"a": "\ufeffhello"})
    assert loaded.text("a") == built.text("a") == "hello"
    assert loaded.fingerprint == built.fingerprint
    assert Document.from_text("a", "\ufeffhello").sha256 == sha256_text("hello")
