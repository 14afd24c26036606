"""Changing a gold set in memory: read it (or start an empty one), rebuild it with new entries.

Shared by every authoring step that rewrites a gold file (anchor add, check-corpus --fix,
promotion), so that all of them keep the gold set's header fields the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from spanchor_core.gold import GoldQuery, GoldSet, read_gold

__all__ = ["read_gold_or_empty", "rebuilt"]


def read_gold_or_empty(path: Path) -> GoldSet:
    """The gold set at ``path``, or an empty one bound to ``path`` when the file is missing."""
    return read_gold(path) if path.exists() else GoldSet(path=path)


def rebuilt(gold: GoldSet, entries: Iterable[GoldQuery]) -> GoldSet:
    """``gold`` with other entries, keeping its header fields (written in our format)."""
    return GoldSet(
        entries,
        path=gold.path,
        description=gold.description,
        corpus_fingerprint=gold.corpus_fingerprint,
        metadata=gold.metadata,
    )
