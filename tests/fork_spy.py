"""Counting the forked children a module starts (``evaluate/file_fork.Forked``) and the
answers they give, for the tests of each place that forks."""

from __future__ import annotations

from types import ModuleType

import pytest

from spanchor_core.evaluate.file_fork import Forked


class ForkSpy:
    """Counts the children started and the answers they gave."""

    def __init__(self) -> None:
        self.started = 0
        self.answered = 0


def count_forks(monkeypatch: pytest.MonkeyPatch, module: ModuleType) -> ForkSpy:
    """``module.Forked`` replaced by a subclass that counts into the returned spy."""
    seen = ForkSpy()

    class Counted(Forked[object]):
        def __init__(self, work: object) -> None:
            seen.started += 1
            super().__init__(work)  # type: ignore[arg-type]

        def result(self) -> tuple[object] | None:
            answer = super().result()
            seen.answered += answer is not None
            return answer

    monkeypatch.setattr(module, "Forked", Counted)
    return seen
