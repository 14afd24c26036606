"""Reviewing at scale: decisions appended as revisions (read back in place), and listing or
searching candidates (``gold list``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spanchor_core.authoring import (
    CandidateStatus,
    propose_candidates,
    read_candidates,
    review_candidate,
    select_candidates,
    write_candidates,
)
from spanchor_core.cli import main
from spanchor_core.corpus import Corpus
from spanchor_core.errors import GoldError

TEXTS = {
    "kettle": "The kettle holds at most 1.7 litres of water. Never fill it past the mark.\n",
    "oven": "The oven heats to 250 degrees. Its door stays cool to the touch at all times.\n",
}


@pytest.fixture
def candidates(tmp_path: Path) -> Path:
    corpus = Corpus.from_texts(TEXTS)
    path = tmp_path / "candidates.jsonl"
    write_candidates(propose_candidates(corpus, min_chars=10), path)
    return path


def test_a_decision_is_appended_and_read_back_in_place(candidates: Path) -> None:
    before = candidates.read_bytes()
    ids = [c.candidate_id for c in read_candidates(candidates)]
    review_candidate(candidates, ids[1], question="How hot?", approve=True)
    review_candidate(candidates, ids[1], reason="checked")
    after = candidates.read_bytes()
    assert after.startswith(before)  # nothing rewritten
    tail = [json.loads(line) for line in after[len(before) :].splitlines()]
    assert [line["revision"] for line in tail] == [1, 2]
    again = read_candidates(candidates)
    assert [c.candidate_id for c in again] == ids  # same order, one entry per candidate
    assert again[1].status is CandidateStatus.APPROVED
    assert again[1].question == "How hot?"
    assert again[1].reason == "checked"


def test_output_writes_the_folded_file(candidates: Path, tmp_path: Path) -> None:
    first = read_candidates(candidates)[0].candidate_id
    review_candidate(candidates, first, question="What?", approve=True)
    folded = tmp_path / "folded.jsonl"
    review_candidate(candidates, first, reason="ok", output=folded)
    assert "revision" not in folded.read_text(encoding="utf-8")
    assert read_candidates(folded)[0].reason == "ok"
    assert read_candidates(folded)[1:] == read_candidates(candidates)[1:]


def test_a_revision_of_an_unknown_candidate_is_refused(candidates: Path) -> None:
    line = json.loads(candidates.read_text(encoding="utf-8").splitlines()[1])
    line.update(candidate_id="nowhere#1", revision=1)
    with candidates.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")
    with pytest.raises(GoldError, match="revision 1 of candidate 'nowhere#1'"):
        read_candidates(candidates)


def test_a_repeated_id_without_revision_is_still_refused(candidates: Path) -> None:
    second = candidates.read_text(encoding="utf-8").splitlines()[1]
    with candidates.open("a", encoding="utf-8") as handle:
        handle.write(second + "\n")
    with pytest.raises(GoldError, match="already used on line 2"):
        read_candidates(candidates)


def test_select_candidates_filters_by_status_text_question_and_document(
    candidates: Path,
) -> None:
    all_ = read_candidates(candidates)
    oven = [c for c in all_ if c.document_id == "oven"]
    review_candidate(candidates, oven[0].candidate_id, question="How HOT does it get?")
    review_candidate(candidates, all_[0].candidate_id, reject=True)
    found = read_candidates(candidates)
    assert select_candidates(found, text="1.7   LITRES") == [found[0]]
    assert [c.candidate_id for c in select_candidates(found, question="hot does")] == [
        oven[0].candidate_id
    ]
    assert oven[0].candidate_id not in {
        c.candidate_id for c in select_candidates(found, question="")
    }
    assert select_candidates(found, status=CandidateStatus.REJECTED) == [found[0]]
    assert {c.document_id for c in select_candidates(found, document_id="oven")} == {"oven"}
    assert select_candidates(found, text="kettle", document_id="oven") == []


def test_gold_list_prints_matches_and_the_count(
    candidates: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["gold", "list", str(candidates), "--search", "door"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0].startswith("oven#")
    assert "[pending]" in out
    assert "door stays cool" in out
    assert err.strip() == "1 candidate(s)"
    assert main(["gold", "list", str(candidates), "--limit", "1", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 1
    assert rows[0]["status"] == "pending"
    assert main(["gold", "list", str(candidates), "--status", "done"]) == 2


def test_a_misspelt_status_is_answered_with_the_closest(
    candidates: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["gold", "list", str(candidates), "--status", "aproved"]) == 2
    err = capsys.readouterr().err
    assert "--status must be one of pending, approved, rejected (did you mean 'approved'?)" in err
