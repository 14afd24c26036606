"""A scored evaluation is held by column (spanchor_core.evaluate.scored_columns) so that a
sharded driver's memory does not grow with a Python object per result (issue 17): the
columns must give back exactly the results put in, and the evaluation must survive pickling
(a worker process sends it back) and a write/read/write round trip byte for byte."""

from __future__ import annotations

import pickle
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.corpus import Corpus, sha256_text
from spanchor_core.evaluate import evaluate, read_evaluation, write_evaluation
from spanchor_core.evaluate.model import LocatedResult, MappingStats, QueryTable
from spanchor_core.evaluate.scored_columns import ResultColumns
from spanchor_core.gold import Anchor, GoldQuery, GoldSet
from spanchor_core.runs import RetrievalRecord, RetrievedResult, Run, RunHeader

_OPTIONAL_TEXT = st.one_of(st.none(), st.sampled_from(["gold", "first", "x"]), st.text(max_size=8))
_OFFSET = st.one_of(st.none(), st.integers(0, 2**62))
_RESULT = st.builds(
    LocatedResult,
    rank=st.integers(1, 50),
    status=st.sampled_from(["exact", "normalised", "fuzzy", "unmapped", "invalid", "other"]),
    document_id=st.one_of(st.none(), st.sampled_from(["a", "b", "é"])),
    start=_OFFSET,
    end=_OFFSET,
    confidence=st.floats(0.0, 1.0),
    hint_rejected=st.booleans(),
    resolved_by=_OPTIONAL_TEXT,
    reason=_OPTIONAL_TEXT,
)


@settings(max_examples=80, deadline=None)
@given(runs=st.lists(st.lists(_RESULT, max_size=6), max_size=6))
def test_columns_give_back_the_results_put_in(runs: list[list[LocatedResult]]) -> None:
    columns = ResultColumns()
    placed = [(columns.add_results(run), run) for run in runs]
    columns = pickle.loads(pickle.dumps(columns))
    for first, run in placed:
        got = columns.results(first, len(run))
        assert got == tuple(run)
        assert [type(r.confidence) for r in got] == [float] * len(run)
        assert columns.mapping(first, len(run)) == MappingStats.of(run)


def _evaluation() -> tuple[Corpus, GoldSet, Run]:
    corpus = Corpus.from_texts(
        {"a": "The quick brown fox jumps over the lazy dog. " * 3, "b": "Lorem ipsum dolor sit."}
    )
    text = corpus.text("a")
    gold = GoldSet(
        [
            GoldQuery("q1", "fox?", (Anchor("a", 4, 19, sha256_text(text[4:19])),)),
            GoldQuery("q2", "dog?", (Anchor("a", 35, 43, sha256_text(text[35:43])),)),
            GoldQuery("q3", "none?", (Anchor("b", 0, 5, sha256_text("Lorem")),)),
        ]
    )
    records = [
        RetrievalRecord(
            query_id="q1",
            query="fox?",
            results=(RetrievedResult(1, "quick brown fox"), RetrievedResult(2, "nowhere at all")),
        ),
        RetrievalRecord(
            query_id="q2",
            query="dog?",
            results=(RetrievedResult(1, "the lazy dog", document_id="a", start=31, end=43),),
        ),
        RetrievalRecord(query_id="q2", query="dog?", results=(RetrievedResult(1, "Lorem ipsum"),)),
    ]
    return corpus, gold, Run(header=RunHeader(), records=records)


def test_a_scored_evaluation_pickles_and_writes_the_same_bytes(tmp_path: Path) -> None:
    corpus, gold, run = _evaluation()
    scored = evaluate(corpus, gold, run, k=(1, 3))
    assert isinstance(scored.queries, QueryTable)
    assert [scored[q].status.value for q in scored] == ["scored", "scored", "missing_in_run"]
    assert scored["q1"].results[1].status == "unmapped"
    assert scored.mapping.total == 4  # every record of q2 counts in the mapping
    back = pickle.loads(pickle.dumps(scored))
    first, second, third = tmp_path / "1.json", tmp_path / "2.json", tmp_path / "3.json"
    write_evaluation(scored, first)
    write_evaluation(back, second)
    write_evaluation(read_evaluation(first), third)
    assert first.read_bytes() == second.read_bytes() == third.read_bytes()
    assert dict(back.queries.items()) == dict(scored.queries.items())
