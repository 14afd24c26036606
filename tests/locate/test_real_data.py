"""Locator on real data (skipped when ../shared/data is absent) and a smoke run of the benchmark."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from spanchor_core.corpus import Corpus, load_corpus
from spanchor_core.locate import LocateRequest, Locator, MatchStatus
from spanchor_core.spans import DocSpan

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
REPO = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- real data and bench smoke


def test_chroma_langchain_chunks_map_back_exactly() -> None:
    root = DATA / "chroma" / "corpora"
    if not root.is_dir():
        pytest.skip(f"real data absent: {root} (needs ../shared/data beside the repository)")
    splitters = pytest.importorskip("langchain_text_splitters")
    corpus = load_corpus(root)
    splitter = splitters.RecursiveCharacterTextSplitter(
        chunk_size=800, chunk_overlap=100, add_start_index=True
    )
    requests: list[LocateRequest] = []
    truth: list[DocSpan] = []
    for doc_id in corpus:
        for piece in splitter.create_documents([corpus.text(doc_id)]):
            requests.append(LocateRequest(piece.page_content))
            start = piece.metadata["start_index"]
            truth.append(DocSpan(doc_id, start, start + len(piece.page_content)))
    locations = Locator(corpus).locate_many(requests)
    assert len(locations) > 1000
    unique = 0
    for request, loc, true in zip(requests, locations, truth, strict=True):
        assert loc.status in (MatchStatus.EXACT, MatchStatus.AMBIGUOUS), (request, loc)
        span = loc.span
        assert span is not None
        assert corpus.text(span.document_id)[span.start : span.end] == request.text
        if loc.status is MatchStatus.EXACT:
            unique += 1
            assert span == true
        else:
            assert true in loc.candidates or len(loc.candidates) == 50
    assert unique > len(requests) // 2


def _load_bench() -> ModuleType:
    path = REPO / "bench" / "bench_mapping.py"
    spec = importlib.util.spec_from_file_location("bench_mapping", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_mapping"] = module
    spec.loader.exec_module(module)
    return module


def test_bench_generator_and_mapping_smoke() -> None:
    bench = _load_bench()
    texts = bench.make_corpus_texts(0.1, seed=3)
    assert texts == bench.make_corpus_texts(0.1, seed=3)  # deterministic
    chunks = bench.make_chunks(texts, 200, seed=4)
    report, locations = bench.run_mapping(Corpus.from_texts(texts), chunks)
    assert len(locations) == 200
    assert sum(report.statuses.values()) == 200
    for kind in ("exact", "whitespace", "absent", "hint", "wrong-hint"):
        assert report.correct[kind] == report.kinds[kind], kind
