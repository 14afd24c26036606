"""The in-memory corpus: ids that cannot escape, the fingerprint, find_all, argument checks."""

from __future__ import annotations

from typing import Any

import pytest

from spanchor_core.corpus import Corpus, Document
from spanchor_core.errors import CorpusError
from spanchor_core.spans import DocSpan


@pytest.mark.parametrize("bad_id", ["../x", "/abs", "a/../../b", ""])
def test_in_memory_ids_cannot_escape(bad_id: str) -> None:
    with pytest.raises(CorpusError):
        Corpus.from_texts({bad_id: "text"})


def test_fingerprint_is_order_independent_and_content_sensitive() -> None:
    one = Corpus.from_texts({"a": "x", "b": "y"})
    two = Corpus.from_texts({"b": "y", "a": "x"})
    assert one.fingerprint == two.fingerprint
    assert list(two) == ["a", "b"]
    assert Corpus.from_texts({"a": "x", "b": "z"}).fingerprint != one.fingerprint
    assert Corpus.from_texts({"a": "x", "c": "y"}).fingerprint != one.fingerprint
    # canonically equal texts give the same fingerprint
    crlf = Corpus.from_texts({"a": "x\r\n"})
    assert crlf.fingerprint == Corpus.from_texts({"a": "x\n"}).fingerprint


def test_find_all_canonicalises_the_needle() -> None:
    corpus = Corpus.from_texts({"b": "caf\u00e9 and caf\u00e9", "a": "caf\u00e9"})
    found = corpus.find_all("cafe\u0301")
    assert found == [DocSpan("a", 0, 4), DocSpan("b", 0, 4), DocSpan("b", 9, 13)]
    assert corpus.find_all("café", document_id="a") == [DocSpan("a", 0, 4)]
    assert corpus.find_all("") == []


@pytest.mark.parametrize(
    "texts",
    [{"a": b"bytes"}, {"a": None}, {3: "text"}, {("a",): "text"}],
)
def test_non_string_ids_and_texts_are_corpus_errors(texts: dict[Any, Any]) -> None:
    with pytest.raises(CorpusError, match="must be a string"):
        Corpus.from_texts(texts)


def test_document_from_text_checks_its_arguments() -> None:
    bad: Any = b"bytes"
    with pytest.raises(CorpusError, match="text must be a string, got bytes; decode bytes"):
        Document.from_text("a", bad)
    with pytest.raises(CorpusError, match="id must be a string"):
        Document.from_text(bad, "text")
