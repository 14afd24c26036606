"""The gold reader's quick paths give what the strict reader gives, line for line and error for
error: lines split from the whole file (``_lines``), plain lines parsed by orjson
(``_fast_query``), queries made without the dataclass ``__init__``; and the checks and the
hash that follow reading (``validate_gold``'s text cache, ``content_sha256`` hashing at once).
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from spanchor_core import _io
from spanchor_core.corpus import Corpus
from spanchor_core.errors import GoldError
from spanchor_core.gold import Anchor, GoldQuery, GoldSet, read_gold, validate_gold
from spanchor_core.gold import file as gold_file
from spanchor_core.gold import model as gold_model

HASH = "ab" * 32
HEADER = '{"kind": "spanchor.gold", "schema_version": 1}'
HINT = "save the gold set as UTF-8"
ANCHOR = f'{{"document_id": "d", "start": 0, "end": 5, "hash": "{HASH}"}}'


def _strict(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every line the strict way, as before orjson."""
    monkeypatch.setattr(gold_file, "_fast_query", lambda text, line: None)


def _outcome(path: Path) -> object:
    """What reading ``path`` gives: the queries with their lines and metadata, or the error."""
    try:
        gold = read_gold(path)
    except GoldError as err:
        return ("error", str(err), err.line)
    return [(q, q.line, dict(q.metadata), type(q.metadata)) for q in gold.entries]


def _both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> tuple[object, object]:
    path = tmp_path / "g.jsonl"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    fast = _outcome(path)
    with monkeypatch.context() as patch:
        _strict(patch)
        slow = _outcome(path)
    return fast, slow


def _query(body: str) -> str:
    return '{"query_id": "q", "question": "?", ' + body + "}"


def _anchored(members: str) -> str:
    """A query line with one anchor of these members, ``H`` standing for a good hash."""
    return _query('"anchors": [{' + members.replace("H", f'"{HASH}"') + "}]")


# Lines orjson parses that the strict reader refuses or reads otherwise, and lines it takes.
LINES = [
    _query(f'"anchors": [{ANCHOR}]'),
    _query(f'"anchors": [{ANCHOR}], "tags": ["a"], "metadata": {{}}'),
    _query(f'"anchors": [{ANCHOR}], "metadata": {{"k": [1, 2.5, {{"x": null}}]}}'),
    _query(f'"anchors": [{ANCHOR}], "metadata": {{"k": 1, "k": 2}}'),
    _query(f'"anchors": [{ANCHOR}], "metadata": {{"k": {2**70}}}'),
    _query(f'"anchors": [{ANCHOR}], "metadata": []'),
    _query(f'"anchors": [{ANCHOR}], "metadata": null'),
    _query(f'"anchors": [{ANCHOR}], "tags": null'),
    _query(f'"anchors": [{ANCHOR}], "tags": [1]'),
    '{"query_id": "q", "query_id": "r", "question": "?", "anchors": []}',
    '{"query_id": "q", "question": "?", "anchors": [], "anchors": []}',
    '{"query_id" : "q", "question": "?", "anchors": [], "anchors" : []}',
    '{"query_id":"q","question":"?","anchors":[],"anchors"\t:[]}',
    '{"query_id": "q", "question": "?", "anchors": [], "anchors" : []}',
    '{"query_id": "q", "question": "?", "anchors": [], "anchors"  \t :[]}',
    '{"query_id": "q", "question": "a\\": b", "anchors": [], "anchors" : []}',
    '{"query_id": "q", "question": "a \\": b", "anchors": [], "anchors": []}',
    '{"query_id": "q", "question": "a: b", "anchors": []}',
    '{"query_id": "q", "question": "a: b", "anchors": [], "question": "c"}',
    '{"query\\u005fid": "q", "question": "?", "anchors": []}',
    _anchored('"document_id": "d", "start": 0, "start": 1, "end": 5, "hash": H'),
    _anchored('"document_id": "d", "start": 0, "end": 5, "hash": H, "hash": H'),
    _anchored('"document_id": "d", "start": 0, "end": 5, "digest": H'),
    _anchored('"document_id": "d", "start": 0, "end": 5'),
    _anchored('"document_id": "d", "start": 1.0, "end": 5, "hash": H'),
    _anchored('"document_id": "d", "start": 1e2, "end": 5, "hash": H'),
    _anchored(f'"document_id": "d", "start": {2**63}, "end": {2**64}, "hash": H'),
    _anchored(f'"document_id": "d", "start": -{2**63 + 1}, "end": 5, "hash": H'),
    _anchored(f'"document_id": "d", "start": 0, "end": {"9" * 5000}, "hash": H'),
    _anchored('"document_id": "d", "start": -0, "end": 5, "hash": H'),
    _anchored('"document_id": "d", "start": true, "end": 5, "hash": H'),
    _anchored(f'"document_id": "d", "start": 0, "end": 5, "hash": "{HASH.upper()}"'),
    _query('"anchors": [{"document_id": "d", "start": 0, "end": 5, "hash": "ab"}]'),
    _anchored('"document_id": "d", "start": NaN, "end": 5, "hash": H'),
    _anchored('"document_id": "d", "start": 0, "end": 1e400, "hash": H'),
    '{"query_id": "q", "question": "caf\\ud800", "anchors": []}',
    '{"query_id": "q", "question": "\\udc00\\ud800", "anchors": []}',
    '{"query_id": "q", "question": "\\ud83d\\ude00 \\u00e9 \\u2028 \\"x\\"", "anchors": []}',
    '{"query_id": "q", "question": "tab\there", "anchors": []}',
    '{"query_id": "q", "question": "?", "anchors": [],}',
    '{"query_id": "q", "question": "?", "anchors": []} {}',
    '\ufeff{"query_id": "q", "question": "?", "anchors": []}',
    '{"kind": "spanchor.gold", "schema_version": 1}',
    '{"query_id": "q", "question": "?", "anchors": [], "kind": "x"}',
    '["not", "an", "object"]',
    '{"query_id": "q", "question": "?"}',
    '{"query_id": "q", "question": "?", "anchors": [], "extra": 1}',
]


@pytest.mark.parametrize("line", LINES)
def test_a_line_reads_as_the_strict_reader_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str
) -> None:
    fast, slow = _both(tmp_path, monkeypatch, f"{HEADER}\n{line}\n")
    assert fast == slow


def test_the_lines_above_do_take_both_paths() -> None:
    # the orjson path declines every line the strict reader refuses or reads otherwise...
    taken = [line for line in LINES if gold_file._fast_query(line, 2) is not None]
    # plain; empty tags and metadata; a colon in the question; an escaped key; -0; escapes
    assert taken == [LINES[i] for i in (0, 1, 17, 19, 29, 37)]
    # ...and what it takes is what the strict reader reads
    for line in taken:
        strict = gold_file._read_query(gold_file._parse_line(line, Path("g"), 2), Path("g"), 2)
        assert gold_file._fast_query(line, 2) == strict


def _serialised(pairs: list[tuple[str, Any]], colon: str, comma: str) -> str:
    """An object written member by member, so that a key may come twice."""
    return (
        "{" + comma.join(f"{json.dumps(k)}{colon}{_value(v, colon, comma)}" for k, v in pairs) + "}"
    )


def _value(value: Any, colon: str, comma: str) -> str:
    if isinstance(value, list) and value and isinstance(value[0], tuple):  # an object's members
        return _serialised(value, colon, comma)
    if isinstance(value, list):
        return "[" + comma.join(_value(v, colon, comma) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


_text = st.text(st.sampled_from('ab":\\ é\u2028\x01'), max_size=6)
_number = st.integers(-(2**65), 2**65) | st.sampled_from([0, 5, 1.0, 2.5])


def _perhaps_more(pairs: st.SearchStrategy[list[tuple[str, Any]]], keys: list[str]) -> Any:
    """``pairs`` as they are, or with one more member (a key again, or another) somewhere."""
    extra = st.none() | st.tuples(st.sampled_from(keys), _text | _number)
    return st.tuples(pairs, extra, st.integers(0, 6)).map(
        lambda t: t[0] if t[1] is None else [*t[0][: t[2]], t[1], *t[0][t[2] :]]
    )


_anchor = _perhaps_more(
    st.tuples(_text, _number, _number, st.sampled_from([HASH, HASH, HASH.upper()])).map(
        lambda v: list(zip(["document_id", "start", "end", "hash"], v, strict=True))
    ),
    ["document_id", "start", "hash", "other"],
)
_members = _perhaps_more(
    st.tuples(
        _text,
        _text,
        st.lists(_anchor, max_size=2),
        st.none() | st.lists(_text, max_size=2),
        st.sampled_from([None, {}, {"m": 1}, [("m", 1), ("m", 2)]]),
    ).map(
        lambda v: [
            *zip(["query_id", "question", "anchors"], v[:3], strict=True),
            *([] if v[3] is None else [("tags", v[3])]),
            *([] if v[4] is None else [("metadata", v[4])]),
        ]
    ),
    ["query_id", "anchors", "tags", "other"],
)


@given(_members, st.sampled_from([(": ", ", "), (":", ","), (" : ", " , "), ("\t:", ",")]))
@settings(max_examples=400, deadline=None)
def test_generated_lines_read_as_the_strict_reader_reads_them(
    members: list[tuple[str, Any]], separators: tuple[str, str]
) -> None:
    line = _serialised(members, *separators)
    path = Path("g.jsonl")
    try:
        strict: object = gold_file._read_query(gold_file._parse_line(line, path, 2), path, 2)
    except GoldError as err:
        strict = str(err)
    fast = gold_file._fast_query(line, 2)
    event("orjson" if fast is not None else "strict")
    if fast is not None:
        assert isinstance(strict, GoldQuery)
        assert (fast, fast.line, dict(fast.metadata)) == (
            strict,
            strict.line,
            dict(strict.metadata),
        )


def _jsonl(data: bytes) -> list[tuple[int, str]] | str:
    try:
        return [
            (x.number, x.text)
            for x in _io.jsonl_lines(io.BytesIO(data), Path("g"), error=GoldError, hint=HINT)
        ]
    except GoldError as err:
        return str(err)


def _split(data: bytes) -> list[tuple[int, str]] | str:
    try:
        return list(gold_file._lines(io.BytesIO(data), Path("g")))
    except GoldError as err:
        return str(err)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n\n",
        b"a\nb",
        b"a\r\nb\r\n",
        b"\xef\xbb\xbfa\n\xef\xbb\xbfb\n",
        b"  a \t\n   \n\tb\n",
        "\u00a0a\u2028\n\u2029\u3000\nb\x1c\n\x85c".encode(),
        "a\u2028b\n".encode(),
        b"a\nb\xff\nc\n",
        b"a\nb\n\xe2\x82",
        b"a\nb\xe2\x82",
        b"\xef\xbb",
    ],
)
def test_lines_split_from_the_whole_file_are_jsonl_lines(data: bytes) -> None:
    assert _split(data) == _jsonl(data)


def test_a_line_past_the_limit_is_still_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_io, "MAX_LINE_BYTES", 16)
    for data in [b"short\n" + b"x" * 40 + b"\n", b"x" * 17, b"0123456789abcdef"]:
        assert _split(data) == _jsonl(data)
    assert "longer than" in str(_split(b"short\n" + b"x" * 40 + b"\n"))


@pytest.mark.parametrize(
    "tail",
    [
        b"\xff\n",  # not UTF-8: the error of its line, after the lines before it
        b"\xe2\x82",  # a torn last character: dropped as before
        b"not json\n\xff\n",  # a bad line before bytes that are not UTF-8: that line's error
    ],
)
def test_files_that_are_not_utf8_read_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tail: bytes
) -> None:
    path = tmp_path / "g.jsonl"
    line = _query(f'"anchors": [{ANCHOR}]')
    path.write_bytes(f"{HEADER}\n{line}\n".encode() + tail)
    fast = _outcome(path)
    with monkeypatch.context() as patch:
        _strict(patch)
        patch.setattr(gold_file, "_lines", _jsonl_lines_of)
        slow = _outcome(path)
    assert fast == slow


def _jsonl_lines_of(handle: Any, path: Path) -> Any:
    return ((x.number, x.text) for x in _io.jsonl_lines(handle, path, error=GoldError, hint=HINT))


def test_made_queries_and_anchors_are_the_constructors_values() -> None:
    anchor = gold_model.made_anchor("d", 1, 2, HASH)
    assert anchor == Anchor("d", 1, 2, HASH)
    assert type(anchor) is Anchor
    query = gold_model.made_query("q", "?", (anchor,), ("t",), {"m": 1}, 7)
    assert query == GoldQuery("q", "?", (anchor,), ("t",), {"m": 1}, 7)
    assert query.line == 7
    assert type(query) is GoldQuery
    with pytest.raises(dataclasses.FrozenInstanceError):
        query.question = "changed"  # type: ignore[misc]
    # the makers set every field, in the dataclasses' order
    anchor_fields = [f.name for f in dataclasses.fields(Anchor)]
    assert len(inspect.signature(gold_model.made_anchor).parameters) == len(anchor_fields)
    assert list(inspect.signature(gold_model.made_query).parameters) == [
        f.name for f in dataclasses.fields(GoldQuery)
    ]


class _OwnCorpus(Corpus):
    """A corpus of another type: its texts are asked for anchor by anchor, as before."""

    __slots__ = ()
    asked: list[str] = []  # noqa: RUF012 - shared on purpose, reset by the test

    def text(self, document_id: str) -> str:
        type(self).asked.append(document_id)
        return Corpus.text(self, document_id)


def test_validation_is_the_same_with_the_text_cache_and_without() -> None:
    texts = {"d": "the evidence text", "e": "\ufeffbom text"}
    corpus = Corpus.from_texts(texts)
    own = _OwnCorpus(dict(corpus.items()))
    good = Anchor.from_span(corpus, "d", 4, 12)
    anchors = [
        good,
        Anchor("d", -1, 3, HASH),
        Anchor("d", 5, 2, HASH),
        Anchor("d", 3, 3, HASH),
        Anchor("x", 3, 3, HASH),
        Anchor("x", 0, 2, HASH),
        Anchor("d", 0, 99, HASH),
        Anchor("d", 4, 99, HASH),
        Anchor("d", 0, 4, HASH),
        Anchor("d", 5, 13, good.hash),
        good,
    ]
    gold = GoldSet([GoldQuery(f"q{i}", "?", (a, good)) for i, a in enumerate(anchors)])
    _OwnCorpus.asked = []
    problems = validate_gold(gold, corpus)
    assert problems == validate_gold(gold, own)
    assert {p.code for p in problems} >= {
        "negative_offset",
        "inverted_span",
        "empty_span",
        "unknown_document",
        "out_of_bounds",
        "hash_mismatch",
    }
    assert "one character earlier matches" in next(
        p.message for p in problems if p.query_id == "q9"
    )
    assert len(_OwnCorpus.asked) > 2  # asked per anchor, not cached


def _old_hash(queries: list[GoldQuery]) -> str:
    digest = hashlib.sha256(b"spanchor.gold/1\n")
    for line in sorted(map(gold_model._canonical_line, queries)):
        digest.update(line.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def test_the_hash_is_the_line_by_line_hash() -> None:
    queries = [
        GoldQuery("q2", "é?", (Anchor("d", 0, 5, HASH),), ("t",)),
        GoldQuery("q1", "?", (), (), {"m": [1]}),
        GoldQuery("q3", "\u2028\x00", (Anchor("e", 1, 2, HASH), Anchor("d", 0, 1, HASH))),
    ]
    assert GoldSet.content_sha256(queries) == _old_hash(queries)
    assert GoldSet.content_sha256([]) == _old_hash([])
    assert GoldSet.content_sha256([]) == hashlib.sha256(b"spanchor.gold/1\n").hexdigest()


def test_a_lone_surrogate_fails_the_hash_as_its_own_line_did() -> None:
    queries = [GoldQuery("q1", "fine", ()), GoldQuery("q2", "caf\ud800", ())]
    with pytest.raises(UnicodeEncodeError) as line_by_line:
        _old_hash(queries)
    with pytest.raises(UnicodeEncodeError) as at_once:
        GoldSet.content_sha256(queries)
    assert str(at_once.value) == str(line_by_line.value)
