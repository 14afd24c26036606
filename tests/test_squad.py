"""SQuAD-format import: raw answer offsets become canonical anchors, problems are reported."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from spanchor_core.corpus import load_corpus, sha256_text
from spanchor_core.errors import InputError
from spanchor_core.gold import GoldSet, read_gold, validate_gold, write_gold
from spanchor_core.importers import (
    SQUAD_PROBLEM_CODES,
    import_legacy_gold,
    import_squad,
    title_slug,
    write_squad_documents,
)

XQUAD = Path(__file__).resolve().parents[2] / "shared" / "data" / "xquad"

# raw: "e" + combining acute (not NFC) and a CRLF; canonical is 3 characters shorter:
#   raw        "Cafe\u0301 au lait.\r\nThe cafe\u0301 opens at 7."   (37 code points)
#   canonical  "Café au lait.\nThe café opens at 7."                  (34 code points)
CONTEXT = "Cafe\u0301 au lait.\r\nThe cafe\u0301 opens at 7."
CANONICAL = "Caf\u00e9 au lait.\nThe caf\u00e9 opens at 7."


def _qa(qid: str, answers: list[tuple[str, int]], **extra: Any) -> dict[str, Any]:
    return {
        "id": qid,
        "question": f"question {qid}?",
        "answers": [{"text": t, "answer_start": s} for t, s in answers],
        **extra,
    }


def _squad() -> dict[str, Any]:
    return {
        "version": "2.0",
        "data": [
            {
                "title": "Caf\u00e9 Society!",
                "paragraphs": [
                    {
                        "context": CONTEXT,
                        "qas": [
                            _qa("q1", [("opens at 7", 26)]),
                            # the same answer twice (SQuAD dev repeats them) and a longer one
                            _qa(
                                "q2",
                                [("cafe\u0301", 20), ("cafe\u0301", 20), ("The cafe\u0301", 16)],
                            ),
                            _qa("q3", [("tea", 0)]),  # the context does not say "tea" there
                            _qa("q4", [("lait", 100)]),  # out of range
                            _qa("q5", [], is_impossible=True),
                            _qa("q6", [("Cafe", 0)]),  # ends between e and its accent: widened
                        ],
                    },
                    {"context": "Second paragraph.", "qas": []},
                ],
            },
            {
                "title": "Caf\u00e9 Society",  # same slug as the first article
                "paragraphs": [{"context": "Other text.", "qas": [_qa("q1", [("Other", 0)])]}],
            },
        ],
    }


@pytest.fixture
def squad_file(tmp_path: Path) -> Path:
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(_squad(), ensure_ascii=False), encoding="utf-8")
    return path


def test_canonical_fixture_is_what_canonicalisation_gives() -> None:
    assert len(CONTEXT) == 37
    assert len(CANONICAL) == 34


def test_import_translates_raw_offsets_to_canonical(squad_file: Path) -> None:
    result = import_squad(squad_file)
    assert list(result.corpus) == [
        "caf\u00e9-society-2/0",
        "caf\u00e9-society/0",
        "caf\u00e9-society/1",
    ]
    assert result.titles == {
        "caf\u00e9-society": "Caf\u00e9 Society!",
        "caf\u00e9-society-2": "Caf\u00e9 Society",
    }
    assert result.corpus.text("caf\u00e9-society/0") == CANONICAL
    spans = {q.query_id: [(a.start, a.end) for a in q.anchors] for q in result.gold.entries}
    # hand-computed on CANONICAL: "opens at 7" = [23, 33), "café" = [18, 22), "The café" = [14, 22)
    assert spans == {"q1": [(23, 33)], "q2": [(18, 22), (14, 22)], "q6": [(0, 4)]}
    anchor = result.gold["q2"].anchors[0]
    assert anchor.hash == sha256_text("caf\u00e9")
    assert result.gold["q6"].anchors[0].hash == sha256_text("Caf\u00e9")


def test_import_counts_and_problems(squad_file: Path) -> None:
    result = import_squad(squad_file)
    assert [(p.question_id, p.code, p.answer_index) for p in result.problems] == [
        ("q3", "answer_mismatch", 0),
        ("q4", "answer_out_of_range", 0),
        ("q5", "unanswerable", None),
        ("q1", "duplicate_question_id", None),
    ]
    assert {p.code for p in result.problems} <= set(SQUAD_PROBLEM_CODES)
    assert (result.paragraphs, result.questions, result.answers) == (3, 7, 8)
    assert (result.duplicate_answers, result.widened) == (1, 1)
    assert [p.answers for p in result.problems] == [1, 1, 0, 1]
    lost = sum(p.answers for p in result.problems)
    assert result.anchors == result.answers - result.duplicate_answers - lost == 4
    # q1 and both q2 anchors sit after the accent / the CRLF; q6 keeps [0, 4) but widens
    assert result.shifted == 3
    assert "q3" in str(result.problems[0])
    assert "'Caf'" in result.problems[0].message


def test_written_documents_load_back_and_validate(squad_file: Path, tmp_path: Path) -> None:
    result = import_squad(squad_file)
    out = tmp_path / "docs"
    paths = write_squad_documents(result, out)
    assert sorted(p.relative_to(out).as_posix() for p in paths) == [
        "caf\u00e9-society-2/0.txt",
        "caf\u00e9-society/0.txt",
        "caf\u00e9-society/1.txt",
    ]
    corpus = load_corpus(out)
    assert corpus.fingerprint == result.corpus.fingerprint
    assert validate_gold(result.gold, corpus) == []
    # written again: same content is fine, other content is refused unless overwrite
    write_squad_documents(result, out)
    (out / "caf\u00e9-society" / "1.txt").write_text("changed", encoding="utf-8")
    with pytest.raises(InputError, match="exists with other content"):
        write_squad_documents(result, out)
    write_squad_documents(result, out, overwrite=True)
    assert load_corpus(out).fingerprint == result.corpus.fingerprint


def test_leading_byte_order_mark_is_dropped_like_load_corpus_does(tmp_path: Path) -> None:
    data = {"data": [{"title": "t", "paragraphs": [
        {"context": "\ufeffHello world", "qas": [_qa("a", [("world", 7)])]}]}]}  # fmt: skip
    path = tmp_path / "bom.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    result = import_squad(path)
    assert result.corpus.text("t/0") == "Hello world"
    assert [(a.start, a.end) for a in result.gold["a"].anchors] == [(6, 11)]
    write_squad_documents(result, tmp_path / "docs")
    assert validate_gold(result.gold, load_corpus(tmp_path / "docs")) == []


@pytest.mark.parametrize(
    ("title", "slug"),
    [("Super_Bowl_50", "super_bowl_50"), ("../etc/passwd", "etc-passwd"), ("", "untitled"),
     ("  ", "untitled"), (".hidden", "hidden"), ("A  b/c", "a-b-c")],
)  # fmt: skip
def test_title_slug(title: str, slug: str) -> None:
    assert title_slug(title) == slug


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"version": "1.1"}', "top level.data: missing"),
        ('{"data": [{"title": "t"}]}', "data[0].paragraphs: missing"),
        (
            '{"data": [{"title": "t", "paragraphs": [{"context": "abc", "qas": [{"id": "x", '
            '"question": "?", "answers": [{"text": "a", "answer_start": "0"}]}]}]}]}',
            "data[0].paragraphs[0].qas[0].answers[0].answer_start: expected int, got str",
        ),
        ('{"data": [\n  {"title": }\n]}', ":2: not valid JSON"),
    ],
)
def test_malformed_files_name_the_bad_field(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")) as err:
        import_squad(path)
    assert str(err.value).startswith(str(path))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        import_squad(tmp_path / "nope.json")


def test_import_legacy_gold_round_trips(tmp_path: Path) -> None:
    old = tmp_path / "old.jsonl"
    digest = sha256_text("alpha")
    old.write_text(
        json.dumps({"schema_version": "0.1.0", "query_id": "q1", "question": "A?",
                    "anchors": [{"document_id": "a", "start": 0, "end": 5,
                                 "expected_text_hash": digest}], "candidate_id": "a_0"})
        + "\n",
        encoding="utf-8",
    )  # fmt: skip
    gold = import_legacy_gold(old)
    assert gold.path is None
    assert gold["q1"].metadata == {"candidate_id": "a_0"}
    new = tmp_path / "new.jsonl"
    write_gold(gold, new)
    back = read_gold(new)
    assert back.file_format == "spanchor.gold/1"
    assert back.entries == gold.entries
    assert back.sha256 == read_gold(old).sha256
    with pytest.raises(InputError, match=r"not a spanchor 0\.x gold set"):
        import_legacy_gold(new)


@pytest.mark.skipif(
    not (XQUAD / "xquad.hi.json").exists(),
    reason=f"real data {XQUAD / 'xquad.hi.json'} is absent (it lives beside the repository)",
)
def test_real_xquad_hindi_imports_and_validates(tmp_path: Path) -> None:
    path = XQUAD / "xquad.hi.json"
    result = import_squad(path)
    raw = json.loads(path.read_text(encoding="utf-8"))
    answers = sum(
        len(qa["answers"]) for a in raw["data"] for p in a["paragraphs"] for qa in p["qas"]
    )
    assert result.answers == answers == 1190
    lost = sum(p.answers for p in result.problems)
    assert result.anchors == answers - result.duplicate_answers - lost
    assert result.shifted > 0  # 101 paragraphs are not NFC: raw offsets would be wrong
    write_squad_documents(result, tmp_path / "docs")
    corpus = load_corpus(tmp_path / "docs")
    assert len(corpus) == result.paragraphs == 240
    assert validate_gold(result.gold, corpus) == []
    assert isinstance(result.gold, GoldSet)
    assert len(result.gold) == 1190


@pytest.mark.parametrize(
    ("field", "where"),
    [
        ("context", "data[0].paragraphs[0].context"),
        ("question", "data[0].paragraphs[0].qas[0].question"),
        ("title", "data[0].title"),
    ],
)
def test_lone_surrogates_are_input_errors_naming_the_field(
    tmp_path: Path, field: str, where: str
) -> None:
    # "\ud800" cannot be written as UTF-8: a context was an internal UnicodeEncodeError, and
    # a question or title made a gold set that write_gold could not save
    article: dict[str, Any] = {
        "title": "t",
        "paragraphs": [
            {
                "context": "abc",
                "qas": [
                    {"id": "x", "question": "?", "answers": [{"text": "a", "answer_start": 0}]}
                ],
            }
        ],
    }
    paragraph = article["paragraphs"][0]
    {"context": paragraph, "question": paragraph["qas"][0], "title": article}[field][field] = (
        "a\ud800"
    )
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"data": [article]}), encoding="utf-8")
    with pytest.raises(InputError, match=rf"field '{re.escape(where)}': holds a lone surrogate"):
        import_squad(path)


def test_non_standard_json_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"data": [], "version": NaN}', encoding="utf-8")
    with pytest.raises(InputError, match="NaN is not valid JSON"):
        import_squad(path)
