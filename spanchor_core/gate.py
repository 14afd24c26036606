"""The CI gate as a library function: evaluate a baseline and a candidate, compare, decide.

``spanchor gate`` is a thin wrapper over :func:`run_gate`. Every path and threshold can come
from a ``[tool.spanchor]`` table in ``pyproject.toml`` (see :class:`GateConfig`), so that in
a configured repository ``spanchor gate`` alone is the CI step. Either side may be given as
a run file (evaluated here against ``docs`` and ``gold``) or as an evaluation file written
earlier (ours or spanchor 0.x's).
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from spanchor_core.compare import Comparison, compare
from spanchor_core.corpus import DEFAULT_GLOBS, Corpus, load_corpus
from spanchor_core.errors import EvaluationFileError, InputError
from spanchor_core.evaluate import (
    Evaluation,
    ProgressCallback,
    check_gold,
    check_run_provenance,
    evaluate_file,
    read_evaluation,
)
from spanchor_core.gold import GoldSet, read_gold
from spanchor_core.locate import Locator
from spanchor_core.metrics import DEFAULT_K, DEFAULT_MIN_OVERLAP
from spanchor_core.policy import Policy, load_policy, policy_from_mapping
from spanchor_core.runs import iter_run, read_run

__all__ = [
    "BAD_INPUT_FINDINGS",
    "EXIT_BAD_INPUT",
    "EXIT_OK",
    "EXIT_REGRESSION",
    "EXIT_UNMAPPED",
    "GateConfig",
    "GateOutcome",
    "file_kind",
    "gate_config_from_pyproject",
    "load_side",
    "run_gate",
]

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_BAD_INPUT = 2
EXIT_UNMAPPED = 3

BAD_INPUT_FINDINGS = frozenset({"settings_mismatch", "missing_metric", "no_policy", "empty_policy"})
"""Error findings that mean the comparison itself is invalid, not that the candidate failed."""


def file_kind(path: str | os.PathLike[str]) -> Literal["evaluation", "run"]:
    """Whether ``path`` holds an evaluation (ours or 0.x) or a run/results file.

    Decided by content, never by extension, and from the first line whenever it is a JSON
    value of its own (every JSONL file: our runs, 0.x results lines), so that a large run is
    not read twice. Only a multi-line JSON document (an evaluation, a 0.x results object or
    list) is parsed whole: an object that says it is an evaluation (``kind``) or has 0.x's
    ``per_query_metrics`` is one; anything else is read as a run.
    """
    file = Path(path)
    try:
        with file.open("rb") as handle:
            first = b""
            for raw in handle:
                if raw.strip():
                    first = raw
                    break
    except FileNotFoundError:
        raise InputError("file does not exist", path=file) from None
    except OSError as err:
        raise InputError(f"cannot read file: {err.strerror or err}", path=file) from None
    if b'"spanchor.evaluation"' in first[:4096]:
        return "evaluation"  # even when broken: then the evaluation reader says what is wrong
    try:
        head = json.loads(first.decode("utf-8-sig"))
    except (ValueError, RecursionError):
        head = None  # not a JSON value on its own: look at the whole document below
    if isinstance(head, dict):
        return "evaluation" if "per_query_metrics" in head else "run"
    if head is not None:
        return "run"
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read file: {err}", path=file) from None
    if '"spanchor.evaluation"' in text[:4096]:
        return "evaluation"  # even when broken: then the evaluation reader says what is wrong
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return "evaluation" if '"per_query_metrics"' in text else "run"
    if isinstance(data, dict) and (
        data.get("kind") == "spanchor.evaluation" or "per_query_metrics" in data
    ):
        return "evaluation"
    return "run"


def load_side(
    path: str | os.PathLike[str],
    *,
    corpus: Corpus | None,
    gold: GoldSet | None,
    k: Sequence[int] = DEFAULT_K,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    allow_mismatch: bool = False,
    progress: ProgressCallback | None = None,
    locator: Locator | None = None,
) -> Evaluation:
    """One side of a comparison: an evaluation file as it is, or a run evaluated now.

    Pass ``locator`` (built on ``corpus``) to share one corpus index between both sides.
    """
    if file_kind(path) == "evaluation":
        return read_evaluation(path)
    if corpus is None or gold is None:
        read_run(path)  # a broken file is reported as such, not as "needs the documents"
        raise InputError(
            "is a run file; comparing runs needs the documents and the gold set",
            path=Path(path),
            hint="pass --docs DIR and --gold FILE, or compare evaluation files",
        )
    check_gold(gold, corpus)
    run = iter_run(path)  # the header now, the records while evaluating: never the whole run
    if not allow_mismatch:
        check_run_provenance(run, corpus, gold)
    return evaluate_file(
        corpus, gold, run, k=k, min_overlap=min_overlap, progress=progress, locator=locator
    )


class GateConfig(BaseModel):
    """Everything ``spanchor gate`` needs; the keys of ``[tool.spanchor]`` in pyproject.toml.

    Relative paths are relative to the directory of the pyproject.toml they came from.
    ``policy`` is a path to a policy file, or the policy itself as an inline table.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    docs: Path | None = None
    gold: Path | None = None
    baseline: Path
    candidate: Path
    k: tuple[int, ...] = DEFAULT_K
    min_overlap: float = Field(default=DEFAULT_MIN_OVERLAP, ge=0.0, le=1.0)
    globs: tuple[str, ...] = DEFAULT_GLOBS
    policy: Path | dict[str, Any] | None = None
    max_unmapped_rate: float | None = Field(default=0.1, ge=0.0, le=1.0)
    """Exit 3 above this; 0.1 as for ``spanchor evaluate`` (spanchor 0.x's default)."""
    report: Path | None = None
    json_output: Path | None = Field(default=None, alias="json")
    junit: Path | None = None
    html: Path | None = None
    redact: bool = False
    seed: int | None = None
    allow_mismatch: bool = False

    def resolved_policy(self, base: Path | None = None) -> Policy | None:
        if self.policy is None:
            return None
        if isinstance(self.policy, dict):
            return policy_from_mapping(self.policy, path=base)
        return load_policy(self.policy)


_PATH_KEYS = ("docs", "gold", "baseline", "candidate", "report", "json", "junit", "html")


def gate_config_from_pyproject(
    path: str | os.PathLike[str] = "pyproject.toml", **overrides: Any
) -> GateConfig:
    """Read ``[tool.spanchor]`` from ``path``; ``overrides`` (not None) win over the file."""
    file = Path(path)
    table: Mapping[str, Any] = {}
    if file.exists():
        try:
            data = tomllib.loads(file.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
            raise EvaluationFileError(f"not valid TOML: {err}", path=file) from None
        tool = data.get("tool", {})
        found = tool.get("spanchor", {}) if isinstance(tool, dict) else {}
        table = found if isinstance(found, dict) else {}
    merged: dict[str, Any] = {}
    for key, value in table.items():
        if key in _PATH_KEYS or (key == "policy" and isinstance(value, str)):
            value = file.parent / value
        merged[key] = value
    merged.update({key: value for key, value in overrides.items() if value is not None})
    try:
        return GateConfig.model_validate(merged)
    except ValidationError as err:
        problem = err.errors()[0]
        where = ".".join(str(part) for part in problem["loc"]) or "[tool.spanchor]"
        raise EvaluationFileError(
            f"[tool.spanchor] {where}: {problem['msg']}",
            path=file,
            hint="set it in [tool.spanchor] of pyproject.toml or pass it on the command line",
        ) from None


@dataclass(frozen=True, slots=True)
class GateOutcome:
    """Both evaluations, their comparison and the exit code the CI step should return."""

    baseline: Evaluation
    candidate: Evaluation
    comparison: Comparison
    gold: GoldSet | None
    corpus: Corpus | None
    unmapped_exceeded: bool

    @property
    def exit_code(self) -> int:
        """The CI verdict: 2, 1, 3 or 0 (see :data:`BAD_INPUT_FINDINGS`).

        A comparison that could not be made meaningfully (the two sides were evaluated with
        different settings or on different documents or gold sets, or the policy names a
        metric they do not have) is bad input, exit 2; any other failing finding (a
        regression, missing queries, too few queries, an aggregate gate) is exit 1; a
        passing comparison whose candidate maps too few results is exit 3.
        """
        codes = {finding.code for finding in self.comparison.errors}
        if codes & BAD_INPUT_FINDINGS:
            return EXIT_BAD_INPUT
        if not self.comparison.passed:
            return EXIT_REGRESSION
        return EXIT_UNMAPPED if self.unmapped_exceeded else EXIT_OK


def run_gate(
    config: GateConfig,
    *,
    policy: Policy | None = None,
    policy_base: Path | None = None,
    progress: Callable[[str], ProgressCallback | None] | None = None,
) -> GateOutcome:
    """Evaluate both sides as needed and compare them under the configured policy.

    ``policy`` wins over ``config.policy``; with neither, :func:`compare`'s default applies.
    ``progress(side)`` may return a progress callback for evaluating ``"baseline"`` or
    ``"candidate"`` (see :func:`spanchor_core.evaluate.evaluate`).
    """
    corpus = load_corpus(config.docs, globs=config.globs) if config.docs is not None else None
    gold = read_gold(config.gold) if config.gold is not None else None
    locator = Locator(corpus) if corpus is not None else None  # indexed lazily, once
    sides = [
        load_side(
            path,
            corpus=corpus,
            gold=gold,
            k=config.k,
            min_overlap=config.min_overlap,
            allow_mismatch=config.allow_mismatch,
            progress=None if progress is None else progress(side),
            locator=locator,
        )
        for side, path in (("baseline", config.baseline), ("candidate", config.candidate))
    ]
    chosen = policy if policy is not None else config.resolved_policy(policy_base)
    comparison = compare(sides[0], sides[1], chosen, seed=config.seed)
    exceeded = (
        config.max_unmapped_rate is not None
        and sides[1].mapping.unmapped_rate > config.max_unmapped_rate
    )
    return GateOutcome(sides[0], sides[1], comparison, gold, corpus, exceeded)
