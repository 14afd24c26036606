"""The pipeline: file kinds from the parsed ``kind``, paths -> evaluations -> exit code."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from spanchor_core import load_corpus, read_gold, read_run
from spanchor_core.cli import main
from spanchor_core.compare import Finding
from spanchor_core.errors import InputError
from spanchor_core.exit_codes import ExitCode
from spanchor_core.pipeline import (
    GateOutcome,
    GoldHashPolicy,
    file_kind,
    load_pair,
    load_side,
    policy_with_drops,
    run_evaluation,
    run_gate,
)
from spanchor_core.settings import GateConfig, gate_config_from_pyproject

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart"
DOCS = QUICKSTART / "docs"
GOLD = QUICKSTART / "gold.jsonl"
BASE = QUICKSTART / "runs" / "baseline.jsonl"
CAND = QUICKSTART / "runs" / "candidate.jsonl"


def _run_naming_the_evaluation_kind(tmp_path: Path) -> Path:
    """The baseline run, its header describing the retriever with the text "spanchor.evaluation"."""
    lines = BASE.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["retriever"]["description"] = 'writes "spanchor.evaluation" files'
    header["tags"] = {"kind": "spanchor.evaluation"}
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    return path


def test_a_run_whose_header_names_the_evaluation_kind_is_a_run(tmp_path: Path) -> None:
    # Regression: file_kind sniffed the bytes and sent this valid run to the evaluation reader.
    run = _run_naming_the_evaluation_kind(tmp_path)
    assert file_kind(run) == "run"
    config = GateConfig(docs=DOCS, gold=GOLD, baseline=run, candidate=BASE, k=(5,))
    outcome = run_gate(config, policy=policy_with_drops(None, {"recall@5": 0.0}))
    assert outcome.exit_code == ExitCode.PASS  # the same run on both sides


def test_cli_compares_a_run_whose_header_names_the_evaluation_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = str(_run_naming_the_evaluation_kind(tmp_path))
    code = main(["compare", run, str(BASE), "--docs", str(DOCS), "--gold", str(GOLD), "-q"])
    assert code == 0, capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('{"kind": "spanchor.evaluation", "schema_version": 1}', "evaluation"),
        ('{\n  "kind": "spanchor.evaluation",\n  "schema_version": 1\n}\n', "evaluation"),
        ('{\n  "kind": "spanchor.evaluation",\n  "broken": [\n', "evaluation"),
        ('{"per_query_metrics": {}, "schema_version": "0.2.0"}', "evaluation"),
        ('{"kind": "spanchor.run", "note": "spanchor.evaluation"}', "run"),
        ('{\n  "kind": "spanchor.run",\n  "note": "\\"spanchor.evaluation\\""\n}\n', "run"),
        ('[\n  {"query": "spanchor.evaluation"}\n]\n', "run"),
        ('{\n  "note": "kind spanchor.evaluation",\n  "broken": \n', "run"),
        ("", "run"),
    ],
)
def test_file_kind_reads_the_parsed_kind(tmp_path: Path, text: str, kind: str) -> None:
    path = tmp_path / "file.json"
    path.write_text(text, encoding="utf-8")
    assert file_kind(path) == kind


def test_file_kind_of_a_missing_file_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        file_kind(tmp_path / "absent.jsonl")


def test_load_pair_scores_a_run_with_the_settings_of_the_evaluation(tmp_path: Path) -> None:
    gold = read_gold(GOLD)
    corpus = load_corpus(DOCS)
    evaluation = load_side(BASE, corpus=corpus, gold=gold, k=(1, 3), min_overlap=0.5)
    before, after = load_pair(evaluation, read_run(CAND), corpus=corpus, gold=gold)
    assert before is evaluation
    assert after.settings.k == (1, 3)
    assert after.settings.min_overlap == 0.5
    with pytest.raises(InputError, match="needs the documents and the gold set"):
        load_pair(evaluation, CAND, corpus=None, gold=None)


def test_gate_exit_code_follows_the_one_convention() -> None:
    outcome = run_gate(gate_config_from_pyproject(QUICKSTART / "spanchor.toml"))
    assert outcome.exit_code is ExitCode.REGRESSION
    unmapped = Finding("error", "unmapped_rate", "the candidate run cannot be trusted")
    comparison = dataclasses.replace(
        outcome.comparison, findings=(*outcome.comparison.findings, unmapped)
    )
    untrusted = GateOutcome(
        outcome.baseline, outcome.candidate, comparison, outcome.gold, outcome.corpus
    )
    assert untrusted.exit_code is ExitCode.UNTRUSTED  # 3 outranks 1 (exit_codes: 2 > 3 > 1 > 0)
    assert untrusted.unmapped_exceeded
    assert comparison.verdict == "UNTRUSTED"
    invalid = dataclasses.replace(
        comparison, findings=(*comparison.findings, Finding("error", "missing_metric", "x"))
    )
    assert invalid.exit_code is ExitCode.BAD_INPUT
    assert invalid.verdict == "INVALID"


def test_run_evaluation_checks_the_gold_hash() -> None:
    gold = read_gold(GOLD)
    warned = run_evaluation(DOCS, GOLD, BASE, k=(5,), expected_gold_hash="sha256:" + "0" * 64)
    assert len(warned.warnings) == 1
    assert "the gold set's hash is" in warned.warnings[0]
    assert warned.exit_code is ExitCode.PASS
    same = run_evaluation(DOCS, gold, BASE, k=(5,), expected_gold_hash=gold.legacy_sha256)
    assert same.warnings == ()
    with pytest.raises(InputError, match="the gold set's hash is"):
        run_evaluation(DOCS, GOLD, BASE, expected_gold_hash="x", gold_hash_policy="fail")
    ignored = run_evaluation(
        DOCS, GOLD, BASE, expected_gold_hash="x", gold_hash_policy=GoldHashPolicy.IGNORE
    )
    assert ignored.warnings == ()
    with pytest.raises(InputError, match="warn, fail or ignore"):
        run_evaluation(DOCS, GOLD, BASE, expected_gold_hash="x", gold_hash_policy="sometimes")
    with pytest.raises(InputError, match="between 0 and 1"):
        run_evaluation(DOCS, GOLD, BASE, max_unmapped_rate=2.0)


def test_run_evaluation_refuses_a_run_for_no_query_of_the_gold_set(tmp_path: Path) -> None:
    lines = BASE.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["gold_sha256"] = None
    records = [json.loads(line) for line in lines[1:]]
    for record in records:
        record["query_id"] = "other-" + record["query_id"]
    run = tmp_path / "run.jsonl"
    run.write_text(
        "\n".join([json.dumps(header), *(json.dumps(r) for r in records)]) + "\n", encoding="utf-8"
    )
    with pytest.raises(InputError, match=f"none of the run's {len(records)} records matches"):
        run_evaluation(DOCS, GOLD, run)


def test_run_evaluation_exit_3_when_too_much_is_unmapped(tmp_path: Path) -> None:
    lines = CAND.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines[1:]]
    for record in records[:10]:  # about a sixth of the queries
        for result in record["results"]:
            result["text"] = "zzz qqq text that appears in none of the documents at all"
    run = tmp_path / "run.jsonl"
    run.write_text("\n".join([lines[0], *(json.dumps(r) for r in records)]) + "\n", "utf-8")
    outcome = run_evaluation(DOCS, GOLD, run, max_unmapped_rate=0.1)
    assert 0.1 < outcome.evaluation.mapping.unmapped_rate < 0.5
    assert outcome.unmapped_exceeded
    assert outcome.exit_code is ExitCode.UNTRUSTED
    assert run_evaluation(DOCS, GOLD, run, max_unmapped_rate=0.5).exit_code is ExitCode.PASS
    assert run_evaluation(DOCS, GOLD, run, max_unmapped_rate=None).exit_code is ExitCode.PASS


def test_policy_with_drops() -> None:
    assert policy_with_drops(None, {"recall@5": None}) is None
    policy = policy_with_drops(None, {"recall@5": 0.1})
    assert policy is not None
    again = policy_with_drops(policy, {"recall@5": 0.2, "precision@5": 0.3})
    assert again is not None
    assert dict(again.max_drop) == {"recall@5": 0.2, "precision@5": 0.3}


@pytest.mark.parametrize("jobs", [2, 0])
def test_load_pair_on_several_processes_gives_the_same_evaluations(jobs: int) -> None:
    corpus, gold = load_corpus(DOCS), read_gold(GOLD)
    one = load_pair(BASE, CAND, corpus=corpus, gold=gold)
    many = load_pair(BASE, CAND, corpus=corpus, gold=gold, jobs=jobs)
    for single, parallel in zip(one, many, strict=True):
        assert parallel.queries == single.queries
        assert parallel.mapping == single.mapping
        assert parallel.records == single.records


def test_load_pair_rejects_negative_jobs() -> None:
    with pytest.raises(InputError, match="jobs must be"):
        load_pair(BASE, CAND, corpus=load_corpus(DOCS), gold=read_gold(GOLD), jobs=-2)
