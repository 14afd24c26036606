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

Metric direction (:mod:`.directions`): every built-in metric says whether higher is better
(:data:`spanchor_core.metrics.DEFAULT_METRICS`); a lower-is-better metric (``unmapped@K``,
``unmapped_rate``, ``latency_ms``, or any name given in ``directions``) regresses when it rises.
Diagnostics without a better direction (``retrieved_chars@K``) cannot be gated.

With no policy at all, :func:`default_policy` gates recall at the largest K with ``max_drop``
0: a query that loses any gold character at the deepest cutoff is a regression. spanchor 0.x
passed everything without a policy, which is wrong for a gate someone relies on.

The package: ``directions`` (metric names and which way is better), ``model`` (the models and
:func:`default_policy`), ``load`` (reading every file form), ``write`` (writing the rich JSON
form, and folding measured noise into a policy: :func:`with_noise`).
"""

from __future__ import annotations

from spanchor_core.policy.directions import Direction, metric_direction
from spanchor_core.policy.load import load_policy, policy_from_mapping, policy_from_pyproject
from spanchor_core.policy.model import (
    DEFAULT_N_RESAMPLES,
    DEFAULT_NOISE_FLOOR,
    POLICY_KIND,
    POLICY_SCHEMA_VERSION,
    AggregateGate,
    BootstrapSettings,
    Policy,
    default_policy,
)
from spanchor_core.policy.write import check_policy_target, policy_json, with_noise, write_policy

__all__ = [
    "DEFAULT_NOISE_FLOOR",
    "DEFAULT_N_RESAMPLES",
    "POLICY_KIND",
    "POLICY_SCHEMA_VERSION",
    "AggregateGate",
    "BootstrapSettings",
    "Direction",
    "Policy",
    "check_policy_target",
    "default_policy",
    "load_policy",
    "metric_direction",
    "policy_from_mapping",
    "policy_from_pyproject",
    "policy_json",
    "with_noise",
    "write_policy",
]
