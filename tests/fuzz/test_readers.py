"""Every file reader, given hostile bytes built from a valid file of its kind, returns or raises
an InputError with a one-line message: never an internal error (issue 12, item 4)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanchor_core.authoring import read_candidates
from spanchor_core.compare import read_comparison
from spanchor_core.evaluate import read_evaluation
from spanchor_core.gold import read_gold, write_gold
from spanchor_core.importers import import_squad
from spanchor_core.policy import load_policy, policy_from_pyproject
from spanchor_core.runs import iter_run, read_run
from spanchor_core.settings import gate_config_from_pyproject
from tests.fuzz.checks import Known, only_input_errors
from tests.fuzz.mutations import hostile, mutated_json, mutated_jsonl, mutated_toml
from tests.fuzz.seeds import Seeds, seeds

EXAMPLES = int(os.environ.get("SPANCHOR_FUZZ_EXAMPLES", "100"))

fuzz = settings(
    max_examples=EXAMPLES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-readers")


def _write(directory: Path, name: str, data: bytes) -> Path:
    path = directory / name
    path.write_bytes(data)
    return path


def _seed(name: str) -> bytes:
    value: bytes = getattr(seeds(), name)
    return value


# ---------------------------------------------------------------------------------- gold sets

_GOLD_KNOWN = ()


def _use_gold(path: Path) -> None:
    gold = read_gold(path)
    # what evaluate, gate and anchor add do next with a gold set that read: hash it, rewrite it
    _ = gold.sha256, gold.legacy_sha256
    write_gold(gold, path.with_name("rewritten.jsonl"))


@pytest.mark.parametrize("shape", ["gold", "gold_0x"])
@fuzz
@given(data=st.data())
def test_gold_reader(workdir: Path, shape: str, data: st.DataObject) -> None:
    content = data.draw(hostile(_seed(shape), mutated_jsonl))
    path = _write(workdir, "gold.jsonl", content)
    only_input_errors(lambda: _use_gold(path), _GOLD_KNOWN)


# ---------------------------------------------------------------------------------- run files

RUN_SHAPES: dict[str, tuple[str, Callable[[bytes], st.SearchStrategy[bytes]]]] = {
    "run": ("run.jsonl", mutated_jsonl),
    "run_0x_jsonl": ("results.jsonl", mutated_jsonl),
    "run_0x_object": ("results.json", mutated_json),
    "run_0x_list": ("results.json", mutated_json),
}


def _stream(path: Path) -> None:
    stream = iter_run(path)
    _ = stream.header
    for _record in stream:
        pass


@pytest.mark.parametrize("shape", sorted(RUN_SHAPES))
@pytest.mark.parametrize("reader", ["read_run", "iter_run"])
@fuzz
@given(data=st.data())
def test_run_readers(workdir: Path, shape: str, reader: str, data: st.DataObject) -> None:
    name, structural = RUN_SHAPES[shape]
    content = data.draw(hostile(_seed(shape), structural))
    path = _write(workdir, name, content)
    only_input_errors(lambda: read_run(path) if reader == "read_run" else _stream(path))


# -------------------------------------------------------------- evaluations and comparisons


@pytest.mark.parametrize("shape", ["evaluation", "evaluation_0x"])
@fuzz
@given(data=st.data())
def test_evaluation_reader(workdir: Path, shape: str, data: st.DataObject) -> None:
    content = data.draw(hostile(_seed(shape), mutated_json))
    path = _write(workdir, "evaluation.json", content)
    only_input_errors(lambda: read_evaluation(path), ())


@fuzz
@given(data=st.data())
def test_comparison_reader(workdir: Path, data: st.DataObject) -> None:
    content = data.draw(hostile(_seed("comparison"), mutated_json))
    path = _write(workdir, "comparison.json", content)
    only_input_errors(lambda: read_comparison(path))


# ----------------------------------------------------------- policies and [tool.spanchor]

POLICY_SHAPES: dict[str, tuple[str, Callable[[bytes], st.SearchStrategy[bytes]]]] = {
    "policy_json": ("policy.json", mutated_json),
    "policy_0x_json": ("policy.json", mutated_json),
    "policy_toml": ("policy.toml", mutated_toml),
    "pyproject": ("pyproject.toml", mutated_toml),
}


@pytest.mark.parametrize("shape", sorted(POLICY_SHAPES))
@fuzz
@given(data=st.data())
def test_policy_loader(workdir: Path, shape: str, data: st.DataObject) -> None:
    name, structural = POLICY_SHAPES[shape]
    content = data.draw(hostile(_seed(shape), structural))
    path = _write(workdir, name, content)
    only_input_errors(lambda: load_policy(path))
    if shape == "pyproject":
        only_input_errors(lambda: policy_from_pyproject(path, missing_ok=True))


_SETTINGS_KNOWN: tuple[Known, ...] = ()


@fuzz
@given(data=st.data())
def test_tool_spanchor_settings(workdir: Path, data: st.DataObject) -> None:
    # spanchor_core.settings will replace gate_config_from_pyproject as the one reader of
    # [tool.spanchor]; point this test at it when it lands
    for name in ("pyproject.toml", "spanchor.toml"):
        content = data.draw(hostile(_seed("pyproject"), mutated_toml))
        path = _write(workdir, name, content)
        only_input_errors(functools.partial(gate_config_from_pyproject, path), _SETTINGS_KNOWN)


# ------------------------------------------------------------------ candidates and SQuAD


@fuzz
@given(data=st.data())
def test_candidates_reader(workdir: Path, data: st.DataObject) -> None:
    content = data.draw(hostile(_seed("candidates"), mutated_jsonl))
    path = _write(workdir, "candidates.jsonl", content)
    only_input_errors(lambda: read_candidates(path))


@fuzz
@given(data=st.data())
def test_squad_importer(workdir: Path, data: st.DataObject) -> None:
    content = data.draw(hostile(_seed("squad"), mutated_json))
    path = _write(workdir, "squad.json", content)
    only_input_errors(lambda: import_squad(path))


# ----------------------------------------------------------------------- the seeds themselves


def _every_seed() -> Iterator[tuple[str, Any]]:
    for name in Seeds.__dataclass_fields__:
        yield name, getattr(seeds(), name)


def test_every_seed_is_read_without_error(workdir: Path) -> None:
    # the mutations start from valid files: a seed that does not read would test nothing
    readers: dict[str, tuple[str, Callable[[Path], object]]] = {
        "gold": ("g.jsonl", read_gold),
        "gold_0x": ("g.jsonl", read_gold),
        "run": ("r.jsonl", read_run),
        "run_again": ("r.jsonl", read_run),
        "run_0x_object": ("r.json", read_run),
        "run_0x_jsonl": ("r.jsonl", read_run),
        "run_0x_list": ("r.json", read_run),
        "evaluation": ("e.json", read_evaluation),
        "evaluation_again": ("e.json", read_evaluation),
        "evaluation_0x": ("e.json", read_evaluation),
        "comparison": ("c.json", read_comparison),
        "policy_json": ("p.json", load_policy),
        "policy_0x_json": ("p.json", load_policy),
        "policy_toml": ("p.toml", load_policy),
        "pyproject": ("pyproject.toml", gate_config_from_pyproject),
        "candidates": ("c.jsonl", read_candidates),
        "squad": ("s.json", import_squad),
    }
    assert set(readers) == {name for name, _ in _every_seed()}
    for name, content in _every_seed():
        file, reader = readers[name]
        reader(_write(workdir, file, content))
