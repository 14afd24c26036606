"""What a UTF-8 JSON file can hold: finding lone surrogates and non-finite numbers in values.

JSON text may spell ``"\\ud800"`` (a lone surrogate, which UTF-8 cannot encode) and
``1e400`` (read as infinity, which strict JSON cannot write back). Authoring refuses both
where they come in — a candidates file line, a question or an edited text — so that they
never reach a hash or a rewrite as an internal error.
"""

from __future__ import annotations

import math
import re
from typing import Any, Final

__all__ = ["lone_surrogate", "unstorable"]

_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def lone_surrogate(text: str) -> str | None:
    """``"U+D800"``-style name of the first lone surrogate in ``text``, or None."""
    found = _SURROGATE.search(text)
    return None if found is None else f"U+{ord(found.group()):04X}"


def unstorable(value: Any) -> str | None:
    """Why ``value`` (parsed JSON) cannot be written back as UTF-8 strict JSON, or None.

    Names the field: ``"field 'parameters.x': inf is not a finite number"``. Iterative, so
    nesting of any depth is walked without recursion.
    """
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, item = stack.pop()
        shown = where if len(where) <= 60 else f"{where[:57]}..."
        label = f"field {shown!r}: " if where else ""
        if isinstance(item, float) and not math.isfinite(item):
            return f"{label}{item} is not a finite number"
        if isinstance(item, str):
            bad = lone_surrogate(item)
            if bad is not None:
                return f"{label}holds a lone surrogate {bad}, which UTF-8 cannot store"
        elif isinstance(item, dict):
            for key, inner in reversed(item.items()):
                bad = lone_surrogate(key) if isinstance(key, str) else None
                if bad is not None:
                    return f"a key holds a lone surrogate {bad}, which UTF-8 cannot store"
                stack.append((f"{where}.{key}" if where else str(key), inner))
        elif isinstance(item, list | tuple):
            stack.extend((f"{where}[{n}]", inner) for n, inner in reversed(list(enumerate(item))))
    return None
