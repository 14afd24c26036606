"""Retrieval regression tests as ordinary pytest tests, with spanchor's pytest plugin.

Copy this file into your test suite. Installing spanchor registers the plugin; its fixtures
read the ``[tool.spanchor]`` table of ``pyproject.toml`` (here ``examples/ci/pyproject.toml``,
which points at the bundled quickstart example), so ``pytest`` and ``spanchor gate`` share one
configuration. The candidate run is the table's ``candidate`` key, or the file named by the
``SPANCHOR_CANDIDATE`` environment variable (how CI points at the run it just recorded).

A regression fails the test, not the session: the failure message lists each regressed query,
worst first, with its question, the metrics that fell and the gold evidence it lost.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from spanchor_core import Corpus, GoldSet
from spanchor_core.testing import (
    AssertNoRegression,
    EvaluateRun,
    SpanchorConfig,
    assert_evaluation,
)

FLOOR = {"recall@5": 0.80}
"""Absolute floor on the candidate's mean: catches a slow slide that no single query shows."""


@pytest.fixture(scope="session")
def candidate_run(spanchor_config: SpanchorConfig) -> Path:
    """The run under test: ``$SPANCHOR_CANDIDATE``, else ``candidate`` of ``[tool.spanchor]``."""
    override = os.environ.get("SPANCHOR_CANDIDATE")
    if override:
        return Path(override).resolve()
    config_file = spanchor_config.config_file
    if config_file is None:
        pytest.fail("set SPANCHOR_CANDIDATE or `candidate` in [tool.spanchor]", pytrace=False)
    table = tomllib.loads(config_file.read_text(encoding="utf-8"))["tool"]["spanchor"]
    if "candidate" not in table:
        pytest.fail(f"no `candidate` in [tool.spanchor] of {config_file}", pytrace=False)
    return config_file.parent / str(table["candidate"])


def test_candidate_keeps_the_baselines_evidence(
    spanchor_assert_no_regression: AssertNoRegression, candidate_run: Path
) -> None:
    """No query may lose more evidence than the policy of ``[tool.spanchor]`` allows."""
    spanchor_assert_no_regression(candidate_run)


def test_candidate_meets_the_floor(
    spanchor_evaluate: EvaluateRun,
    spanchor_gold: GoldSet,
    spanchor_corpus: Corpus,
    candidate_run: Path,
) -> None:
    """Mean recall@5 stays above an absolute floor and nearly every result maps."""
    assert_evaluation(
        spanchor_evaluate(candidate_run),
        min_mean=FLOOR,
        max_unmapped_rate=0.05,
        gold=spanchor_gold,
        corpus=spanchor_corpus,
    )
