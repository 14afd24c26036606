"""Regenerate the quickstart example: the gold set and three BM25 runs over three chunkings.

The story: the support assistant of a small appliance maker answers from ten documents (manuals,
an FAQ, policies, release notes, a French quick guide). Its retriever is BM25 (``bm25s``) over
paragraph chunks (``baseline``). A refactor replaces the paragraph splitter with fixed
200-character windows without overlap (``candidate``) so that every chunk has the same size;
windows ignore sentence boundaries, so evidence that straddles a boundary is cut in two and
each half, stripped of the words around it, ranks lower. The fix keeps the windows but makes
them 400 characters overlapping by 200 (``candidate-overlap``): any sentence of at most 200
characters then lies whole inside some window. Chunk ids change completely each time, but the
gold set — spans of the documents — does not, so spanchor can say exactly which questions lost
their evidence, and that the fix lost none.

``questions.json`` is the hand-written source of the gold set: each question names the
document and the exact evidence text, which is anchored with ``anchor_from_text``.

Run from anywhere:  python examples/quickstart/make_example.py [OUT_DIR]
Output is deterministic: same documents, same files (timestamps aside).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import bm25s

from spanchor_core import load_corpus
from spanchor_core.corpus import Corpus
from spanchor_core.gold import GoldQuery, GoldSet, anchor_from_text, write_gold
from spanchor_core.runs import RetrievedResult, RunRecorder

HERE = Path(__file__).resolve().parent
TOP_K = 5


def paragraph_chunks(corpus: Corpus) -> list[tuple[str, str]]:
    """Baseline chunker: one chunk per paragraph (blank-line separated), heading included."""
    chunks = []
    for document_id, doc in corpus.items():
        for block in re.split(r"\n\s*\n", doc.text):
            if block.strip():
                chunks.append((document_id, block.strip()))
    return chunks


def window_chunks(corpus: Corpus, size: int, overlap: int = 0) -> list[tuple[str, str]]:
    """Candidate chunkers: fixed windows that ignore sentence boundaries."""
    chunks = []
    stride = size - overlap
    for document_id, doc in corpus.items():
        for start in range(0, max(1, len(doc.text) - overlap), stride):
            piece = doc.text[start : start + size]
            if piece.strip():
                chunks.append((document_id, piece))
    return chunks


def build_gold(corpus: Corpus) -> GoldSet:
    """Anchor every evidence text of ``questions.json`` in its document (fails if absent)."""
    spec = json.loads((HERE / "questions.json").read_text(encoding="utf-8"))
    queries = [
        GoldQuery(
            query_id=item["id"],
            question=item["question"],
            anchors=tuple(
                anchor_from_text(corpus, text, document_id=item["document"])
                for text in item["evidence"]
            ),
        )
        for item in spec
    ]
    return GoldSet(
        queries, description="quickstart example: questions about the Orbit appliance range"
    )


def record_run(
    path: Path, name: str, chunks: list[tuple[str, str]], gold: GoldSet, corpus: Corpus
) -> None:
    """Index ``chunks`` with BM25, ask every gold question, record the top ``TOP_K`` texts.

    Only the chunk text is recorded (plus its source document as metadata): spanchor maps it
    back onto the documents, which is what a real application's log would let it do.
    """
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize([text for _, text in chunks], stopwords="en", show_progress=False),
        show_progress=False,
    )
    questions = [query.question for query in gold.values()]
    tokens = bm25s.tokenize(questions, stopwords="en", show_progress=False)
    ids, scores = retriever.retrieve(tokens, k=TOP_K, show_progress=False)
    with RunRecorder(
        path,
        retriever=f"bm25s BM25 over {name}",
        parameters={"chunker": name, "k": TOP_K, "chunks": len(chunks)},
        corpus_fingerprint=corpus.fingerprint,
        gold_sha256=gold.sha256,
        strict=True,
    ) as recorder:
        for row, query in enumerate(gold.values()):
            results = [
                RetrievedResult(
                    rank=rank,
                    text=chunks[int(ids[row][rank - 1])][1],
                    score=round(float(scores[row][rank - 1]), 6),
                    metadata={"source": chunks[int(ids[row][rank - 1])][0]},
                )
                for rank in range(1, TOP_K + 1)
            ]
            recorder.record(query.question, results, query_id=query.query_id)


def main(out: Path = HERE) -> None:
    """Write ``gold.jsonl`` and the three runs under ``out/runs``."""
    corpus = load_corpus(HERE / "docs")
    gold = build_gold(corpus)
    write_gold(gold, out / "gold.jsonl")
    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    record_run(runs / "baseline.jsonl", "paragraphs", paragraph_chunks(corpus), gold, corpus)
    record_run(runs / "candidate.jsonl", "windows-200", window_chunks(corpus, 200), gold, corpus)
    record_run(
        runs / "candidate-overlap.jsonl",
        "windows-400-overlap-200",
        window_chunks(corpus, 400, overlap=200),
        gold,
        corpus,
    )
    print(f"wrote {len(gold)} queries and three runs under {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
