"""``spanchor_core._fill``: frozen dataclasses with slots made through their slots' setters are
the objects their constructors make, and classes it cannot fill that way are refused."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat

import pytest

from spanchor_core._fill import fill, fill_one, slot_setters
from spanchor_core.compare import ChangeStatus, MetricChange, QueryChange
from spanchor_core.evaluate import LocatedResult


def test_filled_objects_are_the_constructed_ones() -> None:
    setters = slot_setters(MetricChange, ("metric", "baseline", "candidate", "delta", "status"))
    made = fill(
        MetricChange,
        setters,
        (repeat("mrr"), [0.5, 1.0], [0.25, 1.0], [-0.25, 0.0], [ChangeStatus.REGRESSION, None]),
        2,
    )
    assert made == [
        MetricChange("mrr", 0.5, 0.25, -0.25, ChangeStatus.REGRESSION),
        MetricChange("mrr", 1.0, 1.0, 0.0, None),
    ]
    assert hash(made[1]) == hash(MetricChange("mrr", 1.0, 1.0, 0.0, None))
    with pytest.raises(AttributeError):
        made[0].delta = 1.0  # type: ignore[misc]  # still frozen
    order = ("query_id", "status", "changes", "regressed", "flaky")
    row = fill_one(
        QueryChange, slot_setters(QueryChange, order), ("q", ChangeStatus.UNCHANGED, (), (), False)
    )
    assert row == QueryChange("q", ChangeStatus.UNCHANGED, ())
    names = ("rank", "status", "document_id", "start", "end", "confidence", "hint_rejected")
    result = fill_one(
        LocatedResult,
        slot_setters(LocatedResult, (*names, "resolved_by", "reason")),
        (1, "exact", "d", 0, 4, 1.0, False, None, None),
    )
    assert result == LocatedResult(1, "exact", "d", 0, 4, 1.0)
    assert repr(result) == repr(LocatedResult(1, "exact", "d", 0, 4, 1.0))


@dataclass(frozen=True, slots=True)
class _Checked:
    value: int

    def __post_init__(self) -> None:
        if self.value < 0:
            raise ValueError("negative")


@dataclass(frozen=True)
class _NoSlots:
    value: int


def test_classes_it_cannot_fill_alike_are_refused() -> None:
    with pytest.raises(TypeError, match="_Checked"):
        slot_setters(_Checked, ("value",))
    with pytest.raises(TypeError, match="_NoSlots"):
        slot_setters(_NoSlots, ("value",))
    with pytest.raises(TypeError, match="MetricChange"):
        slot_setters(MetricChange, ("metric", "baseline"))  # every field, or none
    setters = slot_setters(MetricChange, ("metric", "baseline", "candidate", "delta", "status"))
    with pytest.raises(ValueError, match="4 columns for 5 fields"):
        fill(MetricChange, setters, ([], [], [], []), 0)
