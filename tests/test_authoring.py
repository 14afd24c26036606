"""Authoring: locate text, add anchors, repair anchors after corpus edits, candidate workflow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanchor_core.authoring import (
    AnchorFate,
    Candidate,
    CandidateStatus,
    CorpusCheck,
    add_anchor,
    check_corpus,
    fix_gold,
    locate_text,
    promote_candidates,
    propose_candidates,
    read_candidates,
    review_candidate,
    write_candidates,
)
from spanchor_core.corpus import Corpus, sha256_text
from spanchor_core.errors import AnchorError, GoldError, InputError
from spanchor_core.gold import Anchor, GoldQuery, GoldSet, read_gold, validate_gold, write_gold
from spanchor_core.spans import DocSpan

# --------------------------------------------------------------------------- locate_text


@pytest.fixture
def small() -> Corpus:
    return Corpus.from_texts({"a": "alpha beta alpha", "b": "x alpha\n beta"})


def test_locate_lists_every_occurrence_with_context(small: Corpus) -> None:
    found = locate_text(small, "alpha", context=3)
    assert [(o.document_id, o.start, o.end) for o in found] == [
        ("a", 0, 5),
        ("a", 11, 16),
        ("b", 2, 7),
    ]
    assert [(o.left, o.right) for o in found] == [("", " be"), ("ta ", ""), ("x ", "\n b")]
    assert {o.sha256 for o in found} == {sha256_text("alpha")}
    assert not any(o.whitespace_insensitive for o in found)
    assert found[2].span == DocSpan("b", 2, 7)


def test_locate_falls_back_to_whitespace_insensitive(small: Corpus) -> None:
    found = locate_text(small, " alpha  beta ")
    assert [(o.document_id, o.start, o.end, o.text) for o in found] == [
        ("a", 0, 10, "alpha beta"),
        ("b", 2, 13, "alpha\n beta"),
    ]
    assert all(o.whitespace_insensitive for o in found)
    assert found[1].sha256 == sha256_text("alpha\n beta")
    assert locate_text(small, "alpha gamma") == []


def test_locate_overlapping_canonical_and_scoped() -> None:
    corpus = Corpus.from_texts({"a": "aaa", "c": "un caf\u00e9 noir"})
    assert [o.span for o in locate_text(corpus, "aa")] == [DocSpan("a", 0, 2), DocSpan("a", 1, 3)]
    assert [o.span for o in locate_text(corpus, "cafe\u0301")] == [DocSpan("c", 3, 7)]
    assert locate_text(corpus, "aa", document_id="c") == []
    with pytest.raises(AnchorError, match="not in the corpus"):
        locate_text(corpus, "aa", document_id="zzz")
    with pytest.raises(AnchorError, match="empty"):
        locate_text(corpus, " \n")


# --------------------------------------------------------------------------- add_anchor


@pytest.fixture
def docs() -> Corpus:
    return Corpus.from_texts(
        {"a": "Alpha is first. Beta is second.", "b": "Beta is second. Gamma."}
    )


def test_add_anchor_creates_file_then_extends_query(tmp_path: Path, docs: Corpus) -> None:
    gold_path = tmp_path / "sub" / "gold.jsonl"
    query = add_anchor(
        gold_path, docs, query_id="q1", question="What is alpha?", text="Alpha is first."
    )
    assert query.anchors == (Anchor("a", 0, 15, sha256_text("Alpha is first.")),)
    header = json.loads(gold_path.read_text(encoding="utf-8").splitlines()[0])
    assert header["kind"] == "spanchor.gold"
    query = add_anchor(gold_path, docs, query_id="q1", question=None, text="Gamma.")
    assert [a.span for a in query.anchors] == [DocSpan("a", 0, 15), DocSpan("b", 16, 22)]
    gold = read_gold(gold_path)
    assert list(gold) == ["q1"]
    assert gold["q1"] == query
    assert validate_gold(gold, docs) == []
    assert sorted(p.name for p in gold_path.parent.iterdir()) == ["gold.jsonl"]  # no temp files


def test_add_anchor_occurrence_is_one_based_across_documents(tmp_path: Path, docs: Corpus) -> None:
    gold_path = tmp_path / "gold.jsonl"
    with pytest.raises(AnchorError, match=r"2 times.*#1 a\[16:31\], #2 b\[0:15\]") as err:
        add_anchor(gold_path, docs, query_id="q", question="Beta?", text="Beta is second.")
    assert "--occurrence" in str(err.value)
    query = add_anchor(
        gold_path, docs, query_id="q", question="Beta?", text="Beta is second.", occurrence=2
    )
    assert query.anchors[0].span == DocSpan("b", 0, 15)
    with pytest.raises(AnchorError, match="from 1 to 2"):
        add_anchor(
            gold_path, docs, query_id="r", question="?", text="Beta is second.", occurrence=3
        )
    with pytest.raises(AnchorError, match="from 1 to 2"):
        add_anchor(
            gold_path, docs, query_id="r", question="?", text="Beta is second.", occurrence=0
        )
    # within a named document the numbering restarts
    query = add_anchor(
        gold_path, docs, query_id="r", question="?", text="Beta is second.", document_id="a"
    )
    assert query.anchors[0].span == DocSpan("a", 16, 31)


def test_add_anchor_errors(tmp_path: Path, docs: Corpus) -> None:
    gold_path = tmp_path / "gold.jsonl"
    add_anchor(gold_path, docs, query_id="q1", question="What is alpha?", text="Alpha is first.")
    before = gold_path.read_bytes()
    with pytest.raises(GoldError, match=r"gold\.jsonl:2: query 'q1' already exists"):
        add_anchor(gold_path, docs, query_id="q1", question="Other?", text="Gamma.")
    with pytest.raises(AnchorError, match="already has the anchor a"):
        add_anchor(
            gold_path, docs, query_id="q1", question=" What is alpha? ", text="Alpha is first."
        )
    with pytest.raises(GoldError, match="needs a question"):
        add_anchor(gold_path, docs, query_id="q2", question=None, text="Gamma.")
    with pytest.raises(AnchorError, match="does not occur"):
        add_anchor(gold_path, docs, query_id="q2", question="?", text="Delta.")
    with pytest.raises(AnchorError, match="not in the corpus"):
        add_anchor(gold_path, docs, query_id="q2", question="?", text="Gamma.", document_id="z")
    assert gold_path.read_bytes() == before  # failures leave the file alone


def test_add_anchor_to_a_legacy_file_rewrites_it_in_our_format(
    tmp_path: Path, docs: Corpus
) -> None:
    gold_path = tmp_path / "gold.jsonl"
    old = {"schema_version": "0.1.0", "query_id": "old", "question": "Old?",
           "anchors": [{"document_id": "b", "start": 16, "end": 22,
                        "expected_text_hash": sha256_text("Gamma.")}]}  # fmt: skip
    gold_path.write_text(json.dumps(old) + "\n", encoding="utf-8")
    add_anchor(gold_path, docs, query_id="new", question="New?", text="Alpha is first.")
    gold = read_gold(gold_path)
    assert gold.file_format == "spanchor.gold/1"
    assert list(gold) == ["old", "new"]
    assert gold["old"].anchors[0].span == DocSpan("b", 16, 22)


# --------------------------------------------------------------------------- check_corpus

V1 = Corpus.from_texts(
    {
        "a": "Intro. The sky is blue today. End.",
        "b": "Other doc. Water is wet. Fin.",
        "c": "Third.",
        "gone": "Shared words.",
    }
)
V2 = Corpus.from_texts(
    {
        "a": "NEW PREFACE. Intro. The sky is blue today. Ende.",  # 13 chars inserted, End. edited
        "c": "Third. Water is wet.",  # b deleted, its sentence moved here
        "d": "Shared words.",
        "e": "Shared words.",
    }
)


def _q(query_id: str, doc: str, start: int, end: int) -> GoldQuery:
    return GoldQuery(query_id, f"{query_id}?", (Anchor.from_span(V1, doc, start, end),))


@pytest.fixture
def gold_v1() -> GoldSet:
    return GoldSet(
        [
            _q("q1", "a", 7, 29),  # "The sky is blue today."
            _q("q2", "b", 11, 24),  # "Water is wet."
            _q("q3", "a", 0, 6),  # "Intro."
            _q("q4", "c", 0, 6),  # "Third." unchanged
            _q("q5", "a", 30, 34),  # "End." edited away
            _q("q6", "gone", 0, 13),  # now in two other documents
            GoldQuery("q7", "q7?", (Anchor("a", 5, 5, sha256_text("")),)),  # empty span
        ]
    )


def _fates(check: CorpusCheck) -> dict[str, tuple[str, DocSpan | None, str]]:
    return {c.query_id: (c.fate.value, c.moved_to, c.searched) for c in check.broken}


def test_check_corpus_finds_where_text_moved(gold_v1: GoldSet) -> None:
    assert validate_gold(gold_v1, V1)[0].code == "empty_span"
    check = check_corpus(gold_v1, V2)
    assert not check.healthy
    assert (check.queries, check.anchors) == (7, 7)
    assert _fates(check) == {
        "q1": ("moved", DocSpan("a", 20, 42), "nearby"),
        "q2": ("moved", DocSpan("c", 7, 20), "corpus"),
        "q3": ("moved", DocSpan("a", 13, 19), "nearby"),
        "q5": ("lost", None, "corpus"),
        "q6": ("ambiguous", None, "corpus"),
        "q7": ("unsearchable", None, "none"),
    }
    by_id = {c.query_id: c for c in check.broken}
    assert by_id["q2"].code == "unknown_document"
    assert by_id["q2"].resolved_by == "unique"
    assert by_id["q1"].code == "hash_mismatch"
    assert by_id["q1"].resolved_by == "nearest in the same document"
    assert by_id["q6"].candidates == (DocSpan("d", 0, 13), DocSpan("e", 0, 13))
    assert [c.query_id for c in check.unresolved] == ["q5", "q6", "q7"]
    assert [c.fate for c in check.moved] == [AnchorFate.MOVED] * 3


def test_fix_gold_rewrites_moved_anchors_only(gold_v1: GoldSet) -> None:
    check = check_corpus(gold_v1, V2)
    fixed = fix_gold(gold_v1, check)
    assert fixed["q1"].anchors == (Anchor("a", 20, 42, gold_v1["q1"].anchors[0].hash),)
    assert fixed["q4"] is gold_v1["q4"]
    remaining = {(p.query_id, p.code) for p in validate_gold(fixed, V2)}
    assert remaining == {
        ("q5", "hash_mismatch"),
        ("q6", "unknown_document"),
        ("q7", "empty_span"),
    }
    with pytest.raises(GoldError, match="different gold set"):
        fix_gold(fixed, check)
    assert fix_gold(fixed, check_corpus(fixed, V2)) == fixed  # nothing more to move


def test_full_scan_and_previous_corpus_agree_with_nearby_search(gold_v1: GoldSet) -> None:
    nearby = _fates(check_corpus(gold_v1, V2))
    full = check_corpus(gold_v1, V2, nearby=0)
    # hand-counted windows: (a,22) 27, (a,6) 43, (a,4) 45, (c,4) 17, (d,4) 10, (e,4) 10,
    # (a,13) 36, (c,13) 8, (d,13) 1, (e,13) 1 -- each (document, length) once
    assert (full.scans, full.windows_hashed) == (10, 198)
    assert {k: v[:2] for k, v in _fates(full).items()} == {k: v[:2] for k, v in nearby.items()}
    assert _fates(full)["q1"][2] == "document"
    previous = check_corpus(gold_v1, V2, previous=V1)
    assert previous.windows_hashed == 0
    assert {k: v[:2] for k, v in _fates(previous).items()} == {k: v[:2] for k, v in nearby.items()}
    assert {c.searched for c in previous.broken if c.query_id != "q7"} == {"previous"}


def test_search_can_be_limited(gold_v1: GoldSet) -> None:
    none = _fates(check_corpus(gold_v1, V2, search="none"))
    assert {v for k, v in none.items() if k != "q7"} == {("lost", None, "none")}
    own = _fates(check_corpus(gold_v1, V2, search="document", nearby=0))
    assert own["q2"] == ("lost", None, "document")  # its document is gone: nothing scanned
    assert own["q1"] == ("moved", DocSpan("a", 20, 42), "document")
    starved = check_corpus(gold_v1, V2, nearby=0, max_windows=30)
    assert starved.windows_hashed <= 30
    assert _fates(starved)["q3"] == ("lost", None, "partial")


def test_healthy_gold_costs_nothing() -> None:
    gold = GoldSet([_q("q4", "c", 0, 6)])
    check = check_corpus(gold, V2)
    assert check.healthy
    assert (check.broken, check.windows_hashed, check.scans) == ((), 0, 0)
    assert fix_gold(gold, check) is gold


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(alphabet="ab c\n\u00e9", min_size=2, max_size=120),
    data=st.data(),
    inserted=st.text(alphabet="abx\u00e9", min_size=1, max_size=40),
)
def test_an_insertion_before_an_anchor_is_repaired(
    text: str, data: st.DataObject, inserted: str
) -> None:
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    where = data.draw(st.sampled_from([0, start]))
    old = Corpus.from_texts({"d": text})
    new = Corpus.from_texts({"d": text[:where] + inserted + text[where:]})
    gold = GoldSet([GoldQuery("q", "?", (Anchor.from_span(old, "d", start, end),))])
    check = check_corpus(gold, new)
    full = check_corpus(gold, new, nearby=0)
    fixed = fix_gold(gold, check)
    assert validate_gold(fixed, new) == []
    moved = fixed["q"].anchors[0].span
    assert new.text("d")[moved.start : moved.end] == text[start:end]
    assert abs(moved.start - start) <= len(inserted)
    assert [c.moved_to for c in full.broken] == [c.moved_to for c in check.broken]


# --------------------------------------------------------------------------- propose


def test_propose_merges_short_sentences_within_a_paragraph() -> None:
    text = (
        "Short one. This sentence is long enough to stand alone.\nTiny.\n\nNew para here. And more."
    )
    corpus = Corpus.from_texts({"d": text})
    found = propose_candidates(corpus, min_chars=20, max_chars=60)
    assert [(c.candidate_id, c.start, c.end) for c in found] == [("d#0", 0, 55), ("d#1", 63, 87)]
    assert found[1].text == "New para here. And more."
    assert found[1].hash == sha256_text("New para here. And more.")
    # "Tiny." is too short alone and would push its predecessor past max_chars: dropped
    assert all(c.status is CandidateStatus.PENDING for c in found)


def test_propose_keeps_a_hard_wrapped_sentence_whole() -> None:
    text = (
        "The level must stay between the MIN mark (0.5 litres)\nand the MAX mark (1.7 litres).\n"
        "- Unplug the kettle before cleaning it.\n- Never immerse the base in water."
    )
    corpus = Corpus.from_texts({"d": text})
    found = propose_candidates(corpus, min_chars=20, max_chars=200)
    assert [c.text for c in found] == [
        "The level must stay between the MIN mark (0.5 litres)\nand the MAX mark (1.7 litres).",
        "- Unplug the kettle before cleaning it.",  # a list item keeps its own line
        "- Never immerse the base in water.",
    ]


def test_propose_cuts_long_pieces_at_spaces() -> None:
    corpus = Corpus.from_texts({"d": "aaaa bbbb cccc dddd eeee"})
    found = propose_candidates(corpus, min_chars=5, max_chars=10)
    assert [c.text for c in found] == ["aaaa bbbb", "cccc dddd"]


def test_propose_removes_near_duplicates_keeping_the_first() -> None:
    corpus = Corpus.from_texts(
        {"a": "Hello, World! This is it.", "b": "HELLO   world!! Something else here."}
    )
    found = propose_candidates(corpus, min_chars=5, max_chars=100)
    assert [(c.candidate_id, c.text) for c in found] == [
        ("a#0", "Hello, World!"),
        ("a#1", "This is it."),
        ("b#1", "Something else here."),  # b#0 is "Hello, World!" again; ids do not shift
    ]


def test_propose_splits_cjk_sentences_without_spaces() -> None:
    corpus = Corpus.from_texts(
        {"z": "\u4eca\u5929\u5f88\u597d\u3002\u660e\u5929\u4e0b\u96e8\u3002"}
    )
    found = propose_candidates(corpus, min_chars=3, max_chars=5)
    assert [c.text for c in found] == [
        "\u4eca\u5929\u5f88\u597d\u3002",
        "\u660e\u5929\u4e0b\u96e8\u3002",
    ]


def test_propose_rejects_bad_bounds(small: Corpus) -> None:
    with pytest.raises(InputError, match="min_chars <= max_chars"):
        propose_candidates(small, min_chars=50, max_chars=10)
    with pytest.raises(InputError):
        propose_candidates(small, min_chars=0)


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(
        st.text(alphabet="ab. !?\n\t\u3002\u00e9\u201d", max_size=300), min_size=1, max_size=3
    ),
    min_chars=st.integers(1, 30),
    extra=st.integers(0, 60),
)
def test_proposed_candidates_are_corpus_slices_within_bounds(
    texts: list[str], min_chars: int, extra: int
) -> None:
    corpus = Corpus.from_texts({f"d{i}": t for i, t in enumerate(texts)})
    max_chars = min_chars + extra
    found = propose_candidates(corpus, min_chars=min_chars, max_chars=max_chars)
    assert len({c.candidate_id for c in found}) == len(found)
    last: dict[str, int] = {}
    for c in found:
        doc = corpus.text(c.document_id)
        assert 0 <= c.start < c.end <= len(doc)  # inside one document
        assert c.text == doc[c.start : c.end]
        assert c.hash == sha256_text(c.text)
        assert min_chars <= len(c.text) <= max_chars
        assert c.text == c.text.strip()
        assert c.start >= last.get(c.document_id, 0)  # in order, never overlapping
        last[c.document_id] = c.end
        assert c.candidate_id.startswith(f"{c.document_id}#")


# --------------------------------------------------------------------------- candidates file

TEXT = "The first fact is here. The second fact is there. A third fact follows."
CORPUS = Corpus.from_texts({"doc": TEXT})


@pytest.fixture
def cand_path(tmp_path: Path) -> Path:
    path = tmp_path / "candidates.jsonl"
    found = propose_candidates(CORPUS, min_chars=10, max_chars=30)
    assert [c.text for c in found] == [
        "The first fact is here.",
        "The second fact is there.",
        "A third fact follows.",
    ]
    write_candidates(
        found, path, corpus_fingerprint=CORPUS.fingerprint, parameters={"min_chars": 10}
    )
    return path


def test_candidates_round_trip(cand_path: Path) -> None:
    lines = cand_path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["kind"] == "spanchor.candidates"
    assert json.loads(lines[0])["schema_version"] == 1
    assert json.loads(lines[1]) == {
        "candidate_id": "doc#0", "document_id": "doc", "start": 0, "end": 23,
        "hash": sha256_text("The first fact is here."), "text": "The first fact is here.",
        "status": "pending",
    }  # fmt: skip
    back = read_candidates(cand_path)
    assert back == propose_candidates(CORPUS, min_chars=10, max_chars=30)
    assert [c.line for c in back] == [2, 3, 4]


def _rewrite_line(path: Path, number: int, text: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[number - 1] = text
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("line", "content", "message"),
    [
        (3, "{not json", r":3: not valid JSON"),
        (3, "[1]", r":3: expected a JSON object"),
        (3, '{"candidate_id": "doc#0"}', r":3: field 'document_id': Field required"),
        (4, None, r":4: candidate id 'doc#0' already used on line 2"),
        (2, None, r":2: candidate 'doc#0': span \[0, 23\) and text do not agree"),
        (1, '{"candidate_id": "a_0", "text": "x", "document_id": "a", "schema_version": "0.2.0"}',
         r":1: a spanchor 0\.x candidates file \(no offsets\); propose candidates again"),
        (1, '{"kind": "spanchor.gold", "schema_version": 1}', r":1: not a candidates file"),
    ],
)  # fmt: skip
def test_read_candidates_errors_name_file_and_line(
    cand_path: Path, line: int, content: str | None, message: str
) -> None:
    if content is None and line == 4:
        first = cand_path.read_text(encoding="utf-8").splitlines()[1]
        content = first
    elif content is None:
        data = json.loads(cand_path.read_text(encoding="utf-8").splitlines()[1])
        data["text"] = "changed"
        content = json.dumps(data)
    _rewrite_line(cand_path, line, content)
    with pytest.raises(GoldError, match=message) as err:
        read_candidates(cand_path)
    assert str(err.value).startswith(f"{cand_path}:{line}:")


def test_read_candidates_missing_or_empty(tmp_path: Path) -> None:
    with pytest.raises(GoldError, match="does not exist"):
        read_candidates(tmp_path / "none.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(GoldError, match="empty candidates file"):
        read_candidates(tmp_path / "empty.jsonl")


def test_write_candidates_refuses_duplicate_ids(tmp_path: Path) -> None:
    c = Candidate("x#0", "x", 0, 1, sha256_text("a"), "a")
    with pytest.raises(GoldError, match="share the id"):
        write_candidates([c, c], tmp_path / "c.jsonl")


# --------------------------------------------------------------------------- review


def test_review_decisions_are_persisted(cand_path: Path) -> None:
    header = cand_path.read_text(encoding="utf-8").splitlines()[0]
    approved = review_candidate(
        cand_path, "doc#0", approve=True, question="Where is the first fact?"
    )
    assert approved.status is CandidateStatus.APPROVED
    rejected = review_candidate(cand_path, "doc#1", reject=True, reason="vague")
    assert (rejected.status, rejected.reason) == (CandidateStatus.REJECTED, "vague")
    back = {c.candidate_id: c for c in read_candidates(cand_path)}
    assert back["doc#0"].status is CandidateStatus.APPROVED
    assert back["doc#0"].question == "Where is the first fact?"
    assert back["doc#1"].status is CandidateStatus.REJECTED
    assert back["doc#1"].reason == "vague"
    assert back["doc#2"].status is CandidateStatus.PENDING
    assert cand_path.read_text(encoding="utf-8").splitlines()[0] == header  # header kept
    # approving later clears the rejection reason; a question given earlier is enough
    review_candidate(cand_path, "doc#1", question="What is there?")
    again = review_candidate(cand_path, "doc#1", approve=True)
    assert (again.status, again.reason, again.question) == (
        CandidateStatus.APPROVED,
        None,
        "What is there?",
    )


def test_review_edits_the_span(cand_path: Path) -> None:
    edited = review_candidate(cand_path, "doc#1", edited_text="second fact")
    assert (edited.start, edited.end, edited.text) == (28, 39, "second fact")
    assert edited.hash == sha256_text("second fact")
    assert edited.edited_from == (24, 49)
    assert edited.status is CandidateStatus.PENDING
    # outside the proposed text: needs the corpus; the nearest occurrence wins
    with pytest.raises(InputError, match="give the documents directory"):
        review_candidate(cand_path, "doc#1", edited_text="fact is here")
    moved = review_candidate(cand_path, "doc#1", edited_text="fact is here", corpus=CORPUS)
    assert (moved.start, moved.end, moved.edited_from) == (10, 22, (24, 49))
    by_span = review_candidate(
        cand_path, "doc#1", start=4, end=9, corpus=CORPUS, approve=True, question="Which?"
    )
    assert (by_span.text, by_span.status) == ("first", CandidateStatus.APPROVED)
    assert read_candidates(cand_path)[1] == by_span


def test_review_errors(cand_path: Path, tmp_path: Path) -> None:
    before = cand_path.read_bytes()
    with pytest.raises(InputError, match="approve and reject"):
        review_candidate(cand_path, "doc#0", approve=True, reject=True, question="?")
    with pytest.raises(InputError, match="nothing to record"):
        review_candidate(cand_path, "doc#0")
    with pytest.raises(
        InputError, match=r"candidates\.jsonl:2: approving 'doc#0' needs a question"
    ):
        review_candidate(cand_path, "doc#0", approve=True)
    with pytest.raises(GoldError, match="no candidate 'doc#9'"):
        review_candidate(cand_path, "doc#9", reject=True)
    with pytest.raises(InputError, match="both start and end"):
        review_candidate(cand_path, "doc#0", start=1)
    with pytest.raises(InputError, match="not the text at"):
        review_candidate(cand_path, "doc#0", start=0, end=3, edited_text="Tha")
    with pytest.raises(AnchorError, match="does not occur"):
        review_candidate(cand_path, "doc#0", edited_text="absent", corpus=CORPUS)
    assert cand_path.read_bytes() == before
    out = tmp_path / "reviewed.jsonl"
    review_candidate(cand_path, "doc#0", reject=True, output=out)
    assert cand_path.read_bytes() == before
    assert read_candidates(out)[0].status is CandidateStatus.REJECTED


# --------------------------------------------------------------------------- promote


def test_promote_adds_approved_candidates_once(cand_path: Path, tmp_path: Path) -> None:
    gold_path = tmp_path / "gold.jsonl"
    write_gold([GoldQuery("q1", "Existing?", (Anchor.from_span(CORPUS, "doc", 0, 3),))], gold_path)
    review_candidate(cand_path, "doc#0", approve=True, question="First?")
    review_candidate(cand_path, "doc#1", reject=True)
    review_candidate(cand_path, "doc#2", approve=True, question="Third?")
    report = promote_candidates(cand_path, CORPUS, gold_path)
    assert [(q.query_id, q.question, q.anchors[0].span) for q in report.added] == [
        ("q2", "First?", DocSpan("doc", 0, 23)),
        ("q3", "Third?", DocSpan("doc", 50, 71)),
    ]
    assert (report.pending, report.rejected, report.stale, report.already) == (0, 1, (), ())
    gold = read_gold(gold_path)
    assert list(gold) == ["q1", "q2", "q3"]
    assert gold["q2"].metadata == {"candidate_id": "doc#0"}
    assert validate_gold(gold, CORPUS) == []
    before = gold_path.read_bytes()
    again = promote_candidates(cand_path, CORPUS, gold_path)
    assert (again.added, again.already) == ((), ("doc#0", "doc#2"))
    assert gold_path.read_bytes() == before


def test_promote_reports_candidates_whose_document_changed(cand_path: Path, tmp_path: Path) -> None:
    review_candidate(cand_path, "doc#0", approve=True, question="First?")
    review_candidate(cand_path, "doc#2", approve=True, question="Third?")
    changed = Corpus.from_texts({"doc": TEXT.replace("first", "FIRST")})
    gold_path = tmp_path / "gold.jsonl"
    report = promote_candidates(cand_path, changed, gold_path, query_id_prefix="c")
    assert [q.query_id for q in report.added] == ["c1"]
    assert [(c.candidate_id, why) for c, why in report.stale] == [
        ("doc#0", "the text of 'doc' at [0, 23) changed")
    ]
    assert report.pending == 1
    gone = promote_candidates(cand_path, Corpus.from_texts({"x": "x"}), tmp_path / "g2.jsonl")
    assert [why for _, why in gone.stale] == ["the corpus has no document 'doc'"] * 2
    assert not (tmp_path / "g2.jsonl").exists()  # nothing added: nothing written


def test_promote_skips_approved_without_question(cand_path: Path, tmp_path: Path) -> None:
    data = [json.loads(line) for line in cand_path.read_text(encoding="utf-8").splitlines()]
    data[1]["status"] = "approved"  # hand-edited: approved without a question
    cand_path.write_text("\n".join(json.dumps(d) for d in data) + "\n", encoding="utf-8")
    report = promote_candidates(cand_path, CORPUS, tmp_path / "gold.jsonl")
    assert (report.added, report.missing_question) == ((), ("doc#0",))
