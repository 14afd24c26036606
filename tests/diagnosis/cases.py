"""A comparison built so that each of its regressed queries has exactly one cause, one of each
kind, for the tests of the comparison file and the reports.

Document ``a`` is cut two ways: the baseline's chunk ``a[0:40]`` holds each query's gold
``a[10:30]`` whole; the candidate's chunks are ``a[0:20]`` and ``a[20:40]`` (a boundary at 20).
"""

from __future__ import annotations

import random

from spanchor_core.compare import Comparison, compare
from spanchor_core.corpus import Corpus
from spanchor_core.diagnosis import ChunkInventory, map_inventory, with_diagnosis
from spanchor_core.diagnosis.inventory import Chunk
from spanchor_core.evaluate import Evaluation, evaluate
from spanchor_core.gold import Anchor, GoldQuery, GoldSet
from spanchor_core.policy import Policy
from spanchor_core.runs import RetrievalRecord, RetrievedResult, Run, RunHeader

_rng = random.Random(7)


def _text(n: int) -> str:
    return "".join(_rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(n))


TEXTS = {"a": _text(60), "b": _text(60)}
CORPUS = Corpus.from_texts(TEXTS)
A, B = TEXTS["a"], TEXTS["b"]
WHOLE, LEFT, RIGHT, OTHER = A[0:40], A[0:20], A[20:40], B[0:30]
UNMAPPED = "<b>text that is in no document</b> & more"
KINDS = ("split", "rank", "dropped", "unmapped", "missing")
GOLD = GoldSet(
    [
        GoldQuery(f"q-{kind}", f"why {kind}?", (Anchor.from_span(CORPUS, "a", 10, 30),))
        for kind in KINDS
    ]
)
CANDIDATE_RESULTS: dict[str, list[str]] = {
    "q-split": [LEFT, OTHER],  # the evidence is cut at 20 and the right half is gone
    "q-rank": [OTHER, WHOLE],  # the whole chunk is still retrieved, at rank 2
    "q-dropped": [OTHER],  # nothing overlaps the evidence
    "q-unmapped": [UNMAPPED, WHOLE],  # an unmapped result took rank 1
}
POLICY = Policy(max_drop={"recall@1": 0.0})


def _evaluation(ranked: dict[str, list[str]]) -> Evaluation:
    records = [
        RetrievalRecord(
            qid, GOLD[qid].question, tuple(RetrievedResult(r, t) for r, t in enumerate(texts, 1))
        )
        for qid, texts in ranked.items()
    ]
    return evaluate(CORPUS, GOLD, Run(RunHeader(), records), k=(1, 2), min_overlap=0.5)


BASELINE = _evaluation({f"q-{kind}": [WHOLE] for kind in KINDS})
CANDIDATE = _evaluation(CANDIDATE_RESULTS)


def inventory(chunks: list[tuple[str, int, int]]) -> ChunkInventory:
    return map_inventory(
        CORPUS, [Chunk(TEXTS[d][s:e], d, s, e) for d, s, e in chunks], description="test"
    )


BASELINE_CHUNKS = inventory([("a", 0, 40), ("a", 40, 60), ("b", 0, 30), ("b", 30, 60)])
CANDIDATE_CHUNKS = inventory(
    [("a", 0, 20), ("a", 20, 40), ("a", 40, 60), ("b", 0, 30), ("b", 30, 60)]
)


def diagnosed(*, chunks: bool = False) -> Comparison:
    """The comparison with its diagnosis attached (and the recall splits with ``chunks``)."""
    comparison = compare(BASELINE, CANDIDATE, POLICY)
    if not chunks:
        return with_diagnosis(comparison, BASELINE, CANDIDATE)
    return with_diagnosis(
        comparison,
        BASELINE,
        CANDIDATE,
        baseline_chunks=BASELINE_CHUNKS,
        candidate_chunks=CANDIDATE_CHUNKS,
    )
