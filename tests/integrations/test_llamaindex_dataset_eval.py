"""evaluate_dataset over id-based QA datasets, LabelledRagDataset files, nodes, duplicates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("llama_index.retrievers.bm25")

from llama_index.core import Document
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import BaseNode

from spanchor_core import Corpus, InputError
from spanchor_llamaindex import (
    QADataset,
    SpanContext,
    SpanRetrieverEvaluator,
    gold_from_qa_dataset,
    gold_from_rag_dataset,
    read_rag_dataset,
    span_results_rows,
)

bm25 = pytest.importorskip("llama_index.retrievers.bm25")

# "Rinse it twice before use." occurs twice in the manual and once in the warranty.
TEXTS = {
    "manual": (
        "The kettle holds at most 1.7 litres of water. Rinse it twice before use. "
        "Descale the kettle every month with white vinegar. Rinse it twice before use."
    ),
    "warranty": (
        "The warranty lasts two years from the date of purchase. Rinse it twice before use. "
        "Keep the receipt as proof of purchase."
    ),
}
RINSE = "Rinse it twice before use."


def sentence_nodes() -> tuple[Corpus, list[BaseNode]]:
    corpus = Corpus.from_texts(TEXTS)
    documents = [Document(text=corpus.text(d), id_=d, metadata={"document_id": d}) for d in corpus]
    # One sentence per node: SentenceSplitter's offsets are exact for a single-stage parser.
    splitter = SentenceSplitter(chunk_size=12, chunk_overlap=0)
    return corpus, splitter.get_nodes_from_documents(documents)


def dataset(nodes: list[BaseNode]) -> QADataset:
    texts = {n.node_id: n.get_content() for n in nodes}
    rinses = [n for n in nodes if n.get_content() == RINSE]
    manual_second = max(
        (n for n in rinses if n.ref_doc_id == "manual"),
        key=lambda n: getattr(n, "start_char_idx", 0) or 0,
    )
    descale = next(n for n in nodes if "Descale" in n.get_content())
    return QADataset(
        queries={
            "q1": "How often should the kettle be descaled?",
            "q2": "What should I do before first use?",
            "q3": "What should I do before first use?",  # a duplicate question text
        },
        corpus=texts,
        relevant_docs={
            "q1": (descale.node_id,),
            "q2": (manual_second.node_id,),
            "q3": (next(n for n in rinses if n.ref_doc_id == "warranty").node_id,),
        },
    )


def test_nodes_with_offsets_resolve_within_document_ambiguity() -> None:
    corpus, nodes = sentence_nodes()
    qa = dataset(nodes)
    by_text = gold_from_qa_dataset(qa, corpus)
    assert {p.code for p in by_text.problems} >= {"ambiguous", "duplicate_question"}
    migration = gold_from_qa_dataset(qa, corpus, nodes=nodes)
    assert [p.code for p in migration.problems] == ["duplicate_question"]
    assert "same question as query 'q2'" in migration.problems[0].message
    second = TEXTS["manual"].rindex(RINSE)
    (anchor,) = migration.gold["q2"].anchors
    assert (anchor.document_id, anchor.start) == ("manual", second)
    (other,) = migration.gold["q3"].anchors
    assert other.document_id == "warranty"


def test_evaluate_dataset_is_a_drop_in_with_one_result_per_query() -> None:
    corpus, nodes = sentence_nodes()
    qa = dataset(nodes)
    retriever = bm25.BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=3)
    evaluator = SpanRetrieverEvaluator.from_corpus(
        retriever, SpanContext(corpus, nodes=nodes), k=(1, 3)
    )
    results = evaluator.evaluate_dataset(qa, workers=2)
    assert [r.query for r in results] == list(qa.queries.values())
    assert [r.expected_ids for r in results] == [list(qa.relevant_docs[q]) for q in qa.queries]
    # q2 and q3 ask the same thing but are scored against their own evidence.
    q2, q3 = results[1], results[2]
    assert q2.retrieved_ids == q3.retrieved_ids
    assert q2.metric_dict["span_recall@3"].metadata["gold_source"] == "gold_set"
    retrieved = [n for n in nodes if n.node_id in q2.retrieved_ids]
    places = {(n.ref_doc_id, getattr(n, "start_char_idx", None)) for n in retrieved}
    second = ("manual", TEXTS["manual"].rindex(RINSE))
    warranty = ("warranty", TEXTS["warranty"].index(RINSE))
    assert q2.metric_vals_dict["span_recall@3"] == float(second in places)
    assert q3.metric_vals_dict["span_recall@3"] == float(warranty in places)
    rows = span_results_rows(results)
    assert [row["query"] for row in rows] == list(qa.queries.values())
    assert "span_recall@3" in rows[0]


def test_evaluate_dataset_refuses_unanchorable_gold_up_front() -> None:
    corpus, nodes = sentence_nodes()
    qa = dataset(nodes)
    retriever = bm25.BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=3)
    text_only = SpanRetrieverEvaluator.from_corpus(retriever, corpus)
    with pytest.raises(InputError, match="2 of 3 dataset queries have no anchorable gold"):
        text_only.evaluate_dataset(qa)  # by text alone: q2, q3 ambiguous


def test_labelled_rag_dataset_json_becomes_span_gold(tmp_path: Path) -> None:
    corpus = Corpus.from_texts(TEXTS)
    path = tmp_path / "rag_dataset.json"
    examples = [
        {
            "query": "How long is the warranty?",
            "query_by": {"model_name": "gpt-4", "type": "ai"},
            "reference_contexts": ["The warranty lasts two years from the date of purchase."],
            "reference_answer": "Two years.",
            "reference_answer_by": {"model_name": "gpt-4", "type": "ai"},
        },
        {
            "query": "How long is the warranty?",
            "reference_contexts": ["Keep the receipt as proof of purchase."],
            "reference_answer": "Two years, with the receipt.",
        },
        {"query": "What is never written?", "reference_contexts": ["not in any document"]},
    ]
    path.write_text(json.dumps({"examples": examples}), encoding="utf-8")
    rag = read_rag_dataset(path)
    assert [e.reference_answer for e in rag.examples][:2] == [
        "Two years.",
        "Two years, with the receipt.",
    ]
    migration = gold_from_rag_dataset(rag, corpus)
    assert list(migration.gold) == ["rag-0001", "rag-0002"]
    assert migration.gold["rag-0001"].tags == ("llamaindex-rag",)
    assert migration.counts() == {"duplicate_question": 1, "no_evidence": 1, "unlocated": 1}
    (anchor,) = migration.gold["rag-0001"].anchors
    assert (anchor.document_id, anchor.start) == ("warranty", 0)
    path.write_text(json.dumps({"examples": [{"query": 3}]}), encoding="utf-8")
    with pytest.raises(InputError, match=r"examples\[0\].query must be a non-empty string"):
        read_rag_dataset(path)
