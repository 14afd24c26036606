"""Optional matplotlib figures: the per-query delta plot and recall-vs-K curves.

The same pictures as the HTML report (:mod:`spanchor_core.render.html`), drawn from the same
data (:mod:`spanchor_core.render.series`), as matplotlib
``Axes`` for notebooks and papers. matplotlib is an optional extra (``pip install
'spanchor[plot]'``) and is imported only when a function here is called, so importing this
module — or ``spanchor_core`` — never needs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from spanchor_core.compare import Comparison
from spanchor_core.errors import InputError
from spanchor_core.evaluate import Evaluation
from spanchor_core.render.series import (
    DELTA_COLOURS,
    SERIES_COLOURS,
    metric_curve,
    primary_metric,
    query_deltas,
)
from spanchor_core.render.wording import (
    retriever_description,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_query_deltas", "plot_recall_at_k"]

_INSTALL_HINT = "plotting needs matplotlib: pip install 'spanchor[plot]'"


def _pyplot() -> Any:
    """``matplotlib.pyplot``, or an ImportError that says how to install it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError(_INSTALL_HINT) from err
    return plt


def _axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    if ax is not None:
        return ax
    _, new = _pyplot().subplots(figsize=size, layout="constrained")
    result: Axes = new
    return result


def plot_query_deltas(
    comparison: Comparison, metric: str | None = None, ax: Axes | None = None
) -> Axes:
    """Horizontal bars of each query's change in ``metric`` (default: the first gated metric),
    worst at the top; queries that did not change share one grey bar.

    Colours as in the HTML report: red for queries that fail the gate, pale red for drops the
    gate allows, green for improvements. Draws on ``ax`` if given, else on a new figure.
    """
    name = metric if metric is not None else primary_metric(comparison)
    if name is None:
        raise InputError("the comparison has no metric to plot")
    deltas = query_deltas(comparison, name)
    changed = [d for d in deltas if d.kind != "unchanged"]
    unchanged = len(deltas) - len(changed)
    labels = [d.query_id for d in changed]
    values = [d.delta for d in changed]
    colours = [DELTA_COLOURS[d.kind] for d in changed]
    if unchanged:
        # the unchanged queries sit between the losses and the gains, as in the ordering
        at = sum(1 for d in changed if d.kind in ("regressed", "flaky", "worse"))
        labels.insert(at, f"{unchanged} unchanged")
        values.insert(at, 0.0)
        colours.insert(at, DELTA_COLOURS["unchanged"])
    axes = _axes(ax, (7.0, max(2.0, 0.6 + 0.25 * len(labels))))
    positions = list(range(len(labels)))
    axes.barh(positions, values, color=colours, height=0.7)
    if unchanged:
        axes.plot([0.0], [labels.index(f"{unchanged} unchanged")], "|", color="#616161", ms=10)
    axes.set_yticks(positions, labels)
    axes.invert_yaxis()  # worst at the top
    axes.axvline(0.0, color="black", linewidth=1)
    axes.set_xlabel(f"Δ {name} (candidate − baseline)")
    axes.set_title(f"Per-query change in {name}")
    axes.grid(axis="x", alpha=0.3)
    return axes


def _label(evaluation: Evaluation, index: int) -> str:
    return retriever_description(evaluation) or f"run {index + 1}"


def plot_recall_at_k(
    *evaluations: Evaluation,
    labels: Sequence[str] | None = None,
    metric: str = "recall",
    ax: Axes | None = None,
) -> Axes:
    """Mean ``metric@K`` against K, one line per evaluation, over the K values all of them have.

    ``labels`` default to each run's retriever description. Each mean is over that
    evaluation's scored queries. Draws on ``ax`` if given, else on a new figure.
    """
    if not evaluations:
        raise InputError("plot_recall_at_k needs at least one evaluation")
    if labels is not None and len(labels) != len(evaluations):
        raise InputError(f"{len(labels)} labels for {len(evaluations)} evaluations")
    curves = [metric_curve(evaluation, metric) for evaluation in evaluations]
    common = set.intersection(*({k for k, _ in curve} for curve in curves))
    if not common:
        raise InputError(f"the evaluations share no {metric}@K metric to plot")
    ks = sorted(common)
    names = (
        list(labels) if labels is not None else [_label(e, i) for i, e in enumerate(evaluations)]
    )
    axes = _axes(ax, (6.0, 4.0))
    for index, (name, curve) in enumerate(zip(names, curves, strict=True)):
        values = dict(curve)
        axes.plot(
            ks,
            [values[k] for k in ks],
            marker="o",
            color=SERIES_COLOURS[index % len(SERIES_COLOURS)],
            linestyle="--" if index == 0 and len(curves) > 1 else "-",
            label=name,
        )
    axes.set_xticks(ks, [str(k) for k in ks])
    axes.set_xlabel("K (results considered)")
    axes.set_ylabel(f"mean {metric}@K")
    top = max(1.0, *(v for curve in curves for _, v in curve))
    axes.set_ylim(0.0, top * 1.02)
    axes.grid(alpha=0.3)
    axes.legend()
    return axes
