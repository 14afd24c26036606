"""Causes for a whole comparison: the cutoff each regression is judged at, and the summary."""

from __future__ import annotations

import dataclasses

from spanchor_core.compare import compare
from spanchor_core.corpus import Corpus
from spanchor_core.diagnosis import diagnose_regressions, diagnosis_cutoffs
from spanchor_core.evaluate import Evaluation, evaluate
from spanchor_core.gold import Anchor, GoldQuery, GoldSet
from spanchor_core.policy import Policy
from spanchor_core.runs import RetrievalRecord, RetrievedResult, Run, RunHeader

TEXTS = {
    "kettle": "The kettle holds 1.7 litres of water at most. Descale it monthly with vinegar.",
    "toaster": "The toaster has six browning levels. Empty the crumb tray every week, please.",
}
CORPUS = Corpus.from_texts(TEXTS)
GOLD = GoldSet(
    [
        GoldQuery("q1", "How much water?", (Anchor.from_span(CORPUS, "kettle", 4, 45),)),
        GoldQuery("q2", "Crumb tray?", (Anchor.from_span(CORPUS, "toaster", 37, 77),)),
    ]
)


def run(ranked: dict[str, list[str]]) -> Evaluation:
    records = [
        RetrievalRecord(
            qid, GOLD[qid].question, tuple(RetrievedResult(r, t) for r, t in enumerate(texts, 1))
        )
        for qid, texts in ranked.items()
    ]
    return evaluate(CORPUS, GOLD, Run(RunHeader(), records), k=(1, 2))


KETTLE, TOASTER = TEXTS["kettle"], TEXTS["toaster"]
BASELINE = run({"q1": [KETTLE, TOASTER], "q2": [TOASTER, KETTLE]})


def test_each_regression_is_judged_at_the_cutoff_it_lost_evidence_at() -> None:
    # q1 keeps its evidence in the top 2 but loses rank 1; q2 loses its evidence entirely.
    candidate = run({"q1": [TOASTER, KETTLE], "q2": [KETTLE]})
    policy = Policy(max_drop={"recall@1": 0.0, "recall@2": 0.0})
    comparison = compare(BASELINE, candidate, policy)
    diagnosis = diagnose_regressions(comparison, BASELINE, candidate)
    assert set(diagnosis) == {"q1", "q2"}
    assert diagnosis_cutoffs(comparison.query("q1"), candidate) == (1,)
    assert diagnosis_cutoffs(comparison.query("q2"), candidate) == (2, 1)
    (q1,) = diagnosis["q1"].causes
    assert (diagnosis["q1"].k, q1.kind, q1.rank_before) == (1, "rank", 1)
    (q2,) = diagnosis["q2"].causes
    assert (diagnosis["q2"].k, q2.kind) == (2, "dropped")
    assert diagnosis.summary.line() == "2 regressed: 1 rank, 1 dropped"


def test_a_whole_list_metric_stands_for_the_deepest_k_and_missing_records_are_missing() -> None:
    candidate = run({"q1": [KETTLE, TOASTER]})  # no record for q2
    comparison = compare(BASELINE, candidate, Policy(max_drop={"mrr": 0.0}))
    assert diagnosis_cutoffs(comparison.query("q2"), candidate) == (2,)
    diagnosis = diagnose_regressions(comparison, BASELINE, candidate)
    assert [cause.kind for cause in diagnosis["q2"].causes] == ["missing"]
    assert diagnosis.to_json()["queries"][0]["causes"][0]["reason"] == "missing_in_run"


def test_a_precision_only_regression_has_no_cause() -> None:
    tight = run({"q1": [KETTLE[:46]], "q2": [TOASTER]})
    loose = run({"q1": [KETTLE], "q2": [TOASTER]})  # the same evidence, more text around it
    comparison = compare(tight, loose, Policy(max_drop={"precision@1": 0.0}))
    assert [row.query_id for row in comparison.regressions()] == ["q1"]
    diagnosis = diagnose_regressions(comparison, tight, loose)
    assert diagnosis["q1"].causes == ()
    assert diagnosis.summary.line() == "1 regressed: 1 without lost evidence"


def test_evaluations_without_result_spans_give_a_note_not_an_error() -> None:
    candidate = run({"q1": [TOASTER], "q2": [KETTLE]})
    old = dataclasses.replace(
        BASELINE,
        settings=dataclasses.replace(BASELINE.settings, source_format="spanchor-0.x/evaluation"),
    )
    comparison = compare(old, candidate, Policy(max_drop={"recall@2": 0.0}))
    diagnosis = diagnose_regressions(comparison, old, candidate)
    assert len(diagnosis) == 0
    assert diagnosis.note is not None
    assert "spanchor-0.x/evaluation" in diagnosis.note
    assert diagnosis.summary.unexplained == comparison.counts["regressed"] == 2
