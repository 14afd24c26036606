"""Terminal escape injection: text from the inputs reaches the terminal escaped, through the real
CLI (``locate`` context, ``info`` file names, query ids in ``compare``/``gate`` output)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spanchor_core import (
    Corpus,
    GoldQuery,
    GoldSet,
    Policy,
    RetrievalRecord,
    RetrievedResult,
    RetrieverInfo,
    Run,
    RunHeader,
    anchor_from_text,
    compare,
    evaluate,
    write_evaluation,
)
from spanchor_core.cli import main

ESC = "\x1b"
CLEAR = f"{ESC}[2J"
EVIDENCE = "The kettle switches itself off after thirty seconds."
OTHER = "Unrelated filler text about toasters that is never gold."


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out + err


def test_locate_prints_an_escape_in_the_context_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "e.md").write_text(f"B {CLEAR}\n", encoding="utf-8")
    code, out = _cli(capsys, "locate", "B", str(docs))
    assert code == 0
    assert ESC not in out
    assert "\\x1b[2J" in out


def test_info_prints_an_escape_in_a_file_name_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / f"bad{CLEAR}.md").write_text("Some text.\n", encoding="utf-8")
    code, out = _cli(capsys, "info", str(docs))
    assert code == 0
    assert ESC not in out
    assert "bad\\x1b[2J" in out


@pytest.fixture
def hostile_evaluations(tmp_path: Path) -> tuple[Path, Path]:
    qid = f"q{CLEAR}{ESC}]0;owned{chr(7)}"
    corpus = Corpus.from_texts({"doc": f"{OTHER} {EVIDENCE}"})
    gold = GoldSet(
        [GoldQuery(qid, "When does it switch off?", (anchor_from_text(corpus, EVIDENCE),))]
    )

    def run(found: bool) -> Run:
        text = EVIDENCE if found else OTHER
        header = RunHeader(retriever=RetrieverInfo(description="r"))
        return Run(
            header, [RetrievalRecord(qid, "When does it switch off?", (RetrievedResult(1, text),))]
        )

    paths = tmp_path / "base.json", tmp_path / "cand.json"
    baseline = evaluate(corpus, gold, run(True), k=(1,))
    candidate = evaluate(corpus, gold, run(False), k=(1,))
    assert compare(baseline, candidate, Policy(max_drop={"recall@1": 0.0})).exit_code == 1
    write_evaluation(baseline, paths[0])
    write_evaluation(candidate, paths[1])
    return paths


def test_compare_prints_a_hostile_query_id_escaped(
    capsys: pytest.CaptureFixture[str], hostile_evaluations: tuple[Path, Path]
) -> None:
    base, cand = hostile_evaluations
    code, out = _cli(capsys, "compare", str(base), str(cand))
    assert code == 1
    assert ESC not in out
    assert "\x07" not in out
    assert "q\\x1b[2J" in out


def test_gate_prints_a_hostile_query_id_escaped(
    capsys: pytest.CaptureFixture[str], hostile_evaluations: tuple[Path, Path], tmp_path: Path
) -> None:
    base, cand = hostile_evaluations
    config = tmp_path / "pyproject.toml"
    config.write_text(
        f'[tool.spanchor]\nbaseline = "{base.name}"\ncandidate = "{cand.name}"\n', encoding="utf-8"
    )
    code, out = _cli(capsys, "gate", "--config", str(config))
    assert code == 1
    assert ESC not in out
    assert "\x07" not in out
    assert "q\\x1b[2J" in out
