"""LlamaIndex QA datasets (node-id gold) migrated to span gold that survives re-chunking."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import MetadataMode

from spanchor_core import Corpus, InputError, read_gold, validate_gold, write_gold
from spanchor_llamaindex import (
    QADataset,
    SpanRetrieverEvaluator,
    gold_from_qa_dataset,
    read_qa_dataset,
    write_qa_dataset,
)
from tests.integrations.test_llamaindex import bm25_retriever

TEXTS = {
    "manual": (
        "The kettle holds at most 1.7 litres of water. Never fill it above the MAX mark. "
        "Descale the kettle every month with white vinegar. Rinse it twice before use."
    ),
    "warranty": (
        "The warranty lasts two years from the date of purchase. Rinse it twice before use. "
        "Keep the receipt as proof of purchase."
    ),
}


def _dataset_from_chunking(corpus: Corpus, chunk_size: int) -> tuple[QADataset, dict[str, str]]:
    """A QA dataset as generate_question_context_pairs would write it (ids of these nodes)."""
    documents = [Document(text=corpus.text(d), metadata={"document_id": d}) for d in corpus]
    nodes = SentenceSplitter(chunk_size=chunk_size, chunk_overlap=0).get_nodes_from_documents(
        documents
    )
    by_text = {n.get_content(MetadataMode.NONE): n.node_id for n in nodes}
    texts = {n.node_id: n.get_content(MetadataMode.NONE) for n in nodes}

    def node_with(fragment: str) -> str:
        return next(node_id for text, node_id in by_text.items() if fragment in text)

    dataset = QADataset(
        queries={
            "q1": "How often should the kettle be descaled?",
            "q2": "How long is the warranty?",
        },
        corpus=texts,
        relevant_docs={"q1": (node_with("Descale"),), "q2": (node_with("two years"),)},
    )
    documents_of = {n.node_id: n.metadata["document_id"] for n in nodes}
    return dataset, documents_of


def test_read_write_round_trip(tmp_path: Path) -> None:
    dataset = QADataset({"q": "Q?"}, {"n1": "text"}, {"q": ("n1",)})
    path = tmp_path / "qa.json"
    write_qa_dataset(dataset, path)
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert raw == {
        "queries": {"q": "Q?"},
        "corpus": {"n1": "text"},
        "relevant_docs": {"q": ["n1"]},
        "mode": "text",
    }
    assert read_qa_dataset(path) == dataset


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not JSON"),  # messages are regular expressions below
        ("[]", "expected a JSON object"),
        ('{"queries": {}, "corpus": {}}', "missing key 'relevant_docs'"),
        ('{"queries": {"q": 1}, "corpus": {}, "relevant_docs": {}}', r"queries\['q'\]"),
        ('{"queries": {}, "corpus": {}, "relevant_docs": {"q": "n1"}}', "list of node ids"),
        ('{"queries": {}, "corpus": {}, "relevant_docs": {}, "mode": "image"}', "'image'"),
    ],
)
def test_bad_files_say_what_is_wrong(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "qa.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message) as caught:
        read_qa_dataset(path)
    assert str(path) in str(caught.value)


def test_migration_reports_every_node_that_does_not_carry_over() -> None:
    corpus = Corpus.from_texts(TEXTS)
    dataset = QADataset(
        queries={
            "exact": "Q1",
            "ambiguous": "Q2",
            "resolved": "Q3",
            "missing": "Q4",
            "fuzzy": "Q5",
            "nothing": "Q6",
        },
        corpus={
            "n-exact": "Descale the kettle every month with white vinegar.",
            "n-twice": "Rinse it twice before use.",
            "n-gone": "This sentence was deleted from the manual.",
            # Metadata prepended, as get_content(MetadataMode.ALL) does.
            "n-meta": "file_name: manual.md\n\nThe kettle holds at most 1.7 litres of water. "
            "Never fill it above the MAX mark.",
        },
        relevant_docs={
            "exact": ("n-exact", "n-ghost"),
            "ambiguous": ("n-twice",),
            "resolved": ("n-twice",),
            "missing": ("n-gone",),
            "fuzzy": ("n-meta",),
        },
    )
    migration = gold_from_qa_dataset(dataset, corpus)
    assert list(migration.gold) == ["exact"]
    anchor = migration.gold["exact"].anchors[0]
    assert corpus.text("manual")[anchor.start : anchor.end] == dataset.corpus["n-exact"]
    assert migration.gold["exact"].metadata["node_ids"] == ["n-exact", "n-ghost"]
    assert migration.counts() == {
        "ambiguous": 2,
        "fuzzy": 1,
        "no_evidence": 5,
        "unknown_node": 1,
        "unlocated": 1,
    }
    assert not migration.ok
    ghost = next(p for p in migration.problems if p.code == "unknown_node")
    assert str(ghost) == (
        "query 'exact' node 'n-ghost': unknown_node: the dataset's corpus has no such node"
    )
    # Naming the node's document resolves the ambiguity; the fuzzy node can be accepted.
    lenient = gold_from_qa_dataset(
        dataset, corpus, node_documents={"n-twice": "warranty"}, accept_fuzzy=True
    )
    assert list(lenient.gold) == ["exact", "ambiguous", "resolved", "fuzzy"]
    assert lenient.gold["resolved"].anchors[0].document_id == "warranty"
    fuzzy = next(p for p in lenient.problems if p.code == "fuzzy")
    assert fuzzy.anchored
    assert validate_gold(lenient.gold, corpus) == []


def test_migrated_gold_survives_rechunking(tmp_path: Path) -> None:
    corpus = Corpus.from_texts(TEXTS)
    dataset, node_documents = _dataset_from_chunking(corpus, chunk_size=24)
    path = tmp_path / "qa.json"
    write_qa_dataset(dataset, path)
    migration = gold_from_qa_dataset(read_qa_dataset(path), corpus, node_documents=node_documents)
    assert migration.ok, migration.problems
    write_gold(migration.gold, tmp_path / "gold.jsonl")
    gold = read_gold(tmp_path / "gold.jsonl")
    assert gold == migration.gold
    # A different chunking: none of the dataset's node ids exist any more, the gold still works.
    documents = [Document(text=corpus.text(d), metadata={"document_id": d}) for d in corpus]
    nodes = SentenceSplitter(chunk_size=60, chunk_overlap=0).get_nodes_from_documents(documents)
    assert not {n.node_id for n in nodes} & set(dataset.corpus)
    evaluator = SpanRetrieverEvaluator.from_corpus(bm25_retriever(nodes, k=2), corpus, gold)
    outcome = evaluator.evaluate_gold(tmp_path / "run.jsonl")
    assert outcome.evaluation.mean("recall@5") == 1.0
