"""Gold anchors and gold sets: reading (ours and spanchor 0.x), writing, hashing, validation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanchor_core.corpus import Corpus, load_corpus, sha256_text
from spanchor_core.errors import AnchorError, GoldError
from spanchor_core.gold import (
    PROBLEM_CODES,
    Anchor,
    GoldProblem,
    GoldQuery,
    GoldSet,
    anchor_from_text,
    gold_json_schemas,
    read_gold,
    validate_gold,
    write_gold,
)
from spanchor_core.spans import DocSpan

TEXT_A = "Anchors point at source text.\nThey carry a hash."
TEXT_B = "caf\u00e9 and caf\u00e9 again"
CAFE_HASH = sha256_text("caf\u00e9")


@pytest.fixture
def corpus() -> Corpus:
    return Corpus.from_texts({"a": TEXT_A, "b": TEXT_B})


def _h(text: str) -> str:
    return sha256_text(text)


def _write_lines(path: Path, lines: list[Any]) -> Path:
    path.write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n",
        encoding="utf-8",
    )
    return path


HEADER = {"kind": "spanchor.gold", "schema_version": 1}


def _line(query_id: str = "q1", **changes: Any) -> dict[str, Any]:
    line: dict[str, Any] = {
        "query_id": query_id,
        "question": "Where do anchors point?",
        "anchors": [{"document_id": "a", "start": 0, "end": 7, "hash": _h("Anchors")}],
    }
    line.update(changes)
    return line


# ---------------------------------------------------------------- values


def test_anchor_from_span_hashes_canonical_text(corpus: Corpus) -> None:
    anchor = Anchor.from_span(corpus, "b", 0, 4)
    assert anchor == Anchor("b", 0, 4, _h("caf\u00e9"))
    assert anchor.span == DocSpan("b", 0, 4)
    with pytest.raises(GoldError, match=r"span \[3, 3\) is not a non-empty span of 'b'"):
        Anchor.from_span(corpus, "b", 3, 3)
    with pytest.raises(GoldError, match="length 19"):
        Anchor.from_span(corpus, "b", 0, 20)
    with pytest.raises(GoldError, match="document 'zz' is not in the corpus"):
        Anchor.from_span(corpus, "zz", 0, 1)


def test_gold_query_accepts_lists_and_ignores_line_in_equality() -> None:
    anchor = Anchor("a", 0, 1, "0" * 64)
    query = GoldQuery("q", "?", [anchor], ["t"], line=3)  # type: ignore[arg-type]
    assert query.anchors == (anchor,)
    assert query.tags == ("t",)
    assert query == GoldQuery("q", "?", (anchor,), ("t",), line=9)


def test_gold_set_mapping_keeps_first_duplicate_and_all_entries() -> None:
    first = GoldQuery("q1", "first", ())
    second = GoldQuery("q1", "second", ())
    other = GoldQuery("q2", "other", ())
    gold = GoldSet([first, other, second])
    assert list(gold) == ["q1", "q2"]
    assert gold["q1"] is first
    assert gold.entries == (first, other, second)
    assert len(gold) == 2


def test_by_question_matches_canonical_stripped_text() -> None:
    gold = GoldSet([GoldQuery("q1", "Qu'est-ce qu'un caf\u00e9 ?", ())])
    assert gold.by_question("  Qu'est-ce qu'un cafe\u0301 ?\n") is gold["q1"]
    assert gold.by_question("something else") is None


def test_sha256_is_order_independent_and_content_sensitive() -> None:
    q1 = GoldQuery("q1", "one", (Anchor("a", 0, 1, "0" * 64),))
    q2 = GoldQuery("q2", "two", (), ("tag",))
    assert GoldSet([q1, q2]).sha256 == GoldSet([q2, q1]).sha256
    assert len(GoldSet([q1, q2]).sha256) == 64
    changed = GoldQuery("q2", "two", (), ("other",))
    assert GoldSet([q1, changed]).sha256 != GoldSet([q1, q2]).sha256
    moved = GoldQuery("q1", "one", (Anchor("a", 0, 2, "0" * 64),))
    assert GoldSet([moved, q2]).sha256 != GoldSet([q1, q2]).sha256
    # header data is not content
    assert GoldSet([q1], description="x").sha256 == GoldSet([q1]).sha256


# ---------------------------------------------------------------- reading our format


def test_read_our_format(tmp_path: Path) -> None:
    path = _write_lines(
        tmp_path / "gold.data",  # the extension does not matter
        [
            {**HEADER, "description": "demo", "corpus_fingerprint": "f" * 64},
            "",
            _line("q1", tags=["smoke"], metadata={"source": "manual"}),
            "   ",
            _line("q2", anchors=[]),
        ],
    )
    gold = read_gold(path)
    assert gold.file_format == "spanchor.gold/1"
    assert gold.description == "demo"
    assert gold.corpus_fingerprint == "f" * 64
    assert gold.path == path
    assert list(gold) == ["q1", "q2"]
    q1 = gold["q1"]
    assert q1.line == 3
    assert q1.anchors == (Anchor("a", 0, 7, _h("Anchors")),)
    assert q1.tags == ("smoke",)
    assert q1.metadata == {"source": "manual"}
    assert gold["q2"].line == 5
    assert gold["q2"].anchors == ()


def test_empty_file_is_an_empty_gold_set(tmp_path: Path) -> None:
    gold = read_gold(_write_lines(tmp_path / "g.jsonl", [""]))
    assert len(gold) == 0
    assert gold.entries == ()


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ([HEADER, "{not json"], r"g\.jsonl:2: not valid JSON: Expecting property name"),
        ([HEADER, "[1, 2]"], r"g\.jsonl:2: expected a JSON object, found list"),
        ([HEADER, '{"query_id": "q", "query_id": "r"}'], r":2: the key 'query_id' appears twice"),
        ([HEADER, '{"query_id": NaN}'], r":2: NaN is not valid JSON: write null or a finite"),
        ([HEADER, {"query_id": "q", "anchors": []}], r":2: field 'question': missing"),
        ([HEADER, _line(question=3)], r":2: field 'question': input should be a valid string"),
        (
            [HEADER, _line(anchors=[{"document_id": "a", "start": "0", "end": 1, "hash": "0"}])],
            r":2: field 'anchors\[0\]\.start': input should be a valid integer, got '0'",
        ),
        (
            [HEADER, _line(anchors=[{"document_id": "a", "start": True, "end": 1, "hash": "0"}])],
            r"field 'anchors\[0\]\.start': input should be a valid integer, got True",
        ),
        (
            [HEADER, _line(anchors=[{"document_id": "a", "start": 0, "end": 1, "hash": "xyz"}])],
            r"field 'anchors\[0\]\.hash': string should match pattern",
        ),
        ([HEADER, _line(extra=1)], r":2: field 'extra': is not a field of this format"),
        ([{"kind": "spanchor.run", "schema_version": 1}], r":1: this is a 'spanchor\.run' file"),
        (
            [{"kind": "spanchor.gold", "schema_version": 2}],
            r":1: unsupported gold schema_version 2",
        ),
        (
            [{"kind": "spanchor.gold", "schema_version": "1"}],
            r"unsupported gold schema_version '1'",
        ),
        ([{**HEADER, "colour": "red"}], r":1: bad header: field 'colour'"),
        ([HEADER, _line(), HEADER], r":3: unexpected 'spanchor\.gold' header in the middle"),
        ([_line()], r"g\.jsonl:1: not a spanchor gold set: the first line has no 'kind'"),
        ([_line() | {"schema_version": "9.9"}], r":1: unknown gold schema_version '9\.9'"),
    ],
)
def test_bad_lines_raise_gold_error_with_path_and_line(
    tmp_path: Path, lines: list[Any], expected: str
) -> None:
    path = _write_lines(tmp_path / "g.jsonl", lines)
    with pytest.raises(GoldError, match=expected) as info:
        read_gold(path)
    assert info.value.path == str(path)
    assert info.value.hint


def test_bad_line_error_renders_path_line_and_hint(tmp_path: Path) -> None:
    path = _write_lines(tmp_path / "g.jsonl", [HEADER, _line(), "oops"])
    with pytest.raises(GoldError) as info:
        read_gold(path)
    assert str(info.value) == (
        f"{path}:3: not valid JSON: Expecting value (column 1); "
        "each line must be one complete JSON object"
    )
    assert info.value.line == 3


def test_missing_file_and_non_utf8(tmp_path: Path) -> None:
    with pytest.raises(GoldError, match="gold set file does not exist; check the path"):
        read_gold(tmp_path / "nope.jsonl")
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(json.dumps(HEADER).encode() + b'\n{"question": "caf\xe9"}\n')
    with pytest.raises(GoldError, match=r"latin1\.jsonl:2: not UTF-8 \(invalid byte at offset 64"):
        read_gold(path)


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + (json.dumps(HEADER) + "\n" + json.dumps(_line())).encode())
    assert list(read_gold(path)) == ["q1"]


# ---------------------------------------------------------------- spanchor 0.x gold files

# shaped exactly like spanchor 0.4.0 writes them: no header, schema_version on every line
# (and on anchors, which real_world examples omit), expected_text_hash, optional candidate_id
LEGACY_LINES = [
    {
        "schema_version": "0.1.0",
        "query_id": "q1",
        "question": "What do anchors point at?",
        "anchors": [
            {
                "document_id": "a",
                "start": 24,
                "end": 29,
                "expected_text_hash": _h("text."),
                "schema_version": "0.1.0",
            }
        ],
    },
    {
        "query_id": "q2",
        "question": "Which drink?",
        "anchors": [
            {"document_id": "b", "start": 0, "end": 4, "expected_text_hash": _h("caf\u00e9")}
        ],
        "schema_version": "0.1.0",
        "candidate_id": "cand-7",
    },
]


def test_read_legacy_gold_file_and_validate_its_hashes(tmp_path: Path, corpus: Corpus) -> None:
    path = _write_lines(tmp_path / "gold.jsonl", [*LEGACY_LINES])
    gold = read_gold(path)
    assert gold.file_format == "spanchor-0.x"
    assert list(gold) == ["q1", "q2"]
    assert gold["q1"].anchors == (Anchor("a", 24, 29, _h("text.")),)
    assert gold["q2"].metadata == {"candidate_id": "cand-7"}
    assert gold["q2"].line == 2
    assert validate_gold(gold, corpus) == []


def test_legacy_hashes_hold_for_documents_0x_canonicalised_too(tmp_path: Path) -> None:
    # 0.x applied NFC then newline unification; we unify then NFC: the same text results
    raw = "Cafe\u0301\r\nline\rend"
    corpus = Corpus.from_texts({"doc": raw})
    assert corpus.text("doc") == "Caf\u00e9\nline\nend"
    line = {
        "schema_version": "0.1.0",
        "query_id": "q",
        "question": "?",
        "anchors": [
            {
                "document_id": "doc",
                "start": 0,
                "end": 9,
                "expected_text_hash": _h("Caf\u00e9\nline"),
            }
        ],
    }
    assert validate_gold(read_gold(_write_lines(tmp_path / "g.jsonl", [line])), corpus) == []


def test_legacy_anchor_off_by_a_byte_order_mark_gets_a_hint(tmp_path: Path) -> None:
    # spanchor 0.x kept U+FEFF as the first character of a document; our corpus drops it
    doc = tmp_path / "docs" / "doc.txt"
    doc.parent.mkdir()
    doc.write_bytes("\ufeffHello world".encode())
    corpus = load_corpus(doc.parent)
    legacy = {
        "schema_version": "0.1.0",
        "query_id": "q",
        "question": "?",
        "anchors": [
            {"document_id": "doc", "start": 1, "end": 6, "expected_text_hash": _h("Hello")},
            {"document_id": "doc", "start": 7, "end": 12, "expected_text_hash": _h("world")},
        ],
    }
    problems = validate_gold(read_gold(_write_lines(tmp_path / "g.jsonl", [legacy])), corpus)
    assert [(p.code, p.anchor) for p in problems] == [("hash_mismatch", 0), ("out_of_bounds", 1)]
    hint = (
        "; the text one character earlier matches: if spanchor 0.x made this anchor on a file "
        "starting with a byte-order mark, subtract 1 from start and end"
    )
    assert all(p.message.endswith(hint) for p in problems)


def test_legacy_errors_name_the_line(tmp_path: Path) -> None:
    bad = {**LEGACY_LINES[1], "anchors": [{"document_id": "b", "start": 0, "end": 4}]}
    path = _write_lines(tmp_path / "g.jsonl", [LEGACY_LINES[0], bad])
    with pytest.raises(
        GoldError, match=r"g\.jsonl:2: spanchor 0\.x gold line: field 'anchors\[0\]\.expected"
    ):
        read_gold(path)
    path = _write_lines(
        tmp_path / "h.jsonl", [LEGACY_LINES[0], {**LEGACY_LINES[1], "schema_version": "0.9"}]
    )
    with pytest.raises(GoldError, match=r"h\.jsonl:2: unknown gold schema_version '0\.9'"):
        read_gold(path)
    path = _write_lines(tmp_path / "i.jsonl", [LEGACY_LINES[0], HEADER])
    with pytest.raises(GoldError, match=r"i\.jsonl:2: unexpected 'spanchor\.gold' header"):
        read_gold(path)


def test_legacy_set_rewritten_in_our_format_keeps_content_and_hash(tmp_path: Path) -> None:
    legacy = read_gold(_write_lines(tmp_path / "old.jsonl", [*LEGACY_LINES]))
    write_gold(legacy, tmp_path / "new.jsonl")
    ours = read_gold(tmp_path / "new.jsonl")
    assert ours == legacy
    assert ours.sha256 == legacy.sha256
    lines = (tmp_path / "new.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["kind"] == "spanchor.gold"
    assert json.loads(lines[2]) == {
        "query_id": "q2",
        "question": "Which drink?",
        "anchors": [{"document_id": "b", "start": 0, "end": 4, "hash": _h("caf\u00e9")}],
        "metadata": {"candidate_id": "cand-7"},
    }


# ---------------------------------------------------------------- writing


def test_write_is_deterministic_and_exact(tmp_path: Path) -> None:
    gold = GoldSet(
        [GoldQuery("q1", "caf\u00e9?", (Anchor("b", 0, 4, _h("caf\u00e9")),), ("x",))],
        description="d",
    )
    write_gold(gold, tmp_path / "sub" / "g.jsonl")
    text = (tmp_path / "sub" / "g.jsonl").read_text(encoding="utf-8")
    from spanchor_core import __version__

    assert text == (
        '{"kind": "spanchor.gold", "schema_version": 1, '
        f'"spanchor_version": "{__version__}", "description": "d"}}\n'
        '{"query_id": "q1", "question": "caf\u00e9?", "anchors": [{"document_id": "b", '
        f'"start": 0, "end": 4, "hash": "{CAFE_HASH}"}}], "tags": ["x"]}}\n'
    )
    write_gold(gold, tmp_path / "again.jsonl")
    assert (tmp_path / "again.jsonl").read_text(encoding="utf-8") == text


def test_write_replaces_atomically_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "g.jsonl"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o640)
    write_gold([GoldQuery("q", "?", ())], target)
    assert read_gold(target).entries == (GoldQuery("q", "?", ()),)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.jsonl"]
    assert target.stat().st_mode & 0o777 == 0o640


def test_write_refuses_what_it_could_not_read_back(tmp_path: Path) -> None:
    target = tmp_path / "g.jsonl"
    bad_hash = GoldQuery("q", "?", (Anchor("a", 0, 1, "not-a-hash"),))
    with pytest.raises(GoldError, match=r"cannot write query 'q' \(entry 0\).*hash"):
        write_gold([bad_hash], target)
    not_json = GoldQuery("q", "?", (), metadata={"x": {1, 2}})
    with pytest.raises(GoldError, match="cannot write query 'q'"):
        write_gold([not_json], target)
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_write_keeps_duplicates_and_bad_spans_for_validation(tmp_path: Path) -> None:
    entries = [
        GoldQuery("q", "?", (Anchor("a", 5, 2, "0" * 64),)),
        GoldQuery("q", "again", ()),
    ]
    write_gold(entries, tmp_path / "g.jsonl")
    assert read_gold(tmp_path / "g.jsonl").entries == tuple(entries)


ids = st.text(min_size=1, max_size=8)
json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
anchors = st.builds(
    Anchor,
    document_id=ids,
    start=st.integers(-5, 10**9),
    end=st.integers(-5, 10**9),
    hash=st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
)
queries = st.builds(
    GoldQuery,
    query_id=st.text(max_size=8),
    question=st.text(max_size=20),
    anchors=st.lists(anchors, max_size=3).map(tuple),
    tags=st.lists(st.text(max_size=5), max_size=3).map(tuple),
    metadata=st.dictionaries(st.text(max_size=5), json_values, max_size=3),
)
gold_sets = st.builds(
    GoldSet,
    st.lists(queries, max_size=5),
    description=st.none() | st.text(max_size=10),
    corpus_fingerprint=st.none() | st.text(max_size=10),
    metadata=st.dictionaries(st.text(max_size=5), json_values, max_size=2),
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gold_sets)
def test_write_read_round_trip(tmp_path: Path, gold: GoldSet) -> None:
    path = tmp_path / "round.jsonl"
    write_gold(gold, path)
    again = read_gold(path)
    assert again == gold
    assert again.sha256 == gold.sha256
    assert [q.line for q in again.entries] == [i + 2 for i in range(len(gold.entries))]


def test_json_schemas_describe_header_and_query_lines() -> None:
    schemas = gold_json_schemas()
    assert set(schemas) == {"gold-header", "gold-query"}
    header = schemas["gold-header"]
    assert header["properties"]["kind"]["const"] == "spanchor.gold"
    assert header["additionalProperties"] is False
    query = schemas["gold-query"]
    assert set(query["required"]) == {"query_id", "question", "anchors"}
    anchor = query["$defs"]["GoldAnchorLine"]
    assert anchor["properties"]["hash"]["pattern"] == "^[0-9a-f]{64}$"
    assert json.loads(json.dumps(schemas, sort_keys=True)) == schemas


# ---------------------------------------------------------------- validation


def test_valid_gold_has_no_problems(corpus: Corpus) -> None:
    gold = GoldSet([GoldQuery("q", "?", (anchor_from_text(corpus, "hash"),))])
    assert validate_gold(gold, corpus) == []


def test_validate_reports_every_problem_sorted_by_line(tmp_path: Path, corpus: Corpus) -> None:
    good = {"document_id": "a", "start": 0, "end": 7, "hash": _h("Anchors")}
    path = _write_lines(
        tmp_path / "g.jsonl",
        [
            HEADER,
            _line("q1"),
            _line("q1", question="  "),  # line 3: duplicate id, empty question
            _line("q3", anchors=[]),  # line 4
            _line(
                "q4",  # line 5: one of each anchor problem
                anchors=[
                    good | {"document_id": "zz"},
                    good | {"start": -1},
                    good | {"start": 9, "end": 3},
                    good | {"start": 4, "end": 4},
                    good | {"end": 999},
                    good | {"start": 2, "end": 9},
                    good,
                ],
            ),
            _line(""),  # line 6
        ],
    )
    problems = validate_gold(read_gold(path), corpus)
    assert [(p.line, p.query_id, p.code, p.anchor) for p in problems] == [
        (3, "q1", "duplicate_query_id", None),
        (3, "q1", "empty_question", None),
        (4, "q3", "no_anchors", None),
        (5, "q4", "unknown_document", 0),
        (5, "q4", "negative_offset", 1),
        (5, "q4", "inverted_span", 2),
        (5, "q4", "empty_span", 3),
        (5, "q4", "out_of_bounds", 4),
        (5, "q4", "hash_mismatch", 5),
        (6, "", "empty_query_id", None),
    ]
    by_code = {p.code: p for p in problems}
    assert by_code["duplicate_query_id"].message == "query id 'q1' already used on line 2"
    assert by_code["out_of_bounds"].message == (
        "anchor [0, 999) in 'a': the document is only 48 characters long"
    )
    assert by_code["hash_mismatch"].message == (
        f"anchor [2, 9) in 'a': text changed: expected hash {_h('Anchors')[:12]}, "
        f"the text there now is 'chors p' (hash {_h('chors p')[:12]})"
    )
    assert str(by_code["no_anchors"]) == "line 4: 'q3': the query has no anchors [no_anchors]"
    assert all(p.code in PROBLEM_CODES for p in problems)


def test_hash_mismatch_preview_is_short(corpus: Corpus) -> None:
    gold = GoldSet([GoldQuery("q", "?", (Anchor("a", 0, 48, "0" * 64),))])
    (problem,) = validate_gold(gold, corpus)
    assert problem == GoldProblem(
        None,
        "q",
        "hash_mismatch",
        "anchor [0, 48) in 'a': text changed: expected hash 000000000000, the text there "
        f"now is 'Anchors point at so'\u2026'\\nThey carry a hash.' (hash {_h(TEXT_A)[:12]})",
        0,
    )


def test_duplicate_questions_are_reported_and_never_resolve_a_record(corpus: Corpus) -> None:
    anchor = anchor_from_text(corpus, "hash")
    gold = GoldSet(
        [
            GoldQuery("q1", "What is it?", (anchor,)),
            GoldQuery("q2", " What is it? ", (anchor,)),
            GoldQuery("q3", "Something else?", (anchor,)),
        ]
    )
    assert validate_gold(gold, corpus) == []  # a warning (spanchor validate prints it)
    assert gold.duplicate_questions() == {"What is it?": ("q1", "q2")}
    # a record that names only the text cannot say which of the two it answered
    assert gold.by_question("What is it?") is None
    assert gold.by_question("Something else?") == gold["q3"]


def test_in_memory_duplicates_say_earlier_entry(corpus: Corpus) -> None:
    anchor = anchor_from_text(corpus, "hash")
    gold = GoldSet([GoldQuery("q", "?", (anchor,)), GoldQuery("q", "?", (anchor,))])
    (problem,) = validate_gold(gold, corpus)
    assert problem.message == "query id 'q' already used on an earlier entry"
    assert problem.line is None


# ---------------------------------------------------------------- anchor_from_text


def test_anchor_from_text_unique(corpus: Corpus) -> None:
    assert anchor_from_text(corpus, "carry") == Anchor("a", 35, 40, _h("carry"))


def test_anchor_from_text_canonicalises_the_needle(corpus: Corpus) -> None:
    anchor = anchor_from_text(corpus, "cafe\u0301 and", document_id="b")
    assert anchor == Anchor("b", 0, 8, _h("caf\u00e9 and"))


def test_anchor_from_text_ambiguous_lists_occurrences(corpus: Corpus) -> None:
    with pytest.raises(
        AnchorError, match=r"text occurs 2 times in the corpus: b\[0:4\], b\[9:13\]"
    ):
        anchor_from_text(corpus, "caf\u00e9")
    assert anchor_from_text(corpus, "caf\u00e9", occurrence=2).span == DocSpan("b", 9, 13)
    assert anchor_from_text(corpus, "caf\u00e9", document_id="b", occurrence=1).start == 0
    many = Corpus.from_texts({"m": "ab " * 7})
    with pytest.raises(AnchorError, match=r"m\[12:14\] and 2 more; name a document_id"):
        anchor_from_text(many, "ab")


def test_anchor_from_text_errors(corpus: Corpus) -> None:
    with pytest.raises(AnchorError, match="text 'tea' does not occur in the corpus"):
        anchor_from_text(corpus, "tea")
    with pytest.raises(AnchorError, match="does not occur in document 'a'"):
        anchor_from_text(corpus, "caf\u00e9", document_id="a")
    with pytest.raises(AnchorError, match="document 'zz' is not in the corpus"):
        anchor_from_text(corpus, "x", document_id="zz")
    with pytest.raises(AnchorError, match="occurrence 3 asked for, but the text occurs 2 times"):
        anchor_from_text(corpus, "caf\u00e9", occurrence=3)
    with pytest.raises(AnchorError, match=r"occurrence 0 asked for.*numbered from 1 to 1"):
        anchor_from_text(corpus, "carry", occurrence=0)
    with pytest.raises(AnchorError, match="occurrence -1 asked for"):
        anchor_from_text(corpus, "carry", occurrence=-1)
    with pytest.raises(AnchorError, match="cannot anchor empty text"):
        anchor_from_text(corpus, "")


def test_legacy_sha256_is_the_structure_hash_0x_runs_record() -> None:
    gold = GoldSet(
        [
            GoldQuery("q2", "ignored", ()),
            GoldQuery("q1", "ignored", (Anchor("b", 0, 2, "1" * 64), Anchor("a", 1, 3, "2" * 64))),
        ]
    )
    body = (
        '{"queries":[{"anchors":[{"document_id":"a","end":3,"start":1},'
        '{"document_id":"b","end":2,"start":0}],"query_id":"q1"},'
        '{"anchors":[],"query_id":"q2"}],"schema":"spanchor_gold_set_0.1.0"}'
    )
    assert gold.legacy_sha256 == "sha256:" + sha256_text(body)
    renamed = GoldSet([GoldQuery(q.query_id, "other question", q.anchors) for q in gold.entries])
    assert renamed.legacy_sha256 == gold.legacy_sha256
    assert renamed.sha256 != gold.sha256


# ---------------------------------------------------------------- one strictness (issue 12)


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ([HEADER, _line(question="caf\ud800")], r"g\.jsonl:2: a lone surrogate escape"),
        ([HEADER, _line(), _line("q2", tags=["\udfff"])], r"g\.jsonl:3: a lone surrogate escape"),
        ([HEADER, _line(metadata={"k": "\udbff"})], r":2: a lone surrogate escape"),
        ([HEADER | {"description": "\ud800"}], r":1: a lone surrogate escape"),
        ([HEADER, '{"query_id": "q", "x": 1e400}'], r":2: the number 1e400 is too large"),
        ([HEADER, '{"query_id": "q", "x": -1E+999}'], r":2: the number -1E\+999 is too large"),
    ],
)
def test_text_no_utf8_file_can_hold_and_non_finite_numbers_are_refused(
    tmp_path: Path, lines: list[Any], expected: str
) -> None:
    path = _write_lines(tmp_path / "g.jsonl", lines)  # json.dumps escapes the surrogates
    with pytest.raises(GoldError, match=expected):
        read_gold(path)


def test_a_legacy_line_with_a_schema_version_that_is_no_string_is_a_gold_error(
    tmp_path: Path,
) -> None:
    first = LEGACY_LINES[0]
    not_strings: list[Any] = [[], {}, 1, None]
    for bad in not_strings:
        path = _write_lines(tmp_path / "old.jsonl", [first, {**first, "schema_version": bad}])
        with pytest.raises(GoldError, match=r"old\.jsonl:2: unknown gold schema_version"):
            read_gold(path)
    path = _write_lines(tmp_path / "first.jsonl", [{**first, "schema_version": []}])
    with pytest.raises(GoldError, match=r"first\.jsonl:1: not a spanchor gold set"):
        read_gold(path)


def test_write_refuses_text_utf8_cannot_hold(tmp_path: Path) -> None:
    anchor = Anchor("a", 0, 7, _h("Anchors"))
    with pytest.raises(GoldError, match=r"cannot write query 'q' \(entry 0\): a lone surrogate"):
        write_gold([GoldQuery("q", "caf\ud800", (anchor,))], tmp_path / "g.jsonl")
    assert not (tmp_path / "g.jsonl").exists()


def test_validate_reports_an_empty_gold_set(corpus: Corpus) -> None:
    (problem,) = validate_gold(GoldSet(), corpus)
    assert (problem.code, problem.line, problem.query_id) == ("empty_gold_set", None, "")
    assert str(problem) == "the gold set has no queries [empty_gold_set]"
    assert problem.code in PROBLEM_CODES
