"""The contract holds for the core recorder itself (so a failure elsewhere is the integration's)."""

from __future__ import annotations

from pathlib import Path

from tests.integrations.contract import SCENARIO, check_run_file, reference_run


def test_reference_run_passes_the_contract(tmp_path: Path) -> None:
    check_run_file(reference_run(tmp_path / "run.jsonl"))


def test_scenario_retrieval_is_meaningful() -> None:
    hits = SCENARIO.retrieve("Where should I store tomatoes?")
    assert hits[0].text == "Store tomatoes at room temperature, not in the fridge."
