"""Names and parameters of metric values: cutoffs K, ``min_overlap``, and names like ``recall@5``.

Checked once at the edge, so that the metric functions themselves never validate.
"""

from __future__ import annotations

from collections.abc import Iterable

from spanchor_core.errors import InputError

__all__ = [
    "DEFAULT_K",
    "DEFAULT_MIN_OVERLAP",
    "check_k",
    "check_min_overlap",
    "metric_parts",
    "split_metric_name",
]

DEFAULT_K: tuple[int, ...] = (1, 3, 5, 10)
DEFAULT_MIN_OVERLAP = 0.5


def check_k(k: Iterable[int]) -> tuple[int, ...]:
    """Sorted, de-duplicated cutoffs; each must be an integer of at least 1."""
    values = list(k)
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"K must be a whole number of at least 1, got {value!r}")
    if not values:
        raise InputError("at least one K is needed", hint="for example k=(1, 3, 5, 10)")
    return tuple(sorted(set(values)))


def check_min_overlap(min_overlap: float) -> float:
    """``min_overlap`` as a float in ``[0, 1]``."""
    value = float(min_overlap)
    if not 0.0 <= value <= 1.0:
        raise InputError(f"min_overlap must lie between 0 and 1, got {min_overlap!r}")
    return value


def split_metric_name(name: str) -> tuple[str, int | None]:
    """``"recall@5"`` -> ``("recall", 5)``; ``"iou"`` -> ``("iou", None)``."""
    base, sep, cutoff = name.partition("@")
    if not sep:
        return name, None
    if not cutoff.isdigit() or int(cutoff) < 1:
        raise InputError(f"metric name {name!r} needs a whole number of at least 1 after '@'")
    return base, int(cutoff)


def metric_parts(name: str) -> tuple[str, int | None]:
    """Like :func:`split_metric_name`, but never raises: a name outside the ``name@K`` grammar
    (a custom or 0.x metric) counts as a whole-list metric. For readers and renderers."""
    try:
        return split_metric_name(name)
    except InputError:
        return name, None
