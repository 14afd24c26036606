"""Candidates files: values UTF-8 strict JSON cannot hold are input errors with path:line.

Regression cases of issue 12: NaN or 1e400 in a candidates header and a lone "\\ud800" in a
candidate's text were internal errors (ValueError, UnicodeEncodeError) in `gold review`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from spanchor_core.authoring import (
    Candidate,
    add_anchor,
    propose_candidates,
    read_candidates,
    review_candidate,
    write_candidates,
)
from spanchor_core.cli import main
from spanchor_core.corpus import Corpus, sha256_text
from spanchor_core.errors import GoldError, InputError

CORPUS = Corpus.from_texts({"doc": "The first fact is here. The second fact is there."})


@pytest.fixture
def path(tmp_path: Path) -> Path:
    target = tmp_path / "candidates.jsonl"
    found = propose_candidates(CORPUS, min_chars=10, max_chars=30)
    write_candidates(found, target, parameters={"min_chars": 10})
    return target


def _replace_line(path: Path, number: int, old: str, new: str) -> bytes:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert old in lines[number - 1]
    lines[number - 1] = lines[number - 1].replace(old, new, 1)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path.read_bytes()


BAD_LINES = [
    (1, '"min_chars": 10', '"min_chars": NaN', "NaN is not valid JSON"),
    (1, '"min_chars": 10', '"min_chars": Infinity', "Infinity is not valid JSON"),
    (1, '"min_chars": 10', '"min_chars": 1e400', "the number 1e400 is too large for a float"),
    (1, '"min_chars": 10', '"\\ud800": 10', "a key holds a lone surrogate U+D800"),
    (2, '"text": "', '"text": "\\ud800', "field 'text': holds a lone surrogate U+D800"),
    (2, '"status": "pending"', '"status": "pending", "question": "\\udfff"',
     "field 'question': holds a lone surrogate U+DFFF"),
    (2, '"status": "pending"', '"status": "pending", "status": "approved"',
     "the key 'status' appears twice"),
]  # fmt: skip


@pytest.mark.parametrize(("line", "old", "new", "message"), BAD_LINES)
def test_unstorable_values_are_gold_errors_naming_path_and_line(
    path: Path, line: int, old: str, new: str, message: str
) -> None:
    _replace_line(path, line, old, new)
    with pytest.raises(GoldError, match=re.escape(message)) as err:
        read_candidates(path)
    assert str(err.value).startswith(f"{path}:{line}: ")


@pytest.mark.parametrize(("line", "old", "new", "message"), BAD_LINES)
def test_gold_review_exits_2_with_one_line_and_leaves_the_file(
    path: Path, line: int, old: str, new: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _replace_line(path, line, old, new)
    capsys.readouterr()
    assert main(["gold", "review", str(path), "-c", "doc#0", "--reject"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:{line}: " in err
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err
    assert path.read_bytes() == before


def test_write_candidates_refuses_what_it_could_not_read_back(tmp_path: Path) -> None:
    target = tmp_path / "c.jsonl"
    good = Candidate("x#0", "x", 0, 1, sha256_text("a"), "a")
    with pytest.raises(GoldError, match=r"c\.jsonl: cannot write the header: .*not a finite"):
        write_candidates([good], target, parameters={"ratio": float("nan")})
    with pytest.raises(GoldError, match=r"cannot write the header: .*not JSON serializable"):
        write_candidates([good], target, parameters={"x": object()})
    bad = Candidate("x#1", "x", 0, 1, "0" * 64, "\ud800")
    with pytest.raises(GoldError, match=r"candidate 'x#1': field 'text': holds a lone surrogate"):
        write_candidates([good, bad], target)
    assert not target.exists()


def test_review_and_add_anchor_refuse_lone_surrogates_in_arguments(
    path: Path, tmp_path: Path
) -> None:
    before = path.read_bytes()
    for field in ("question", "reason", "edited_text"):
        with pytest.raises(InputError, match=r"lone surrogate U\+D800"):
            review_candidate(path, "doc#0", **{field: "why \ud800"})  # type: ignore[arg-type]
    assert path.read_bytes() == before
    gold = tmp_path / "gold.jsonl"
    with pytest.raises(GoldError, match="question holds a lone surrogate"):
        add_anchor(gold, CORPUS, query_id="q1", question="\ud800?", text="first fact")
    assert not gold.exists()


def test_round_trip_keeps_non_ascii_text(tmp_path: Path) -> None:
    target = tmp_path / "c.jsonl"
    text = "Café — 東京。"
    found = [Candidate("d#0", "d", 0, len(text), sha256_text(text), text, question="¿Qué?")]
    write_candidates(found, target, parameters={"ratio": 0.5, "nested": [{"a": 1}]})
    assert read_candidates(target) == found
    assert json.loads(target.read_text(encoding="utf-8").splitlines()[0])["parameters"] == {
        "ratio": 0.5,
        "nested": [{"a": 1}],
    }
