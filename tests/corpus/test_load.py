"""Loading a corpus from a directory: ids from relative paths, globs, UTF-8, links, roots."""

from __future__ import annotations

import dataclasses
import os
import pickle
from pathlib import Path

import pytest

from spanchor_core.corpus import Corpus, Document, load_corpus, sha256_text
from spanchor_core.corpus import load as load_module
from spanchor_core.errors import CorpusError, InputError


def test_load_corpus_ids_are_relative_paths_without_suffix(tmp_path: Path) -> None:
    (tmp_path / "guide").mkdir()
    (tmp_path / "a.md").write_text("alpha", encoding="utf-8")
    (tmp_path / "guide" / "b.txt").write_bytes(b"\xef\xbb\xbfbeta\r\n")
    (tmp_path / ".hidden.md").write_text("secret", encoding="utf-8")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "c.txt").write_text("no", encoding="utf-8")
    (tmp_path / "skip.json").write_text("{}", encoding="utf-8")
    corpus = load_corpus(tmp_path)
    assert list(corpus) == ["a", "guide/b"]
    assert corpus.text("guide/b") == "beta\n"  # BOM dropped, CRLF unified
    assert corpus["guide/b"].sha256 == sha256_text("beta\n")
    assert corpus.root == tmp_path


def test_globs_are_configurable(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("alpha", encoding="utf-8")
    (tmp_path / "b.rst").write_text("beta", encoding="utf-8")
    assert list(load_corpus(tmp_path, globs=["*.rst"])) == ["b"]


def test_two_files_with_one_id_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("one", encoding="utf-8")
    (tmp_path / "a.txt").write_text("two", encoding="utf-8")
    with pytest.raises(CorpusError, match="would both get the document id 'a'"):
        load_corpus(tmp_path)


def test_not_utf8_names_file_and_byte(tmp_path: Path) -> None:
    (tmp_path / "bad.txt").write_bytes(b"caf\xe9 ok")
    with pytest.raises(CorpusError) as info:
        load_corpus(tmp_path)
    assert str(info.value).startswith(f"{tmp_path / 'bad.txt'}: not valid UTF-8 at byte 3")
    assert isinstance(info.value, InputError)


def test_symlink_out_of_root_is_rejected(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret", encoding="utf-8")
    root = tmp_path / "root"
    root.mkdir()
    (root / "ok.txt").write_text("fine", encoding="utf-8")
    os.symlink(outside, root / "leak.txt")
    with pytest.raises(CorpusError, match="outside the corpus root"):
        load_corpus(root)


def test_symlink_inside_root_is_fine(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("fine", encoding="utf-8")
    os.symlink(tmp_path / "real.txt", tmp_path / "alias.txt")
    assert list(load_corpus(tmp_path)) == ["alias", "real"]


@pytest.mark.parametrize("pattern", ["../*.txt", "/etc/*.txt"])
def test_globs_cannot_leave_root(tmp_path: Path, pattern: str) -> None:
    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    with pytest.raises(CorpusError, match="outside the corpus root"):
        load_corpus(tmp_path, globs=[pattern])


def test_missing_and_empty_roots(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="does not exist"):
        load_corpus(tmp_path / "nope")
    with pytest.raises(CorpusError, match="no documents"):
        load_corpus(tmp_path)
    (tmp_path / "f.txt").write_text("x", encoding="utf-8")
    with pytest.raises(CorpusError, match="not a directory"):
        load_corpus(tmp_path / "f.txt")


def test_odd_roots_and_globs_are_corpus_errors(tmp_path: Path) -> None:
    # issue 12: an over-long name, a NUL byte or a bad pattern escaped as OSError/ValueError
    (tmp_path / "a.md").write_text("text", encoding="utf-8")
    for root in ("d" * 300, "a\0b", str(tmp_path / ("d" * 300))):
        with pytest.raises(CorpusError, match="cannot open the corpus directory"):
            load_corpus(root)
    for pattern in ("*" * 300, "a/" * 3000):
        with pytest.raises(CorpusError, match="cannot be used"):
            load_corpus(tmp_path, globs=(pattern,))


def test_a_file_name_that_is_not_utf8_is_a_corpus_error(tmp_path: Path) -> None:
    (tmp_path / "ok.md").write_text("text", encoding="utf-8")
    (tmp_path / os.fsdecode(b"bad\xff.md")).write_text("x", encoding="utf-8")
    with pytest.raises(CorpusError, match="file name is not valid UTF-8"):
        load_corpus(tmp_path)


def test_in_memory_text_or_ids_with_lone_surrogates_are_corpus_errors() -> None:
    with pytest.raises(CorpusError, match="lone surrogate U\\+D800 at character 1"):
        Corpus.from_texts({"a": "x\ud800"})
    with pytest.raises(CorpusError, match="lone surrogate"):
        Corpus.from_texts({"\udcff": "x"})


def _odd_tree(root: Path) -> None:
    """Nested and hidden directories, a linked directory, a directory named like a document,
    dotted and extension-less names, a link to a file inside the root."""
    for rel, text in {
        "a.md": "a",
        "b.txt": "b",
        "sub/c.md": "c",
        "sub/deeper/d.v1.md": "d",
        "sub/.hidden/e.md": "hidden",
        ".top/f.md": "hidden",
        "sub/noext": "no extension",
        "sub/trail.": "trailing dot",
        "x.md/inner.txt": "inside a directory named x.md",
        "Upper.MD": "other case",
    }.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    os.symlink(root / "sub", root / "linked")  # rglob does not enter a linked directory
    os.symlink(root / "a.md", root / "alias.md")
    os.symlink(root / "missing.md", root / "dangling.md")  # a link to nothing: not a file
    os.mkfifo(root / "pipe.md")  # neither a file nor a directory: skipped, never opened
    (root / "crlf.md").write_bytes(b"\xef\xbb\xbfline one\r\nline two\r\n")  # not canonical


@pytest.mark.parametrize("globs", [("*.txt", "*.md"), ("*",), ("*.md", "*.md"), ("?.md", "[ab].*")])
def test_the_directory_walk_loads_what_rglob_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, globs: tuple[str, ...]
) -> None:
    _odd_tree(tmp_path)
    fast = load_corpus(tmp_path, globs=globs)
    monkeypatch.setattr(load_module, "_name_pattern", lambda pattern: None)
    slow = load_corpus(tmp_path, globs=globs)
    assert list(fast) == list(slow)
    assert [(d.id, d.text, d.path) for d in fast.values()] == [
        (d.id, d.text, d.path) for d in slow.values()
    ]
    assert "linked/c" not in fast
    assert len(fast) >= 2
    assert "pipe" not in fast
    assert "dangling" not in fast
    for document in fast.values():  # the digest is the canonical text's, however it was read
        assert document.sha256 == sha256_text(document.text)
    if "crlf" in fast:
        assert fast["crlf"].text == "line one\nline two\n"


@pytest.mark.parametrize("size", [0, 1, (1 << 16) - 1, 1 << 16, (1 << 16) + 1, 3 << 20])
def test_files_of_any_size_are_read_whole(tmp_path: Path, size: int) -> None:
    data = (b"abcdefghij\n" * (size // 11 + 1))[:size]
    (tmp_path / "a.md").write_bytes(data)
    (tmp_path / "b.md").write_bytes(b"x")  # an empty file alone is an empty corpus
    corpus = load_corpus(tmp_path)
    assert corpus.text("a") == data.decode("ascii")
    assert corpus["a"].sha256 == sha256_text(data.decode("ascii"))


def test_a_loaded_documents_path_is_a_path_like_any_other(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.md").write_text("alpha", encoding="utf-8")
    loaded = load_corpus(tmp_path)["sub/a"]
    built = Document("sub/a", "alpha", sha256_text("alpha"), tmp_path / "sub" / "a.md")
    assert loaded == built
    assert hash(loaded) == hash(built)
    assert repr(loaded) == repr(built)
    assert type(loaded.path) is type(built.path)
    assert loaded.path == tmp_path / "sub" / "a.md"
    assert loaded.path is loaded.path  # made once
    again = pickle.loads(pickle.dumps(load_corpus(tmp_path)["sub/a"]))
    assert again == built
    assert type(again.path) is type(built.path)
    assert dataclasses.replace(load_corpus(tmp_path)["sub/a"], id="b").path == built.path
    assert dataclasses.asdict(load_corpus(tmp_path)["sub/a"]) == dataclasses.asdict(built)
    with pytest.raises(dataclasses.FrozenInstanceError):
        loaded.path = None  # type: ignore[misc]
    # a value given by hand is kept as given, whatever it is
    by_hand: object = Document("x", "t", "h", "plain text").path  # type: ignore[arg-type]
    assert by_hand == "plain text"
    assert Document("x", "t", "h").path is None


def test_a_duplicate_id_names_both_files(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("one", encoding="utf-8")
    (tmp_path / "a.txt").write_text("two", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"a\.txt and a\.md would both get the document id 'a'"):
        load_corpus(tmp_path)
