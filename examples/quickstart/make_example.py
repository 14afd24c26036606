"""Regenerate the quickstart example: the gold set, three BM25 runs and their chunk inventories.

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

Each index also gets its chunk inventory (``chunks/<chunking>.jsonl``: every chunk, in index
order), and its run's header points to it (tag ``spanchor.chunks``, a path relative to the run
file). With both inventories the gate splits each recall@K change into what the chunking cost
(oracle recall before → after) and what the ranking cost.

Run from anywhere:  python examples/quickstart/make_example.py [OUT_DIR]
Output is deterministic: same documents, same files (each header's ``created_at`` aside).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import bm25s

from spanchor_core import load_corpus
from spanchor_core.corpus import Corpus
from spanchor_core.diagnosis import INVENTORY_TAG, Chunk, write_chunks
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


def chunkings(corpus: Corpus) -> dict[str, tuple[str, str, list[tuple[str, str]]]]:
    """``{chunking: (run name, description, [(document_id, text)])}`` for the three indexes."""
    return {
        "paragraphs": (
            "baseline",
            "one chunk per paragraph, heading included (runs/baseline.jsonl)",
            paragraph_chunks(corpus),
        ),
        "windows-200": (
            "candidate",
            "200-character windows, no overlap (runs/candidate.jsonl)",
            window_chunks(corpus, 200),
        ),
        "windows-400-overlap-200": (
            "candidate-overlap",
            "400-character windows overlapping by 200 (runs/candidate-overlap.jsonl)",
            window_chunks(corpus, 400, overlap=200),
        ),
    }


def write_inventory(
    path: Path, name: str, description: str, chunks: list[tuple[str, str]], corpus: Corpus
) -> None:
    """Write the chunk inventory of an index: every chunk in index order, id ``name/NNN``.

    Each chunk keeps its text and source document; offsets are left to the locator, as they
    would be for an index that does not store them.
    """
    write_chunks(
        [
            Chunk(text, document_id, chunk_id=f"{name}/{number:03d}")
            for number, (document_id, text) in enumerate(chunks)
        ],
        path,
        description=description,
        parameters={"chunker": name, "chunks": len(chunks)},
        corpus_fingerprint=corpus.fingerprint,
    )


def record_run(
    path: Path,
    name: str,
    chunks: list[tuple[str, str]],
    gold: GoldSet,
    corpus: Corpus,
    *,
    inventory: str | None = None,
) -> None:
    """Index ``chunks`` with BM25, ask every gold question, record the top ``TOP_K`` texts.

    Only the chunk text is recorded (plus its source document as metadata): spanchor maps it
    back onto the documents, which is what a real application's log would let it do.
    ``inventory`` (a path relative to the run file's folder) goes in the header's
    ``spanchor.chunks`` tag.
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
        tags={INVENTORY_TAG: inventory} if inventory is not None else None,
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
    """Write ``gold.jsonl``, the three runs under ``out/runs`` and their inventories under
    ``out/chunks``."""
    corpus = load_corpus(HERE / "docs")
    gold = build_gold(corpus)
    write_gold(gold, out / "gold.jsonl")
    (out / "runs").mkdir(parents=True, exist_ok=True)
    (out / "chunks").mkdir(parents=True, exist_ok=True)
    for name, (run, description, chunks) in chunkings(corpus).items():
        write_inventory(out / "chunks" / f"{name}.jsonl", name, description, chunks, corpus)
        record_run(
            out / "runs" / f"{run}.jsonl",
            name,
            chunks,
            gold,
            corpus,
            inventory=f"../chunks/{name}.jsonl",
        )
    print(f"wrote {len(gold)} queries, three runs and their chunk inventories under {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
