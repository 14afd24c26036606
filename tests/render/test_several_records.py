"""How the reports describe a query with several records: grouped, or averaged, never "last kept".

A LlamaIndex query engine writes a retrieval line and a context line per question under one
trace (the context line is scored, wherever it sits in the file); two recordings without trace
ids are two askings, scored as their mean. Both used to be reported as "the last one was
scored", which neither is.
"""

from __future__ import annotations

import pytest

from spanchor_core.corpus import Corpus
from spanchor_core.evaluate import Evaluation, evaluate
from spanchor_core.gold import GoldQuery, GoldSet, anchor_from_text
from spanchor_core.render import evaluation_markdown
from spanchor_core.render.terminal import coverage_line
from spanchor_core.runs import RetrievalRecord, RetrievedResult, Run, RunHeader

SKY = "The sky is blue because of Rayleigh scattering."
GRASS = "Grass is green due to chlorophyll."
OTHER = "Paris is the capital of France."


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus.from_texts({"a": SKY, "b": GRASS, "c": OTHER})


@pytest.fixture(scope="module")
def gold(corpus: Corpus) -> GoldSet:
    return GoldSet(
        [
            GoldQuery("q1", "Why is the sky blue?", (anchor_from_text(corpus, SKY),)),
            GoldQuery("q2", "Why is grass green?", (anchor_from_text(corpus, GRASS),)),
        ]
    )


@pytest.fixture(scope="module")
def evaluation(corpus: Corpus, gold: GoldSet) -> Evaluation:
    run = Run(
        RunHeader(),
        [
            # q1: one asking, two stages; the context line comes first and is the one scored
            RetrievalRecord(
                "q1",
                "Why is the sky blue?",
                (RetrievedResult(1, SKY),),
                trace_id="t1",
                stage="context",
            ),
            RetrievalRecord(
                "q1",
                "Why is the sky blue?",
                (RetrievedResult(1, OTHER),),
                trace_id="t1",
                stage="retrieval",
            ),
            # q2: asked twice (no trace ids): one miss, one hit -> their mean
            RetrievalRecord("q2", "Why is grass green?", (RetrievedResult(1, OTHER),)),
            RetrievalRecord("q2", "Why is grass green?", (RetrievedResult(1, GRASS),)),
        ],
    )
    return evaluate(corpus, gold, run, k=(1,))


def test_the_scores_are_grouped_and_averaged_not_last_kept(evaluation: Evaluation) -> None:
    assert evaluation["q1"]["recall@1"] == 1.0  # the context line, not the last line
    assert evaluation["q2"]["recall@1"] == 0.5  # the mean of two askings
    assert evaluation.duplicates == ("q1", "q2")


def test_terminal_line_says_how_several_records_were_scored(evaluation: Evaluation) -> None:
    line = coverage_line(evaluation)
    assert "last kept" not in line
    assert "1 with several records in one asking (grouped by the auto rule)" in line
    assert "1 asked more than once (scored as the mean of the askings)" in line


def test_markdown_says_how_several_records_were_scored(
    evaluation: Evaluation, gold: GoldSet
) -> None:
    text = evaluation_markdown(evaluation, gold)
    assert "last one was scored" not in text
    assert "- **Several records in one asking** (grouped by the auto rule): 1 — q1" in text
    assert "- **Asked more than once** (scored as the mean of the askings): 1 — q2" in text
