"""Tests for the strict reading layer: JSON strictness, JSONL lines, opening and whole files."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest

from spanchor_core import _io
from spanchor_core._io import TORN, jsonl_lines, loads_strict, open_for_reading, read_text
from spanchor_core.errors import GoldError, InputError

P = Path("f.jsonl")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1, "a": 2}', r"f\.jsonl:3: the key 'a' appears twice in one object"),
        ('{"a": [{"b": 1, "b": 1}]}', r":3: the key 'b' appears twice"),
        ('{"a": NaN}', r":3: NaN is not valid JSON: write null or a finite number"),
        ('{"a": -Infinity}', r":3: -Infinity is not valid JSON"),
        ('{"a": 1e400}', r":3: the number 1e400 is too large for a float"),
        ('{"a": -1.5E+999}', r":3: the number -1\.5E\+999 is too large"),
        ('{"a": ' + "9" * 5000 + "}", r":3: not valid JSON: Exceeds the limit"),
        ("[" * 100_000 + "]" * 100_000, r":3: not valid JSON: nested too deeply"),
        ('{"a": ', r":3: not valid JSON: Expecting value \(column 7\)"),
    ],
)
def test_loads_strict_refuses_with_path_and_line(text: str, message: str) -> None:
    with pytest.raises(GoldError, match=message) as info:
        loads_strict(text, path=P, line=3, error=GoldError)
    assert (info.value.path, info.value.line) == ("f.jsonl", 3)


def test_loads_strict_keeps_what_is_valid_and_words_errors_as_asked() -> None:
    assert loads_strict('{"a": 1e300, "b": [1, 2.5], "c": "\\ud800"}', path=P) == {
        "a": 1e300,
        "b": [1, 2.5],
        "c": "\ud800",  # allowed unless text_only: run files keep lone surrogates
    }
    with pytest.raises(InputError, match=r"^f\.jsonl:2: invalid JSON: Expecting"):
        loads_strict("{", path=P, line=2, invalid="invalid JSON")
    with pytest.raises(InputError, match=r"^f\.jsonl:5: not valid JSON"):
        loads_strict('{\n\n\n\n"a"}', path=P)  # a whole document: the parser's line


def test_allow_nan_reads_leniently_but_still_refuses_duplicates() -> None:
    data = loads_strict('{"a": NaN, "b": 1e400}', path=P, allow_nan=True)
    assert math.isnan(data["a"])
    assert data["b"] == math.inf
    with pytest.raises(InputError, match="appears twice"):
        loads_strict('{"a": NaN, "a": 1}', path=P, allow_nan=True)


def test_text_only_refuses_lone_surrogates_anywhere() -> None:
    for text in ('"\\ud800"', '{"q": ["x", {"k": "a\\udfffb"}]}', '{"\\uDBFF": 1}'):
        with pytest.raises(InputError, match=":4: a lone surrogate escape"):
            loads_strict(text, path=P, line=4, text_only=True)
    # a pair of escapes is one character, and an escaped backslash is no escape at all
    assert loads_strict('"\\ud83d\\ude42 \\\\ud800"', path=P, text_only=True) == "🙂 \\ud800"


def test_torn_turns_only_syntax_errors_into_the_marker() -> None:
    assert loads_strict('{"a": "b', path=P, torn=True) is TORN
    with pytest.raises(InputError, match="appears twice"):
        loads_strict('{"a": 1, "a": 2}', path=P, torn=True)


def _lines(data: bytes, **kwargs: object) -> list[_io.JsonlLine]:
    return list(jsonl_lines(io.BytesIO(data), P, **kwargs))  # type: ignore[arg-type]


def test_jsonl_lines_split_on_newline_only_and_skip_blank_lines() -> None:
    data = '\ufeff{"a": 1}\r\n\n  \t\n{"b": "x\u2028y"}\n{"c": 3}'.encode()
    assert _lines(data) == [
        _io.JsonlLine(1, '{"a": 1}', False, 13),
        _io.JsonlLine(4, '{"b": "x\u2028y"}', False, len(data) - 8),
        _io.JsonlLine(5, '{"c": 3}', True, len(data)),
    ]
    assert _lines(data, offset=13, number=2)[0].number == 4


@pytest.mark.parametrize("cut", [1, 2, 3])
def test_a_last_line_torn_inside_a_character_keeps_its_complete_characters(cut: int) -> None:
    data = '{"a": 1}\n{"b": "x🙂'.encode()
    (first, torn) = _lines(data[:-cut])
    assert first.text == '{"a": 1}'
    assert (torn.number, torn.text, torn.last) == (2, '{"b": "x', True)


def test_bytes_that_are_not_utf8_are_an_error_with_line_and_offset() -> None:
    with pytest.raises(GoldError, match=r"f\.jsonl:2: not UTF-8 \(invalid byte at offset 16\)"):
        _lines(b'{"a": 1}\n{"b": "\xe9"}\n', error=GoldError)
    # an invalid byte inside the last line is no torn character: still an error
    with pytest.raises(InputError, match=r":2: not UTF-8 \(invalid byte at offset 16\)"):
        _lines(b'{"a": 1}\n{"b": "\xe9x"}')
    with pytest.raises(InputError, match=r":1: not UTF-8 \(invalid byte at offset 5\)"):
        _lines(b'\xef\xbb\xbf{"\xff": 1}\n')  # offsets count the byte-order mark


def test_a_line_over_the_limit_is_refused_before_it_is_read_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_io, "MAX_LINE_BYTES", 16)
    assert len(_lines(b'{"a": "0123456"}\n')) == 1  # 16 bytes and a newline: read
    with pytest.raises(InputError, match=r":2: the line is longer than 0 MiB"):
        _lines(b'{}\n{"a": "01234567"}\n', what="the line")


def test_open_for_reading_and_read_text(tmp_path: Path) -> None:
    with pytest.raises(GoldError, match="gold set does not exist; check the path"):
        open_for_reading(tmp_path / "absent", error=GoldError, what="gold set")
    with pytest.raises(InputError, match="is a directory, not a file"):
        open_for_reading(tmp_path)
    path = tmp_path / "doc.json"
    path.write_bytes(b"\xef\xbb\xbf[1,\n2]")
    assert read_text(path) == "[1,\n2]"
    path.write_bytes(b"[1,\n\xff]")
    with pytest.raises(InputError, match=r"doc\.json:2: not UTF-8 \(invalid byte at offset 4\)"):
        read_text(path)
