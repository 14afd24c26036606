"""A gate's run sides read in paired halves (``pipeline/paired``): chosen only when no jobs
setting was given, every run side is large and two CPUs are usable; and whatever it is given —
records crossing the cut, ids resolved by text, errors, a child that gives no answer, bad
lines — the same comparison file, terminal text and exit code as scoring the sides in turn
(``--jobs 1``) and concurrently (``--jobs 2``). Real forks, small runs (``SPLIT_BYTES`` is
lowered so that they count as large)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanchor_core.cli import main
from spanchor_core.compare import write_comparison
from spanchor_core.corpus import load_corpus
from spanchor_core.evaluate import run_parts, write_evaluation
from spanchor_core.evaluate.file_fork import Forked, can_fork
from spanchor_core.gold import Anchor, GoldQuery, GoldSet, write_gold
from spanchor_core.pipeline import paired, run_gate
from spanchor_core.runs import RetrievalRecord, RetrievedResult, Run, RunHeader, write_run
from spanchor_core.settings import GateConfig
from tests.fork_spy import ForkSpy, count_forks

pytestmark = pytest.mark.skipif(not can_fork(), reason="needs fork and two CPUs")

ALPHA = "Alpha one. The sky is blue because of Rayleigh scattering. Alpha two."
BETA = "Beta text about grass. Grass is green due to chlorophyll. End of beta."

_TEXTS = [
    "The sky is blue",
    "Alpha one.",
    "Alpha two.",
    "Grass is green due to chlorophyll.",
    "End of beta.",
    "This sentence is nowhere in the corpus at all.",
    "Beta text abuot grass.",  # a typo: found by the fuzzy stage
]

_ASKED = [
    ("q1", "Why is the sky blue?"),
    ("q2", "Grass and the second alpha?"),
    ("q4", "Errored?"),
    ("q5", "No evidence yet?"),
    ("zzz", "Not a gold query"),
    (None, "  Resolved by text?  "),
]

_CREATED = re.compile(r'"created_at": "[^"]*"')


def _inputs(folder: Path) -> tuple[Path, Path]:
    """A two-document corpus directory and its gold set, written under ``folder``."""
    docs = folder / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "alpha.txt").write_text(ALPHA, "utf-8")
    (docs / "beta.txt").write_text(BETA, "utf-8")
    corpus = load_corpus(docs)

    def query(qid: str, question: str, *spans: tuple[str, int, int]) -> GoldQuery:
        return GoldQuery(qid, question, tuple(Anchor.from_span(corpus, *s) for s in spans))

    gold = folder / "gold.jsonl"
    write_gold(
        GoldSet(
            [
                query("q1", "Why is the sky blue?", ("alpha", 11, 58)),
                query("q2", "Grass and the second alpha?", ("beta", 23, 57), ("alpha", 59, 69)),
                query("q3", "Never asked?", ("alpha", 0, 10)),
                query("q4", "Errored?", ("beta", 0, 22)),
                GoldQuery("q5", "No evidence yet?", ()),
                query("q6", "Resolved by text?", ("beta", 58, 70)),
            ]
        ),
        gold,
    )
    return docs, gold


def _record(asked: int, picks: list[int], error: str | None = None) -> RetrievalRecord:
    qid, question = _ASKED[asked]
    results = tuple(
        RetrievedResult(rank=rank, text=_TEXTS[pick]) for rank, pick in enumerate(picks, 1)
    )
    return RetrievalRecord(qid, question, results, error=error)


_PLAIN = [_record(0, [0, 1]), _record(1, [3, 2, 4]), _record(2, [4], "timeout"), _record(5, [4])]


def _runs(folder: Path, base: list[RetrievalRecord], cand: list[RetrievalRecord]) -> list[Path]:
    paths = [folder / "base.jsonl", folder / "cand.jsonl"]
    for path, records in zip(paths, (base, cand), strict=True):
        write_run(Run(RunHeader(), records), path)
    return paths


@pytest.fixture
def large(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run counts as large enough to read in two parts."""
    monkeypatch.setattr(run_parts, "SPLIT_BYTES", 0)


@pytest.fixture
def halves(monkeypatch: pytest.MonkeyPatch) -> ForkSpy:
    return count_forks(monkeypatch, paired)


@pytest.fixture
def per_side(monkeypatch: pytest.MonkeyPatch) -> ForkSpy:
    return count_forks(monkeypatch, run_parts)


def _config(folder: Path, runs: list[Path], **given: Any) -> GateConfig:
    docs, gold = _inputs(folder)
    return GateConfig(docs=docs, gold=gold, baseline=runs[0], candidate=runs[1], **given)


def _comparison_text(config: GateConfig, path: Path, jobs: int | None = None) -> str:
    outcome = run_gate(config, jobs=jobs)
    write_comparison(outcome.comparison, path)
    write_evaluation(outcome.candidate, path.with_suffix(".candidate.json"))
    texts = [path.read_text("utf-8"), path.with_suffix(".candidate.json").read_text("utf-8")]
    return _CREATED.sub("", "\n".join(texts))


# -- which way the sides are read -------------------------------------------------------------


def test_unset_jobs_reads_two_large_runs_in_paired_halves(
    tmp_path: Path, large: None, halves: ForkSpy, per_side: ForkSpy
) -> None:
    config = _config(tmp_path, _runs(tmp_path, _PLAIN, _PLAIN[:3]))
    assert "jobs" not in config.model_fields_set
    run_gate(config)
    assert (halves.started, halves.answered) == (1, 1)
    assert per_side.started == 0  # no child per side


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_explicit_jobs_setting_is_kept(
    tmp_path: Path, large: None, halves: ForkSpy, per_side: ForkSpy, jobs: int
) -> None:
    runs = _runs(tmp_path, _PLAIN, _PLAIN[:3])
    run_gate(_config(tmp_path, runs), jobs=jobs)
    run_gate(_config(tmp_path, runs, jobs=jobs))  # [tool.spanchor] jobs = N
    assert halves.started == 0
    # sides in turn read each run in parts of its own; concurrent sides one process each
    assert per_side.started == (4 if jobs == 1 else 0)


def test_one_usable_cpu_scores_the_sides_in_turn_on_one_process(
    tmp_path: Path, large: None, halves: ForkSpy, per_side: ForkSpy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    run_gate(_config(tmp_path, _runs(tmp_path, _PLAIN, _PLAIN[:3])))
    assert (halves.started, per_side.started) == (0, 0)


def test_small_runs_are_scored_in_turn(tmp_path: Path, halves: ForkSpy, per_side: ForkSpy) -> None:
    run_gate(_config(tmp_path, _runs(tmp_path, _PLAIN, _PLAIN[:3])))  # under SPLIT_BYTES
    assert (halves.started, per_side.started) == (0, 0)


def test_one_small_run_side_keeps_the_sides_in_turn(
    tmp_path: Path, halves: ForkSpy, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = _runs(tmp_path, _PLAIN * 4, _PLAIN[:1])
    sizes = sorted(path.stat().st_size for path in runs)
    monkeypatch.setattr(run_parts, "SPLIT_BYTES", (sizes[0] + sizes[1]) // 2)
    run_gate(_config(tmp_path, runs))
    assert halves.started == 0


def test_an_evaluation_side_leaves_one_run_to_read_in_its_own_parts(
    tmp_path: Path, large: None, halves: ForkSpy
) -> None:
    runs = _runs(tmp_path, _PLAIN, _PLAIN[:3])
    outcome = run_gate(_config(tmp_path, runs), jobs=1)
    write_evaluation(outcome.baseline, tmp_path / "base.json")
    run_gate(_config(tmp_path, [tmp_path / "base.json", runs[1]]))
    assert halves.started == 0


# -- the same answers -------------------------------------------------------------------------

_records = st.lists(
    st.builds(
        _record,
        st.integers(0, len(_ASKED) - 1),
        st.lists(st.integers(0, len(_TEXTS) - 1), max_size=4),
        st.sampled_from([None, None, None, "timeout"]),
    ),
    min_size=2,
    max_size=12,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(base=_records, cand=_records)
def test_paired_halves_give_the_comparison_of_the_sides_in_turn(
    tmp_path_factory: pytest.TempPathFactory,
    large: None,
    base: list[RetrievalRecord],
    cand: list[RetrievalRecord],
) -> None:
    folder = tmp_path_factory.mktemp("paired")
    config = _config(folder, _runs(folder, base, cand))
    in_turn = _comparison_text(config, folder / "turn.json", jobs=1)
    assert _comparison_text(config, folder / "paired.json") == in_turn


def test_a_child_without_an_answer_leaves_its_halves_to_this_process(
    tmp_path: Path, large: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Silent(Forked[object]):
        def result(self) -> tuple[object] | None:
            self.close()
            return None

    config = _config(tmp_path, _runs(tmp_path, _PLAIN * 3, _PLAIN[1:] * 3))
    in_turn = _comparison_text(config, tmp_path / "turn.json", jobs=1)
    monkeypatch.setattr(paired, "Forked", Silent)
    assert _comparison_text(config, tmp_path / "paired.json") == in_turn


def _cli(
    capsys: pytest.CaptureFixture[str], folder: Path, runs: list[Path], *flags: str
) -> tuple[int, str, str, str]:
    docs, gold = folder / "docs", folder / "gold.jsonl"
    out = folder / f"comparison{len(flags)}{''.join(flags)}.json"
    code = main(
        [
            "gate",
            "--docs", str(docs),
            "--gold", str(gold),
            "--baseline", str(runs[0]),
            "--candidate", str(runs[1]),
            "-o", str(out),
            *flags,
        ]
    )  # fmt: skip
    captured = capsys.readouterr()
    written = _CREATED.sub("", out.read_text("utf-8")) if out.exists() else ""
    return code, captured.out, captured.err.replace(out.name, "OUT"), written


def test_the_cli_prints_and_writes_the_same_whatever_the_jobs(
    tmp_path: Path, large: None, halves: ForkSpy, capsys: pytest.CaptureFixture[str]
) -> None:
    _inputs(tmp_path)
    runs = _runs(tmp_path, _PLAIN * 3, [_record(0, [1]), *_PLAIN[1:]] * 3)
    default = _cli(capsys, tmp_path, runs)
    assert halves.started == 1
    # q1 regressed, and untrusted: q3 never asked, q4's retrieval failed
    assert default[0] == 3
    assert "1 regressed" in default[1]
    assert _cli(capsys, tmp_path, runs, "--jobs", "1") == default
    assert _cli(capsys, tmp_path, runs, "--jobs", "2") == default


@pytest.mark.parametrize(
    ("side", "at"),
    [("base", 1), ("base", 10), ("cand", 1), ("cand", 10)],
)
def test_a_bad_line_is_the_error_of_the_sides_in_turn(
    tmp_path: Path,
    large: None,
    halves: ForkSpy,
    capsys: pytest.CaptureFixture[str],
    side: str,
    at: int,
) -> None:
    _inputs(tmp_path)
    runs = _runs(tmp_path, _PLAIN * 3, _PLAIN * 3)
    broken = runs[0] if side == "base" else runs[1]
    lines = broken.read_text("utf-8").splitlines(keepends=True)
    lines[at] = '{"query_id": "q1", "results": [\n'  # record line ``at`` (after the header)
    broken.write_text("".join(lines), "utf-8")
    default = _cli(capsys, tmp_path, runs)
    assert halves.started == 1  # tried, then left to the sides in turn
    assert default[0] == 2
    assert f"{broken.name}:{at + 1}:" in default[2]
    assert _cli(capsys, tmp_path, runs, "--jobs", "1") == default


def test_a_bad_candidate_header_is_the_error_of_the_sides_in_turn(
    tmp_path: Path, large: None, capsys: pytest.CaptureFixture[str]
) -> None:
    _inputs(tmp_path)
    runs = _runs(tmp_path, _PLAIN * 3, _PLAIN * 3)
    lines = runs[1].read_text("utf-8").splitlines(keepends=True)
    runs[1].write_text('{"kind": "spanchor.run", "schema_version": 99}\n' + "".join(lines[1:]))
    default = _cli(capsys, tmp_path, runs)
    assert default[0] == 2
    assert _cli(capsys, tmp_path, runs, "--jobs", "1") == default


def test_several_baselines_are_read_in_paired_halves_too(
    tmp_path: Path, large: None, halves: ForkSpy
) -> None:
    runs = _runs(tmp_path, _PLAIN * 2, [*_PLAIN[1:], _record(0, [1])] * 2)
    again = tmp_path / "base2.jsonl"
    write_run(Run(RunHeader(), [_record(0, [0]), *_PLAIN[1:]] * 2), again)
    config = _config(tmp_path, runs, baselines=(runs[0], again))
    in_turn = _comparison_text(config, tmp_path / "turn.json", jobs=1)
    assert halves.started == 0
    assert _comparison_text(config, tmp_path / "paired.json") == in_turn
    assert halves.started == 1
