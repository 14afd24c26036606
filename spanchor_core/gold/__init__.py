"""Gold anchors and gold sets: the evidence each query should retrieve, as source spans.

One concept a module: :mod:`~spanchor_core.gold.model` (:class:`Anchor`, :class:`GoldQuery`,
:class:`GoldSet`), :mod:`~spanchor_core.gold.file` (the file format: header, query lines,
:func:`read_gold`, :func:`write_gold`, JSON Schemas), :mod:`~spanchor_core.gold.legacy`
(spanchor 0.x gold lines), :mod:`~spanchor_core.gold.validate` (:func:`validate_gold`,
:class:`GoldProblem`) and :mod:`~spanchor_core.gold.anchoring` (:func:`anchor_from_text`).
"""

from __future__ import annotations

from spanchor_core.gold.anchoring import anchor_from_text
from spanchor_core.gold.file import (
    GoldHeader,
    GoldQueryLine,
    gold_json_schemas,
    read_gold,
    write_gold,
)
from spanchor_core.gold.legacy import LEGACY_SCHEMA_VERSIONS
from spanchor_core.gold.model import GOLD_KIND, GOLD_SCHEMA_VERSION, Anchor, GoldQuery, GoldSet
from spanchor_core.gold.validate import PROBLEM_CODES, GoldProblem, validate_gold

__all__ = [
    "GOLD_KIND",
    "GOLD_SCHEMA_VERSION",
    "LEGACY_SCHEMA_VERSIONS",
    "PROBLEM_CODES",
    "Anchor",
    "GoldHeader",
    "GoldProblem",
    "GoldQuery",
    "GoldQueryLine",
    "GoldSet",
    "anchor_from_text",
    "gold_json_schemas",
    "read_gold",
    "validate_gold",
    "write_gold",
]
