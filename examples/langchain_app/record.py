"""Record the support assistant's retrievals on the quickstart gold questions into a run file.

The two lines that matter are the handler and the ``config``: the app itself (``app.py``) is
not changed. Every question goes through the whole chain — retriever, prompt, model, parser —
and :class:`~spanchor_langchain.SpanchorCallbackHandler` writes one run-file line per
retrieval: the chunks' text, their ``start_index`` as an offset hint (spanchor checks it
against the document before trusting it) and the document they came from.

Usage::

    python examples/langchain_app/record.py --chunk-size 500 --out runs/baseline.jsonl
    python examples/langchain_app/record.py --chunk-size 120 --out runs/candidate.jsonl
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from spanchor_core import load_corpus, read_gold
from spanchor_langchain import SpanchorCallbackHandler, source_to_document_id

if TYPE_CHECKING:  # mypy runs from the repository root; Python runs this file as a script
    from examples.langchain_app.app import DOCS, build_chain, build_retriever
else:
    from app import DOCS, build_chain, build_retriever

__all__ = ["DOCS", "GOLD", "main", "record"]

GOLD = DOCS.parent / "gold.jsonl"
"""The quickstart's 57 questions, their evidence anchored as spans of ``DOCS``."""


def record(out: Path, *, chunk_size: int, chunk_overlap: int = 0, k: int = 5) -> list[str]:
    """Ask every gold question through the chain, recording retrievals into ``out``.

    Returns the answers, in gold-set order. The run header names the chunking, so a report
    says which configuration each side was.
    """
    corpus = load_corpus(DOCS)
    gold = read_gold(GOLD)
    chain = build_chain(build_retriever(chunk_size, chunk_overlap, k))
    questions = [query.question for query in gold.values()]
    out.parent.mkdir(parents=True, exist_ok=True)
    handler = SpanchorCallbackHandler(
        out,
        gold=gold,  # query ids found from the question text
        corpus=corpus,  # the corpus fingerprint goes into the run header
        document_id=source_to_document_id(DOCS),  # metadata["source"] -> corpus id
        description="langchain InMemoryVectorStore, hashed bag-of-words",
        parameters={"chunk_size": chunk_size, "chunk_overlap": chunk_overlap, "k": k},
        mode="w",  # a re-run starts the file afresh (the handler appends by default)
    )
    with handler:
        # max_concurrency=1 keeps the run file's lines in gold order (deterministic files).
        answers = chain.batch(questions, config={"callbacks": [handler], "max_concurrency": 1})
    if handler.failures:
        raise RuntimeError(f"{handler.failures} retrievals could not be recorded")
    return answers


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--chunk-size", type=int, required=True)
    parser.add_argument("--chunk-overlap", type=int, default=0)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--out", type=Path, required=True, help="run file to write")
    args = parser.parse_args(argv)
    answers = record(
        args.out, chunk_size=args.chunk_size, chunk_overlap=args.chunk_overlap, k=args.k
    )
    print(f"recorded {len(answers)} retrievals into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
