"""Which metric names a policy may gate, and which way is better for each.

The metric grammar: ``base@K`` for per-K metrics (``recall@5``), the bare base for whole-list
ones (``iou``, ``mrr``), or a run-level name (``unmapped_rate``, ``latency_ms``). Every
built-in metric of :data:`spanchor_core.metrics.DEFAULT_METRICS` says whether higher is better;
a misspelt name is an :class:`~spanchor_core.errors.InputError` that suggests the closest one.
"""

from __future__ import annotations

import difflib
import reprlib
from collections.abc import Mapping
from typing import Final, Literal

from spanchor_core.errors import InputError
from spanchor_core.metrics import DEFAULT_METRICS, parse_cutoff

__all__ = ["Direction", "metric_direction"]

Direction = Literal["higher", "lower"]

RUN_LEVEL_DIRECTIONS: Final[Mapping[str, Direction]] = {
    # Not per-K metrics of metrics.py, but values an evaluation reports and a team may gate.
    "unmapped_rate": "lower",
    "latency_ms": "lower",
}
MEAN_PREFIX: Final = "mean_"

_SHOWN = reprlib.Repr()
_SHOWN.maxstring = 80
_SHOWN.maxother = 80


def shown(value: object) -> str:
    """``repr(value)``, cut to about 80 characters: a key or value quoted in an error message."""
    try:
        return _SHOWN.repr(value)
    except ValueError:  # an int of more than 4,300 digits has no repr
        return f"<an integer of {value.bit_length() if isinstance(value, int) else '?'} bits>"


def _known_bases(custom: Mapping[str, Direction]) -> list[str]:
    return [*DEFAULT_METRICS, *RUN_LEVEL_DIRECTIONS, *custom]


def _suggest(name: str, custom: Mapping[str, Direction]) -> str | None:
    base, sep, cutoff = name.partition("@")
    prefix = ""
    if base.startswith(MEAN_PREFIX):
        prefix, base = MEAN_PREFIX, base[len(MEAN_PREFIX) :]
    close = difflib.get_close_matches(base, _known_bases(custom), n=1, cutoff=0.6)
    if not close:
        return None
    best = close[0]
    metric = DEFAULT_METRICS.get(best)
    if metric is not None and metric.per_k and not (metric.whole_list and not sep):
        suffix = f"@{cutoff}" if sep and parse_cutoff(cutoff) is not None else "@5"
        return f"{prefix}{best}{suffix}"
    return f"{prefix}{best}"


def metric_direction(name: str, directions: Mapping[str, Direction] | None = None) -> Direction:
    """Which way is better for a gateable metric name; :class:`InputError` for any other name.

    ``name`` follows the metric grammar: ``base@K`` for per-K metrics (``recall@5``), the bare
    base for whole-list ones (``iou``, ``mrr``), or a run-level name (``unmapped_rate``,
    ``latency_ms``). ``directions`` adds names (custom metrics) and wins over the built-ins.
    """
    custom: Mapping[str, Direction] = directions or {}
    if name in custom:
        return custom[name]
    if name in RUN_LEVEL_DIRECTIONS:
        return RUN_LEVEL_DIRECTIONS[name]
    base, sep, cutoff = name.partition("@")
    metric = DEFAULT_METRICS.get(base)
    if metric is None and name.startswith(MEAN_PREFIX):
        raise InputError(
            f"{shown(name)} names a mean, not a per-query metric",
            hint=f"gate it under 'aggregate' as {shown(name.removeprefix(MEAN_PREFIX))}",
        )
    if metric is None:
        suggestion = _suggest(name, custom)
        hint = f"did you mean {shown(suggestion)}?" if suggestion else None
        raise InputError(
            f"unknown metric {shown(name)}",
            hint=hint or "known: " + ", ".join(_known_bases(custom)) + " (with @K where needed)",
        )
    if sep:
        if not metric.per_k:
            raise InputError(f"metric {base!r} takes no @K", hint=f"use {base!r}")
        if parse_cutoff(cutoff) is None:
            raise InputError(
                f"metric name {shown(name)} needs a whole number of at least 1 after '@' "
                "(at most 18 digits)",
                hint=f"for example '{base}@5'",
            )
    elif not metric.whole_list:
        raise InputError(f"metric {name!r} needs a cutoff", hint=f"for example '{base}@5'")
    if metric.higher_is_better is None:
        raise InputError(
            f"metric {name!r} is a diagnostic with no better direction and cannot be gated",
            hint="gate a score such as recall@K instead",
        )
    return "higher" if metric.higher_is_better else "lower"


def is_unit_range(name: str, directions: Mapping[str, Direction]) -> bool:
    """Whether ``name``'s values lie in ``[0, 1]`` (a built-in score not redefined by a policy)."""
    if name in directions:
        return False
    metric = DEFAULT_METRICS.get(name.partition("@")[0])
    return metric is not None and metric.score
