"""The one pipeline from paths to a verdict: inputs -> evaluations -> comparison -> exit code.

``spanchor evaluate`` calls :func:`run_evaluation`, ``spanchor compare`` and ``spanchor gate``
call :func:`run_gate`, and the pytest plugin calls :func:`load_pair` / :func:`load_side`, so a
file is recognised, a run is checked and scored, and an exit code is decided in one place. Either
side of a comparison may be an :class:`Evaluation`, a :class:`Run`, or a path to an evaluation
file (ours or spanchor 0.x's) or to a run file, which is then scored against the documents and
the gold set. A file's kind is read from its parsed ``kind`` (:func:`file_kind`), never guessed
from its bytes.

The names are imported from their modules when first used (PEP 562 ``__getattr__``), so that
``spanchor evaluate`` (:mod:`.evaluation`) does not load the comparison, the noise bands and the
diagnosis that only ``compare``, ``gate`` and ``noise`` use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spanchor_core.compare import BAD_INPUT_FINDINGS
    from spanchor_core.pipeline.evaluation import EvaluationOutcome, GoldHashPolicy, run_evaluation
    from spanchor_core.pipeline.gate import (
        GateOutcome,
        engine_corpus,
        policy_with_drops,
        run_gate,
    )
    from spanchor_core.pipeline.noise import NoiseOutcome, run_noise
    from spanchor_core.pipeline.sides import (
        EvaluationSource,
        SideProgress,
        file_kind,
        load_pair,
        load_side,
        load_sides,
        open_run,
        score_run,
    )

__all__ = [
    "BAD_INPUT_FINDINGS",
    "EvaluationOutcome",
    "EvaluationSource",
    "GateOutcome",
    "GoldHashPolicy",
    "NoiseOutcome",
    "SideProgress",
    "engine_corpus",
    "file_kind",
    "load_pair",
    "load_side",
    "load_sides",
    "open_run",
    "policy_with_drops",
    "run_evaluation",
    "run_gate",
    "run_noise",
    "score_run",
]

_EXPORTS: dict[str, str] = {
    "spanchor_core.compare": "BAD_INPUT_FINDINGS",
    "spanchor_core.pipeline.evaluation": "EvaluationOutcome GoldHashPolicy run_evaluation",
    "spanchor_core.pipeline.gate": "GateOutcome engine_corpus policy_with_drops run_gate",
    "spanchor_core.pipeline.noise": "NoiseOutcome run_noise",
    "spanchor_core.pipeline.sides": (
        "EvaluationSource SideProgress file_kind load_pair load_side load_sides open_run score_run"
    ),
}
_MODULE_OF: dict[str, str] = {
    name: module for module, names in _EXPORTS.items() for name in names.split()
}
_SUBMODULES = frozenset({"evaluation", "gate", "mappings", "noise", "sides"})


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        if name in _SUBMODULES:  # as when this package imported them all
            return importlib.import_module(f"{__name__}.{name}")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
