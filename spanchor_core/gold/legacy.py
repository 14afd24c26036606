"""spanchor 0.x gold lines, read as 0.x wrote them.

A 0.x gold file has no header; every line carries ``"schema_version": "0.1.0"`` and its anchors
carry ``expected_text_hash``. 0.x hashed the same canonical text the same way, so its hashes
validate unchanged. Unknown keys of a 0.x query line are kept in ``metadata``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, ValidationError

from spanchor_core._io import describe_validation_error
from spanchor_core.errors import GoldError
from spanchor_core.gold.model import GOLD_KIND, Anchor, GoldQuery

__all__ = ["LEGACY_SCHEMA_VERSIONS", "read_legacy_query"]

LEGACY_SCHEMA_VERSIONS: Final = frozenset({"0.1.0"})
"""Gold-line ``schema_version`` values spanchor 0.x wrote (0.1 through 0.4 all write 0.1.0)."""


class _LegacyAnchorLine(BaseModel):
    # spanchor 0.x anchor: read as 0.x wrote it, unknown keys ignored as 0.x ignored them
    model_config = ConfigDict(frozen=True, extra="ignore", strict=True, defer_build=True)

    document_id: str
    start: int
    end: int
    expected_text_hash: str
    schema_version: str | None = None


class _LegacyQueryLine(BaseModel):
    # spanchor 0.x gold line; extra keys are kept (into metadata) rather than dropped
    model_config = ConfigDict(frozen=True, extra="allow", strict=True, defer_build=True)

    schema_version: str
    query_id: str
    question: str
    anchors: list[_LegacyAnchorLine]
    candidate_id: str | None = None


def read_legacy_query(data: dict[str, Any], path: Path, line: int) -> GoldQuery:
    """The query on a 0.x gold line (``data`` is its parsed JSON object)."""
    version = data.get("schema_version")
    if not isinstance(version, str) or version not in LEGACY_SCHEMA_VERSIONS:
        if "kind" in data:
            raise GoldError(
                f"unexpected {data['kind']!r} header in the middle of a spanchor 0.x gold set",
                path=path,
                line=line,
                hint="do not mix formats in one file",
            )
        raise GoldError(
            f"unknown gold schema_version {version!r}",
            path=path,
            line=line,
            hint="spanchor 0.x gold lines carry schema_version '0.1.0'; "
            f"our gold sets start with a {GOLD_KIND!r} header line",
        )
    try:
        model = _LegacyQueryLine.model_validate(data)
    except ValidationError as err:
        raise GoldError(
            f"spanchor 0.x gold line: {describe_validation_error(err)}",
            path=path,
            line=line,
            hint="fix the line or regenerate the gold set",
        ) from None
    metadata: dict[str, Any] = dict(model.model_extra or {})
    if model.candidate_id is not None:
        metadata["candidate_id"] = model.candidate_id
    anchors = tuple(
        Anchor(a.document_id, a.start, a.end, a.expected_text_hash) for a in model.anchors
    )
    return GoldQuery(model.query_id, model.question, anchors, (), metadata, line)
