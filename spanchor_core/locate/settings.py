"""The locator's tuning knobs, checked once: :class:`LocatorSettings`.

Every stage reads its thresholds and index sizes from here; a bad value is an
:class:`~spanchor_core.errors.InputError` when the locator is built, never a numpy error later.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real
from typing import Literal

from spanchor_core.errors import InputError

__all__ = ["TIE_BREAKS", "LocatorSettings", "TieBreak"]

TieBreak = Literal["gold", "position"]
"""How equally good places no document or hint tells apart are chosen between."""
TIE_BREAKS: tuple[TieBreak, ...] = ("gold", "position")


def _whole(settings: LocatorSettings, name: str, least: int) -> None:
    """Check a whole-number field and store it as a plain ``int`` (numpy integers welcome)."""
    value = getattr(settings, name)
    if isinstance(value, bool) or not isinstance(value, Integral) or int(value) < least:
        raise InputError(f"{name} must be a whole number of at least {least}, got {value!r}")
    object.__setattr__(settings, name, int(value))


@dataclass(frozen=True, slots=True)
class LocatorSettings:
    """Parameters of :class:`~spanchor_core.locate.Locator` (its docstring says what each does)."""

    fuzzy_threshold: float = 0.8
    max_candidates: int = 50
    kgram: int = 20
    window: int = 48
    max_occurrences: int = 128
    fuzzy_scan_limit: int = 2_000_000
    tie_break: TieBreak = "gold"
    fuzzy_min_chars: int = 32
    fuzzy_tie: float = 0.02

    def __post_init__(self) -> None:
        for name in ("fuzzy_threshold", "fuzzy_tie"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Real):
                raise InputError(f"{name} must be a number in [0, 1], got {value!r}")
            if not 0.0 <= float(value) <= 1.0:
                raise InputError(f"{name} must be a number in [0, 1], got {value!r}")
        if self.tie_break not in TIE_BREAKS:
            raise InputError(
                f"tie_break must be one of {', '.join(TIE_BREAKS)}, got {self.tie_break!r}"
            )
        _whole(self, "fuzzy_min_chars", 1)
        _whole(self, "kgram", 4)
        _whole(self, "window", 2)
        _whole(self, "max_candidates", 1)
        _whole(self, "max_occurrences", 1)
        _whole(self, "fuzzy_scan_limit", 0)

    @property
    def min_indexed_length(self) -> int:
        """Shortest text that holds a full minimizer window; shorter ones are scanned for."""
        return self.kgram + self.window - 1

    @property
    def anchor_prefix(self) -> int:
        """How much of a text's start is searched for its rarest minimizer."""
        return 3 * self.window + self.kgram - 1
