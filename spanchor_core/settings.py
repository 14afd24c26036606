"""The one reader of spanchor's settings: the ``[tool.spanchor]`` table of a ``pyproject.toml``
(or of a ``spanchor.toml`` holding the same table), validated into :class:`SpanchorSettings`,
or into :class:`GateConfig` when both sides of a gate must be named.

The CLI's ``gate`` command and the pytest plugin both read their settings here, so a key means
the same thing to both. Relative paths are relative to the directory of the file they came from.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from spanchor_core.corpus import DEFAULT_GLOBS
from spanchor_core.errors import EvaluationFileError, InputError
from spanchor_core.grouping import parse_group_rule
from spanchor_core.metrics import DEFAULT_K, DEFAULT_MIN_OVERLAP
from spanchor_core.policy import Policy, load_policy, policy_from_mapping
from spanchor_core.policy.load import parse_toml

__all__ = [
    "SETTINGS_FILES",
    "GateConfig",
    "SpanchorSettings",
    "find_settings_file",
    "gate_config_from_pyproject",
    "read_settings",
    "settings_file",
    "settings_keys",
    "settings_table",
]

SETTINGS_FILES = ("spanchor.toml", "pyproject.toml")
"""Where settings are looked for, in this order, in a directory and then in its parents."""


class SpanchorSettings(BaseModel):
    """The keys of ``[tool.spanchor]``, every one optional.

    ``policy`` is a path to a policy file, or the policy itself as an inline table. Which keys
    the file (or the overrides) set is ``model_fields_set`` (``json`` is ``json_output``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    docs: Path | None = None
    """The directory of source documents."""
    gold: Path | None = None
    """The gold set (JSONL)."""
    baseline: Path | None = None
    """The baseline: a run file or an evaluation (``spanchor evaluate -o``)."""
    baselines: tuple[Path, ...] = ()
    """Several baselines, repeated runs of one configuration: their spread is each query's
    noise band (:mod:`spanchor_core.compare.noise`). Together with ``baseline`` if both are
    set; the order does not matter."""
    candidate: Path | None = None
    """The candidate: a run file or an evaluation."""
    k: tuple[int, ...] = DEFAULT_K
    """The cutoffs to score run files at."""
    min_overlap: float = Field(default=DEFAULT_MIN_OVERLAP, ge=0.0, le=1.0)
    """Fraction of an anchor that must be covered for ``hit`` and ``full_evidence``."""
    globs: tuple[str, ...] = DEFAULT_GLOBS
    """File patterns of the documents under ``docs``."""
    policy: Path | dict[str, Any] | None = None
    """A policy file (JSON, TOML or pyproject.toml), or the policy itself as an inline table
    (``[tool.spanchor.policy]``); none: the default policy."""
    max_unmapped_rate: float | None = Field(default=0.1, ge=0.0, le=1.0)
    """Exit 3 above this; 0.1 as for ``spanchor evaluate`` (spanchor 0.x's default)."""
    report: Path | None = None
    """Write a Markdown report here."""
    json_output: Path | None = Field(default=None, alias="json")
    """Write the comparison JSON here."""
    junit: Path | None = None
    """Write JUnit XML here (one test case per query)."""
    html: Path | None = None
    """Write a self-contained HTML report here."""
    redact: bool = False
    """Leave questions and evidence text out of the reports."""
    seed: int | None = None
    """Bootstrap seed; none: the policy's."""
    allow_mismatch: bool = False
    """Score runs recorded against another corpus or gold-set version."""
    group: str = "auto"
    """How several records of one query are scored (:mod:`spanchor_core.grouping`): ``auto``,
    ``first``, ``union``, ``stage:NAME`` or ``source:NAME``."""
    jobs: int = Field(default=1, ge=0, strict=True)
    """Processes that map and score the runs (:mod:`spanchor_core.parallel`): the sides of a
    gate concurrently, or one run's results split between them; 0 is one per CPU. Left unset
    (neither here nor ``--jobs``), a large run file is read in two parts, and a gate's two large
    run sides in paired halves, where two CPUs are usable; otherwise one process, as with 1.
    The results are the same whatever the number."""

    @field_validator("group")
    @classmethod
    def _known_rule(cls, value: str) -> str:
        try:
            return str(parse_group_rule(value))
        except InputError as err:
            raise ValueError(err.message + (f"; {err.hint}" if err.hint else "")) from None

    def resolved_policy(self, base: Path | None = None) -> Policy | None:
        """The configured policy (``base`` names the file an inline table came from)."""
        if self.policy is None:
            return None
        if isinstance(self.policy, dict):
            return policy_from_mapping(self.policy, path=base)
        return load_policy(self.policy)


class GateConfig(SpanchorSettings):
    """Everything ``spanchor gate`` needs: the settings, with both sides of the gate named.

    ``baselines`` alone names the baseline too (its first entry fills ``baseline``).
    """

    baseline: Path
    candidate: Path

    @model_validator(mode="before")
    @classmethod
    def _baseline_from_list(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("baseline") is None:
            several = data.get("baselines")
            if isinstance(several, list | tuple) and several:
                data = {**data, "baseline": several[0]}
        return data

    @property
    def baseline_paths(self) -> tuple[Path, ...]:
        """Every baseline: ``baseline`` and ``baselines``, each once, in the order given."""
        return tuple(dict.fromkeys((self.baseline, *self.baselines)))


_PATH_KEYS = ("docs", "gold", "baseline", "candidate", "report", "json", "junit", "html")

_Settings = TypeVar("_Settings", bound=SpanchorSettings)


def settings_keys() -> tuple[str, ...]:
    """The keys a ``[tool.spanchor]`` table may hold, as they are written there."""
    return tuple(field.alias or name for name, field in SpanchorSettings.model_fields.items())


def settings_table(path: str | os.PathLike[str] = "pyproject.toml") -> dict[str, Any] | None:
    """The ``[tool.spanchor]`` table of ``path``, relative paths resolved against its directory.

    ``None`` when the file does not exist or has no such table. An unreadable file, or one that
    is not TOML, raises :class:`~spanchor_core.errors.EvaluationFileError` (an ``InputError``).
    """
    file = Path(path)
    if not file.exists():
        return None
    try:
        text = file.read_text(encoding="utf-8-sig")  # a byte-order mark is dropped
    except UnicodeDecodeError as err:
        raise EvaluationFileError(f"not valid TOML: {err}", path=file) from None
    except OSError as err:
        raise EvaluationFileError(f"cannot read: {err.strerror or err}", path=file) from None
    data = parse_toml(text, file)
    tool = data.get("tool")
    found = tool.get("spanchor") if isinstance(tool, dict) else None
    if not isinstance(found, dict):
        return None
    table: dict[str, Any] = {}
    for key, value in found.items():
        if isinstance(value, str) and (key in _PATH_KEYS or key == "policy"):
            value = file.parent / value
        elif key == "baselines" and isinstance(value, list):
            value = [file.parent / v if isinstance(v, str) else v for v in value]
        table[key] = value
    return table


def find_settings_file(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The settings file for ``start`` (default: the working directory), or ``None``.

    In ``start`` and then in each parent: a ``spanchor.toml``, else a ``pyproject.toml`` that
    has a ``[tool.spanchor]`` table; the first found wins.
    """
    here = Path.cwd() if start is None else Path(start)
    for directory in (here, *here.parents):
        own = directory / "spanchor.toml"
        if own.exists():
            return own
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file() and settings_table(pyproject) is not None:
            return pyproject
    return None


def settings_file(
    config: str | os.PathLike[str] | None = None, *, start: str | os.PathLike[str] | None = None
) -> Path | None:
    """The file to read settings from: ``config`` when given (it must exist), else the one
    :func:`find_settings_file` finds from ``start``, else ``None``."""
    if config is None:
        return find_settings_file(start)
    file = Path(config)
    if not file.exists():
        raise EvaluationFileError(
            "not found", path=file, hint="check the --config path, or leave it out to search"
        )
    return file


_GATE_FLAGS: Final = {"baseline": "--baseline FILE", "candidate": "--candidate FILE"}
"""The settings a gate cannot run without, and the ``spanchor gate`` flags that give them."""


def _searched(start: Path | None) -> str:
    here = Path.cwd() if start is None else start
    return (
        f"no spanchor settings found: no spanchor.toml, and no pyproject.toml with a "
        f"[tool.spanchor] table, in {here} or its parents"
    )


def _unknown_keys(table: Mapping[str, Any], file: Path) -> None:
    known = settings_keys()
    for key in table:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known)}"
            raise EvaluationFileError(f"[tool.spanchor] unknown key {key!r}", path=file, hint=hint)


def _validated(
    model: type[_Settings],
    file: Path | None,
    overrides: Mapping[str, Any],
    *,
    start: Path | None = None,
) -> _Settings:
    table = {} if file is None else settings_table(file)
    if file is not None and table is None and file.name != "pyproject.toml" and file.exists():
        raise EvaluationFileError(
            "no [tool.spanchor] table", path=file, hint="put the settings under [tool.spanchor]"
        )
    merged = dict(table or {})
    if file is not None:
        _unknown_keys(merged, file)
    merged.update({key: value for key, value in overrides.items() if value is not None})
    try:
        return model.model_validate(merged)
    except ValidationError as err:
        problem = err.errors()[0]
        where = ".".join(str(part) for part in problem["loc"]) or "[tool.spanchor]"
        if file is None:
            why = f"{where} is not set" if problem["type"] == "missing" else problem["msg"]
            raise EvaluationFileError(
                f"{_searched(start)} ({why})",
                hint="create spanchor.toml with a [tool.spanchor] table, pass --config FILE, "
                "or give --baseline and --candidate",
            ) from None
        flag = _GATE_FLAGS.get(where) if problem["type"] == "missing" else None
        raise EvaluationFileError(
            f"[tool.spanchor] {where}: {problem['msg']}",
            path=file,
            hint=f"set {where} in [tool.spanchor] of this file or pass {flag}"
            if flag is not None
            else f"fix {where} in [tool.spanchor] of this file",
        ) from None


def read_settings(
    path: str | os.PathLike[str] | None = "pyproject.toml", **overrides: Any
) -> SpanchorSettings:
    """``[tool.spanchor]`` of ``path`` (defaults where absent); ``overrides`` (not None) win.

    ``path=None`` reads no file: the defaults and the overrides only.
    """
    return _validated(SpanchorSettings, None if path is None else Path(path), overrides)


def gate_config_from_pyproject(
    path: str | os.PathLike[str] | None = "pyproject.toml",
    *,
    start: str | os.PathLike[str] | None = None,
    **overrides: Any,
) -> GateConfig:
    """:func:`read_settings` for a gate: the baseline and the candidate must be named.

    ``path=None`` reads no file; a missing baseline or candidate is then reported as "no
    settings found", naming where :func:`find_settings_file` looked from ``start``.
    """
    return _validated(
        GateConfig,
        None if path is None else Path(path),
        overrides,
        start=None if start is None else Path(start),
    )
