"""The plugin's settings: :class:`SpanchorConfig`, read from command-line options, ini keys
and the ``[tool.spanchor]`` table, first found wins.

The table is read by :mod:`spanchor_core.settings`, the reader ``spanchor gate`` uses too, so
a key means the same thing to both; and it is found the way the gate finds it
(:func:`~spanchor_core.settings.find_settings_file`: a ``spanchor.toml``, else a
``pyproject.toml`` with the table, in the directory pytest was started in, then its parents).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from spanchor_core.corpus import DEFAULT_GLOBS
from spanchor_core.errors import EvaluationFileError, InputError
from spanchor_core.metrics import DEFAULT_K, DEFAULT_MIN_OVERLAP
from spanchor_core.policy import Policy, load_policy
from spanchor_core.settings import (
    SpanchorSettings,
    find_settings_file,
    read_settings,
    settings_table,
)
from spanchor_core.testing.options import CONFIG, SETTINGS, Setting

__all__ = ["CONFIG", "SETTINGS", "Setting", "SpanchorConfig", "given", "read_config"]


@dataclass(frozen=True, slots=True)
class SpanchorConfig:
    """What the fixtures were configured with; ``None`` for a setting nobody gave."""

    docs: Path | None = None
    gold: Path | None = None
    baseline: Path | None = None
    policy: Policy | None = None
    k: tuple[int, ...] = DEFAULT_K
    min_overlap: float = DEFAULT_MIN_OVERLAP
    globs: tuple[str, ...] = DEFAULT_GLOBS
    max_unmapped_rate: float | None = None
    seed: int | None = None
    allow_mismatch: bool = False
    config_file: Path | None = None
    """The TOML file whose ``[tool.spanchor]`` table was read, if it has one."""


def given(config: pytest.Config, name: str, setting: Setting) -> Path | None:
    """The path from the command line (relative to the start directory) or the ini file."""
    option = config.getoption(f"spanchor_{name}")
    if option:
        return config.invocation_params.dir / str(option)
    value = config.getini(setting.ini)
    if isinstance(value, str) and value.strip():
        base = config.inipath.parent if config.inipath is not None else config.rootpath
        return base / value.strip()
    return None


def _table_settings(file: Path) -> tuple[SpanchorSettings, frozenset[str]] | None:
    """``[tool.spanchor]`` of ``file`` validated as ``spanchor gate`` reads it, and its keys."""
    table = settings_table(file)
    if table is None:
        return None
    return read_settings(file), frozenset(table)


def read_config(config: pytest.Config) -> SpanchorConfig:
    explicit = given(config, "config", CONFIG)
    if explicit is not None and not explicit.is_file():
        raise InputError(
            "the spanchor config file does not exist",
            path=explicit,
            hint=f"fix {CONFIG.option} / the {CONFIG.ini} ini key",
        )
    file = explicit if explicit is not None else find_settings_file(config.invocation_params.dir)
    found = _table_settings(file) if file is not None and file.is_file() else None
    if found is None and explicit is not None:
        raise EvaluationFileError("has no [tool.spanchor] table", path=file)
    gate, keys = found if found is not None else (None, frozenset[str]())

    def path(name: str) -> Path | None:
        found = given(config, name, SETTINGS[name])
        if found is not None or gate is None or name not in keys:
            return found
        value = getattr(gate, name)
        return value if isinstance(value, Path) else None

    policy_path = given(config, "policy", SETTINGS["policy"])
    policy = load_policy(policy_path) if policy_path is not None else None
    if policy is None and gate is not None:
        policy = gate.resolved_policy(file)
    if gate is None:
        return SpanchorConfig(
            docs=path("docs"), gold=path("gold"), baseline=path("baseline"), policy=policy
        )
    return SpanchorConfig(
        docs=path("docs"),
        gold=path("gold"),
        baseline=path("baseline"),
        policy=policy,
        k=gate.k,
        min_overlap=gate.min_overlap,
        globs=gate.globs,
        max_unmapped_rate=gate.max_unmapped_rate,
        seed=gate.seed,
        allow_mismatch=gate.allow_mismatch,
        config_file=file,
    )
