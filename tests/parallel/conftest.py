"""Shared inputs of the multi-process tests: the quickstart, and a generated multi-document case."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from spanchor_core.corpus import load_corpus, sha256_text
from spanchor_core.gold import Anchor, GoldQuery, GoldSet, write_gold
from spanchor_core.runs import RetrievedResult, RunRecorder

QUICKSTART = Path(__file__).parents[2] / "examples" / "quickstart"
_CREATED = re.compile(rb'"created_at": "[^"]*"')


def without_timestamp(path: Path) -> bytes:
    """The file's bytes with its ``created_at`` value blanked (the one field allowed to differ)."""
    return _CREATED.sub(b'"created_at": ""', path.read_bytes())


@dataclass(frozen=True)
class Case:
    docs: Path
    gold: Path
    baseline: Path
    candidate: Path


def _piece(rng: random.Random, texts: dict[str, str]) -> tuple[str, int, int]:
    doc_id = rng.choice(sorted(texts))
    text = texts[doc_id]
    length = rng.randrange(60, 400)
    start = rng.randrange(0, len(text) - length)
    return doc_id, start, start + length


def _results(rng: random.Random, texts: dict[str, str], n: int) -> list[RetrievedResult]:
    """A mix of every kind of result: exact, offsets right and wrong, altered, copied, absent."""
    out = []
    for rank in range(1, n + 1):
        doc_id, start, end = _piece(rng, texts)
        text = texts[doc_id][start:end]
        kind = rng.randrange(7)
        named: dict[str, object] = {}
        if kind == 1:
            named = {"document_id": doc_id, "start": start, "end": end}
        elif kind == 2:
            named = {"document_id": doc_id, "start": start + 2, "end": end + 2}
        elif kind == 3:
            text = text.upper().replace(" ", "  ")
        elif kind == 4:
            text = text[:15] + "qqq" + text[18:]
        elif kind == 5:
            text = f"no such evidence {rng.random()} " * 3
        elif kind == 6:
            text = text[:25]  # short: per-document scan
        out.append(RetrievedResult(rank=rank, text=text, score=1.0 - rank / 20, **named))  # type: ignore[arg-type]
    return out


def generated_case(root: Path, seed: int = 11, queries: int = 60) -> Case:
    """Documents (some copied into others: ambiguous text), a gold set and two runs."""
    rng = random.Random(seed)
    words = [f"w{rng.randrange(3000)}" for _ in range(30_000)]
    texts = {
        f"doc{n:02d}": " ".join(words[i : i + 500]) for n, i in enumerate(range(0, 30_000, 500))
    }
    for n in range(4):  # whole copies in other documents
        texts[f"copy{n}"] = texts[f"doc{n:02d}"]
    docs = root / "docs"
    docs.mkdir(parents=True)
    for doc_id, text in texts.items():
        (docs / f"{doc_id}.md").write_text(text, encoding="utf-8")
    corpus = load_corpus(docs)
    gold_queries = []
    for q in range(queries):
        doc_id, start, end = _piece(rng, texts)
        anchor = Anchor(doc_id, start, end, sha256_text(texts[doc_id][start:end]))
        gold_queries.append(GoldQuery(f"q{q:03d}", f"question {q}?", (anchor,)))
    gold = GoldSet(gold_queries)
    write_gold(gold, root / "gold.jsonl")
    paths = []
    for name in ("baseline", "candidate"):
        path = root / f"{name}.jsonl"
        with RunRecorder(
            path, retriever=name, corpus_fingerprint=corpus.fingerprint, gold_sha256=gold.sha256
        ) as recorder:
            for query in gold_queries:
                doc_id, start, end = (
                    query.anchors[0].document_id,
                    query.anchors[0].start,
                    query.anchors[0].end,
                )
                hits = _results(rng, texts, 6)
                if rng.random() < 0.6:  # the evidence itself, at some rank
                    evidence = RetrievedResult(rank=0, text=texts[doc_id][start:end], score=1.0)
                    hits.insert(rng.randrange(len(hits) + 1), evidence)
                ranked = [
                    RetrievedResult(
                        rank=rank,
                        text=r.text,
                        score=r.score,
                        document_id=r.document_id,
                        start=r.start,
                        end=r.end,
                    )
                    for rank, r in enumerate(hits, start=1)
                ]
                recorder.record(query.question, ranked, query_id=query.query_id)
        paths.append(path)
    return Case(docs, root / "gold.jsonl", paths[0], paths[1])


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Case:
    return generated_case(tmp_path_factory.mktemp("generated"))


@pytest.fixture(scope="session")
def quickstart() -> Case:
    runs = QUICKSTART / "runs"
    return Case(
        QUICKSTART / "docs",
        QUICKSTART / "gold.jsonl",
        runs / "baseline.jsonl",
        runs / "candidate.jsonl",
    )
