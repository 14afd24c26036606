"""The recorders' hot path (results built in line form) writes exactly what the general path
writes: the same bytes for every shape of document and node, odd values included."""

from __future__ import annotations

import math
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

from langchain_core.documents import Document
from llama_index.core.schema import (
    BaseNode,
    NodeRelationship,
    NodeWithScore,
    RelatedNodeInfo,
    TextNode,
)

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
    Document(page_content="kappa", metadata={"score": True, "relevance_score": 0.4}),
    Document(page_content="lambda", metadata={"score": "high", "relevance_score": 3}),
    (MyDocument(page_content="mu", metadata={"start_index": 2}), 0.5),
    Document(page_content="xi", metadata={"score": None, "relevance_score": float("-inf")}),
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
    assert [entry["rank"] for entry in entries] == list(range(1, len(entries) + 1))
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


def test_llamaindex_fast_path_matches_the_general_path_on_every_shape(tmp_path: Any) -> None:
    from llama_index.core.schema import Document as LlamaDocument

    from spanchor_core import load_corpus

    raw = "Cafe\u0301 au lait.\r\nThe kettle holds 1.7 litres.\r\n"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "menu.txt").write_bytes(raw.encode("utf-8"))
    corpus = load_corpus(docs)
    start = raw.index("The kettle")
    source = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id="menu")}
    odd = TextNode.model_construct(text=None, start_char_idx=2.0, end_char_idx=7)  # type: ignore[arg-type]
    unlinked = TextNode(text="w", start_char_idx=0, end_char_idx=1)
    unlinked.relationships[NodeRelationship.SOURCE] = None  # type: ignore[assignment]
    nodes: list[NodeWithScore | BaseNode] = [
        NodeWithScore(  # raw offsets, translated with the corpus
            node=TextNode(
                text="The kettle holds 1.7 litres.",
                start_char_idx=start,
                end_char_idx=start + 28,
                metadata={"document_id": "menu"},
            ),
            score=1,
        ),
        NodeWithScore(node=TextNode(text="x", relationships=source), score=0.25),
        NodeWithScore(node=TextNode(text="y", metadata={"document_id": ""}), score=-0.0),
        NodeWithScore(node=TextNode(text="z", start_char_idx=5, end_char_idx=-3)),
        NodeWithScore(node=odd, score=float("-inf")),
        NodeWithScore(node=unlinked, score=0.5),  # a source set to None: no ref_doc_id
        NodeWithScore(node=TextNode(text="v", start_char_idx=True), score=2.5),
        NodeWithScore(node=LlamaDocument(text="a whole document", id_="menu"), score=0.5),
        TextNode(text="bare node", metadata={"document_id": "d2"}),
    ]
    for converter in (NodeConverter(), NodeConverter(corpus), NodeConverter(document_id=str)):
        seen: set[str] = set()
        entries = converter.entries(nodes, seen)
        assert list(entries) == [converter.entry(n, r) for r, n in enumerate(nodes, 1)]
        assert _line(entries) == _line(converter.results(nodes))
        assert seen == {n.node.node_id for n in nodes if isinstance(n, NodeWithScore)} | {
            nodes[-1].node_id
        }
    translated = NodeConverter(corpus).entries(nodes)
    assert translated[0]["metadata"]["offsets"] == "raw"
    assert translated[1]["document_id"] == "menu"  # ref_doc_id, read from the relationships
    assert translated[1]["metadata"]["ref_doc_id"] == "menu"


def test_llamaindex_entries_fill_seen_even_when_a_node_fails() -> None:
    bad = TextNode(text="bad")
    bad.relationships[NodeRelationship.SOURCE] = []  # what the ref_doc_id property refuses
    nodes = [NodeWithScore(node=TextNode(text="a")), NodeWithScore(node=bad)]
    nodes.append(NodeWithScore(node=TextNode(text="c")))
    seen: set[str] = set()
    with pytest.raises(ValueError, match="single RelatedNodeInfo"):
        NodeConverter().entries(nodes, seen)
    assert seen == {n.node.node_id for n in nodes}


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
