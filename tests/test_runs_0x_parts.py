"""A spanchor 0.x ``{query_id: [results]}`` object read in parts (``RunStream.record_ranges`` /
``part_fields``, ``runs/legacy.iter_0x_part``), the parts on forked children: the records, the
errors and the evaluation file of one process reading the file, whatever the cut — one inside a
string or a nested value is refused, never trusted — and whatever the file holds (repeated or
escaped keys, odd white space, a byte-order mark, bad results, trailing text)."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from spanchor_core.corpus import Corpus
from spanchor_core.errors import RunError
from spanchor_core.evaluate import evaluate_file, run_parts, write_evaluation
from spanchor_core.evaluate.file_fork import can_fork
from spanchor_core.evaluate.model import Evaluation
from spanchor_core.gold import Anchor, GoldQuery, GoldSet
from spanchor_core.runs import RunStream, iter_run
from spanchor_core.runs import legacy as legacy_module
from spanchor_core.runs import read as read_module
from spanchor_core.runs.legacy import PartRefused, iter_0x_part, object_cuts
from spanchor_core.runs.model import FORMAT_0X_JSON, RecordFields
from tests.fork_spy import ForkSpy, count_forks

ALPHA = "Alpha one. The sky is blue because of Rayleigh scattering. Alpha two."
BETA = "Beta text about grass. Grass is green due to chlorophyll. End of beta."
CORPUS = Corpus.from_texts({"alpha": ALPHA, "beta": BETA})
GOLD = GoldSet(
    [
        GoldQuery("q1", "Why is the sky blue?", (Anchor.from_span(CORPUS, "alpha", 11, 58),)),
        GoldQuery("q2", "Grass?", (Anchor.from_span(CORPUS, "beta", 23, 57),)),
        GoldQuery("q3", "Never asked?", (Anchor.from_span(CORPUS, "alpha", 0, 10),)),
    ]
)

# texts and keys that hold what a cut looks for, quotes, escapes and non-ASCII
_NASTY = [
    '], "',
    '],\n  "q1',
    "]",
    '\\"], "',
    "The sky is blue",
    "Grass is green due to chlorophyll.",
    "\u00e9\u2028\U0001f600",
    "",
]
_SPACES = ["", " ", "\n", "\t", "\r\n", " \n  "]


def _small(chunk: int = 256) -> AbstractContextManager[object]:
    """Files of a few hundred bytes read as large ones: ``chunk`` bytes at a time, and a
    first line of 64 bytes counting as a document on one line."""
    stack = ExitStack()
    stack.enter_context(mock.patch.object(legacy_module, "_CHUNK", chunk))
    stack.enter_context(mock.patch.object(read_module, "_STREAM_FROM", 64))
    return stack


_text = st.one_of(st.sampled_from(_NASTY), st.text(max_size=12))
_result = st.fixed_dictionaries(
    {"text": _text},
    optional={
        "score": st.one_of(st.floats(allow_nan=True), st.integers(-5, 5)),
        "doc_id": st.sampled_from(["alpha", "beta", "gamma"]),
        "start": st.integers(0, 80),
        "meta": st.fixed_dictionaries({"a": st.lists(st.integers(0, 3), max_size=2), "b": _text}),
    },
)
_results = st.lists(_result, max_size=3)
_key = st.one_of(st.sampled_from(["q1", '"], "', "\u00e9\\", "]"]), st.text(max_size=6))
_FLAWS: list[tuple[str, Any]] = [
    ("value", 3),
    ("value", "x"),
    ("value", None),
    ("value", [1]),
    ("value", {"text": "a"}),  # bad results: the whole reader's error
    ("key", "query_id"),
    ("key", "kind"),  # a record field or a file kind as a query id
    ("repeat", None),  # a key twice (written the same or escaped)
    ("after", " x"),
    ("after", "{}"),  # text after the object
]


def _dump_key(key: str, escape: bool) -> str:
    """The key as JSON, its first character written as a ``\\u`` escape when ``escape``."""
    if escape and key and ord(key[0]) < 0x10000:
        return '"' + f"\\u{ord(key[0]):04x}" + json.dumps(key, ensure_ascii=False)[2:]
    return json.dumps(key, ensure_ascii=False)


@st.composite
def _documents(draw: st.DrawFn) -> bytes:
    """A 0.x object written by hand: nasty keys (some escaped) and texts, any white space,
    and now and then one flaw (see :data:`_FLAWS`) or a byte-order mark."""
    keys = draw(st.lists(_key, min_size=1, max_size=12, unique=True))
    members: list[tuple[str, Any]] = [(key, draw(_results)) for key in keys]
    flaw = draw(st.one_of(st.none(), st.none(), st.sampled_from(_FLAWS)))
    at = draw(st.integers(0, len(members) - 1))
    after = draw(st.sampled_from(["", "\n", " \n"]))
    if flaw is not None and flaw[0] == "value":
        members[at] = (members[at][0], flaw[1])
    elif flaw is not None and flaw[0] == "key":
        members[at] = (str(flaw[1]), members[at][1])
    elif flaw is not None and flaw[0] == "repeat":
        members.insert(draw(st.integers(at + 1, len(members))), members[at])
    elif flaw is not None:
        after = flaw[1]
    ascii_only = draw(st.booleans())
    space = draw(st.sampled_from(_SPACES))  # mostly one style, as a writer has
    odd = draw(st.booleans())

    def ws() -> str:
        return draw(st.sampled_from(_SPACES)) if odd else space

    parts = []
    for key, value in members:
        dumped = json.dumps(value, ensure_ascii=ascii_only)
        parts.append(f"{ws()}{_dump_key(key, draw(st.booleans()))}{ws()}:{ws()}{dumped}")
    text = "{" + ",".join(parts) + ws() + "}" + after
    bom = b"\xef\xbb\xbf" if draw(st.integers(0, 9)) == 0 else b""
    return bom + text.encode("utf-8")


def _after_brackets(data: bytes) -> list[int]:
    """Every byte offset just after a ``]``: each a cut a part may be given, good or bad."""
    return [at + 1 for at, byte in enumerate(data) if byte == 0x5D and at + 1 < len(data)]


def _in_parts(path: Path, ranges: list[tuple[int, int]]) -> tuple[list[RecordFields], int]:
    """The records read as ``collect_in_parts`` reads them, each later part first "alone"
    (as a child does), taken only when it follows the parts before."""
    stream = iter_run(path)
    stream.records_read = 0
    read = list(stream.part_fields(*ranges[0]))
    for start, stop in ranges[1:]:
        if stream.bytes_read > start:
            break
        child = iter_run(path)
        try:
            answer: tuple[list[RecordFields], frozenset[str] | None] | None = (
                list(child.part_fields(start, stop, alone=True)),
                child.part_keys(),
            )
        except Exception:  # a child that fails gives no answer
            answer = None
        if answer is None or not stream.take_part(answer[1]):
            read.extend(stream.part_fields(start, stop))
        else:
            event("a later part's answer taken")
            read.extend(answer[0])
            stream.records_read += len(answer[0])
        stream.bytes_read = max(stream.bytes_read, stop)
    return read, stream.records_read


def _outcome(run: Any) -> tuple[str, Any]:
    try:
        return "ok", run()
    except RunError as err:
        return "error", (str(err), err.line)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=_documents(),
    picks=st.lists(st.integers(0, 10**6), min_size=1, max_size=3),
    pattern=st.booleans(),
)
def test_any_cut_reads_the_one_process_records_or_error(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, picks: list[int], pattern: bool
) -> None:
    path = tmp_path_factory.mktemp("parts") / "results.json"
    path.write_bytes(data)
    with _small():
        try:
            stream = iter_run(path)
        except RunError:
            return  # refused when opened: no parts to read
        one = _outcome(lambda: (list(iter_run(path).fields()), None))
        if not stream._layout.members:  # read whole (or line by line): never cut here
            event("not read member by member")
            return
        # the cuts the pattern finds, or any offsets after a "]" (inside strings too)
        if pattern:
            candidates = sorted({c for k in (2, 3, 4) for c in object_cuts(path, k, len(data))})
        else:
            candidates = _after_brackets(data)
        cuts = sorted({candidates[p % len(candidates)] for p in picks}) if candidates else []
        ranges = list(itertools.pairwise([0, *cuts, len(data)]))
        parts = _outcome(lambda: _in_parts(path, ranges))
    event(f"one process: {one[0]}")
    if one[0] == "ok":
        assert parts[0] == "ok", parts
        assert parts[1][0] == one[1][0]
        assert parts[1][1] == len(one[1][0])  # records_read as one process counts it
    else:
        assert parts == one


def _cut_after(data: bytes, marker: bytes) -> int:
    return data.index(marker) + marker.index(b"]") + 1


def test_a_cut_inside_a_string_is_refused_and_read_on(tmp_path: Path) -> None:
    # a text ending in "], ": its closing quote completes what a cut looks for
    document = {"q1": [{"text": "ends ], ", "score": 1}], "q2": [{"text": "b"}], "q3": []}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(document), "utf-8")
    data = path.read_bytes()
    bad = _cut_after(data, b'ends ], "')  # inside q1's text
    assert bad in object_cuts(path, 2, 2 * (bad - 5))  # the pattern finds it: a candidate
    with pytest.raises(PartRefused):  # a child given the bad cut answers nothing
        list(
            iter_0x_part(path, lambda: pytest.fail("read whole"), (bad, None), set(), 0, alone=True)
        )
    with _small():
        stream = iter_run(path)
        first = [f.query_id for f in stream.part_fields(0, bad)]
        assert first == ["q1", "q2", "q3"]  # the parent's part read on to the end
        assert stream.bytes_read > bad
        assert stream.records_read == 3


def test_a_cut_inside_a_nested_value_is_refused(tmp_path: Path) -> None:
    document = {"q1": [{"text": "a", "meta": {"a": [1], "b": "x"}}], "q2": [{"text": "b"}]}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(document), "utf-8")
    data = path.read_bytes()
    bad = _cut_after(data, b'[1], "b')
    with pytest.raises(PartRefused):
        list(
            iter_0x_part(path, lambda: pytest.fail("read whole"), (bad, None), set(), 0, alone=True)
        )
    with _small():
        stream = iter_run(path)
        assert [f.query_id for f in stream.part_fields(0, bad)] == ["q1", "q2"]
        assert stream.bytes_read == len(data)


def test_a_good_cut_is_proved_by_the_part_before_it(tmp_path: Path) -> None:
    document = {f"q{n}": [{"text": f"t{n}", "score": 0.5}] for n in range(20)}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(document, indent=2), "utf-8")
    stream = iter_run(path)
    ranges = stream.record_ranges(2)
    assert len(ranges) == 2
    (_, cut), (start, end) = ranges
    assert start == cut
    assert end == path.stat().st_size
    assert path.read_bytes()[cut - 1 : cut] == b"]"
    first = [f.query_id for f in stream.part_fields(0, cut)]
    assert stream.bytes_read == cut  # the cut held: reading stopped there
    child = iter_run(path)
    second = [f.query_id for f in child.part_fields(cut, end, alone=True)]
    assert stream.take_part(child.part_keys())
    assert first + second == list(document)
    assert first
    assert second


def test_a_key_of_an_earlier_part_is_not_taken(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text('{\n "q1": [],\n "q2": [],\n "q1": [],\n "q3": []\n}', "utf-8")
    cut = _cut_after(path.read_bytes(), b'[],\n "q1')
    stream = iter_run(path)
    assert [f.query_id for f in stream.part_fields(0, cut)] == ["q1", "q2"]
    child = iter_run(path)
    assert [f.query_id for f in child.part_fields(cut, 10**9, alone=True)] == ["q1", "q3"]
    assert not stream.take_part(child.part_keys())  # q1 twice: left to this process
    with pytest.raises(RunError, match="appears twice") as parts:
        list(stream.part_fields(cut, 10**9))
    with pytest.raises(RunError) as one:
        list(iter_run(path).fields())
    assert (str(parts.value), parts.value.line) == (str(one.value), one.value.line)


def test_files_that_are_not_cut(tmp_path: Path) -> None:
    body = json.dumps({f"q{n}": [{"text": "t"}] for n in range(20)}, indent=1)
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + body.encode("utf-8"))
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([{"query_id": "q1", "retrieved": []}] * 20, indent=1), "utf-8")
    short = tmp_path / "short.json"  # on one short line: read whole when opened
    short.write_text(json.dumps({f"q{n}": [{"text": "t"}] for n in range(20)}), "utf-8")
    lines = tmp_path / "results.jsonl"  # 0.x JSONL
    lines.write_text('{"query_id": "q1", "retrieved": []}\n' * 20, "utf-8")
    for path in (bom, listed, short, lines):
        assert iter_run(path).record_ranges(2) == []
    assert iter_run(bom).source_format == FORMAT_0X_JSON
    plain = tmp_path / "plain.json"
    plain.write_text(body, "utf-8")
    assert len(iter_run(plain).record_ranges(2)) == 2
    assert iter_run(plain).record_ranges(1) == []


# -- on forked children: the evaluation file of one process ------------------------------------

needs_fork = pytest.mark.skipif(not can_fork(), reason="needs fork and two CPUs")


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> ForkSpy:
    monkeypatch.setattr(run_parts, "SPLIT_BYTES", 1)
    return count_forks(monkeypatch, run_parts)


def _file_text(evaluation: Evaluation, path: Path) -> str:
    write_evaluation(evaluation, path)
    return re.sub(r'"created_at": "[^"]*"', '"created_at": ""', path.read_text("utf-8"))


def _documents_for_gold(n: int, nasty: str = "not [here]") -> Iterator[tuple[str, list[Any]]]:
    texts = ["The sky is blue", "Grass is green due to chlorophyll.", nasty, ""]
    for i in range(n):
        qid = ["q1", "q2", "q3", f"x{i}"][i % 4] if i < 4 else f"x{i}"
        yield qid, [{"text": texts[(i + r) % 4], "score": r, "doc_id": "alpha"} for r in range(3)]


def _both(tmp_path: Path, path: Path, ranges: list[tuple[int, int]] | None = None) -> None:
    one = _outcome(lambda: _file_text(evaluate_file(CORPUS, GOLD, path, jobs=1), tmp_path / "1"))
    if ranges is None:
        two = _outcome(lambda: _file_text(evaluate_file(CORPUS, GOLD, path), tmp_path / "2"))
    else:
        with mock.patch.object(RunStream, "record_ranges", return_value=ranges):
            two = _outcome(lambda: _file_text(evaluate_file(CORPUS, GOLD, path), tmp_path / "2"))
    assert two == one


@needs_fork
@pytest.mark.parametrize("indent", [None, 2])
def test_a_0x_object_is_read_on_two_processes_to_the_one_process_file(
    tmp_path: Path, spy: ForkSpy, indent: int | None
) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(dict(_documents_for_gold(400)), indent=indent), "utf-8")
    with _small(4096):
        assert len(iter_run(path).record_ranges(2)) == 2
        _both(tmp_path, path)
    assert (spy.started, spy.answered) == (1, 1)


@needs_fork
def test_a_bad_cut_gives_the_one_process_file_without_the_childs_answer(
    tmp_path: Path, spy: ForkSpy
) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(dict(_documents_for_gold(400, "not here ], "))), "utf-8")
    data = path.read_bytes()
    bad = _cut_after(data, b'here ], "')  # inside a text: 'not here ], '
    assert data[bad:].startswith(b', ", "score"')
    with _small(4096):
        _both(tmp_path, path, [(0, bad), (bad, len(data))])
    assert (spy.started, spy.answered) == (1, 0)  # given up on, its answer never read


@needs_fork
@pytest.mark.parametrize(
    ("marker", "replacement"),
    [
        ('"x300": [', '"x300": 3, "y": ['),  # a bad result in the child's part
        ('"x300": [', '"x10": ['),  # a key of the parent's part again
        ('"x300": [', '"query_id": ['),  # a record field as a query id
        ('"x399": [', '"x399": [], "x398": ['),  # a key twice within the child's part
    ],
)
def test_anything_unusual_in_a_part_is_the_one_process_answer(
    tmp_path: Path, spy: ForkSpy, marker: str, replacement: str
) -> None:
    path = tmp_path / "results.json"
    text = json.dumps(dict(_documents_for_gold(400)))
    assert marker in text
    path.write_text(text.replace(marker, replacement), "utf-8")
    with _small(4096):
        ranges = iter_run(path).record_ranges(2)
        assert ranges
        assert ranges[0][1] < text.index(marker)
        _both(tmp_path, path)
    assert spy.started == 1


@needs_fork
def test_a_child_that_dies_leaves_its_0x_part_to_this_process(
    tmp_path: Path, spy: ForkSpy, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(dict(_documents_for_gold(400)), indent=1), "utf-8")
    monkeypatch.setattr(run_parts, "_child_part", lambda *_: (_ for _ in ()).throw(OSError()))
    with _small(4096):
        _both(tmp_path, path)
        stream = iter_run(path)
        evaluate_file(CORPUS, GOLD, stream)
    assert stream.records_read == 400
    assert (spy.started, spy.answered) == (2, 0)
