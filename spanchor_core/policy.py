"""The regression policy: which metrics gate a comparison, by how much they may drop, and how.

A :class:`Policy` is read from JSON, TOML or the ``[tool.spanchor.policy]`` table of a
``pyproject.toml`` (:func:`load_policy`, :func:`policy_from_pyproject`). It is checked strictly
when it is read, because a policy that silently checks nothing is a CI gate that always passes:

* every metric name must follow the metric grammar (``recall@5``, ``mrr``, ``ndcg@10``, ...;
  :func:`metric_direction`); a misspelt name is an error that suggests the closest known name;
* every threshold must be a finite, non-negative number (not a string, not a boolean, not NaN);
  a ``max_drop`` above 1 on a metric whose values lie in ``[0, 1]`` can never trigger, so it is
  refused too (it is nearly always a percentage written as ``5`` instead of ``0.05``);
* a policy file that gates no metric at all is refused.

Errors are :class:`~spanchor_core.errors.EvaluationFileError` carrying the file and, where it
can be found, the line.

File forms, all producing the same :class:`Policy`:

``spanchor 0.x`` (JSON, accepted as is)
    ``{"recall@5": 0.05, "hit@5": 0.1}``; also ``{"thresholds": {...}, "min_query_count": 20}``
    and flat metric keys mixed with ``min_query_count``. A ``mean_recall@5`` key, which 0.x
    silently ignored, is an aggregate gate on the mean here (:class:`AggregateGate`).
rich form (JSON or TOML; ``kind``/``schema_version`` optional, checked when present)
    ``{"kind": "spanchor.policy", "schema_version": 1, "max_drop": {"recall@5": 0.05},
    "aggregate": {"recall@5": {"max_drop": 0.01, "basis": "ci_upper", "alpha": 0.05}},
    "noise_floor": 1e-9, "flaky_queries": ["q17"], "min_queries": 30, "on_missing": "fail",
    "bootstrap": {"n_resamples": 2000, "confidence": 0.95, "seed": 0},
    "directions": {"latency_ms": "lower"}}``

Metric direction: every built-in metric says whether higher is better
(:data:`spanchor_core.metrics.DEFAULT_METRICS`); a lower-is-better metric (``unmapped@K``,
``unmapped_rate``, ``latency_ms``, or any name given in ``directions``) regresses when it rises.
Diagnostics without a better direction (``retrieved_chars@K``) cannot be gated.

With no policy at all, :func:`default_policy` gates recall at the largest K with ``max_drop``
0: a query that loses any gold character at the deepest cutoff is a regression. spanchor 0.x
passed everything without a policy, which is wrong for a gate someone relies on.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from spanchor_core.errors import EvaluationFileError, InputError
from spanchor_core.metrics import DEFAULT_METRICS

__all__ = [
    "DEFAULT_NOISE_FLOOR",
    "DEFAULT_N_RESAMPLES",
    "POLICY_KIND",
    "POLICY_SCHEMA_VERSION",
    "AggregateGate",
    "BootstrapSettings",
    "Direction",
    "Policy",
    "default_policy",
    "load_policy",
    "metric_direction",
    "policy_from_mapping",
    "policy_from_pyproject",
]

POLICY_KIND: Final = "spanchor.policy"
POLICY_SCHEMA_VERSION: Final = 1
DEFAULT_NOISE_FLOOR = 1e-9
"""Deltas this small are float noise: ``0.8 - 0.75`` must not regress against ``max_drop=0.05``."""
DEFAULT_N_RESAMPLES = 2000
"""Bootstrap resamples and sign-flip permutations. 2,000 keeps the Monte Carlo error of a 95%
percentile bound well under the width of the interval and the smallest p-value at 1/2001."""

Direction = Literal["higher", "lower"]

_RUN_LEVEL_DIRECTIONS: Mapping[str, Direction] = {
    # Not per-K metrics of metrics.py, but values an evaluation reports and a team may gate.
    "unmapped_rate": "lower",
    "latency_ms": "lower",
}
_MEAN_PREFIX = "mean_"
_LEGACY_KEYS = frozenset({"thresholds", "min_query_count"})
_RICH_KEYS = frozenset(
    {
        "kind",
        "schema_version",
        "max_drop",
        "aggregate",
        "noise_floor",
        "flaky_queries",
        "min_queries",
        "on_missing",
        "bootstrap",
        "directions",
    }
)


# -- metric names and directions ------------------------------------------------------------


def _known_bases(custom: Mapping[str, Direction]) -> list[str]:
    return [*DEFAULT_METRICS, *_RUN_LEVEL_DIRECTIONS, *custom]


def _suggest(name: str, custom: Mapping[str, Direction]) -> str | None:
    base, sep, cutoff = name.partition("@")
    prefix = ""
    if base.startswith(_MEAN_PREFIX):
        prefix, base = _MEAN_PREFIX, base[len(_MEAN_PREFIX) :]
    close = difflib.get_close_matches(base, _known_bases(custom), n=1, cutoff=0.6)
    if not close:
        return None
    best = close[0]
    metric = DEFAULT_METRICS.get(best)
    if metric is not None and metric.per_k and not (metric.whole_list and not sep):
        suffix = f"@{cutoff}" if sep and cutoff.isdigit() and int(cutoff) >= 1 else "@5"
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
    if name in _RUN_LEVEL_DIRECTIONS:
        return _RUN_LEVEL_DIRECTIONS[name]
    base, sep, cutoff = name.partition("@")
    metric = DEFAULT_METRICS.get(base)
    if metric is None and name.startswith(_MEAN_PREFIX):
        raise InputError(
            f"{name!r} names a mean, not a per-query metric",
            hint=f"gate it under 'aggregate' as {name.removeprefix(_MEAN_PREFIX)!r}",
        )
    if metric is None:
        suggestion = _suggest(name, custom)
        hint = f"did you mean {suggestion!r}?" if suggestion else None
        raise InputError(
            f"unknown metric {name!r}",
            hint=hint or "known: " + ", ".join(_known_bases(custom)) + " (with @K where needed)",
        )
    if sep:
        if not metric.per_k:
            raise InputError(f"metric {base!r} takes no @K", hint=f"use {base!r}")
        if not cutoff.isdigit() or int(cutoff) < 1 or cutoff != str(int(cutoff)):
            raise InputError(
                f"metric name {name!r} needs a whole number of at least 1 after '@'",
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


def _is_unit_range(name: str, directions: Mapping[str, Direction]) -> bool:
    if name in directions:
        return False
    metric = DEFAULT_METRICS.get(name.partition("@")[0])
    return metric is not None and metric.score


# -- the model ------------------------------------------------------------------------------


def _threshold(value: object) -> float:
    """A finite, non-negative real number; strings and booleans are refused, never coerced."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a number, got {type(value).__name__} {value!r}")
    number = float(value)
    if math.isnan(number):
        raise ValueError("must be a number, got NaN")
    if math.isinf(number):
        raise ValueError(f"must be finite, got {value!r}")
    if number < 0:
        raise ValueError(
            f"must not be negative, got {value!r} (a drop is given as a positive size)"
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
                    k[len(_MEAN_PREFIX) :]
                    if isinstance(k, str) and k.startswith(_MEAN_PREFIX)
                    else k
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
                    raise ValueError(f"{field}.{name}: {err}") from None
        for name, drop in self.max_drop.items():
            if drop > 1 and _is_unit_range(name, self.directions):
                raise ValueError(
                    f"max_drop.{name}: {drop!r} is larger than the whole [0, 1] range of the "
                    f"metric and can never trigger; did you mean {drop / 100!r}?"
                )
        for name, gate in self.aggregate.items():
            if gate.max_drop > 1 and _is_unit_range(name, self.directions):
                raise ValueError(
                    f"aggregate.{name}.max_drop: {gate.max_drop!r} is larger than the whole "
                    f"[0, 1] range of the metric and can never trigger"
                )
            if self.bootstrap.n_resamples == 0 and (gate.basis != "mean" or gate.alpha is not None):
                raise ValueError(
                    f"aggregate.{name}: basis {gate.basis!r} / alpha need bootstrap statistics, "
                    "but bootstrap.n_resamples is 0"
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
        base, sep, cutoff = name.partition("@")
        if base == "recall" and sep and cutoff.isdigit():
            cutoffs.append(int(cutoff))
    if not cutoffs:
        raise InputError(
            "no policy was given and no recall@K metric is available to gate by default",
            hint="pass a policy naming the metrics to gate",
        )
    return Policy(max_drop={f"recall@{max(cutoffs)}": 0.0})


# -- reading policy files -------------------------------------------------------------------


def _line_of(text: str | None, keys: Iterable[object]) -> int | None:
    """The line where the path of ``keys`` appears in ``text``: each key at or after the last."""
    if text is None:
        return None
    lines = text.splitlines()
    line = 0
    found: int | None = None
    for key in keys:
        if not isinstance(key, str):
            continue
        pattern = re.compile(r'(^|[\s{,\[."\'])' + re.escape(key) + r'($|[\s"\'.=:\]])')
        for index in range(line, len(lines)):
            if pattern.search(lines[index]):
                line, found = index, index + 1
                break
    return found


def _legacy_to_rich(data: Mapping[str, Any], path: Path | None, text: str | None) -> dict[str, Any]:
    """spanchor 0.x forms -> the keyword arguments of :class:`Policy`."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if key == "thresholds":
            if not isinstance(value, Mapping):
                raise EvaluationFileError(
                    f"'thresholds' must be an object of metric -> max drop, got "
                    f"{type(value).__name__}",
                    path=path,
                    line=_line_of(text, [key]),
                )
            flat.update(value)
        elif key != "min_query_count":
            flat[key] = value
    rich: dict[str, Any] = {"max_drop": {}, "aggregate": {}}
    for name, value in flat.items():
        try:
            metric_direction(name.removeprefix(_MEAN_PREFIX))
        except InputError as err:
            raise EvaluationFileError(
                f"{name}: {err.message}", path=path, line=_line_of(text, [name]), hint=err.hint
            ) from None
        if name.startswith(_MEAN_PREFIX):
            rich["aggregate"][name[len(_MEAN_PREFIX) :]] = {"max_drop": value}
        else:
            rich["max_drop"][name] = value
    count = data.get("min_query_count")
    if count is not None:
        rich["min_queries"] = count
    return rich


def _file_error(
    err: ValidationError, path: Path | None, text: str | None, legacy: bool
) -> EvaluationFileError:
    first = err.errors()[0]
    loc = [str(part) for part in first["loc"]]
    if legacy and loc and loc[0] in ("max_drop", "aggregate"):
        loc = loc[1:]  # the file named the metric at the top level (or under "thresholds")
    message = str(first["msg"]).removeprefix("Value error, ")
    where = ".".join(loc)
    keys: list[object] = list(loc)
    # A model-level error names the offending key in its message ("max_drop.recal@5: ...").
    named = re.match(r"([\w.@]+): ", message)
    if not loc and named:
        parts: list[object] = list(named.group(1).split("."))
        keys = parts[1:] if legacy else parts
    if legacy:
        message = message.removeprefix("max_drop.")
    return EvaluationFileError(
        f"{where}: {message}" if where else message,
        path=path,
        line=_line_of(text, keys),
    )


def policy_from_mapping(
    data: Mapping[str, Any], *, path: str | os.PathLike[str] | None = None, text: str | None = None
) -> Policy:
    """A :class:`Policy` from parsed JSON/TOML, in either the 0.x or the rich form.

    The rich form is recognised by any of its keys (``kind``, ``max_drop``, ``aggregate``, ...);
    anything else is the 0.x form, whose keys are metric names. ``path`` and ``text`` only make
    error messages point at the right line.
    """
    where = None if path is None else Path(path)
    if not isinstance(data, Mapping):
        raise EvaluationFileError(
            f"a policy must be an object of settings, got {type(data).__name__}", path=where
        )
    legacy = not (_RICH_KEYS & set(data)) and bool(data)
    if not legacy:
        for key in data:
            if key not in _RICH_KEYS:
                close = difflib.get_close_matches(str(key), sorted(_RICH_KEYS), n=1)
                in_rich = f" ({', '.join(sorted(_RICH_KEYS))})" if not close else ""
                hint = f"did you mean {close[0]!r}?" if close else None
                if key in _LEGACY_KEYS or _looks_like_metric(str(key)):
                    hint = "in the rich form, metric thresholds go under 'max_drop'"
                raise EvaluationFileError(
                    f"unknown policy key {key!r}{in_rich}",
                    path=where,
                    line=_line_of(text, [key]),
                    hint=hint,
                )
        if "kind" in data and data["kind"] != POLICY_KIND:
            raise EvaluationFileError(
                f"kind is {data['kind']!r}, not {POLICY_KIND!r}",
                path=where,
                line=_line_of(text, ["kind"]),
            )
        if data.get("schema_version", POLICY_SCHEMA_VERSION) != POLICY_SCHEMA_VERSION:
            raise EvaluationFileError(
                f"unsupported policy schema_version {data['schema_version']!r}",
                path=where,
                line=_line_of(text, ["schema_version"]),
                hint=f"this spanchor reads schema_version {POLICY_SCHEMA_VERSION}",
            )
        arguments: Mapping[str, Any] = data
    else:
        arguments = _legacy_to_rich(data, where, text)
    try:
        policy = Policy.model_validate(arguments)
    except ValidationError as err:
        raise _file_error(err, where, text, legacy) from None
    if not policy.max_drop and not policy.aggregate:
        raise EvaluationFileError(
            "the policy gates no metric, so no change could ever fail",
            path=where,
            hint='add a threshold, e.g. {"recall@5": 0.05}',
        )
    return policy


def _looks_like_metric(key: str) -> bool:
    return "@" in key or key.removeprefix(_MEAN_PREFIX) in DEFAULT_METRICS


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise EvaluationFileError("policy file not found", path=path) from None
    except (OSError, UnicodeDecodeError) as err:
        raise EvaluationFileError(f"cannot read policy file: {err}", path=path) from None


def _parse_json(text: str, path: Path) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_reject_duplicates)
    except json.JSONDecodeError as err:
        raise EvaluationFileError(
            f"not valid JSON: {err.msg}", path=path, line=err.lineno
        ) from None
    except (ValueError, RecursionError) as err:
        raise EvaluationFileError(
            f"not valid JSON: {err or 'nested too deeply'}", path=path
        ) from None
    except _DuplicateKey as err:
        raise EvaluationFileError(
            f"key {err.key!r} appears more than once", path=path, line=_line_of(text, [err.key])
        ) from None


def _parse_toml(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        match = re.search(r"at line (\d+)", str(err))
        raise EvaluationFileError(
            f"not valid TOML: {err}", path=path, line=int(match.group(1)) if match else None
        ) from None


def _pyproject_policy(
    data: Mapping[str, Any], file: Path, text: str, *, missing_ok: bool
) -> Policy | None:
    tool = data.get("tool", {})
    spanchor = tool.get("spanchor") if isinstance(tool, Mapping) else None
    table = spanchor.get("policy") if isinstance(spanchor, Mapping) else None
    if table is None:
        if missing_ok:
            return None
        raise EvaluationFileError(
            "no [tool.spanchor.policy] table",
            path=file,
            hint='add e.g. [tool.spanchor.policy.max_drop] "recall@5" = 0.05',
        )
    if not isinstance(table, Mapping):
        raise EvaluationFileError(
            "[tool.spanchor] policy must be a table", path=file, line=_line_of(text, ["policy"])
        )
    return policy_from_mapping(table, path=file, text=text)


def policy_from_pyproject(
    path: str | os.PathLike[str] = "pyproject.toml", *, missing_ok: bool = False
) -> Policy | None:
    """The policy in the ``[tool.spanchor.policy]`` table of a ``pyproject.toml``.

    The table holds the rich form's keys (``max_drop``, ``aggregate``, ...). Without the table:
    :class:`EvaluationFileError`, or ``None`` when ``missing_ok`` (for discovering a policy).
    """
    file = Path(path)
    text = _read_text(file)
    return _pyproject_policy(_parse_toml(text, file), file, text, missing_ok=missing_ok)


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read a policy file: JSON (0.x or rich form), TOML, or a ``pyproject.toml``.

    Dispatches on the suffix (``.json``, ``.toml``), then the content (``{`` starts JSON,
    anything else is tried as TOML). A TOML file with a ``[tool]`` table (a ``pyproject.toml``,
    whatever its name) is read through its ``[tool.spanchor.policy]`` table.
    """
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix in (".yaml", ".yml"):
        raise EvaluationFileError(
            "YAML policies are not read",
            path=file,
            hint="write the same keys as JSON or TOML (spanchor 0.x JSON policies work as is)",
        )
    text = _read_text(file)
    if suffix == ".json" or (suffix != ".toml" and text.lstrip().startswith("{")):
        data = _parse_json(text, file)
    else:
        data = _parse_toml(text, file)
        if file.name == "pyproject.toml" or {"tool", "project", "build-system"} & set(data):
            policy = _pyproject_policy(data, file, text, missing_ok=False)
            if policy is not None:  # always: missing_ok=False raised instead
                return policy
    if not isinstance(data, Mapping):
        raise EvaluationFileError(
            f"a policy must be an object of settings, got {type(data).__name__}", path=file, line=1
        )
    return policy_from_mapping(data, path=file, text=text)
