"""Write the chunk inventories of the quickstart's three indexes (one JSONL file per chunking).

The chunks come from the very chunkers ``make_example.py`` indexes with BM25, in index order,
so ``chunk_id`` ``windows-200/017`` is the 18th document of the candidate's index. Each chunk
is stored with its text and source document; offsets are left to the locator, as they would be
for an index that does not keep them.

Run from anywhere:  python examples/quickstart/chunks/make_chunks.py [OUT_DIR]
Output is deterministic: same documents, same files (each header's ``created_at`` aside).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from spanchor_core import load_corpus
from spanchor_core.corpus import Corpus
from spanchor_core.diagnosis import Chunk, write_chunks

HERE = Path(__file__).resolve().parent
QUICKSTART = HERE.parent


def _make_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_example", QUICKSTART / "make_example.py")
    if spec is None or spec.loader is None:  # pragma: no cover - the file is committed
        raise ImportError("cannot load make_example.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def chunkings(corpus: Corpus) -> dict[str, tuple[str, list[tuple[str, str]]]]:
    """``{name: (description, [(document_id, text)])}`` for the three runs' chunkers."""
    example = _make_example()
    return {
        "paragraphs": (
            "one chunk per paragraph, heading included (runs/baseline.jsonl)",
            example.paragraph_chunks(corpus),
        ),
        "windows-200": (
            "200-character windows, no overlap (runs/candidate.jsonl)",
            example.window_chunks(corpus, 200),
        ),
        "windows-400-overlap-200": (
            "400-character windows overlapping by 200 (runs/candidate-overlap.jsonl)",
            example.window_chunks(corpus, 400, overlap=200),
        ),
    }


def main(out: Path = HERE) -> list[Path]:
    """Write ``<name>.jsonl`` for each chunking under ``out``; returns the paths."""
    corpus = load_corpus(QUICKSTART / "docs")
    written = []
    for name, (description, pieces) in chunkings(corpus).items():
        chunks = [
            Chunk(text, document_id, chunk_id=f"{name}/{number:03d}")
            for number, (document_id, text) in enumerate(pieces)
        ]
        path = out / f"{name}.jsonl"
        write_chunks(
            chunks,
            path,
            description=description,
            parameters={"chunker": name, "chunks": len(chunks)},
            corpus_fingerprint=corpus.fingerprint,
        )
        written.append(path)
    return written


if __name__ == "__main__":
    for path in main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE):
        print(f"wrote {path}")
