"""Locator model: a :class:`Location` made through its own ``__init__`` is a plain frozen
dataclass value (fields, defaults, equality, hashing, copies, pickling, immutability)."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spanchor_core.locate import Location, MatchStatus
from spanchor_core.spans import DocSpan

_FIELDS = (
    "status",
    "document_id",
    "start",
    "end",
    "confidence",
    "candidates",
    "resolved_by",
    "hint_rejected",
    "reason",
)


def test_fields_in_order_with_their_defaults() -> None:
    assert tuple(f.name for f in dataclasses.fields(Location)) == _FIELDS
    assert Location.__match_args__ == _FIELDS
    loc = Location(MatchStatus.UNMAPPED, None, None, None, 0.0)
    assert (loc.candidates, loc.resolved_by, loc.hint_rejected, loc.reason) == (
        (),
        None,
        False,
        None,
    )


@given(
    st.sampled_from(list(MatchStatus)),
    st.none() | st.text(max_size=5),
    st.none() | st.integers(),
    st.none() | st.integers(),
    st.floats(allow_nan=False),
    st.lists(st.builds(DocSpan, st.text(max_size=3), st.integers(), st.integers()), max_size=3),
    st.none() | st.sampled_from(["gold", "first"]),
    st.booleans(),
    st.none() | st.text(max_size=8),
)
def test_positional_and_keyword_construction_agree(
    status: MatchStatus,
    document_id: str | None,
    start: int | None,
    end: int | None,
    confidence: float,
    candidates: list[DocSpan],
    resolved_by: str | None,
    hint_rejected: bool,
    reason: str | None,
) -> None:
    spans = tuple(candidates)
    values = (
        status,
        document_id,
        start,
        end,
        confidence,
        spans,
        resolved_by,
        hint_rejected,
        reason,
    )
    by_position = Location(*values)
    named: dict[str, Any] = dict(zip(_FIELDS, values, strict=True))
    by_name = Location(**named)
    assert by_position == by_name
    assert hash(by_position) == hash(by_name)
    assert tuple(getattr(by_position, name) for name in _FIELDS) == values
    assert dataclasses.astuple(by_position)[:5] == values[:5]
    assert pickle.loads(pickle.dumps(by_position)) == by_position
    assert dataclasses.replace(by_position, reason="r").reason == "r"


def test_frozen_and_argument_errors() -> None:
    loc = Location(MatchStatus.EXACT, "a", 0, 3, 1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        loc.start = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        Location(MatchStatus.EXACT, "a", 0, 3)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Location(MatchStatus.EXACT, "a", 0, 3, 1.0, colour="red")  # type: ignore[call-arg]
