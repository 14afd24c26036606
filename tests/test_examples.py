"""The bundled examples run, are reproducible, and tell the story their READMEs tell."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import unicodedata
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from spanchor_core import (
    compare,
    evaluate,
    load_corpus,
    load_policy,
    read_comparison,
    read_evaluation,
    read_gold,
    read_run,
    validate_gold,
)

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "examples" / "quickstart"
CHROMA_EXAMPLE = ROOT / "examples" / "chroma_chunk_sizes"
CI = ROOT / "examples" / "ci"
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _without_volatile(path: Path) -> list[object]:
    """The JSONL lines of a run, minus the header fields that change on every recording."""
    lines: list[object] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        data = json.loads(raw)
        if isinstance(data, dict):
            data.pop("created_at", None)
            data.pop("spanchor_version", None)
        lines.append(data)
    return lines


# -- quickstart ---------------------------------------------------------------------------------


def test_make_example_regenerates_the_committed_files(tmp_path: Path) -> None:
    _load(QUICKSTART / "make_example.py", "make_example").main(tmp_path)
    assert _without_volatile(tmp_path / "gold.jsonl") == _without_volatile(
        QUICKSTART / "gold.jsonl"
    )
    for name in ("baseline", "candidate", "candidate-overlap"):
        fresh = _without_volatile(tmp_path / "runs" / f"{name}.jsonl")
        assert fresh == _without_volatile(QUICKSTART / "runs" / f"{name}.jsonl"), name
    # The chunk inventories the run headers point to (tag spanchor.chunks) come with them.
    for name in ("paragraphs", "windows-200", "windows-400-overlap-200"):
        fresh = _without_volatile(tmp_path / "chunks" / f"{name}.jsonl")
        assert fresh == _without_volatile(QUICKSTART / "chunks" / f"{name}.jsonl"), name
    assert sorted(path.name for path in (tmp_path / "chunks").iterdir()) == sorted(
        path.name for path in (QUICKSTART / "chunks").glob("*.jsonl")
    )


def test_quickstart_corpus_exercises_canonicalisation() -> None:
    corpus = load_corpus(QUICKSTART / "docs")
    assert len(corpus) == 10
    assert {path.suffix for path in (QUICKSTART / "docs").iterdir()} == {".md", ".txt"}
    raw_crlf = (QUICKSTART / "docs" / "toaster-manual.txt").read_bytes()
    assert raw_crlf.count(b"\r\n") == raw_crlf.count(b"\n") > 0  # every line ends in CRLF
    assert "\r" not in corpus.text("toaster-manual")
    raw_nfd = (QUICKSTART / "docs" / "guide-rapide-fr.md").read_text(encoding="utf-8")
    assert not unicodedata.is_normalized("NFC", raw_nfd)
    assert "première utilisation" in corpus.text("guide-rapide-fr")  # NFC after loading
    assert len(corpus.text("guide-rapide-fr")) < len(raw_nfd)


def test_quickstart_keeps_what_other_tests_rely_on() -> None:
    """tests/test_cli*.py and test_testing.py use these exact corpus and gold facts."""
    corpus = load_corpus(QUICKSTART / "docs")
    assert {"kettle-manual", "warranty"} <= set(corpus)
    assert [(s.document_id, s.start) for s in corpus.find_all("two-year warranty")] == [
        ("warranty", 56)
    ]
    kettle = corpus.find_all("the kettle")
    assert len(kettle) == 9
    assert (kettle[1].document_id, kettle[1].start) == ("kettle-manual", 327)
    second_line = (QUICKSTART / "gold.jsonl").read_text(encoding="utf-8").splitlines()[1]
    assert json.loads(second_line)["query_id"] == "q01"
    anchor = read_gold(QUICKSTART / "gold.jsonl")["q01"].anchors[0]
    assert (anchor.document_id, anchor.start, anchor.end) == ("kettle-manual", 151, 176)


def test_quickstart_gold_is_valid_and_spread_over_the_documents() -> None:
    corpus = load_corpus(QUICKSTART / "docs")
    gold = read_gold(QUICKSTART / "gold.jsonl")
    assert validate_gold(gold, corpus) == []
    assert len(gold) == 57
    assert {a.document_id for q in gold.values() for a in q.anchors} == set(corpus)
    assert sorted(q.query_id for q in gold.values() if len(q.anchors) == 2) == [
        "q08",
        "q30",
        "q35",
        "q44",
        "q55",
    ]


def test_quickstart_candidate_regresses_and_the_overlap_fix_passes() -> None:
    corpus = load_corpus(QUICKSTART / "docs")
    gold = read_gold(QUICKSTART / "gold.jsonl")
    policy = load_policy(QUICKSTART / "spanchor.toml")
    base, cand, fixed = (
        evaluate(corpus, gold, read_run(QUICKSTART / "runs" / f"{name}.jsonl"))
        for name in ("baseline", "candidate", "candidate-overlap")
    )
    for evaluation in (base, cand, fixed):
        assert evaluation.mapping.unmapped_rate == 0.0
    # Figures quoted in examples/quickstart/README.md (54/57, 47.2/57 and 54/57).
    assert round(base.mean("recall@5"), 3) == 0.947
    assert round(cand.mean("recall@5"), 3) == 0.828
    assert round(fixed.mean("recall@5"), 3) == 0.947
    regressed = compare(base, cand, policy)
    assert regressed.exit_code == 1
    assert regressed.counts["regressed"] == 14
    lost_hit = {row.query_id for row in regressed.queries if cand[row.query_id]["hit@5"] == 0.0}
    assert {"q01", "q02", "q05", "q38", "q47"} <= lost_hit
    # q05: "A full kettle boils " (20 of 60 characters) is all the candidate still retrieves.
    assert cand["q05"]["recall@5"] == pytest.approx(20 / 60)
    passed = compare(base, fixed, policy)
    assert passed.exit_code == 0
    assert passed.counts["regressed"] == 0


@pytest.mark.parametrize("name", ["baseline", "candidate", "candidate-overlap"])
def test_runs_record_their_provenance(name: str) -> None:
    corpus = load_corpus(QUICKSTART / "docs")
    gold = read_gold(QUICKSTART / "gold.jsonl")
    run = read_run(QUICKSTART / "runs" / f"{name}.jsonl")
    assert run.header.corpus_fingerprint == corpus.fingerprint
    assert run.header.gold_sha256 == gold.sha256
    assert len(run.records) == len(gold)
    assert run.header.retriever.description.startswith("bm25s BM25 over ")


# -- chroma_chunk_sizes -------------------------------------------------------------------------


def test_chroma_example_skips_cleanly_without_the_data(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    module = _load(CHROMA_EXAMPLE / "run.py", "chroma_run_absent")
    monkeypatch.setattr(module, "DATA", tmp_path / "no-such-folder")
    assert module.main([str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out == "skipped: ../shared/data/chroma not found\n"
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(
    not (SHARED_DATA / "chroma" / "corpora").is_dir(),
    reason=f"real data absent: {SHARED_DATA / 'chroma'} not found (a fresh clone has no ../shared)",
)
def test_chroma_example_figures_are_sane_and_deterministic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = _load(CHROMA_EXAMPLE / "run.py", "chroma_run")
    assert module.DATA == SHARED_DATA / "chroma"
    first, second = tmp_path / "first", tmp_path / "second"
    assert module.main([str(first)]) == 0
    assert module.main([str(second)]) == 0
    out = capsys.readouterr().out
    assert "known-item queries" in out
    for name in ("summary.json", "gold.jsonl"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name

    summary: dict[str, Any] = json.loads((first / "summary.json").read_text(encoding="utf-8"))
    corpus = load_corpus(SHARED_DATA / "chroma" / "corpora")
    gold = read_gold(first / "gold.jsonl")
    assert validate_gold(gold, corpus) == []
    assert len(gold) == summary["gold"]["queries"] == 100  # 20 per document, 5 documents
    assert {q.anchors[0].document_id for q in gold.values()} == set(corpus)
    assert summary["gold"]["two_anchor_queries"] > 0
    for name, size in (("chunks-1000", 1000), ("chunks-400", 400)):
        evaluation = read_evaluation(first / "evaluations" / f"{name}.json")
        assert len(evaluation) == len(gold)
        assert evaluation.mapping.unmapped_rate == 0.0  # recorded offsets are verified
        figures = summary["configs"][name]
        assert figures["queries"] == len(gold)
        assert 0.5 < figures["mean"]["recall@5"] <= 1.0
        assert figures["mean"]["retrieved_chars@5"] <= 5 * size
        same = evaluation.mean("recall@5") == pytest.approx(figures["mean"]["recall@5"], abs=1e-4)
        assert same
    # smaller chunks send less text; the candidate's figures are those of the README
    configs = summary["configs"]
    assert configs["chunks-400"]["chunks"] > configs["chunks-1000"]["chunks"]
    assert (
        configs["chunks-400"]["mean"]["retrieved_chars@5"]
        < (configs["chunks-1000"]["mean"]["retrieved_chars@5"])
    )
    comparison = read_comparison(first / "comparison.json")
    assert comparison.counts["compared"] == len(gold)
    assert summary["comparison"]["regressed"] == comparison.counts["regressed"]
    assert (first / "report.md").read_text(encoding="utf-8").startswith("## ")
    # the chunking / ranking split of each recall@K, from both indexes' chunk inventories
    assert "why: " in out
    assert comparison.diagnosis is not None
    assert comparison.diagnosis.summary.regressed == comparison.counts["regressed"]
    split = summary["diagnosis"]["splits"]["recall@5"]
    assert split["line"] in out
    assert split["delta"] == pytest.approx(split["chunking"] + split["ranking"], abs=2e-4)
    assert 0.0 <= split["oracle_candidate"] <= split["oracle_baseline"] <= 1.0
    for size in (1000, 400):
        assert (first / "chunks" / f"chunks-{size}.jsonl").read_bytes() == (
            second / "chunks" / f"chunks-{size}.jsonl"
        ).read_bytes()


# -- ci -----------------------------------------------------------------------------------------


def _run_ci_pytest(candidate: Path | None) -> subprocess.CompletedProcess[str]:
    """The CI pytest example as a user runs it: ``pytest`` in ``examples/ci``."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("SPANCHOR_CANDIDATE", None)
    if candidate is not None:
        env["SPANCHOR_CANDIDATE"] = str(candidate)
    argv = [sys.executable, "-m", "pytest", "-p", "spanchor_core.testing", "-p", "no:cacheprovider"]
    return subprocess.run(
        [*argv, "-q", "test_retrieval_gate.py"],
        cwd=CI,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_ci_pytest_example_fails_on_the_regressing_candidate() -> None:
    result = _run_ci_pytest(None)  # the `candidate` of examples/ci/pyproject.toml
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 failed, 1 passed" in result.stdout
    assert "FAILED test_retrieval_gate.py::test_candidate_keeps_the_baselines_evidence" in (
        result.stdout
    )
    assert "14 of 57 compared queries regressed" in result.stdout
    assert "kettle-manual[151:176] “the MAX mark (1.7 litres)”" in result.stdout


def test_ci_pytest_example_passes_on_the_overlap_candidate() -> None:
    result = _run_ci_pytest(QUICKSTART / "runs" / "candidate-overlap.jsonl")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout


def _workflow_steps() -> list[dict[str, Any]]:
    """The steps of the workflow's only job, parsed with PyYAML when it is installed."""
    text = (CI / "spanchor-gate.yml").read_text(encoding="utf-8")
    try:
        yaml = importlib.import_module("yaml")
    except ImportError:
        # Structural check without a YAML parser: each step starts with "- uses:" / "- name:".
        assert "\njobs:\n" in text
        assert "\non:\n  pull_request:\n" in text
        steps: list[dict[str, Any]] = []
        for line in text.splitlines():
            stripped = line.strip()
            if stripped.startswith("- "):
                steps.append({})
                stripped = stripped[2:]
            key, sep, value = stripped.partition(": ")
            if steps and sep and key in {"name", "uses", "run"}:
                steps[-1][key] = value.strip('"')
        return steps
    data = yaml.safe_load(text)
    assert set(data) >= {"name", True, "jobs"}  # YAML 1.1 reads the key `on` as True
    assert "pull_request" in data[True]
    (job,) = data["jobs"].values()
    assert job["runs-on"] == "ubuntu-latest"
    steps = job["steps"]
    assert isinstance(steps, list)
    return steps


def test_ci_workflow_has_the_steps_a_gate_needs() -> None:
    steps = _workflow_steps()
    uses = [str(step.get("uses", "")).split("@")[0] for step in steps]
    assert uses[:2] == ["actions/checkout", "actions/setup-python"]
    assert "actions/upload-artifact" in uses
    runs = " ".join(str(step.get("run", "")) for step in steps)
    assert "pip install spanchor" in runs
    upload = steps[uses.index("actions/upload-artifact")]
    if "with" in upload:  # only the YAML parser sees nested mappings
        assert upload["with"]["path"] == "spanchor-junit.xml"


def test_ci_workflow_gate_command_is_valid_for_the_real_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from spanchor_core.cli import app

    (command,) = [
        line
        for step in _workflow_steps()
        for line in str(step.get("run", "")).splitlines()
        if line.strip().startswith("spanchor gate")
    ]
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(os.path.expandvars(command))
    assert argv[:2] == ["spanchor", "gate"]
    assert argv[2:] == ["--report", str(summary), "--junit", "spanchor-junit.xml"]
    config = ["--config", str(QUICKSTART / "spanchor.toml")]
    result = CliRunner().invoke(app, [*argv[1:], *config])
    # exit 1 is the verdict on the regressing quickstart candidate; 2 would be a bad option
    assert result.exit_code == 1, result.output
    assert summary.read_text(encoding="utf-8").startswith("## ❌ spanchor: FAIL")
    junit = (tmp_path / "spanchor-junit.xml").read_text(encoding="utf-8")
    assert junit.count("<testcase ") == 57
    overlap = ["--candidate", str(QUICKSTART / "runs" / "candidate-overlap.jsonl")]
    assert CliRunner().invoke(app, [*argv[1:], *config, *overlap]).exit_code == 0
