"""A file's kind from its first JSON member, without parsing the file whole.

Every spanchor writer puts ``"kind"`` first (a JSONL header line, or a JSON document's first
key), so the opening bytes of a file say what it is. Two places need that and nothing more: the
evaluation reader's check of a large file (:mod:`spanchor_core.evaluate.kind`) and the output
guard, which must not replace a spanchor file of another kind (:mod:`spanchor_core.outputs`).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["leading_kind"]

# ``{"kind": "<a JSON string>"`` at the start, after an optional byte-order mark and whitespace.
_LEADING_KIND = re.compile(r'\A\ufeff?\s*\{\s*"kind"\s*:\s*("(?:[^"\\]|\\.)*")')


def leading_kind(text: str) -> Any:
    """The value of the first member when it is ``"kind"`` (escapes decoded), else ``None``."""
    match = _LEADING_KIND.match(text)
    if match is None:
        return None
    try:
        return json.loads(match.group(1))
    except ValueError:
        return None
