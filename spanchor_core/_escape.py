"""Control characters made visible, for one terminal or log line.

Its own light module (no import but ``typing``) because every error message of the command line
goes through it: a usage error must not pay for importing the renderers, the models and numpy
just to print one line. :mod:`spanchor_core.render.text` re-exports it with the other escapers.
"""

from __future__ import annotations

from typing import Final

__all__ = ["escape_control"]

# Every C0 and C1 control character (ESC, BEL, backspace, CSI U+009B ...), DEL, and the two
# Unicode line separators, shown as a visible backslash escape.
_CONTROL_TABLE: Final[dict[int, str]] = {
    **{code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))},
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def escape_control(text: str) -> str:
    """``text`` safe for one terminal or log line: every control character shown escaped.

    Each C0/C1 control character and DEL becomes ``\\xNN`` (ESC is ``\\x1b``), a newline
    ``\\n``, a carriage return ``\\r``, a tab ``\\t`` and U+2028/U+2029 ``\\u2028``/``\\u2029``;
    everything else passes unchanged. So a query id carrying an escape sequence cannot recolour,
    move the cursor in or rewrite the CI log around it, nor break the line.
    """
    return text.translate(_CONTROL_TABLE)
