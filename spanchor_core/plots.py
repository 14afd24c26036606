"""Transitional shim: the matplotlib figures now live in :mod:`spanchor_core.render.plots`.
Import from there; this module goes away after issue 15.
"""

from __future__ import annotations

from spanchor_core.render.plots import plot_query_deltas, plot_recall_at_k

__all__ = ["plot_query_deltas", "plot_recall_at_k"]
