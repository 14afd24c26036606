"""Writing a :class:`~spanchor_core.policy.model.Policy` as a JSON file, and folding measured
noise (flaky queries, a noise floor) into one.

``spanchor noise`` measures N repeated baselines and records what it found in a policy. The file
is always the rich JSON form (what :func:`~spanchor_core.policy.load.load_policy` reads back as
the same policy), written atomically, and never over a file the command read — except the
policy itself, when the user names it as the output on purpose: updating a policy is then an
explicit act, and the old policy's settings are all kept.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from spanchor_core._io import atomic_write
from spanchor_core.errors import EvaluationFileError, InputError
from spanchor_core.policy.model import Policy

__all__ = ["check_policy_target", "policy_json", "with_noise", "write_policy"]


def with_noise(
    policy: Policy, *, flaky_queries: Iterable[str] = (), noise_floor: float | None = None
) -> Policy:
    """``policy`` with ``flaky_queries`` added to its own and its noise floor raised to
    ``noise_floor`` (never lowered: a floor someone chose stays at least what it was)."""
    data = policy.model_dump()
    data["flaky_queries"] = sorted({*policy.flaky_queries, *flaky_queries})
    if noise_floor is not None:
        data["noise_floor"] = max(policy.noise_floor, float(noise_floor))
    return Policy.model_validate(data)


def policy_json(policy: Policy) -> str:
    """The policy as rich-form JSON: ``kind`` first, fixed key order, a final newline."""
    return json.dumps(policy.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def _same_file(left: Path, right: Path) -> bool:
    try:
        return left.resolve() == right.resolve() or (
            left.exists() and right.exists() and os.path.samefile(left, right)
        )
    except OSError:
        return False


def check_policy_target(
    path: str | os.PathLike[str],
    *,
    inputs: Iterable[str | os.PathLike[str]] = (),
    updates: str | os.PathLike[str] | None = None,
) -> Path:
    """Where a policy may be written, or :class:`InputError` (exit 2) saying why not.

    The target must be a ``.json`` file; it must not be one of ``inputs`` (the files the command
    read); and an existing file may be replaced only when it is ``updates`` — the policy the
    user gave as input and named again as the output.
    """
    target = Path(path)
    if target.suffix.lower() != ".json":
        raise InputError(
            "a policy is written as JSON",
            path=target,
            hint="give an output path ending in .json (TOML and pyproject.toml are not rewritten)",
        )
    for source in inputs:
        if _same_file(target, Path(source)):
            raise InputError(
                "is an input of this command and is never overwritten",
                path=target,
                hint="write the policy to another file",
            )
    if target.exists() and (updates is None or not _same_file(target, Path(updates))):
        raise InputError(
            "exists and is not the policy being updated",
            path=target,
            hint="pass it as --policy to update it, or write to a new file",
        )
    return target


def write_policy(policy: Policy, path: str | os.PathLike[str]) -> Path:
    """Write ``policy`` to ``path`` as :func:`policy_json`, atomically; returns the path."""
    target = Path(path)
    atomic_write(target, policy_json(policy), error=EvaluationFileError, what="the policy")
    return target
