"""Canonical text, the one coordinate system of spanchor, and the hash that pins it.

Canonical text is Unicode NFC, with ``\\r\\n`` and lone ``\\r`` turned into ``\\n``, leading
byte-order marks (U+FEFF) dropped, and nothing else changed. Every offset spanchor stores counts
code points of this form. The BOM rule lives here only, so that every entry point (files,
``Corpus.from_texts``, retrieved text, :mod:`spanchor_core.offsets`) agrees on it: a BOM is an
encoding artefact, not text, and a U+FEFF anywhere but at the start is kept.
"""

from __future__ import annotations

import hashlib
import unicodedata

__all__ = ["BOM", "canonical_form", "canonicalize", "sha256_text"]

BOM = "\ufeff"
"""The byte-order mark: dropped at the start of a text, kept anywhere else."""


def canonicalize(text: str) -> str:
    """Return the canonical form of ``text``: leading BOM dropped, newlines unified, then NFC."""
    if text.startswith(BOM):
        text = text.lstrip(BOM)  # all of them: canonicalising canonical text changes nothing
    return canonical_form(text)


def canonical_form(text: str) -> str:
    """Newlines unified to ``\\n``, then NFC — :func:`canonicalize` of a piece of a text.

    For pieces that do not start a text (segments of :class:`~spanchor_core.offsets.OffsetMap`),
    where a U+FEFF is a character, not a byte-order mark.
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    return text


def sha256_text(text: str) -> str:
    """Hex sha256 of the UTF-8 bytes of ``text`` (callers pass canonical text)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
