"""The settings and policy reference (``docs/REFERENCE.md``), generated from the models.

Every key of ``[tool.spanchor]`` (:class:`~spanchor_core.settings.SpanchorSettings`) and of a
policy (:class:`~spanchor_core.policy.Policy` and its parts) with its type, default and the
field's docstring, so the page cannot drift from the code; ``tests/test_reference.py`` fails
when it is stale. Regenerate with ``python -m spanchor_core.render.reference``.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import re
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from spanchor_core.metrics import DEFAULT_METRICS
from spanchor_core.policy import AggregateGate, BootstrapSettings, Policy
from spanchor_core.settings import SpanchorSettings

__all__ = ["REFERENCE_PATH", "field_docs", "reference_markdown", "write_reference"]

REFERENCE_PATH = Path(__file__).resolve().parents[2] / "docs" / "REFERENCE.md"

# Fields whose model does not document them yet (spanchor_core/policy/model.py): the page
# takes these words until a docstring exists; a docstring in the model wins.
_UNDOCUMENTED: dict[tuple[type[BaseModel], str], str] = {
    (Policy, "kind"): "The file kind; always `spanchor.policy` (may be left out).",
    (Policy, "schema_version"): "The policy format version; always 1 (may be left out).",
    (Policy, "noise_floor"): (
        "Deltas of at most this size count as no change (float noise: 0.8 - 0.75 must not "
        "regress against a max_drop of 0.05)."
    ),
    (Policy, "bootstrap"): "How aggregate intervals and p-values are computed (below).",
    (AggregateGate, "max_drop"): "Largest allowed drop of the metric's mean.",
    (AggregateGate, "basis"): (
        "`mean`: the observed mean drop; `ci_upper`: fail only when the interval is confident "
        "the drop exceeds max_drop; `ci_lower`: fail unless it is confident it does not."
    ),
    (AggregateGate, "alpha"): (
        "When set, the gate also needs the paired sign-flip test's p-value below alpha."
    ),
    (BootstrapSettings, "n_resamples"): (
        "Paired bootstrap resamples and sign-flip permutations; 0 switches statistics off."
    ),
    (BootstrapSettings, "confidence"): "Confidence level of the percentile interval.",
    (BootstrapSettings, "seed"): "Seed of the local random generator (results repeat).",
}

EXAMPLE_TOML = """\
# spanchor.toml (or the same table in pyproject.toml). Paths are relative to this file.
[tool.spanchor]
docs = "docs"
gold = "gold.jsonl"
baseline = "runs/baseline.jsonl"
candidate = "runs/candidate.jsonl"
k = [1, 3, 5, 10]
max_unmapped_rate = 0.05
report = "spanchor-report.md"
junit = "spanchor-junit.xml"

[tool.spanchor.policy]
min_queries = 20
on_missing = "warn"
flaky_queries = ["q17"]

# No query may lose more than 10 points of recall@5, nor its hit@5.
[tool.spanchor.policy.max_drop]
"recall@5" = 0.10
"hit@5" = 0.0

# The mean recall@10 may drop by 2 points at most, judged at the interval's upper bound.
[tool.spanchor.policy.aggregate."recall@10"]
max_drop = 0.02
basis = "ci_upper"

[tool.spanchor.policy.bootstrap]
n_resamples = 2000
seed = 0
"""
"""A complete example; ``tests/test_reference.py`` checks that it validates."""


_ROLE = re.compile(r":[a-z]+:(`[^`]+`)")
"""A Sphinx role (``:mod:`x```) in a docstring: the page shows the name alone."""


def field_docs(model: type[BaseModel]) -> dict[str, str]:
    """``{field name: docstring}`` from the string literal below each field of ``model``."""
    found: dict[str, str] = {}
    tree = ast.parse(textwrap.dedent(inspect.getsource(model)))
    body = tree.body[0].body if isinstance(tree.body[0], ast.ClassDef) else []
    for node, after in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            found[node.target.id] = inspect.cleandoc(after.value.value)
    return found


def _type_text(annotation: Any) -> str:
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Annotated:
        return _type_text(args[0])
    if origin is Literal:
        return " \\| ".join(f'`"{a}"`' if isinstance(a, str) else f"`{a}`" for a in args)
    if origin in (Union, types.UnionType):
        return " or ".join(_type_text(a) for a in args if a is not type(None))
    if origin is tuple:
        return f"list of {_type_text(args[0])}"
    if origin is dict:
        return "table" if args[1] is Any else f"table of {_type_text(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    if isinstance(annotation, type) and issubclass(annotation, Path):
        return "path"
    names = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if isinstance(annotation, type) and annotation in names:
        return names[annotation]
    return "string" if isinstance(annotation, type) and issubclass(annotation, str) else "value"


def _toml_value(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, tuple | list):
        return "`[" + ", ".join(_toml_value(v).strip("`") for v in value) + "]`"
    if isinstance(value, dict):
        return "`{}`" if not value else f"`{value}`"
    if isinstance(value, BaseModel):
        return "see below"
    return f"`{value}`"


def _default(info: FieldInfo) -> str:
    if info.default_factory is not None:
        return _toml_value(info.default_factory())  # type: ignore[call-arg]
    if info.default is PydanticUndefined:
        return "required"
    return _toml_value(info.default)


def _rows(model: type[BaseModel], prefix: str = "") -> Iterator[str]:
    docs = field_docs(model)
    for name, info in model.model_fields.items():
        key = info.alias or name
        text = docs.get(name) or _UNDOCUMENTED.get((model, name), "")
        text = _ROLE.sub(r"\1", text.replace("``", "`"))
        text = " ".join(text.split()).replace("|", "\\|")
        yield f"| `{prefix}{key}` | {_type_text(info.annotation)} | {_default(info)} | {text} |"


def _table(model: type[BaseModel], prefix: str = "") -> str:
    head = "| key | type | default | meaning |\n| --- | --- | --- | --- |\n"
    return head + "\n".join(_rows(model, prefix)) + "\n"


def _metric_rows() -> str:
    lines = ["| metric | names | better | meaning |", "| --- | --- | --- | --- |"]
    for metric in DEFAULT_METRICS.values():
        names = []
        if metric.per_k:
            names.append(f"`{metric.name}@K`")
        if metric.whole_list or not metric.per_k:
            names.append(f"`{metric.name}`")
        better = {True: "higher", False: "lower", None: "neither"}[metric.higher_is_better]
        lines.append(f"| {metric.name} | {', '.join(names)} | {better} | {metric.description} |")
    return "\n".join(lines) + "\n"


def reference_markdown() -> str:
    """The text of ``docs/REFERENCE.md``."""
    return f"""\
# Settings and policy reference

<!-- Generated from spanchor_core.settings.SpanchorSettings and spanchor_core.policy.Policy
by `python -m spanchor_core.render.reference`; do not edit by hand. -->

## `[tool.spanchor]`: the settings of `spanchor gate` and the pytest plugin

`spanchor gate` without `--config` looks in the working directory, then in each parent, for a
`spanchor.toml`, else a `pyproject.toml` with a `[tool.spanchor]` table; the first found wins.
Both hold the same `[tool.spanchor]` table. Paths are relative to the file they are in; an
option given on the command line wins over its key. Every key is optional, but the gate needs
`baseline` and `candidate` (and `docs` and `gold` when they are run files).

{_table(SpanchorSettings)}
## Policy: when a comparison fails

A policy is a JSON or TOML file (`--policy`, or the `policy` key above), or the inline table
`[tool.spanchor.policy]`. Without one, `spanchor compare` and `spanchor gate` gate
`recall@K` at the largest K with a tolerance of 0: any query that loses any gold character
at the deepest cutoff fails.

{_table(Policy)}
### `aggregate."METRIC"`: a gate on a metric's mean over the compared queries

{_table(AggregateGate, "aggregate.METRIC.")}
### `bootstrap`: paired statistics

{_table(BootstrapSettings, "bootstrap.")}
### Metric names

`max_drop` and `aggregate` are keyed by metric name; a regression is a move the wrong way.
Custom metrics need their direction in `directions` (`"higher"` or `"lower"`).

{_metric_rows()}
## Example

```toml
{EXAMPLE_TOML}```
"""


def write_reference(path: Path = REFERENCE_PATH) -> Path:
    """(Re)write the reference page at ``path``; returns it."""
    from spanchor_core.render.files import write_report

    write_report(reference_markdown(), path, what="the reference page")
    return path


if __name__ == "__main__":  # pragma: no cover
    print(write_reference())
