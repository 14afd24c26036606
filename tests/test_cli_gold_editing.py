"""Gold editing from the command line: ``anchor add`` by query id alone, ``anchor remove``,
``query remove``; each result read back through the library."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from spanchor_core import load_corpus, read_gold, validate_gold
from spanchor_core.authoring import remove_anchor, remove_query
from spanchor_core.cli import main
from spanchor_core.errors import AnchorError, GoldError

DOCS = Path(__file__).resolve().parents[1] / "examples" / "quickstart" / "docs"
QUESTION = "How long is the warranty?"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    shutil.copytree(DOCS, tmp_path / "docs")
    return tmp_path / "docs"


@pytest.fixture
def gold(docs: Path, tmp_path: Path) -> Path:
    """q1 with two anchors (the second added by id alone), q2 with one."""
    path = tmp_path / "gold.jsonl"
    add = ["anchor", "add", "--gold", str(path)]
    assert main([*add, "q1", QUESTION, str(docs), "two-year warranty"]) == 0
    assert main([*add, "q1", str(docs), "full refund"]) == 0
    assert main([*add, "q2", "What is refunded?", str(docs), "full refund"]) == 0
    return path


def _one_error(capsys: pytest.CaptureFixture[str]) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_anchor_add_by_id_alone_keeps_the_question(gold: Path, docs: Path) -> None:
    queries = read_gold(gold)
    assert queries["q1"].question == QUESTION
    assert len(queries["q1"].anchors) == 2
    assert validate_gold(queries, load_corpus(docs)) == []


def test_anchor_add_of_a_new_id_without_a_question_says_how(
    gold: Path, docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["anchor", "add", "q9", str(docs), "full refund", "--gold", str(gold)]) == 2
    line = _one_error(capsys)
    assert "is new and needs a question" in line
    assert "spanchor anchor add QID QUESTION DOCS TEXT" in line


def test_anchor_add_notes_an_overlap_with_an_anchor_of_the_same_query(
    gold: Path, docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    add = ["anchor", "add", "--gold", str(gold), "q1", str(docs)]
    assert main([*add, "two-year"]) == 0  # inside the first anchor, "two-year warranty"
    first = read_gold(gold)["q1"].anchors[0]
    note = _one_error(capsys)
    assert note.startswith(f"note: it overlaps anchor 1 {first.document_id} [{first.start}, ")
    assert note.endswith("remove one with spanchor anchor remove q1 --index N")
    assert len(read_gold(gold)["q1"].anchors) == 3  # added all the same
    assert main([*add, "from the date of purchase"]) == 0  # no overlap, no note
    assert capsys.readouterr().err == ""


def test_anchor_add_with_a_wrong_number_of_arguments_is_a_usage_error(
    docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["anchor", "add", "q1", str(docs)]) == 2
    assert _one_error(capsys).startswith("spanchor: usage error: ")
    assert main(["anchor", "add", "q1", "a", "b", "c", "d"]) == 2
    assert "got 4 argument(s)" in _one_error(capsys)


def test_anchor_remove_by_index_and_by_text(
    gold: Path, docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = read_gold(gold)["q1"].anchors
    assert main(["anchor", "remove", "q1", "--gold", str(gold), "--index", "2"]) == 0
    assert "1 anchor(s) left" in capsys.readouterr().out
    assert read_gold(gold)["q1"].anchors == before[:1]
    assert main(["anchor", "add", "q1", str(docs), "full refund", "--gold", str(gold)]) == 0
    assert main(["anchor", "remove", "q1", "--gold", str(gold), "--text", "two-year warranty"]) == 0
    assert read_gold(gold)["q1"].anchors == before[1:]
    assert read_gold(gold)["q1"].question == QUESTION
    assert validate_gold(read_gold(gold), load_corpus(docs)) == []


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["q1"], "has 2 anchors; choose one with --index N"),
        (["q1", "--index", "3"], "has no anchor 3 (it has 2)"),
        (["q1", "--text", "not there"], "has no anchor with this text"),
        (["q1", "--index", "1", "--text", "x"], "give --index or --text, not both"),
        (["q2"], "only anchor of query 'q2'; remove the query instead: spanchor query remove q2"),
        (["q11"], "no query 'q11' in the gold set; did you mean 'q1'?"),
    ],
)
def test_anchor_remove_refusals_are_one_line_and_change_nothing(
    gold: Path, argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = gold.read_bytes()
    capsys.readouterr()
    assert main(["anchor", "remove", *argv, "--gold", str(gold)]) == 2
    assert fragment in _one_error(capsys)
    assert gold.read_bytes() == before


def test_query_remove(gold: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["query", "remove", "q1", "--gold", str(gold)]) == 0
    assert "q1: removed with 2 anchor(s)" in capsys.readouterr().out
    assert list(read_gold(gold)) == ["q2"]
    assert main(["query", "remove", "q1", "--gold", str(gold)]) == 2
    assert "no query 'q1'" in _one_error(capsys)


def test_a_missing_gold_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["query", "remove", "q1", "--gold", str(tmp_path / "nope.jsonl")]) == 2
    assert "nope.jsonl" in _one_error(capsys)


def test_the_library_functions_raise_the_project_errors(gold: Path) -> None:
    with pytest.raises(AnchorError):
        remove_anchor(gold, "q1")
    with pytest.raises(GoldError):
        remove_query(gold, "nope")
    removed = remove_anchor(gold, "q1", index=1)
    assert removed.anchor.document_id == "warranty"
    assert len(removed.query.anchors) == 1
    assert remove_query(gold, "q2").query_id == "q2"


def test_validate_warns_about_duplicate_questions_without_failing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from spanchor_core.corpus import Corpus
    from spanchor_core.gold import GoldQuery, GoldSet, anchor_from_text, write_gold

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("The kettle boils water.\n", encoding="utf-8")
    corpus = Corpus.from_texts({"a": "The kettle boils water.\n"})
    anchor = anchor_from_text(corpus, "boils water")
    gold = tmp_path / "gold.jsonl"
    write_gold(GoldSet([GoldQuery("q1", "What boils?", (anchor,)),
                        GoldQuery("q2", "What boils?", (anchor,))]), gold)  # fmt: skip
    assert main(["validate", str(docs), str(gold)]) == 0
    err = capsys.readouterr().err
    assert "2 queries ask the same question (q1, q2)" in err
    assert "[duplicate_question]" in err


def test_anchor_replace_keeps_the_question_and_the_position(
    gold: Path, docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = read_gold(gold)["q1"]
    capsys.readouterr()
    argv = ["anchor", "replace", "q1", str(docs), "two-year", "--gold", str(gold), "--index", "1"]
    assert main(argv) == 0
    assert "q1: anchor warranty [" in capsys.readouterr().out
    after = read_gold(gold)["q1"]
    assert after.question == before.question
    assert after.anchors[1] == before.anchors[1]  # the other anchor untouched, in its place
    corpus = load_corpus(docs)
    new = after.anchors[0]
    assert corpus.text(new.document_id)[new.start : new.end] == "two-year"
    assert validate_gold(read_gold(gold), corpus) == []


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["q1", "two-year"], "has 2 anchors; choose one with --index N"),
        (["q1", "two-year", "--text", "nope"], "has no anchor with this text"),
        (["q1", "full refund", "--index", "1"], "already has the anchor"),
        (["q1", "two-year warranty", "--index", "1"], "is the anchor"),
        (["q2", "no such evidence"], "does not occur in the corpus"),
        (["q3", "two-year"], "no query 'q3'"),
    ],
)
def test_anchor_replace_refusals_are_one_line_and_change_nothing(
    gold: Path, docs: Path, argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = gold.read_bytes()
    capsys.readouterr()
    query, text, *rest = argv
    assert main(["anchor", "replace", query, str(docs), text, "--gold", str(gold), *rest]) == 2
    assert fragment in _one_error(capsys)
    assert gold.read_bytes() == before


def test_validate_lists_malformed_lines_with_every_other_problem(
    gold: Path, docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = gold.read_text(encoding="utf-8").splitlines()
    good_q2 = lines[2]
    lines[1] = '{"query_id": "q1", "question": '  # torn JSON
    lines.append(good_q2.replace('"q2"', '"q3"').replace('"start": ', '"start": 9'))
    lines.append('{"query_id": "q4"}')  # missing fields
    gold.write_text("\n".join(lines) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["validate", str(docs), str(gold)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"{gold}:2: not valid JSON")
    assert err[0].endswith("[malformed_line]")
    assert err[1].startswith(f"{gold}:4: q3: anchor [9")
    assert "[malformed_line]" not in err[1]
    assert err[2].startswith(f"{gold}:5: ")
    assert err[2].endswith("[malformed_line]")
    assert err[-1] == f"3 problem(s) in {gold}"


def test_read_gold_checked_gives_the_good_lines_and_a_problem_per_bad_one(gold: Path) -> None:
    from spanchor_core.gold.validate import read_gold_checked

    assert read_gold_checked(gold) == (read_gold(gold), [])
    lines = gold.read_text(encoding="utf-8").splitlines()
    lines.insert(2, "[1, 2]")
    gold.write_text("\n".join(lines) + "\n", encoding="utf-8")
    kept, problems = read_gold_checked(gold)
    assert [q.query_id for q in kept.entries] == ["q1", "q2"]
    assert [(p.line, p.code) for p in problems] == [(3, "malformed_line")]
    assert str(problems[0]).startswith("line 3: expected a JSON object, found list")
    gold.write_text("not json\n", encoding="utf-8")
    with pytest.raises(GoldError):
        read_gold_checked(gold)
