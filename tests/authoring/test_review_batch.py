"""Review decisions in a batch (``gold review --decisions FILE``): JSONL or CSV, all checked
before any is applied, one error line per bad decision, one append for the whole batch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spanchor_core.authoring import (
    CandidateStatus,
    propose_candidates,
    read_candidates,
    review_candidate,
    write_candidates,
)
from spanchor_core.authoring.decisions_file import read_decisions
from spanchor_core.authoring.review import ReviewDecision, review_candidates
from spanchor_core.cli import main
from spanchor_core.corpus import Corpus
from spanchor_core.errors import GoldError

TEXTS = {
    "kettle": "The kettle holds at most 1.7 litres of water. Never fill it past the mark.\n",
    "oven": "The oven heats to 250 degrees. Its door stays cool to the touch at all times.\n",
}
CORPUS = Corpus.from_texts(TEXTS)


@pytest.fixture
def candidates(tmp_path: Path) -> Path:
    path = tmp_path / "candidates.jsonl"
    write_candidates(propose_candidates(CORPUS, min_chars=10), path)
    return path


def _ids(path: Path) -> list[str]:
    return [candidate.candidate_id for candidate in read_candidates(path)]


def _jsonl(path: Path, *rows: object) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_jsonl_batch_is_one_append_of_each_decided_candidate(
    candidates: Path, tmp_path: Path
) -> None:
    kettle, water, oven, door = _ids(candidates)
    decisions = _jsonl(
        tmp_path / "decisions.jsonl",
        {"candidate_id": kettle, "decision": "edit", "question": "How much water?"},
        {"candidate_id": oven, "decision": "reject", "reason": "no question in it"},
        {"candidate_id": kettle, "decision": "approve"},  # uses the question given above
        {"candidate_id": door, "decision": "approve", "question": "Does the door get hot?"},
    )
    before = candidates.read_bytes()
    assert main(["gold", "review", str(candidates), "--decisions", str(decisions)]) == 0
    after = candidates.read_bytes()
    assert after.startswith(before)  # nothing rewritten
    appended = [json.loads(line) for line in after[len(before) :].splitlines()]
    # one line per candidate (kettle's two decisions folded into its last state)
    assert [(row["candidate_id"], row["revision"]) for row in appended] == [
        (kettle, 1),
        (oven, 2),
        (door, 3),
    ]
    read = {c.candidate_id: c for c in read_candidates(candidates)}
    assert read[kettle].status is CandidateStatus.APPROVED
    assert read[kettle].question == "How much water?"
    assert read[oven].status is CandidateStatus.REJECTED
    assert read[oven].reason == "no question in it"
    assert read[door].question == "Does the door get hot?"
    assert read[water].status is CandidateStatus.PENDING
    # a single decision afterwards continues the revision numbers
    review_candidate(candidates, water, reject=True)
    assert json.loads(candidates.read_text(encoding="utf-8").splitlines()[-1])["revision"] == 4


def test_a_csv_batch_with_empty_cells_quoted_commas_and_a_moved_span(
    candidates: Path, tmp_path: Path
) -> None:
    kettle, _, oven, _ = _ids(candidates)
    decisions = tmp_path / "decisions.csv"
    decisions.write_text(
        "candidate_id,decision,question,reason,start,end\n"
        f'{kettle},approve,"How much water, at most?",,,\n'
        "\n"
        f"{oven},edit,,,4,8\n",
        encoding="utf-8",
    )
    read, problems = read_decisions(decisions)
    assert problems == []
    assert read == [
        ReviewDecision(kettle, "approve", "How much water, at most?", line=2),
        ReviewDecision(oven, "edit", start=4, end=8, line=4),
    ]
    done = review_candidates(candidates, read)
    assert done.applied
    assert done.decisions == 2
    moved = {c.candidate_id: c for c in read_candidates(candidates)}[oven]
    assert (moved.start, moved.end, moved.text) == (4, 8, "oven")
    assert moved.edited_from == (0, 30)


def test_every_bad_line_is_named_once_and_nothing_is_applied(
    candidates: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kettle, water, oven, _ = _ids(candidates)
    decisions = _jsonl(
        tmp_path / "decisions.jsonl",
        {"candidate_id": kettle, "decision": "approve", "question": "How much water?"},  # good
        {"candidate_id": water, "decision": "approved"},
        {"candidate_id": "nowhere#9", "decision": "reject"},
        {"candidate_id": oven, "decison": "reject"},
        {"candidate_id": oven, "decision": "approve"},  # no question, now or before
        {"candidate_id": oven, "decision": "edit"},  # nothing to record
        {"candidate_id": oven, "decision": "edit", "start": -1, "end": 3},
        [oven, "reject"],
    )
    with decisions.open("a", encoding="utf-8") as handle:
        handle.write("{not json\n")
    before = candidates.read_bytes()
    assert main(["gold", "review", str(candidates), "--decisions", str(decisions)]) == 2
    assert candidates.read_bytes() == before
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f"nothing applied: 8 bad decision line(s) in {decisions}"
    errors = err[:-1]
    assert [line.split(": ")[2].rsplit(":", 1)[-1] for line in errors] == [
        str(n) for n in range(2, 10)
    ]
    assert all(line.startswith(f"spanchor: error: {decisions}:") for line in errors)
    assert all("; " in line for line in errors)  # what is wrong; what to do
    text = "\n".join(errors)
    assert "decision 'approved' is not one of approve, reject, edit; did you mean 'approve'?" in (
        text
    )
    assert "no candidate 'nowhere#9'" in text
    assert "unknown field 'decison'; did you mean 'decision'?" in text
    assert f"approving {oven!r} needs a question; add the question" in text
    assert "nothing to record; give a question" in text
    assert "field 'start' must be a character offset" in text
    assert "expected a JSON object, found list" in text
    assert "not valid JSON" in text


def test_library_batch_reports_problems_and_leaves_the_file(candidates: Path) -> None:
    kettle = _ids(candidates)[0]
    before = candidates.read_bytes()
    done = review_candidates(
        candidates,
        [ReviewDecision(kettle, "approve", line=3), ReviewDecision("x#1", "reject", line=5)],
        source="decisions.jsonl",
    )
    assert not done.applied
    assert done.candidates == ()
    assert [str(problem).split(";")[0] for problem in done.problems] == [
        f"decisions.jsonl:3: approving {kettle!r} needs a question",
        f"decisions.jsonl:5: no candidate 'x#1' in {candidates}",
    ]
    assert candidates.read_bytes() == before


def test_output_writes_the_folded_file_and_leaves_the_source(
    candidates: Path, tmp_path: Path
) -> None:
    kettle = _ids(candidates)[0]
    decisions = _jsonl(tmp_path / "d.jsonl", {"candidate_id": kettle, "decision": "reject"})
    folded = tmp_path / "reviewed.jsonl"
    before = candidates.read_bytes()
    args = ["gold", "review", str(candidates), "--decisions", str(decisions), "-o", str(folded)]
    assert main(args) == 0
    assert candidates.read_bytes() == before
    assert "revision" not in folded.read_text(encoding="utf-8")
    assert read_candidates(folded)[0].status is CandidateStatus.REJECTED


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("d.txt", "x", "cannot tell whether the decisions file is JSONL or CSV; name it .jsonl"),
        ("d.csv", "candidate_id,decison\nk#0,reject\n", "d.csv:1: unknown column 'decison'"),
        ("d.csv", "candidate_id,question\nk#0,Why?\n", "d.csv:1: no decision column"),
        ("d.csv", "candidate_id,decision,decision\n", "column 'decision' appears twice"),
        ("d.csv", 'candidate_id,decision\n"k#0,reject\n', "d.csv:2: not valid CSV"),
        ("d.jsonl", "\n\n", "no decisions in the file"),
    ],
)
def test_files_that_hold_no_decisions_to_check_are_refused_whole(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(GoldError, match="^.*" + message.replace("(", r"\(").replace(".", r"\.")):
        read_decisions(path)


def test_a_csv_row_with_too_many_cells_is_one_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("candidate_id,decision\nk#0,reject,extra\nk#1,reject\n", encoding="utf-8")
    read, problems = read_decisions(path)
    assert [d.candidate_id for d in read] == ["k#1"]
    assert [str(p) for p in problems] == [
        f"{path}:2: 3 cells, but the header names 2 columns; quote cells that hold a comma"
    ]


def test_decisions_and_one_decision_options_do_not_mix(
    candidates: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    decisions = _jsonl(tmp_path / "d.jsonl", {"candidate_id": "kettle#0", "decision": "reject"})
    before = candidates.read_bytes()
    mixed = ["gold", "review", str(candidates), "--decisions", str(decisions), "--approve"]
    assert main(mixed) == 2
    assert "--decisions replaces --candidate" in capsys.readouterr().err
    assert main(["gold", "review", str(candidates)]) == 2
    err = capsys.readouterr().err
    assert "--candidate ID" in err
    assert "--decisions FILE" in err
    assert candidates.read_bytes() == before


def test_review_help_explains_decisions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gold", "review", "-h"]) == 0
    text = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "--decisions FILE" in text
    assert "all or none" in text
    assert ".csv" in text


def test_a_gold_list_json_line_with_a_decision_added_is_a_decision(
    candidates: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["gold", "list", str(candidates), "--json", "--search", "door"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(listed) == 1
    door = listed[0]
    stale = {**door, "text": door["text"].upper(), "decision": "reject"}
    decisions = _jsonl(tmp_path / "todo.jsonl", {**door, "decision": "reject"}, stale)
    before = candidates.read_bytes()
    assert main(["gold", "review", str(candidates), "--decisions", str(decisions)]) == 2
    err = capsys.readouterr().err
    assert f"todo.jsonl:2: the text of {door['candidate_id']!r} is not the listed text" in err
    assert "todo.jsonl:1" not in err
    assert candidates.read_bytes() == before
    _jsonl(decisions, {**door, "decision": "approve", "question": "Does the door get hot?"})
    assert main(["gold", "review", str(candidates), "--decisions", str(decisions)]) == 0
    read = {c.candidate_id: c for c in read_candidates(candidates)}[door["candidate_id"]]
    assert read.status is CandidateStatus.APPROVED
    assert (read.start, read.end) == (door["start"], door["end"])  # the listed span: no edit
