"""Importing spanchor 0.x gold files: :func:`import_legacy_gold` (``spanchor import legacy``)."""

from __future__ import annotations

import os
from pathlib import Path

from spanchor_core.errors import InputError
from spanchor_core.gold import GoldSet, read_gold

__all__ = ["import_legacy_gold"]


def import_legacy_gold(path: str | os.PathLike[str]) -> GoldSet:
    """A spanchor 0.x gold file as a gold set in our format (write it with ``write_gold``).

    :func:`spanchor_core.read_gold` already reads 0.x files unchanged (same canonical text,
    same offsets, same hashes; ``candidate_id`` and unknown keys go to ``metadata``); this
    only checks that the file *is* 0.x and drops the link to the old file, so that
    ``write_gold(import_legacy_gold(old), new)`` is the whole conversion.
    """
    gold = read_gold(path)
    if gold.file_format != "spanchor-0.x" and len(gold.entries) > 0:
        raise InputError(
            f"not a spanchor 0.x gold set (format {gold.file_format})",
            path=Path(path),
            hint="it is already in the current format",
        )
    return GoldSet(gold.entries, description=f"converted from spanchor 0.x {Path(path).name}")
