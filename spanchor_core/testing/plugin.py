"""The ``pytest11`` plugin: its options and ini keys, and the session-scoped fixtures.

Nothing happens at configure time; a fixture reads the configuration
(:mod:`spanchor_core.testing.config`) when a test first asks for one, and a missing or broken
setting errors that test at setup with the keys to set. Registered through
:mod:`spanchor_core.testing`, which re-exports every hook and fixture defined here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, NoReturn, ParamSpec, Protocol, TypeVar

import pytest

from spanchor_core.errors import SpanchorError
from spanchor_core.testing.options import CONFIG, SETTINGS

if TYPE_CHECKING:  # the library is imported by the fixtures, when a test first asks for one
    from spanchor_core.compare import Comparison
    from spanchor_core.corpus import Corpus
    from spanchor_core.evaluate import Evaluation
    from spanchor_core.gold import GoldSet
    from spanchor_core.locate import Locator
    from spanchor_core.policy import Policy
    from spanchor_core.runs import Run
    from spanchor_core.testing.config import SpanchorConfig
    from spanchor_core.testing.inputs import EvaluationSource, PathLike, PolicySource

__all__ = [
    "AssertNoRegression",
    "EvaluateRun",
    "pytest_addoption",
    "spanchor_assert_no_regression",
    "spanchor_baseline",
    "spanchor_config",
    "spanchor_corpus",
    "spanchor_evaluate",
    "spanchor_gold",
    "spanchor_locator",
    "spanchor_policy",
]

_P = ParamSpec("_P")
_T = TypeVar("_T")
_CONFIG_KEY = pytest.StashKey["SpanchorConfig"]()


_INI_STRING: Final = "string"
"""pytest's ini value type (a named constant: mypy misreads a bare "string" literal there)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the plugin's options and ini keys (see the module documentation)."""
    group = parser.getgroup("spanchor", "spanchor retrieval regression tests")
    for name, setting in (*SETTINGS.items(), ("config", CONFIG)):
        group.addoption(
            setting.option,
            dest=f"spanchor_{name}",
            default=None,
            metavar="PATH",
            help=f"{setting.what} (overrides the ini key {setting.ini})",
        )
        parser.addini(
            setting.ini,
            help=f"spanchor: {setting.what}, relative to the ini file",
            type=_INI_STRING,
            default="",
        )


def _usage_error(message: str) -> NoReturn:
    """Error the requesting test at setup with ``message`` alone, without a traceback."""
    __tracebackhide__ = True
    pytest.fail(f"spanchor: {message}", pytrace=False)


def _required(config: SpanchorConfig, name: str, needed_by: str) -> Path:
    value: Path | None = getattr(config, name)
    if value is not None:
        return value
    setting = SETTINGS[name]
    where = (
        f"[tool.spanchor] of {config.config_file}"
        if config.config_file is not None
        else "[tool.spanchor] of spanchor.toml or pyproject.toml (or the file named by "
        "--spanchor-config)"
    )
    _usage_error(
        f"{needed_by} needs {setting.what}, and none is configured. Set the ini key "
        f"`{setting.ini} = PATH` (in [pytest] or [tool.pytest.ini_options]), pass "
        f'`{setting.option} PATH`, or set `{setting.table_key} = "PATH"` in {where}.'
    )


def _load(config: pytest.Config) -> SpanchorConfig:
    __tracebackhide__ = True
    cached = config.stash.get(_CONFIG_KEY, None)
    if cached is None:
        from spanchor_core.testing.config import read_config

        try:
            cached = read_config(config)
        except SpanchorError as err:
            _usage_error(f"bad configuration: {err}")
        config.stash[_CONFIG_KEY] = cached
    return cached


# -- fixtures -----------------------------------------------------------------------------------


class EvaluateRun(Protocol):
    """The type of the ``spanchor_evaluate`` fixture, for annotating tests."""

    def __call__(
        self,
        run: Run | PathLike,
        *,
        k: Sequence[int] | None = None,
        min_overlap: float | None = None,
    ) -> Evaluation: ...


class AssertNoRegression(Protocol):
    """The type of the ``spanchor_assert_no_regression`` fixture, for annotating tests."""

    def __call__(
        self,
        candidate: EvaluationSource,
        *,
        policy: PolicySource | None = None,
        seed: int | None = None,
    ) -> Comparison: ...


@pytest.fixture(scope="session")
def spanchor_config(pytestconfig: pytest.Config) -> SpanchorConfig:
    """The plugin's settings, from options, ini keys and ``[tool.spanchor]``."""
    return _load(pytestconfig)


def _guarded(what: str, load: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """``load(...)``, with a spanchor input error turned into a setup error naming ``what``."""
    __tracebackhide__ = True
    try:
        return load(*args, **kwargs)
    except SpanchorError as err:
        _usage_error(f"cannot load {what}: {err}")


@pytest.fixture(scope="session")
def spanchor_corpus(spanchor_config: SpanchorConfig) -> Corpus:
    """The configured documents, loaded once per session."""
    from spanchor_core.corpus import load_corpus

    docs = _required(spanchor_config, "docs", "the spanchor_corpus fixture")
    corpus: Corpus = _guarded("the documents", load_corpus, docs, globs=spanchor_config.globs)
    return corpus


@pytest.fixture(scope="session")
def spanchor_gold(spanchor_config: SpanchorConfig) -> GoldSet:
    """The configured gold set, read once per session."""
    from spanchor_core.gold import read_gold

    gold: GoldSet = _guarded(
        "the gold set", read_gold, _required(spanchor_config, "gold", "the spanchor_gold fixture")
    )
    return gold


@pytest.fixture(scope="session")
def spanchor_locator(spanchor_corpus: Corpus) -> Locator:
    """One :class:`Locator` over the configured corpus: its index is built once per session."""
    from spanchor_core.locate import Locator

    return Locator(spanchor_corpus)


@pytest.fixture(scope="session")
def spanchor_policy(spanchor_config: SpanchorConfig) -> Policy | None:
    """The configured policy, or ``None`` for :func:`compare`'s default."""
    return spanchor_config.policy


@pytest.fixture(scope="session")
def spanchor_evaluate(
    spanchor_config: SpanchorConfig,
    spanchor_corpus: Corpus,
    spanchor_gold: GoldSet,
    spanchor_locator: Locator,
) -> EvaluateRun:
    """``spanchor_evaluate(run) -> Evaluation``: score a run (object or file) against the
    configured corpus and gold set, reusing the session's locator."""
    from spanchor_core.pipeline import score_run
    from spanchor_core.runs import Run
    from spanchor_core.testing.inputs import as_path

    def evaluate_run(
        run: Run | PathLike,
        *,
        k: Sequence[int] | None = None,
        min_overlap: float | None = None,
    ) -> Evaluation:
        return score_run(
            run if isinstance(run, Run) else as_path(run, "run"),
            corpus=spanchor_corpus,
            gold=spanchor_gold,
            locator=spanchor_locator,
            k=spanchor_config.k if k is None else k,
            min_overlap=spanchor_config.min_overlap if min_overlap is None else min_overlap,
            allow_mismatch=spanchor_config.allow_mismatch,
        )

    return evaluate_run


@pytest.fixture(scope="session")
def spanchor_baseline(
    spanchor_config: SpanchorConfig, request: pytest.FixtureRequest
) -> Evaluation:
    """The configured baseline as an :class:`Evaluation`: an evaluation file as it is, a run
    file scored once per session (which then needs the documents and the gold set too)."""
    from spanchor_core.evaluate import read_evaluation
    from spanchor_core.pipeline import file_kind

    path = _required(spanchor_config, "baseline", "the spanchor_baseline fixture")
    kind = _guarded("the baseline", file_kind, path)
    if kind == "evaluation":
        evaluation: Evaluation = _guarded("the baseline", read_evaluation, path)
        return evaluation
    evaluate_run: EvaluateRun = request.getfixturevalue("spanchor_evaluate")
    scored: Evaluation = _guarded("the baseline", evaluate_run, path)
    return scored


@pytest.fixture(scope="session")
def spanchor_assert_no_regression(
    spanchor_config: SpanchorConfig, spanchor_baseline: Evaluation, request: pytest.FixtureRequest
) -> AssertNoRegression:
    """``spanchor_assert_no_regression(candidate)``: :func:`assert_no_regression` against the
    configured baseline, policy, seed and ``max_unmapped_rate``, with the configured gold set
    and corpus (when set) for the message. ``candidate`` may be a run, which is scored with the
    session's locator."""
    from spanchor_core.runs import Run
    from spanchor_core.testing.assertions import assert_no_regression
    from spanchor_core.testing.inputs import evaluation_or_run

    config = spanchor_config
    corpus: Corpus | None = None
    gold: GoldSet | None = None
    evaluate_run: EvaluateRun | None = None
    if config.docs is not None and config.gold is not None:
        corpus = request.getfixturevalue("spanchor_corpus")
        gold = request.getfixturevalue("spanchor_gold")
        evaluate_run = request.getfixturevalue("spanchor_evaluate")

    def check(
        candidate: EvaluationSource,
        *,
        policy: PolicySource | None = None,
        seed: int | None = None,
    ) -> Comparison:
        __tracebackhide__ = True
        loaded = evaluation_or_run(candidate, "candidate")
        if isinstance(loaded, Run):
            if evaluate_run is None:
                _required(
                    config, "docs" if config.docs is None else "gold", "a run as the candidate"
                )
            else:
                loaded = evaluate_run(
                    loaded,
                    k=spanchor_baseline.settings.k,
                    min_overlap=spanchor_baseline.settings.min_overlap,
                )
        return assert_no_regression(
            spanchor_baseline,
            loaded,
            config.policy if policy is None else policy,
            seed=config.seed if seed is None else seed,
            gold=gold,
            corpus=corpus,
            max_unmapped_rate=config.max_unmapped_rate,
        )

    return check
