"""Reading a :class:`~spanchor_core.policy.model.Policy` from JSON, TOML or a ``pyproject.toml``.

Every form (spanchor 0.x flat JSON, the rich form in JSON or TOML, ``[tool.spanchor.policy]``)
becomes the same :class:`Policy`. Every problem, down to unreadable files, absurd nesting and
integers too long to convert, is an :class:`~spanchor_core.errors.EvaluationFileError` naming
the file and, where it can be found, the line.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import sys
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from spanchor_core.errors import EvaluationFileError, InputError
from spanchor_core.metrics import DEFAULT_METRICS
from spanchor_core.policy.directions import MEAN_PREFIX, metric_direction, shown
from spanchor_core.policy.model import (
    POLICY_KIND,
    POLICY_SCHEMA_VERSION,
    KeyedValueError,
    Policy,
)

__all__ = ["load_policy", "parse_toml", "policy_from_mapping", "policy_from_pyproject"]

_LEGACY_KEYS: Final = frozenset({"thresholds", "min_query_count"})
_RICH_KEYS: Final = frozenset(Policy.model_fields)
"""The rich form's keys: the fields of :class:`Policy`."""


def _line_of(text: str | None, keys: Iterable[object]) -> int | None:
    """The line where the path of ``keys`` appears in ``text``: each key at or after the last."""
    if text is None:
        return None
    lines = text.splitlines()
    line = 0
    found: int | None = None
    for key in keys:
        if not isinstance(key, str):
            continue
        pattern = re.compile(r'(^|[\s{,\[."\'])' + re.escape(key) + r'($|[\s"\'.=:\]])')
        for index in range(line, len(lines)):
            if pattern.search(lines[index]):
                line, found = index, index + 1
                break
    return found


def _legacy_to_rich(data: Mapping[str, Any], path: Path | None, text: str | None) -> dict[str, Any]:
    """spanchor 0.x forms -> the keyword arguments of :class:`Policy`."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if key == "thresholds":
            if not isinstance(value, Mapping):
                raise EvaluationFileError(
                    f"'thresholds' must be an object of metric -> max drop, got "
                    f"{type(value).__name__}",
                    path=path,
                    line=_line_of(text, [key]),
                )
            flat.update(value)
        elif key != "min_query_count":
            flat[key] = value
    rich: dict[str, Any] = {"max_drop": {}, "aggregate": {}}
    for name, value in flat.items():
        if not isinstance(name, str):
            raise EvaluationFileError(
                f"a policy's keys are metric names, not {type(name).__name__} {shown(name)}",
                path=path,
            )
        try:
            metric_direction(name.removeprefix(MEAN_PREFIX))
        except InputError as err:
            raise EvaluationFileError(
                f"{_key(name)}: {err.message}",
                path=path,
                line=_line_of(text, [name]),
                hint=err.hint,
            ) from None
        if name.startswith(MEAN_PREFIX):
            rich["aggregate"][name[len(MEAN_PREFIX) :]] = {"max_drop": value}
        else:
            rich["max_drop"][name] = value
    count = data.get("min_query_count")
    if count is not None:
        rich["min_queries"] = count
    return rich


def _file_error(
    err: ValidationError, path: Path | None, text: str | None, legacy: bool
) -> EvaluationFileError:
    first = err.errors()[0]
    loc = [str(part) for part in first["loc"]]
    if legacy and loc and loc[0] in ("max_drop", "aggregate"):
        loc = loc[1:]  # the file named the metric at the top level (or under "thresholds")
    message = str(first["msg"]).removeprefix("Value error, ")
    keys: list[str] = list(loc)
    # A model-level check names the key path it failed at ("max_drop", "recal@5").
    cause = first.get("ctx", {}).get("error")
    if not loc and isinstance(cause, KeyedValueError):
        message = f"{'.'.join(map(_key, cause.keys))}: {cause.message}"
        keys = list(cause.keys[1:] if legacy else cause.keys)
    if legacy:
        message = message.removeprefix("max_drop.")
    where = ".".join(map(_key, loc))
    return EvaluationFileError(
        f"{where}: {message}" if where else message,
        path=path,
        line=_line_of(text, keys),
    )


def policy_from_mapping(
    data: Mapping[str, Any], *, path: str | os.PathLike[str] | None = None, text: str | None = None
) -> Policy:
    """A :class:`Policy` from parsed JSON/TOML, in either the 0.x or the rich form.

    The rich form is recognised by any of its keys (``kind``, ``max_drop``, ``aggregate``, ...);
    anything else is the 0.x form, whose keys are metric names. ``path`` and ``text`` only make
    error messages point at the right line.
    """
    where = None if path is None else Path(path)
    try:
        return _policy_from_mapping(data, where, text)
    except RecursionError:
        raise EvaluationFileError("the policy is nested too deeply", path=where) from None


def _policy_from_mapping(data: Mapping[str, Any], where: Path | None, text: str | None) -> Policy:
    if not isinstance(data, Mapping):
        raise EvaluationFileError(
            f"a policy must be an object of settings, got {type(data).__name__}", path=where
        )
    legacy = not (_RICH_KEYS & set(data)) and bool(data)
    if legacy:
        _refuse_misspelt_rich_key(data, where, text)
    if not legacy:
        for key in data:
            if key not in _RICH_KEYS:
                close = difflib.get_close_matches(str(key), sorted(_RICH_KEYS), n=1)
                in_rich = f" ({', '.join(sorted(_RICH_KEYS))})" if not close else ""
                hint = f"did you mean {close[0]!r}?" if close else None
                if key in _LEGACY_KEYS or _looks_like_metric(str(key)):
                    hint = "in the rich form, metric thresholds go under 'max_drop'"
                raise EvaluationFileError(
                    f"unknown policy key {shown(key)}{in_rich}",
                    path=where,
                    line=_line_of(text, [key]),
                    hint=hint,
                )
        if "kind" in data and data["kind"] != POLICY_KIND:
            raise EvaluationFileError(
                f"kind is {shown(data['kind'])}, not {POLICY_KIND!r}",
                path=where,
                line=_line_of(text, ["kind"]),
            )
        if data.get("schema_version", POLICY_SCHEMA_VERSION) != POLICY_SCHEMA_VERSION:
            raise EvaluationFileError(
                f"unsupported policy schema_version {shown(data['schema_version'])}",
                path=where,
                line=_line_of(text, ["schema_version"]),
                hint=f"this spanchor reads schema_version {POLICY_SCHEMA_VERSION}",
            )
        arguments: Mapping[str, Any] = data
    else:
        arguments = _legacy_to_rich(data, where, text)
    try:
        policy = Policy.model_validate(arguments)
    except ValidationError as err:
        raise _file_error(err, where, text, legacy) from None
    except UnicodeEncodeError as err:  # pydantic cannot report a value UTF-8 cannot hold
        raise EvaluationFileError(
            f"holds a lone surrogate U+{ord(err.object[err.start]):04X}, which UTF-8 cannot hold",
            path=where,
            hint="write metric names and values as valid Unicode text",
        ) from None
    if not policy.max_drop and not policy.aggregate:
        raise EvaluationFileError(
            "the policy gates no metric, so no change could ever fail",
            path=where,
            hint='add a threshold, e.g. {"recall@5": 0.05}',
        )
    return policy


def _key(key: str) -> str:
    """A key as an error message shows it: itself, or quoted with its control characters
    escaped and cut short when it is absurdly long (a key holding a line break must not break
    the one-line message)."""
    return key if len(key) <= 80 and key.isprintable() else shown(key)


def _refuse_misspelt_rich_key(
    data: Mapping[str, Any], where: Path | None, text: str | None
) -> None:
    # Without any rich key the policy is read as the 0.x form, whose keys are metric names; a
    # misspelt rich key (``max_dorp``) would then be reported as an unknown metric, which
    # sends the reader to the wrong list. A key that is no metric but close to a rich key is
    # named as the policy key it almost is.
    for key in data:
        name = str(key)
        if _looks_like_metric(name):
            continue
        close = difflib.get_close_matches(name, sorted(_RICH_KEYS), n=1, cutoff=0.75)
        if close:
            raise EvaluationFileError(
                f"unknown policy key {shown(key)}",
                path=where,
                line=_line_of(text, [key]),
                hint=f"did you mean {close[0]!r}?",
            )


def _looks_like_metric(key: str) -> bool:
    return "@" in key or key.removeprefix(MEAN_PREFIX) in DEFAULT_METRICS


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise EvaluationFileError("policy file not found", path=path) from None
    except UnicodeDecodeError as err:
        raise EvaluationFileError(f"policy file is not UTF-8: {err}", path=path) from None
    except (OSError, ValueError) as err:  # ValueError: a NUL byte in the path
        raise EvaluationFileError(f"cannot read policy file: {err}", path=path) from None


def _long_number_line(text: str) -> int | None:
    """The line of the first integer too long for ``int()`` (which raises a bare ValueError)."""
    limit = sys.get_int_max_str_digits()
    match = re.search(f"[0-9][0-9_]{{{limit},}}", text) if limit else None
    return None if match is None else text.count("\n", 0, match.start()) + 1


def _unparsable(what: str, err: ValueError, text: str, path: Path) -> EvaluationFileError:
    line = _long_number_line(text)
    if line is None:
        return EvaluationFileError(f"not valid {what}: {err}", path=path)
    limit = sys.get_int_max_str_digits()
    return EvaluationFileError(
        f"not valid {what}: an integer of more than {limit:,} digits", path=path, line=line
    )


def _parse_json(text: str, path: Path) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_reject_duplicates)
    except json.JSONDecodeError as err:
        raise EvaluationFileError(
            f"not valid JSON: {err.msg}", path=path, line=err.lineno
        ) from None
    except RecursionError:
        raise EvaluationFileError("not valid JSON: nested too deeply", path=path) from None
    except ValueError as err:  # an integer longer than Python converts
        raise _unparsable("JSON", err, text, path) from None
    except _DuplicateKey as err:
        raise EvaluationFileError(
            f"key {shown(err.key)} appears more than once",
            path=path,
            line=_line_of(text, [err.key]),
        ) from None


def parse_toml(text: str, path: Path) -> dict[str, Any]:
    """``text`` (the content of ``path``) as TOML; every failure an :class:`EvaluationFileError`
    naming the file and, where known, the line (the settings module reads TOML through this)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        match = re.search(r"at line (\d+)", str(err))
        raise EvaluationFileError(
            f"not valid TOML: {err}", path=path, line=int(match.group(1)) if match else None
        ) from None
    except RecursionError:
        raise EvaluationFileError("not valid TOML: nested too deeply", path=path) from None
    except ValueError as err:  # an integer longer than Python converts
        raise _unparsable("TOML", err, text, path) from None


def _pyproject_policy(
    data: Mapping[str, Any], file: Path, text: str, *, missing_ok: bool
) -> Policy | None:
    tool = data.get("tool", {})
    spanchor = tool.get("spanchor") if isinstance(tool, Mapping) else None
    table = spanchor.get("policy") if isinstance(spanchor, Mapping) else None
    if table is None:
        if missing_ok:
            return None
        raise EvaluationFileError(
            "no [tool.spanchor.policy] table",
            path=file,
            hint='add e.g. [tool.spanchor.policy.max_drop] "recall@5" = 0.05',
        )
    if not isinstance(table, Mapping):
        raise EvaluationFileError(
            "[tool.spanchor] policy must be a table", path=file, line=_line_of(text, ["policy"])
        )
    return policy_from_mapping(table, path=file, text=text)


def policy_from_pyproject(
    path: str | os.PathLike[str] = "pyproject.toml", *, missing_ok: bool = False
) -> Policy | None:
    """The policy in the ``[tool.spanchor.policy]`` table of a ``pyproject.toml``.

    The table holds the rich form's keys (``max_drop``, ``aggregate``, ...). Without the table:
    :class:`EvaluationFileError`, or ``None`` when ``missing_ok`` (for discovering a policy).
    """
    file = Path(path)
    text = _read_text(file)
    return _pyproject_policy(parse_toml(text, file), file, text, missing_ok=missing_ok)


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read a policy file: JSON (0.x or rich form), TOML, or a ``pyproject.toml``.

    Dispatches on the suffix (``.json``, ``.toml``), then the content (``{`` starts JSON,
    anything else is tried as TOML). A TOML file with a ``[tool]`` table (a ``pyproject.toml``,
    whatever its name) is read through its ``[tool.spanchor.policy]`` table.
    """
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix in (".yaml", ".yml"):
        raise EvaluationFileError(
            "YAML policies are not read",
            path=file,
            hint="write the same keys as JSON or TOML (spanchor 0.x JSON policies work as is)",
        )
    text = _read_text(file)
    if suffix == ".json" or (suffix != ".toml" and text.lstrip().startswith("{")):
        data = _parse_json(text, file)
    else:
        data = parse_toml(text, file)
        if file.name == "pyproject.toml" or {"tool", "project", "build-system"} & set(data):
            policy = _pyproject_policy(data, file, text, missing_ok=False)
            if policy is not None:  # always: missing_ok=False raised instead
                return policy
    if not isinstance(data, Mapping):
        raise EvaluationFileError(
            f"a policy must be an object of settings, got {type(data).__name__}", path=file, line=1
        )
    return policy_from_mapping(data, path=file, text=text)
