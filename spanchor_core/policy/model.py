"""The regression policy as data: :class:`Policy`, its :class:`AggregateGate` and
:class:`BootstrapSettings`, and :func:`default_policy` for when none is given.

The models check themselves strictly when built (see :mod:`spanchor_core.policy`); reading them
from files is :mod:`spanchor_core.policy.load`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Annotated, Final, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from spanchor_core.errors import InputError
from spanchor_core.metrics import parse_cutoff
from spanchor_core.policy.directions import (
    MEAN_PREFIX,
    Direction,
    is_unit_range,
    metric_direction,
    shown,
)

__all__ = [
    "DEFAULT_NOISE_FLOOR",
    "DEFAULT_N_RESAMPLES",
    "POLICY_KIND",
    "POLICY_SCHEMA_VERSION",
    "AggregateGate",
    "BootstrapSettings",
    "Policy",
    "default_policy",
]

POLICY_KIND: Final = "spanchor.policy"
POLICY_SCHEMA_VERSION: Final = 1
DEFAULT_NOISE_FLOOR = 1e-9
"""Deltas this small are float noise: ``0.8 - 0.75`` must not regress against ``max_drop=0.05``."""
DEFAULT_N_RESAMPLES = 2000
"""Bootstrap resamples and sign-flip permutations. 2,000 keeps the Monte Carlo error of a 95%
percentile bound well under the width of the interval and the smallest p-value at 1/2001."""


class KeyedValueError(ValueError):
    """A policy check that failed at one key path (``("max_drop", "recall@5")``).

    pydantic keeps the exception of a failed validator, so the file reader finds the key's
    line from ``keys`` instead of parsing the message.
    """

    def __init__(self, keys: tuple[str, ...], message: str) -> None:
        self.keys = keys
        self.message = message
        where = ".".join(k if len(k) <= 80 else shown(k) for k in keys)
        super().__init__(f"{where}: {message}")


def _threshold(value: object) -> float:
    """A finite, non-negative real number; strings and booleans are refused, never coerced."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a number, got {type(value).__name__} {shown(value)}")
    try:
        number = float(value)
    except OverflowError:  # an int beyond the float range
        number = math.inf if value > 0 else -math.inf
    if math.isnan(number):
        raise ValueError("must be a number, got NaN")
    if math.isinf(number):
        raise ValueError(f"must be finite, got {shown(value)}")
    if number < 0:
        raise ValueError(
            f"must not be negative, got {shown(value)} (a drop is given as a positive size)"
        )
    return number


Threshold = Annotated[float, BeforeValidator(_threshold)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class BootstrapSettings(_Frozen):
    """How aggregate confidence intervals and p-values are computed (see :mod:`.compare`).

    ``n_resamples`` paired bootstrap resamples give the percentile interval at ``confidence``;
    the same number of random sign flips give the p-value. 0 switches statistics off.
    """

    n_resamples: int = Field(default=DEFAULT_N_RESAMPLES, ge=0, le=1_000_000, strict=True)
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0, strict=True)
    seed: int = Field(default=0, ge=0, strict=True)


class AggregateGate(_Frozen):
    """A gate on the mean of one metric over the compared queries.

    With ``improvement`` the mean delta oriented so that positive is better, the gate fails when
    the drop measured by ``basis`` exceeds ``max_drop`` (by more than the noise floor):

    ``mean``      the observed mean drop;
    ``ci_upper``  the drop at the upper (most favourable) bound of the improvement's interval:
                  fails only when the data are confident the drop exceeds ``max_drop``;
    ``ci_lower``  the drop at the lower bound: fails unless the data are confident it does not.

    With ``alpha`` set, the gate also needs the paired test's p-value below ``alpha``: it then
    fails only on a significant change.
    """

    max_drop: Threshold = 0.0
    basis: Literal["mean", "ci_upper", "ci_lower"] = "mean"
    alpha: float | None = Field(default=None, gt=0.0, lt=1.0, strict=True)


class Policy(_Frozen):
    """Per-metric drop thresholds and the rules around them; see the module docstring.

    A query regresses on a metric when its value moves the wrong way by more than
    ``max_drop + noise_floor``; exactly ``max_drop`` is allowed. Deltas of at most
    ``noise_floor`` count as no change at all.
    """

    kind: Literal["spanchor.policy"] = POLICY_KIND
    schema_version: Literal[1] = POLICY_SCHEMA_VERSION
    max_drop: dict[str, Threshold] = Field(default_factory=dict)
    """Per-query gates: metric name -> largest allowed drop of one query's value."""
    aggregate: dict[str, AggregateGate] = Field(default_factory=dict)
    """Gates on a metric's mean over the compared queries."""
    noise_floor: Threshold = DEFAULT_NOISE_FLOOR
    flaky_queries: tuple[str, ...] = ()
    """Queries whose regressions (and absence) are reported as warnings and never fail."""
    min_queries: int = Field(default=1, ge=1, strict=True)
    """Fewer queries present in both evaluations is an error: too few to trust."""
    on_missing: Literal["fail", "warn"] = "fail"
    """What a query present in only one evaluation does to the verdict."""
    bootstrap: BootstrapSettings = Field(default_factory=BootstrapSettings)
    directions: dict[str, Direction] = Field(default_factory=dict)
    """Extra metric names (custom metrics) and which way is better for them."""

    @field_validator("flaky_queries", mode="after")
    @classmethod
    def _sorted_ids(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted(set(value)))

    @field_validator("aggregate", mode="before")
    @classmethod
    def _strip_mean(cls, value: object) -> object:
        if isinstance(value, Mapping):
            return {
                (
                    k[len(MEAN_PREFIX) :] if isinstance(k, str) and k.startswith(MEAN_PREFIX) else k
                ): v
                for k, v in value.items()
            }
        return value

    @model_validator(mode="after")
    def _check_metrics(self) -> Policy:
        for field in ("max_drop", "aggregate"):
            gates: Mapping[str, object] = getattr(self, field)
            for name in gates:
                try:
                    metric_direction(name, self.directions)
                except InputError as err:
                    raise KeyedValueError((field, name), str(err)) from None
        for name, drop in self.max_drop.items():
            if drop > 1 and is_unit_range(name, self.directions):
                raise KeyedValueError(
                    ("max_drop", name),
                    f"{drop!r} is larger than the whole [0, 1] range of the "
                    f"metric and can never trigger; did you mean {drop / 100!r}?",
                )
        for name, gate in self.aggregate.items():
            if gate.max_drop > 1 and is_unit_range(name, self.directions):
                raise KeyedValueError(
                    ("aggregate", name, "max_drop"),
                    f"{gate.max_drop!r} is larger than the whole "
                    f"[0, 1] range of the metric and can never trigger",
                )
            if self.bootstrap.n_resamples == 0 and (gate.basis != "mean" or gate.alpha is not None):
                raise KeyedValueError(
                    ("aggregate", name),
                    f"basis {gate.basis!r} / alpha need bootstrap statistics, "
                    "but bootstrap.n_resamples is 0",
                )
        return self

    @property
    def gated_metrics(self) -> tuple[str, ...]:
        """Every metric a comparison under this policy looks at, sorted."""
        return tuple(sorted({*self.max_drop, *self.aggregate}))

    def direction(self, name: str) -> Direction:
        """Which way is better for ``name`` under this policy's direction table."""
        return metric_direction(name, self.directions)


def default_policy(metric_names: Iterable[str]) -> Policy:
    """The policy used when none is given: recall at the largest available K may not drop at all.

    A demanding gate by design — any query that loses any gold character at the deepest cutoff
    fails the build — because the alternative (0.x: pass everything) hides real regressions.
    :class:`InputError` when no ``recall@K`` is among ``metric_names``.
    """
    cutoffs = []
    for name in metric_names:
        base, sep, text = name.partition("@")
        cutoff = parse_cutoff(text) if base == "recall" and sep else None
        if cutoff is not None:
            cutoffs.append(cutoff)
    if not cutoffs:
        raise InputError(
            "no policy was given and no recall@K metric is available to gate by default",
            hint="pass a policy naming the metrics to gate",
        )
    return Policy(max_drop={f"recall@{max(cutoffs)}": 0.0})
