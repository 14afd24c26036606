"""A LlamaIndex retrieval eval suite with spanchor's span metrics, for one chunking.

The pipeline is LlamaIndex's own: ``SimpleDirectoryReader`` over the quickstart documents,
``SentenceSplitter`` (chunk size in tokens), ``BM25Retriever`` (``llama-index-retrievers-bm25``,
top 5). The suite then:

1. scores the 57 quickstart questions in ``RetrieverEvaluator`` with LlamaIndex's ``hit_rate``
   and ``mrr`` next to spanchor's ``span_hit@5``, ``span_recall@5`` and ``span_mrr``
   (registered by name with :func:`~spanchor_llamaindex.register_span_metrics`);
2. records every retrieval into a run file with
   :class:`~spanchor_llamaindex.SpanRetrieverEvaluator` — the file ``spanchor gate`` compares.

``hit_rate`` and ``mrr`` judge node ids, so their labels depend on the chunking: here they are
re-derived for every chunking from the span gold set (a node is relevant when it overlaps gold
evidence), which is what keeping labels as spans makes possible. The span metrics need no
relabelling at all: the gold set is the same file for every chunking.

Usage::

    python examples/llamaindex_eval/eval_suite.py --chunk-size 128 --out runs/baseline.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from llama_index.core import Document, SimpleDirectoryReader
from llama_index.core.evaluation import RetrieverEvaluator
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import BaseNode
from llama_index.retrievers.bm25 import BM25Retriever  # type: ignore[import-untyped]  # no py.typed

from spanchor_core import (
    Corpus,
    Evaluation,
    GoldSet,
    InputError,
    LocateRequest,
    Locator,
    load_corpus,
    read_gold,
)
from spanchor_llamaindex import (
    SpanContext,
    SpanRetrieverEvaluator,
    default_document_id,
    register_span_metrics,
    unregister_span_metrics,
)
from spanchor_llamaindex.nodes import node_text

__all__ = [
    "DOCS",
    "GOLD",
    "TABLE_METRICS",
    "Chunking",
    "ChunkingResult",
    "build_nodes",
    "evaluate_chunking",
    "expected_node_ids",
    "format_table",
    "load_documents",
    "main",
]

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent / "quickstart" / "docs"
GOLD = HERE.parent / "quickstart" / "gold.jsonl"

TABLE_METRICS = ("hit_rate", "mrr", "span_hit@5", "span_recall@5", "span_mrr")
"""LlamaIndex's two built-in retrieval metrics, then spanchor's, all by registry name."""


@dataclass(frozen=True, slots=True)
class Chunking:
    """A ``SentenceSplitter`` configuration (sizes in tokens)."""

    chunk_size: int
    chunk_overlap: int = 0

    def __str__(self) -> str:
        return f"{self.chunk_size} tokens, overlap {self.chunk_overlap}"


@dataclass(frozen=True, slots=True)
class ChunkingResult:
    """One chunking's nodes, its metric table row and the evaluation of its run file."""

    chunking: Chunking
    nodes: int
    means: dict[str, float]
    evaluation: Evaluation
    run_path: Path


def load_documents(docs: Path = DOCS) -> list[Document]:
    """The documents, with stable ids and file metadata kept out of the indexed text.

    ``SimpleDirectoryReader`` attaches six metadata fields (path, size, dates, ...); left in,
    ``SentenceSplitter`` subtracts them from every chunk's token budget and BM25 indexes the
    file paths as words. Document ids are the file names without suffix (random UUIDs by
    default), so node ids and run files are the same from one run to the next.
    """
    documents = SimpleDirectoryReader(str(docs), required_exts=[".md", ".txt"]).load_data()
    for document in documents:
        document.id_ = Path(document.metadata["file_name"]).stem
        keys = list(document.metadata)
        document.excluded_embed_metadata_keys = keys
        document.excluded_llm_metadata_keys = keys
    return documents


def _node_id(index: int, document: Document) -> str:
    return f"{document.doc_id}#{index}"


def build_nodes(documents: Sequence[Document], chunking: Chunking) -> list[BaseNode]:
    """Split the documents into nodes ``"<document>#<n>"`` (with file path and offsets)."""
    splitter = SentenceSplitter(
        chunk_size=chunking.chunk_size, chunk_overlap=chunking.chunk_overlap, id_func=_node_id
    )
    return splitter.get_nodes_from_documents(documents)


def expected_node_ids(
    nodes: Sequence[BaseNode], corpus: Corpus, gold: GoldSet
) -> dict[str, list[str]]:
    """Query id -> the ids of the nodes overlapping its gold evidence, for this chunking.

    Each node's text is located in the corpus by spanchor (node offsets are not trusted:
    ``toaster-manual.txt`` has CRLF line ends that LlamaIndex keeps and counts).
    """
    resolve = default_document_id(corpus)
    locations = Locator(corpus).locate_many(
        [LocateRequest(node_text(node), document_id=resolve(node)) for node in nodes]
    )
    expected: dict[str, list[str]] = {}
    for query_id, query in gold.items():
        expected[query_id] = [
            node.node_id
            for node, location in zip(nodes, locations, strict=True)
            if (span := location.span) is not None
            and any(
                span.document_id == anchor.document_id
                and span.start < anchor.end
                and anchor.start < span.end
                for anchor in query.anchors
            )
        ]
    return expected


async def _metric_means(
    retriever: BaseRetriever, expected: dict[str, list[str]], gold: GoldSet
) -> dict[str, float]:
    """Mean of every ``TABLE_METRICS`` entry over the gold set, through ``RetrieverEvaluator``."""
    evaluator = RetrieverEvaluator.from_metric_names(list(TABLE_METRICS), retriever=retriever)
    results = await asyncio.gather(
        *(
            evaluator.aevaluate(query=query.question, expected_ids=expected[query_id])
            for query_id, query in gold.items()
        )
    )
    return {
        name: statistics.fmean(result.metric_vals_dict[name] for result in results)
        for name in TABLE_METRICS
    }


async def evaluate_chunking(
    chunking: Chunking,
    out: Path,
    *,
    context: SpanContext | None = None,
    documents: Sequence[Document] | None = None,
) -> ChunkingResult:
    """Build the retriever for ``chunking``, score it, and record its run file at ``out``.

    ``context`` (corpus + gold + the locator's index) and ``documents`` can be shared between
    chunkings; by default both are loaded from the quickstart.
    """
    if context is None:
        context = SpanContext(load_corpus(DOCS), read_gold(GOLD))
    gold = context.gold
    if gold is None:
        raise InputError("the span context needs a gold set", hint="SpanContext(corpus, gold)")
    nodes = build_nodes(load_documents() if documents is None else documents, chunking)
    retriever: BaseRetriever = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=5)

    register_span_metrics(context, k=[5])  # "span_hit@5", "span_recall@5", "span_mrr", ...
    try:
        means = await _metric_means(retriever, expected_node_ids(nodes, context.corpus, gold), gold)
    finally:
        unregister_span_metrics()  # LlamaIndex's metric registry is global

    out.parent.mkdir(parents=True, exist_ok=True)
    evaluator = SpanRetrieverEvaluator.from_corpus(
        retriever,
        context,
        k=(1, 3, 5),
        description=f"llama-index BM25, SentenceSplitter {chunking}",
    )
    outcome = await evaluator.aevaluate_gold(
        out,
        tags={"chunk_size": chunking.chunk_size, "chunk_overlap": chunking.chunk_overlap},
    )
    return ChunkingResult(chunking, len(nodes), means, outcome.evaluation, outcome.run_path)


def format_table(results: Sequence[ChunkingResult]) -> str:
    """One row per chunking: node count, the ``TABLE_METRICS`` means, and the run's recall@5."""
    header = ["chunking", "nodes", *TABLE_METRICS]
    rows = [
        [
            str(result.chunking),
            str(result.nodes),
            *(f"{result.means[m]:.3f}" for m in TABLE_METRICS),
        ]
        for result in results
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="LlamaIndex BM25 eval suite with span metrics.")
    parser.add_argument("--chunk-size", type=int, required=True, help="tokens")
    parser.add_argument("--chunk-overlap", type=int, default=0, help="tokens")
    parser.add_argument("--out", type=Path, required=True, help="run file to write")
    args = parser.parse_args(argv)
    chunking = Chunking(args.chunk_size, args.chunk_overlap)
    # asyncio.run, not LlamaIndex's sync evaluate(): that one leaves an event loop unclosed.
    result = asyncio.run(evaluate_chunking(chunking, args.out))
    print(format_table([result]))
    print(f"\nrecorded {len(result.evaluation)} retrievals into {result.run_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
