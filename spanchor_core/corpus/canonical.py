"""Canonical text, the one coordinate system of spanchor, and the hash that pins it.

Canonical text is Unicode NFC, with ``\\r\\n`` and lone ``\\r`` turned into ``\\n`` and nothing
else changed. Every offset spanchor stores counts code points of this form.
"""

from __future__ import annotations

import hashlib
import unicodedata

__all__ = ["canonicalize", "sha256_text"]


def canonicalize(text: str) -> str:
    """Return the canonical form of ``text``: newlines unified to ``\\n``, then NFC."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    return text


def sha256_text(text: str) -> str:
    """Hex sha256 of the UTF-8 bytes of ``text`` (callers pass canonical text)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
