"""Names and parameters of metric values: cutoffs K, ``min_overlap``, and names like ``recall@5``.

Checked once at the edge, so that the metric functions themselves never validate.
"""

from __future__ import annotations

import math
import re
import reprlib
from collections.abc import Iterable

from spanchor_core.errors import InputError

__all__ = [
    "DEFAULT_K",
    "DEFAULT_MIN_OVERLAP",
    "check_k",
    "check_min_overlap",
    "metric_parts",
    "parse_cutoff",
    "split_metric_name",
]

DEFAULT_K: tuple[int, ...] = (1, 3, 5, 10)
DEFAULT_MIN_OVERLAP = 0.5


_CUTOFF = re.compile(r"[1-9][0-9]{0,17}")
"""A cutoff K as written after ``@``: ASCII digits, no leading zero, at most 18 digits (an
int64). Checked before any ``int()``: ``int()`` accepts other scripts' digits (``"²"``, ``"٥"``)
and refuses, with a bare ValueError, numbers of more than 4,300 digits."""

_SHOWN = reprlib.Repr()
_SHOWN.maxstring = 80
_SHOWN.maxother = 80


def _shown(value: object) -> str:
    """``repr(value)`` cut to about 80 characters, for error messages; total for huge ints."""
    try:
        return _SHOWN.repr(value)
    except ValueError:  # an int of more than 4,300 digits has no repr
        return f"<an integer of {value.bit_length() if isinstance(value, int) else '?'} bits>"


def parse_cutoff(text: str) -> int | None:
    """The K of ``"5"`` (from ``recall@5``); ``None`` unless it is a plain whole number >= 1."""
    return int(text) if _CUTOFF.fullmatch(text) else None


def check_k(k: Iterable[int]) -> tuple[int, ...]:
    """Sorted, de-duplicated cutoffs; each must be an integer of at least 1."""
    values = list(k)
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"K must be a whole number of at least 1, got {_shown(value)}")
    if not values:
        raise InputError("at least one K is needed", hint="for example k=(1, 3, 5, 10)")
    return tuple(sorted(set(values)))


def check_min_overlap(min_overlap: float) -> float:
    """``min_overlap`` as a float in ``[0, 1]``."""
    try:
        value = float(min_overlap)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond any float
        value = math.nan
    if not 0.0 <= value <= 1.0:
        raise InputError(f"min_overlap must lie between 0 and 1, got {_shown(min_overlap)}")
    return value


def split_metric_name(name: str) -> tuple[str, int | None]:
    """``"recall@5"`` -> ``("recall", 5)``; ``"iou"`` -> ``("iou", None)``."""
    base, sep, cutoff = name.partition("@")
    if not sep:
        return name, None
    value = parse_cutoff(cutoff)
    if value is None:
        raise InputError(
            f"metric name {_shown(name)} needs a whole number of at least 1 after '@' "
            "(ASCII digits, at most 18)"
        )
    return base, value


def metric_parts(name: str) -> tuple[str, int | None]:
    """Like :func:`split_metric_name`, but never raises: a name outside the ``name@K`` grammar
    (a custom or 0.x metric) counts as a whole-list metric. For readers and renderers."""
    try:
        return split_metric_name(name)
    except InputError:
        return name, None
