"""Authoring commands end to end: locate, anchor add, check-corpus, gold extract/review/promote,
import squad / legacy — each result checked through the library."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from spanchor_core import load_corpus, read_gold, validate_gold
from spanchor_core.authoring import read_candidates
from spanchor_core.cli import main

DOCS = Path(__file__).resolve().parents[1] / "examples" / "quickstart" / "docs"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    shutil.copytree(DOCS, tmp_path / "docs")
    return tmp_path / "docs"


def test_locate_prints_offsets_and_exits_1_when_absent(
    docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["locate", "two-year warranty", str(docs), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    corpus = load_corpus(docs)
    assert len(rows) == 1
    assert corpus.text(rows[0]["document_id"])[rows[0]["start"] : rows[0]["end"]] == (
        "two-year warranty"
    )
    assert main(["locate", "no such words anywhere", str(docs)]) == 1
    assert "No matches found." in capsys.readouterr().err


def test_anchor_add_new_and_existing_query_then_ambiguity(
    docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = tmp_path / "gold.jsonl"
    question = "How long is the warranty?"
    base = ["anchor", "add", "q1", question, str(docs)]
    assert main([*base, "two-year warranty", "--gold", str(gold)]) == 0
    assert main([*base, "full refund", "--gold", str(gold)]) == 0
    gold_set = read_gold(gold)
    assert [len(q.anchors) for q in gold_set.values()] == [2]
    assert validate_gold(gold_set, load_corpus(docs)) == []
    capsys.readouterr()
    assert main(["anchor", "add", "q2", "?", str(docs), "the kettle", "--gold", str(gold)]) == 2
    assert "occurs 9 times" in capsys.readouterr().err
    args = ["anchor", "add", "q2", "?", str(docs), "the kettle", "--gold", str(gold)]
    assert main([*args, "--occurrence", "2"]) == 0
    anchor = read_gold(gold)["q2"].anchors[0]
    assert (anchor.document_id, anchor.start) == ("kettle-manual", 327)


def test_check_corpus_finds_moved_text_and_fix_rewrites_it(
    docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = tmp_path / "gold.jsonl"
    add = ["anchor", "add", "q1", "warranty?", str(docs), "two-year warranty", "--gold", str(gold)]
    assert main(add) == 0
    assert main(["check-corpus", str(docs), str(gold)]) == 0
    page = docs / "warranty.md"
    page.write_text("Preface.\n" + page.read_text(encoding="utf-8"), encoding="utf-8")
    capsys.readouterr()
    assert main(["check-corpus", str(docs), str(gold)]) == 2
    assert "moved to warranty [65, 82)" in capsys.readouterr().out
    assert main(["check-corpus", str(docs), str(gold), "--fix"]) == 0
    assert validate_gold(read_gold(gold), load_corpus(docs)) == []


def test_gold_extract_review_promote_persists_decisions(
    docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cands, gold = tmp_path / "c.jsonl", tmp_path / "gold.jsonl"
    assert main(["gold", "extract", str(docs), "-o", str(cands)]) == 0
    first = read_candidates(cands)[0]
    review = ["gold", "review", str(cands), "-c", first.candidate_id]
    assert main([*review, "-q", "What is this about?", "--approve"]) == 0
    assert read_candidates(cands)[0].status.value == "approved"  # saved, unlike 0.4.0
    assert main(["gold", "promote", str(cands), str(docs), "--gold", str(gold)]) == 0
    assert main(["gold", "promote", str(cands), str(docs), "--gold", str(gold)]) == 0
    promoted = read_gold(gold)
    assert len(promoted) == 1  # idempotent
    assert validate_gold(promoted, load_corpus(docs)) == []


def test_import_squad_translates_raw_offsets(tmp_path: Path) -> None:
    context = "Cafe\u0301 au lait.\r\nThe price is five euros."
    answer = "five euros"
    squad = {
        "version": "1.1",
        "data": [
            {
                "title": "Menu",
                "paragraphs": [
                    {
                        "context": context,
                        "qas": [
                            {
                                "id": "a1",
                                "question": "How much?",
                                "answers": [
                                    {"text": answer, "answer_start": context.index(answer)}
                                ],
                            }
                        ],
                    }
                ],
            }
        ],
    }
    source = tmp_path / "squad.json"
    source.write_text(json.dumps(squad), encoding="utf-8")
    out, gold = tmp_path / "docs", tmp_path / "gold.jsonl"
    assert main(["import", "squad", str(source), "--out", str(out), "--gold", str(gold)]) == 0
    corpus, gold_set = load_corpus(out), read_gold(gold)
    assert validate_gold(gold_set, corpus) == []
    anchor = gold_set["a1"].anchors[0]
    assert corpus.text(anchor.document_id)[anchor.start : anchor.end] == answer
    assert anchor.start == context.index(answer) - 2  # NFC fused e+acute, CRLF became LF


def test_import_legacy_rewrites_a_0x_gold_file(docs: Path, tmp_path: Path) -> None:
    corpus = load_corpus(docs)
    text = "two-year warranty"
    start = corpus.text("warranty").index(text)
    line = {
        "schema_version": "0.1.0",
        "query_id": "old1",
        "question": "How long?",
        "anchors": [
            {
                "document_id": "warranty",
                "start": start,
                "end": start + len(text),
                "expected_text_hash": hashlib.sha256(text.encode()).hexdigest(),
            }
        ],
    }
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_text(json.dumps(line) + "\n", encoding="utf-8")
    assert main(["import", "legacy", str(old), "-o", str(new)]) == 0
    assert new.read_text(encoding="utf-8").startswith('{"kind": "spanchor.gold"')
    assert validate_gold(read_gold(new), corpus) == []
