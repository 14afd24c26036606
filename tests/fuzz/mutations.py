"""Hypothesis strategies that turn a valid file into a hostile one.

Structural mutations first, because random bytes rarely get past a JSON parser: a value of a
parsed JSON line (or document) is swapped for an odd token (``NaN``, ``1e400``, ``-0``, a
4,400-digit integer, a lone ``"\\ud800"`` escape, nesting 3,000 deep, a wrong type), a key is
doubled, dropped, added or made odd, and the file around it is damaged (a byte order mark,
CRLF, a torn last line cut inside a multi-byte UTF-8 character, NUL bytes, a huge line, lines
dropped, doubled or swapped, nothing at all). TOML gets the same treatment line by line. Plain
random bytes stay in the mix.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

DEEP = 3_000
HUGE_DIGITS = "9" * 4_400

ODD_JSON: tuple[str, ...] = (
    "NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    "-1e400",
    "1e-400",
    "-0",
    "-0.0",
    "0",
    "-1",
    "1.5",
    "2.5e9",
    "9007199254740993",
    HUGE_DIGITS,
    f"-{HUGE_DIGITS}",
    f"{HUGE_DIGITS}.5",
    '"\\ud800"',
    '"\\udfff"',
    '"a\\ud800b"',
    '"\\ud83d\\ude00"',
    '"\\u0000"',
    '"\\u001b[2J"',
    '"\\n\\r\\u2028"',
    '""',
    '"x"',
    '"recall@5"',
    '"recall@\\u00b2"',
    f'"recall@{HUGE_DIGITS}"',
    '"1970-01-01T00:00:00"',
    '"../../etc/passwd"',
    '"caf\\u00e9 \\u65e5\\u672c"',
    "null",
    "true",
    "false",
    "[]",
    "{}",
    "[null]",
    '[{"a": 1}]',
    '{"": null}',
    "[" * DEEP + "]" * DEEP,
    '{"a": ' * DEEP + "1" + "}" * DEEP,
)

ODD_KEYS: tuple[str, ...] = (
    '"\\ud800"',
    '""',
    '"kind"',
    '"schema_version"',
    '"query_id"',
    '"__proto__"',
    '"recall@\\u00b2"',
    f'"recall@{HUGE_DIGITS}"',
    '"\\u0000"',
)

ODD_TOML: tuple[str, ...] = (
    "nan",
    "inf",
    "-inf",
    "1e400",
    "-0",
    "-0.0",
    "0",
    "-1",
    "1.5",
    HUGE_DIGITS,
    f"-{HUGE_DIGITS}",
    "0x7fffffffffffffffffff",
    '"\\ud800"',
    '"\\u0000"',
    '""',
    '"x"',
    "'recall@\u00b2'",
    f'"recall@{HUGE_DIGITS}"',
    "true",
    "1979-05-27T07:32:00Z",
    "1979-05-27",
    "07:32:00",
    "[]",
    "{}",
    '[1, "a"]',
    "[" * DEEP + "]" * DEEP,
    "{a = " * DEEP + "1" + "}" * DEEP,
    '"""\nmulti\nline"""',
)


class Raw(str):
    """JSON text inserted as is where a value (or key) would be encoded."""


class Pairs(list[tuple[Any, Any]]):
    """A JSON object that may repeat a key (what a ``dict`` cannot hold)."""


def encode(value: Any) -> str:
    """JSON text of ``value``, with :class:`Raw` tokens spliced in and :class:`Pairs` kept."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        value = Pairs(value.items())
    if isinstance(value, Pairs):
        items = (
            f"{key if isinstance(key, Raw) else json.dumps(key, ensure_ascii=False)}: "
            f"{encode(item)}"
            for key, item in value
        )
        return "{" + ", ".join(items) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(encode(item) for item in value) + "]"
    return json.dumps(value, ensure_ascii=False)


Path_ = tuple[Any, ...]


def _paths(value: Any, prefix: Path_ = ()) -> list[Path_]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_paths(item, (*prefix, index)))
    return found


def _containers(value: Any, prefix: Path_ = ()) -> list[Path_]:
    return [path for path in _paths(value, prefix) if isinstance(_get(value, path), dict | list)]


def _get(value: Any, path: Path_) -> Any:
    for part in path:
        value = value[part]
    return value


def _replace(value: Any, path: Path_, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        copy = dict(value)
        copy[head] = _replace(value[head], rest, new)
        return copy
    items = list(value)
    items[head] = _replace(value[head], rest, new)
    return items


plain_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def mutated_value(draw: st.DrawFn, value: Any) -> Any:
    """``value`` (parsed JSON) with one structural change; the result may hold Raw/Pairs."""
    paths = _paths(value)
    path = draw(st.sampled_from(paths))
    op = draw(st.sampled_from(["odd", "odd", "odd", "plain", "wrap", "drop", "dup", "add", "key"]))
    target = _get(value, path)
    if op == "odd":
        return _replace(value, path, Raw(draw(st.sampled_from(ODD_JSON))))
    if op == "plain":
        return _replace(value, path, draw(plain_json))
    if op == "wrap":
        return _replace(value, path, draw(st.sampled_from([[target], {"value": target}])))
    containers = _containers(value)
    if not containers:  # a scalar document: nothing to drop, double or add to
        return Raw(draw(st.sampled_from(ODD_JSON)))
    path = draw(st.sampled_from(containers))
    target = _get(value, path)
    if op == "drop" and target:
        if isinstance(target, dict):
            key = draw(st.sampled_from(sorted(target)))
            return _replace(value, path, {k: v for k, v in target.items() if k != key})
        index = draw(st.integers(0, len(target) - 1))
        return _replace(value, path, target[:index] + target[index + 1 :])
    if isinstance(target, dict):
        if op == "dup" and target:
            key = draw(st.sampled_from(sorted(target)))
            other = Raw(draw(st.sampled_from(ODD_JSON[:20])))
            return _replace(value, path, Pairs([*target.items(), (key, other)]))
        if op == "key" and target:
            key = draw(st.sampled_from(sorted(target)))
            odd = Raw(draw(st.sampled_from(ODD_KEYS)))
            return _replace(
                value, path, Pairs([(odd if k == key else k, v) for k, v in target.items()])
            )
        extra = draw(st.sampled_from(["extra", "kind", "schema_version", "text", "start", "end"]))
        return _replace(value, path, Pairs([*target.items(), (extra, draw(plain_json))]))
    return _replace(value, path, [*target, draw(plain_json)])


@st.composite
def _mutated_json_text(draw: st.DrawFn, text: str) -> str:
    value: Any = json.loads(text)
    for _ in range(draw(st.integers(1, 3))):
        changed = draw(mutated_value(value))
        if isinstance(changed, Raw | Pairs) or _holds_special(changed):
            return encode(changed)
        value = changed
    return encode(value)


def _holds_special(value: Any) -> bool:
    if isinstance(value, Raw | Pairs):
        return True
    if isinstance(value, dict):
        return any(_holds_special(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_special(v) for v in value)
    return False


@st.composite
def mutated_jsonl(draw: st.DrawFn, seed: bytes) -> bytes:
    """A JSONL file with one to three of its lines structurally changed."""
    lines = seed.decode("utf-8").splitlines()
    indices = st.lists(st.integers(0, len(lines) - 1), min_size=1, max_size=3, unique=True)
    for index in draw(indices):
        lines[index] = draw(_mutated_json_text(lines[index]))
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


@st.composite
def mutated_json(draw: st.DrawFn, seed: bytes) -> bytes:
    """A whole-file JSON document structurally changed."""
    text = draw(_mutated_json_text(seed.decode("utf-8")))
    indent = draw(st.booleans())
    if indent and "\n" not in text:
        text = text.replace(", ", ",\n  ")
    return text.encode("utf-8", "surrogatepass")


@st.composite
def mutated_toml(draw: st.DrawFn, seed: bytes) -> bytes:
    """A TOML file with a value swapped for an odd one, a key doubled, made odd, or dropped."""
    lines = seed.decode("utf-8").splitlines()
    assignments = [i for i, line in enumerate(lines) if " = " in line]
    for _ in range(draw(st.integers(1, 2))):
        index = draw(st.sampled_from(assignments))
        key, _, _ = lines[index].partition(" = ")
        op = draw(st.sampled_from(["odd", "odd", "odd", "dup", "key", "drop", "table"]))
        if op == "odd":
            lines[index] = f"{key} = {draw(st.sampled_from(ODD_TOML))}"
        elif op == "dup":
            lines.insert(index, f"{key} = {draw(st.sampled_from(ODD_TOML[:12]))}")
        elif op == "key":
            odd = draw(st.sampled_from(['"recall@²"', f'"recall@{HUGE_DIGITS}"', '""', "a.b.c"]))
            lines[index] = f"{odd} = {lines[index].partition(' = ')[2]}"
        elif op == "drop":
            lines[index] = ""
        else:
            header = draw(st.sampled_from(["[tool]", "[tool.spanchor]", "[max_drop]", "[[k]]"]))
            lines.insert(index, header)
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


def _multibyte_cuts(data: bytes) -> list[int]:
    """Positions just after a UTF-8 lead byte of a multi-byte character (a cut mid-character)."""
    return [i + 1 for i, byte in enumerate(data) if byte >= 0xC0]


@st.composite
def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with file-level damage (or none)."""
    op = draw(
        st.sampled_from(
            [
                "none", "bom", "crlf", "torn", "torn_multibyte", "cut", "nul", "bad_utf8",
                "huge_line", "drop_line", "dup_line", "swap_lines", "blank_lines", "garbage",
                "bom_twice", "no_final_newline",
            ]
        )
    )  # fmt: skip
    lines = data.split(b"\n")
    if op == "bom":
        return b"\xef\xbb\xbf" + data
    if op == "bom_twice":
        return b"\xef\xbb\xbf\xef\xbb\xbf" + data
    if op == "crlf":
        return data.replace(b"\n", b"\r\n")
    if op == "torn" and len(data.rstrip(b"\n")) > 0:
        body = data.rstrip(b"\n")
        start = body.rfind(b"\n") + 1
        return body[: draw(st.integers(start, len(body) - 1))] if len(body) > start else body
    if op == "torn_multibyte":
        cuts = _multibyte_cuts(data)
        if cuts:
            return data[: draw(st.sampled_from(cuts))]
    if op == "cut" and data:
        return data[: draw(st.integers(0, len(data) - 1))]
    if op == "nul" and data:
        at = draw(st.integers(0, len(data)))
        return data[:at] + b"\x00" + data[at:]
    if op == "bad_utf8" and data:
        at = draw(st.integers(0, len(data)))
        return (
            data[:at] + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80"])) + data[at:]
        )
    if op == "huge_line":
        return data + b'{"query_id": "' + b"x" * 300_000 + b'"}\n'
    if op == "drop_line" and len(lines) > 1:
        index = draw(st.integers(0, len(lines) - 1))
        return b"\n".join(lines[:index] + lines[index + 1 :])
    if op == "dup_line" and len(lines) > 1:
        index = draw(st.integers(0, len(lines) - 1))
        return b"\n".join([*lines[: index + 1], lines[index], *lines[index + 1 :]])
    if op == "swap_lines" and len(lines) > 2:
        i, j = draw(st.integers(0, len(lines) - 2)), draw(st.integers(0, len(lines) - 2))
        lines[i], lines[j] = lines[j], lines[i]
        return b"\n".join(lines)
    if op == "blank_lines":
        return data.replace(b"\n", b"\n\n   \n", 1)
    if op == "garbage":
        return data + draw(st.binary(min_size=1, max_size=64))
    if op == "no_final_newline":
        return data.rstrip(b"\n")
    return data


EMPTY_LIKE: tuple[bytes, ...] = (
    b"",
    b"\n",
    b"   \n\t\n",
    b"\xef\xbb\xbf",
    b"\x00" * 16,
    b"{}",
    b"[]",
)


def hostile(
    seed: bytes, structural: Callable[[bytes], st.SearchStrategy[bytes]]
) -> st.SearchStrategy[bytes]:
    """Every kind of bad file built from ``seed``: mostly structural mutations (some also
    damaged), some damage alone, some near-empty files, some random bytes."""
    return st.one_of(
        structural(seed).flatmap(damaged),
        structural(seed),
        damaged(seed),
        st.sampled_from(EMPTY_LIKE),
        st.binary(max_size=512),
    )
