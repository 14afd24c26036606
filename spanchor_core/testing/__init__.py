"""pytest support: retrieval regression tests written as ordinary pytest tests.

This package is the ``pytest11`` plugin of the distribution (entry point ``spanchor``, this
module: it re-exports the hooks and fixtures of :mod:`.plugin`) and the one package of
``spanchor_core`` that imports pytest; ``import spanchor_core`` never does. Its modules:
``assertions`` (the helpers and their exceptions), ``messages`` (their text), ``inputs``
(objects or paths -> evaluations), ``config`` (the plugin's settings), ``plugin`` (options and
fixtures).

Assertion helpers (usable with or without the plugin's fixtures):

* :func:`assert_no_regression` compares a candidate with a baseline under a policy and raises
  :class:`RetrievalRegression` (an ``AssertionError``) whose message a reviewer can act on from
  the CI log: the verdict, each regressed query worst first with its question, the metrics that
  fell and the gold evidence text the candidate stopped retrieving, then the other errors.
* :func:`assert_evaluation` checks absolute floors (mean metric values, unmapped rate) and
  raises :class:`RetrievalBelowFloor`.

Fixtures (session-scoped), each configured by a command-line option, an ini key, or a key of
the ``[tool.spanchor]`` table that ``spanchor gate`` reads — first found wins, in that order:

* ``spanchor_corpus``: ``--spanchor-docs`` / ``spanchor_docs`` / ``docs``;
* ``spanchor_gold``: ``--spanchor-gold`` / ``spanchor_gold`` / ``gold``;
* ``spanchor_baseline`` (an :class:`Evaluation`; a run file is scored once):
  ``--spanchor-baseline`` / ``spanchor_baseline`` / ``baseline``;
* ``spanchor_policy``: ``--spanchor-policy`` / ``spanchor_policy`` / ``policy``.

``--spanchor-config`` / ``spanchor_config`` names the TOML file holding ``[tool.spanchor]``
(default: found as ``spanchor gate`` finds it — a ``spanchor.toml``, else a ``pyproject.toml``
with that table, in the directory pytest was started in or its parents); ``k``,
``min_overlap``, ``globs``,
``max_unmapped_rate``, ``seed`` and ``allow_mismatch`` are read from that table only. Ini and
``[tool.spanchor]`` paths are relative to the file that holds them, option paths to the
directory pytest was started in.

``spanchor_evaluate(run)`` evaluates a run (a :class:`~spanchor_core.runs.Run` or a run file)
against the configured corpus and gold set with one :class:`~spanchor_core.locate.Locator`
built once per session; ``spanchor_assert_no_regression(candidate)`` is
:func:`assert_no_regression` against the configured baseline and policy.

A test that asks for a fixture whose setting is missing errors at setup with a message naming
the option, the ini key and the ``[tool.spanchor]`` key to set. It is not skipped: a skipped
regression test is a gate that always passes. Nothing happens at configure time, so projects
that have the plugin installed but do not use it are never affected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# The pytest11 entry point names this module: pytest finds the hook and the fixtures here. They
# import the library when a test first asks for one, so a pytest session that uses none of them
# never loads numpy, pydantic or the index (the names below come in on first use).
from spanchor_core.testing.plugin import (
    AssertNoRegression,
    EvaluateRun,
    pytest_addoption,
    spanchor_assert_no_regression,
    spanchor_baseline,
    spanchor_config,
    spanchor_corpus,
    spanchor_evaluate,
    spanchor_gold,
    spanchor_locator,
    spanchor_policy,
)

if TYPE_CHECKING:
    from spanchor_core.testing.assertions import (
        RetrievalBelowFloor,
        RetrievalRegression,
        assert_evaluation,
        assert_no_regression,
        evaluation_floor_failures,
    )
    from spanchor_core.testing.config import SpanchorConfig
    from spanchor_core.testing.inputs import EvaluationSource, PathLike, PolicySource
    from spanchor_core.testing.messages import (
        DEFAULT_EXCERPT_CHARS,
        DEFAULT_LIMIT,
        regression_message,
    )

_LAZY = {
    "RetrievalBelowFloor": "assertions",
    "RetrievalRegression": "assertions",
    "assert_evaluation": "assertions",
    "assert_no_regression": "assertions",
    "evaluation_floor_failures": "assertions",
    "SpanchorConfig": "config",
    "EvaluationSource": "inputs",
    "PathLike": "inputs",
    "PolicySource": "inputs",
    "DEFAULT_EXCERPT_CHARS": "messages",
    "DEFAULT_LIMIT": "messages",
    "regression_message": "messages",
}
"""Name -> the module of this package that defines it, imported on first use (PEP 562).

No ``__dir__`` lists them on purpose: pytest looks for fixtures with ``dir()`` and ``getattr``
over this module, which would import them all at start-up."""

if not TYPE_CHECKING:  # to a type checker every name is an ordinary import (above)

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from importlib import import_module

        value = getattr(import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value


__all__ = [
    "DEFAULT_EXCERPT_CHARS",
    "DEFAULT_LIMIT",
    "AssertNoRegression",
    "EvaluateRun",
    "EvaluationSource",
    "PathLike",
    "PolicySource",
    "RetrievalBelowFloor",
    "RetrievalRegression",
    "SpanchorConfig",
    "assert_evaluation",
    "assert_no_regression",
    "evaluation_floor_failures",
    "pytest_addoption",
    "regression_message",
    "spanchor_assert_no_regression",
    "spanchor_baseline",
    "spanchor_config",
    "spanchor_corpus",
    "spanchor_evaluate",
    "spanchor_gold",
    "spanchor_locator",
    "spanchor_policy",
]
