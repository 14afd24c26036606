"""The recorder contract both integrations must pass, written once.

A *scenario* is a small corpus, gold set and a deterministic retriever over it. Each
integration drives its framework so that the framework performs exactly the scenario's
retrievals, records them into a run file, and hands the path to :func:`check_run_file`,
which asserts the run file says what the retriever returned — query ids, ranks, texts,
scores, document ids — and that the gate scores it exactly like a run written directly
through :class:`~spanchor_core.RunRecorder`. So a LangChain and a LlamaIndex recording of
the same retrievals evaluate identically.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from spanchor_core import (
    Corpus,
    GoldQuery,
    GoldSet,
    RetrievedResult,
    RunRecorder,
    anchor_from_text,
    evaluate,
    read_run,
)

__all__ = ["SCENARIO", "Hit", "Scenario", "check_run_file", "reference_run"]


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved chunk: the document it came from, its exact text and its score."""

    document_id: str
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class Scenario:
    corpus: Corpus
    gold: GoldSet
    chunks: tuple[Hit, ...]

    def retrieve(self, query: str, k: int = 3) -> list[Hit]:
        """Deterministic ranking by shared lowercase words (ties: chunk order)."""
        words = set(re.findall(r"\w+", query.lower()))
        scored = [
            (len(words & set(re.findall(r"\w+", hit.text.lower()))), -index, hit)
            for index, hit in enumerate(self.chunks)
        ]
        scored.sort(key=lambda item: (item[0], item[1]), reverse=True)
        return [
            Hit(hit.document_id, hit.text, float(score)) for score, _, hit in scored[:k] if score
        ]


def _build() -> Scenario:
    texts = {
        "garden": (
            "Tomatoes need six hours of sun a day.\n\n"
            "Water them at the base, never on the leaves.\n\n"
            "Basil grows well next to tomatoes."
        ),
        "kitchen": (
            "A sharp knife is safer than a dull one.\n\n"
            "Store tomatoes at room temperature, not in the fridge.\n\n"
            "Basil leaves turn black when cut with a dull knife."
        ),
    }
    corpus = Corpus.from_texts(texts)
    chunks = tuple(
        Hit(doc_id, paragraph, 0.0)
        for doc_id, text in sorted(texts.items())
        for paragraph in text.split("\n\n")
    )
    questions = {
        "q1": ("How many hours of sun do tomatoes need?", "garden", "six hours of sun"),
        "q2": ("Where should I store tomatoes?", "kitchen", "at room temperature"),
        "q3": ("Why is a sharp knife safer?", "kitchen", "A sharp knife is safer"),
        "q4": ("How should I water them?", "garden", "Water them at the base"),
    }
    gold = GoldSet(
        GoldQuery(qid, question, (anchor_from_text(corpus, evidence, document_id=doc),))
        for qid, (question, doc, evidence) in questions.items()
    )
    return Scenario(corpus, gold, chunks)


SCENARIO = _build()


def reference_run(path: Path, scenario: Scenario = SCENARIO, k: int = 3) -> Path:
    """The scenario's retrievals written directly through the core recorder."""
    with RunRecorder(path, retriever="reference", strict=True) as recorder:
        for query in scenario.gold.values():
            hits = scenario.retrieve(query.question, k)
            recorder.record(
                query.question,
                [
                    RetrievedResult(rank, hit.text, hit.score, document_id=hit.document_id)
                    for rank, hit in enumerate(hits, start=1)
                ],
                query_id=query.query_id,
            )
    return path


def check_run_file(
    path: Path,
    scenario: Scenario = SCENARIO,
    *,
    k: int = 3,
    expect_scores: bool = True,
    query_ids: Sequence[str] | None = None,
) -> None:
    """Assert that ``path`` records exactly the scenario's retrievals, and scores like them."""
    run = read_run(path)
    assert run.warnings == []
    wanted = list(query_ids) if query_ids is not None else list(scenario.gold)
    by_id = {str(record.query_id): record for record in run.records}
    assert sorted(by_id) == sorted(wanted), "one record per query, each with its id"
    assert len(run.records) == len(wanted), "no duplicate records"
    for qid in wanted:
        record = by_id[qid]
        query = scenario.gold[qid]
        assert record.query == query.question
        assert record.error is None
        hits = scenario.retrieve(query.question, k)
        assert [r.rank for r in record.results] == list(range(1, len(hits) + 1))
        assert [r.text for r in record.results] == [hit.text for hit in hits]
        if expect_scores:
            assert [r.score for r in record.results] == [hit.score for hit in hits]
    reference = reference_run(path.with_name(path.stem + ".reference.jsonl"), scenario, k)
    gold = GoldSet(scenario.gold[qid] for qid in wanted)
    mine = evaluate(scenario.corpus, gold, run, k=[1, k])
    theirs = evaluate(scenario.corpus, gold, read_run(reference), k=[1, k])
    for qid in wanted:
        assert dict(mine[qid]) == dict(theirs[qid]), qid
    assert mine.mapping.unmapped_rate == 0.0
