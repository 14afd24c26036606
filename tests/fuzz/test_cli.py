"""The CLI commands that read files, each given one hostile input: exit 2 with one line on
stderr and no traceback (or a normal verdict when the damage was harmless), never an internal
error."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.checks import Known
from tests.fuzz.mutations import hostile, mutated_json, mutated_jsonl, mutated_toml
from tests.fuzz.seeds import seeds
from tests.fuzz.workspace import FILES, build, check_cli, first_candidate_id

EXAMPLES = int(os.environ.get("SPANCHOR_FUZZ_CLI_EXAMPLES", "10"))

fuzz = settings(
    max_examples=EXAMPLES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

_GOLD = ()
_CONFIG = ()

# command name: (argv, the file it gets hostile, how to mutate it, known internal errors)
COMMANDS: dict[
    str, tuple[list[str], str, Callable[[bytes], st.SearchStrategy[bytes]], tuple[Known, ...]]
] = {
    "validate": (["validate", "docs", "gold.jsonl"], "gold.jsonl", mutated_jsonl, _GOLD),
    "validate 0.x gold": (
        ["validate", "docs", "gold-0x.jsonl"], "gold-0x.jsonl", mutated_jsonl, _GOLD
    ),
    "evaluate gold": (
        ["evaluate", "docs", "gold.jsonl", "runs/baseline.jsonl", "--k", "1,3"],
        "gold.jsonl", mutated_jsonl, _GOLD,
    ),
    "evaluate run": (
        ["evaluate", "docs", "gold.jsonl", "runs/baseline.jsonl", "--k", "1,3"],
        "runs/baseline.jsonl", mutated_jsonl, (),
    ),
    "evaluate 0.x run": (
        ["evaluate", "docs", "gold.jsonl", "runs/results-0x.json", "--k", "1,3"],
        "runs/results-0x.json", mutated_json, (),
    ),
    "compare evaluations": (["compare", "b.json", "c.json"], "c.json", mutated_json, ()),
    "compare --policy json": (
        ["compare", "b.json", "c.json", "--policy", "policy.json"], "policy.json", mutated_json, ()
    ),
    "compare --policy toml": (
        ["compare", "b.json", "c.json", "--policy", "policy.toml"], "policy.toml", mutated_toml, ()
    ),
    "gate --config": (
        ["gate", "--config", "pyproject.toml"], "pyproject.toml", mutated_toml, _CONFIG
    ),
    "check-corpus": (["check-corpus", "docs", "gold.jsonl"], "gold.jsonl", mutated_jsonl, _GOLD),
    "anchor add": (
        ["anchor", "add", "q9", "Is it safe?", "docs", "Unplug it", "--gold", "gold.jsonl"],
        "gold.jsonl", mutated_jsonl, _GOLD,
    ),
    "gold review": (
        ["gold", "review", "candidates.jsonl", "-c", "CANDIDATE", "-q", "Why?", "--approve"],
        "candidates.jsonl", mutated_jsonl, (),
    ),
    "gold promote": (
        ["gold", "promote", "candidates.jsonl", "docs", "--gold", "gold.jsonl"],
        "candidates.jsonl", mutated_jsonl, _GOLD,
    ),
    "import squad": (
        ["import", "squad", "squad.json", "--out", "imported", "--gold", "imported.jsonl"],
        "squad.json", mutated_json, (),
    ),
    "import legacy": (
        ["import", "legacy", "gold-0x.jsonl", "-o", "converted.jsonl"],
        "gold-0x.jsonl", mutated_jsonl, _GOLD,
    ),
}  # fmt: skip


REPORTERS = {"validate", "check-corpus"}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-cli")


def test_every_command_passes_on_the_valid_project(workdir: Path) -> None:
    # the fuzzed files start valid: each command must work on the project as built
    for name, (argv, *_) in COMMANDS.items():
        root = build(workdir / "project")
        args = [first_candidate_id() if arg == "CANDIDATE" else arg for arg in argv]
        outcome = check_cli(args, root)
        # 3: the seed run answers 3 of 4 gold queries, which evaluate reports as incomplete
        assert outcome.code in (0, 1, 3), (name, outcome)


@pytest.mark.parametrize("command", sorted(COMMANDS))
@fuzz
@given(data=st.data())
def test_cli_command(workdir: Path, command: str, data: st.DataObject) -> None:
    argv, target, structural, tolerated = COMMANDS[command]
    assert target in FILES
    content = data.draw(hostile(getattr(seeds(), FILES[target]), structural))
    root = build(workdir / "project", {target: content})
    args = [first_candidate_id() if arg == "CANDIDATE" else arg for arg in argv]
    # validate and check-corpus exit 2 with a list of the problems they found: a report, which
    # may take several lines; every other exit 2 is one line
    check_cli(args, root, tolerated, one_line=command.split()[0] not in REPORTERS)
