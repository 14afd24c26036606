"""The recorders' hot path (results built in line form) writes exactly what the general path
writes: the same bytes for every shape of document and node, odd values included."""

from __future__ import annotations

import math
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

from langchain_core.documents import Document
from llama_index.core.schema import BaseNode, NodeWithScore, TextNode

from spanchor_core.runs.encoding import encode_line
from spanchor_core.runs.write import ResultEntries, record_payload, result_entry
from spanchor_langchain.documents import (
    document_id_function,
    documents_to_entries,
    documents_to_results,
)
from spanchor_llamaindex.nodes import NodeConverter


class MyDocument(Document):
    """A Document subclass: takes the general conversion inside the hot path."""


def _line(results: Any) -> bytes:
    return encode_line(record_payload("q1", "the question", results, 1.5, None, None))


DOCUMENTS: list[Any] = [
    Document(page_content="alpha", metadata={"source": "a.md", "start_index": 7, "score": 0.5}),
    Document(page_content="beta", metadata={"start_index": -1, "relevance_score": 2}),
    Document(page_content="gamma", metadata={"score": float("nan")}),
    (Document(page_content="delta", metadata={"score": 0.1}), 0.75),
    (Document(page_content="eps", metadata={}), float("inf")),
    MyDocument(page_content="zeta", metadata={"score": 0.3, "start_index": 0}),
    {"page_content": "eta", "metadata": {"score": 0.2}},
    {"text": "theta", "score": 0.9},
    "iota",
]


@pytest.mark.parametrize("rule", [None, "source", lambda d: d.metadata.get("source")])
@pytest.mark.parametrize("max_results", [None, 1, 4, 100])
def test_langchain_entries_write_the_same_bytes_as_results(rule: Any, max_results: Any) -> None:
    function = document_id_function(rule)
    keys = ("score", "relevance_score")
    entries = documents_to_entries(DOCUMENTS, function, keys, max_results)
    results = documents_to_results(DOCUMENTS, document_id=rule, max_results=max_results)
    assert type(entries) is ResultEntries
    assert len(entries) == len(results) == min(len(DOCUMENTS), max_results or 100)
    assert _line(entries) == _line(results)


def test_langchain_entries_refuse_what_writing_refuses() -> None:
    documents = [Document(page_content="x", metadata={"source": 3})]
    function = document_id_function(lambda d: d.metadata["source"])  # not a string
    with pytest.raises(TypeError, match="document_id must be a string"):
        documents_to_entries(documents, function, ("score",), None)
    with pytest.raises(TypeError, match="document_id must be a string"):
        _line(documents_to_results(documents, document_id=lambda d: d.metadata["source"]))
    with pytest.raises(TypeError, match="not a Document"):
        documents_to_entries([object()], None, ("score",), None)


def test_result_entry_checks_like_the_writer() -> None:
    entry = result_entry(1, "t", float("nan"), None, 3, 4, {"k": 1})
    assert entry["score"] is None
    assert result_entry(2, "t", -math.inf)["score"] is None
    assert result_entry(2, "t", 3)["score"] == 3.0
    with pytest.raises(TypeError):
        result_entry(True, "t")  # a boolean rank is refused
    with pytest.raises(TypeError):
        result_entry(1, "t", metadata=[("a", 1)])  # type: ignore[arg-type]


def test_llamaindex_entries_write_the_same_bytes_as_results() -> None:
    nodes: list[NodeWithScore | BaseNode] = [
        NodeWithScore(node=TextNode(text="one two", start_char_idx=0, end_char_idx=7), score=0.5),
        NodeWithScore(
            node=TextNode(text="three", metadata={"document_id": "d1"}, start_char_idx=-1),
            score=None,
        ),
        NodeWithScore(node=TextNode(text="four"), score=float("nan")),
        TextNode(text="bare node", metadata={"document_id": "d2"}),
    ]
    converter = NodeConverter()
    entries = converter.entries(nodes)
    assert type(entries) is ResultEntries
    assert _line(entries) == _line(converter.results(nodes))
    assert [converter.entry(node, rank) for rank, node in enumerate(nodes, 1)] == list(entries)


def test_an_open_recorder_refuses_header_arguments_in_both_integrations(tmp_path: Any) -> None:
    from spanchor_core import InputError, RunRecorder
    from spanchor_langchain import SpanchorCallbackHandler
    from spanchor_llamaindex import SpanchorEventHandler

    with RunRecorder(tmp_path / "run.jsonl") as recorder:
        with pytest.raises(InputError, match="tags when creating it"):
            SpanchorEventHandler(recorder, tags={"a": 1})
        with pytest.raises(InputError, match="tags when creating it"):
            SpanchorCallbackHandler(recorder, run_tags={"a": 1})
        handler = SpanchorEventHandler(recorder)
        handler.close()
        assert not recorder.closed  # the caller's recorder stays open
