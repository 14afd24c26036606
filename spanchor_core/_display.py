"""Notebook display without an import cycle: renderers register an HTML function per type,
and a model's ``_repr_html_`` asks :func:`html_for`.

The models (evaluate, compare) sit below rendering and may not import it; rendering registers
itself here when :mod:`spanchor_core.render.html` is imported (``import spanchor_core`` does).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["html_for", "register"]

_T = TypeVar("_T")

_RENDERERS: dict[type[Any], Callable[[Any], str]] = {}


def register(cls: type[_T], render: Callable[[_T], str]) -> None:
    """Show instances of ``cls`` (and its subclasses) in a notebook as ``render(obj)``."""
    _RENDERERS[cls] = render


def html_for(obj: object) -> str | None:
    """The registered HTML of ``obj``, or ``None`` (the notebook then shows its ``repr``)."""
    for cls in type(obj).__mro__:
        render = _RENDERERS.get(cls)
        if render is not None:
            return render(obj)
    return None
