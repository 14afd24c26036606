"""evaluate(): a hand-built corpus end to end, the bookkeeping rules, the evaluation file, and a
real-data check against chunk positions known from a text splitter."""

from __future__ import annotations

import copy
import json
import math
import random
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.corpus import Corpus, load_corpus
from spanchor_core.errors import EvaluationFileError, GoldError, InputError, RunError
from spanchor_core.evaluate import (
    EVALUATION_KIND,
    Evaluation,
    QueryStatus,
    check_run_provenance,
    evaluate,
    evaluate_file,
    evaluation_json_schema,
    read_evaluation,
    write_evaluation,
)
from spanchor_core.gold import Anchor, GoldQuery, GoldSet, read_gold
from spanchor_core.locate import LocateRequest, Location, Locator
from spanchor_core.runs import (
    RetrievalRecord,
    RetrievedResult,
    Run,
    RunHeader,
    iter_run,
    read_run,
    write_run,
)
from spanchor_core.spans import DocSpan

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

ALPHA = "Alpha one. The sky is blue because of Rayleigh scattering. Alpha two."
BETA = "Beta text about grass. Grass is green due to chlorophyll. End of beta."
# offsets, checked in test_fixture_offsets:
#   alpha[0,10)  "Alpha one."          alpha[11,58) "The sky is blue because ... scattering." (47)
#   alpha[11,26) "The sky is blue" (15) alpha[59,69) "Alpha two." (10)
#   beta[0,22)   "Beta text about grass."   beta[23,57) "Grass is green due to chlorophyll." (34)
#   beta[58,70)  "End of beta."


@pytest.fixture
def corpus() -> Corpus:
    return Corpus.from_texts({"alpha": ALPHA, "beta": BETA})


def _query(corpus: Corpus, qid: str, question: str, *spans: tuple[str, int, int]) -> GoldQuery:
    return GoldQuery(qid, question, tuple(Anchor.from_span(corpus, *span) for span in spans))


@pytest.fixture
def gold(corpus: Corpus) -> GoldSet:
    return _gold_set(corpus)


def _gold_set(corpus: Corpus) -> GoldSet:
    return GoldSet(
        [
            _query(corpus, "q1", "Why is the sky blue?", ("alpha", 11, 58)),
            _query(
                corpus, "q2", "Grass and the second alpha?", ("beta", 23, 57), ("alpha", 59, 69)
            ),
            _query(corpus, "q3", "Never asked?", ("alpha", 0, 10)),
            _query(corpus, "q4", "Errored?", ("beta", 0, 22)),
            GoldQuery("q5", "No evidence yet?", ()),
            _query(corpus, "q6", "Resolved by text?", ("beta", 58, 70)),
        ]
    )


def _record(
    qid: str | None, query: str, *results: RetrievedResult, error: str | None = None
) -> RetrievalRecord:
    return RetrievalRecord(qid, query, tuple(results), error=error)


def _text(rank: int, text: str) -> RetrievedResult:
    return RetrievedResult(rank=rank, text=text)


@pytest.fixture
def run() -> Run:
    return Run(
        header=RunHeader(),
        records=[
            _record(
                "q1",
                "Why is the sky blue?",
                # deliberately out of order: ranks, not list positions, decide
                _text(3, "The sky is blue"),
                _text(1, "Alpha one."),
                _text(2, "This sentence is nowhere in the corpus at all."),
            ),
            _record("q2", "Grass and the second alpha?", error="timeout"),
            _record(
                "q2",
                "Grass and the second alpha?",
                RetrievedResult(rank=1, text=None, document_id="beta", start=23, end=57),
                _text(2, "Alpha two."),
            ),
            _record("q4", "Errored?", _text(1, "Beta text about grass."), error="boom"),
            _record("zzz", "Not a gold query", _text(1, "Alpha one.")),
            _record(None, "Unknown question?", _text(1, "Alpha one.")),
            _record(None, "  Resolved by text?  ", _text(1, "End of beta.")),
        ],
    )


@pytest.fixture
def evaluation(corpus: Corpus, gold: GoldSet, run: Run) -> Evaluation:
    return evaluate(corpus, gold, run, k=(1, 3))


def test_fixture_offsets() -> None:
    assert ALPHA[0:10] == "Alpha one."
    assert ALPHA[11:58] == "The sky is blue because of Rayleigh scattering."
    assert ALPHA[11:26] == "The sky is blue"
    assert ALPHA[59:69] == "Alpha two."
    assert BETA[0:22] == "Beta text about grass."
    assert BETA[23:57] == "Grass is green due to chlorophyll."
    assert BETA[58:70] == "End of beta."


def test_q1_partial_evidence_behind_an_unmapped_result(evaluation: Evaluation) -> None:
    # ranks: 1 alpha[0,10) (no gold), 2 unmapped, 3 alpha[11,26): 15 of the 47 gold characters
    q1 = evaluation["q1"]
    assert q1.status is QueryStatus.SCORED
    assert q1["recall@1"] == 0.0
    assert q1["recall@3"] == 15 / 47
    # the unmapped rank-2 result keeps its slot, counted at the average size of the two mapped
    # results (25 / 2 characters, no gold): 15 / (25 + 25 / 2) = 15/25 × 2/3
    assert q1["precision@3"] == pytest.approx(15 / (10 + 15) * 2 / 3)
    assert q1["iou@3"] == 15 / (47 + 25 - 15)
    assert q1["hit@3"] == 0.0  # 15/47 = 0.32 < min_overlap 0.5
    assert q1["mrr"] == 1 / 3
    assert q1["unmapped@3"] == 1.0
    assert [(r.rank, r.status, r.span) for r in q1.results] == [
        (1, "exact", DocSpan("alpha", 0, 10)),
        (2, "unmapped", None),
        (3, "exact", DocSpan("alpha", 11, 26)),
    ]
    assert q1.mapping.unmapped_rate == 1 / 3
    assert q1.gold == (DocSpan("alpha", 11, 58),)


def test_q2_last_record_wins_and_evidence_spans_two_documents(evaluation: Evaluation) -> None:
    # rank 1 explicit span beta[23,57) (34 chars), rank 2 "Alpha two." alpha[59,69) (10): |G| = 44
    q2 = evaluation["q2"]
    assert q2.status is QueryStatus.SCORED
    assert q2["recall@1"] == 34 / 44
    assert q2["hit@1"] == 1.0
    assert q2["full_evidence@1"] == 0.0  # the alpha anchor is not covered yet
    assert q2["recall@3"] == q2["full_evidence@3"] == q2["precision@3"] == 1.0
    assert q2["ndcg@3"] == pytest.approx(1.0)  # larger piece first: the ideal order
    assert q2["ap@3"] == pytest.approx(1 * 34 / 44 + 1 * 10 / 44)
    assert [r.status for r in q2.results] == ["span", "exact"]
    assert "q2" in evaluation.duplicates


def test_missing_error_skipped_extra_and_unresolved_are_listed(evaluation: Evaluation) -> None:
    assert evaluation.missing_in_run == ("q3",)
    assert evaluation["q3"].status is QueryStatus.MISSING_IN_RUN
    assert evaluation.errors == ("q4",)
    assert evaluation["q4"].status is QueryStatus.ERROR
    assert evaluation["q4"].error == "boom"
    assert evaluation["q4"].results == ()  # an errored record is not mapped, even with results
    for qid in ("q3", "q4"):
        assert evaluation[qid]["recall@3"] == evaluation[qid]["ndcg@3"] == 0.0
    assert evaluation.skipped == {"q5": "the gold query has no anchors"}
    assert "q5" not in evaluation
    with pytest.raises(KeyError, match="skipped"):
        evaluation["q5"]
    assert evaluation.not_in_gold == ("zzz",)
    assert evaluation.unresolved == ("Unknown question?",)
    assert evaluation.duplicates == ("q2",)
    assert evaluation["q6"]["recall@1"] == 1.0  # id resolved from the query text


def test_metric_and_aggregate(evaluation: Evaluation) -> None:
    assert list(evaluation) == ["q1", "q2", "q3", "q4", "q6"]  # gold order, q5 skipped
    recall = evaluation.metric("recall@3")
    assert recall == {"q1": 15 / 47, "q2": 1.0, "q3": 0.0, "q4": 0.0, "q6": 1.0}
    summary = evaluation.aggregate("recall@3")
    mean = (15 / 47 + 1 + 0 + 0 + 1) / 5
    assert summary.n == 5
    assert summary.mean == pytest.approx(mean)
    assert summary.mean == evaluation.mean("recall@3")
    # population standard deviation: divide by n
    assert summary.std == pytest.approx(
        math.sqrt(sum((v - mean) ** 2 for v in recall.values()) / 5)
    )
    assert (summary.min, summary.max) == (0.0, 1.0)
    with pytest.raises(KeyError, match="unknown metric"):
        evaluation.metric("recall@5")  # K=5 was not asked for


def test_mapping_statistics(evaluation: Evaluation) -> None:
    # mapped: q1 exact, unmapped, exact; q2 span, exact; q6 exact (q4 errored: not mapped)
    stats = evaluation.mapping
    assert stats.total == 6
    assert stats.counts["exact"] == 4
    assert stats.counts["span"] == 1
    assert stats.counts["unmapped"] == 1
    assert stats.counts["fuzzy"] == 0  # every status is present
    assert stats.unmapped_rate == 1 / 6
    assert stats.hint_rejected == 0


def test_settings(evaluation: Evaluation, corpus: Corpus, gold: GoldSet) -> None:
    s = evaluation.settings
    assert s.k == (1, 3)
    assert s.min_overlap == 0.5
    assert s.corpus_fingerprint == corpus.fingerprint
    assert s.gold_sha256 == gold.sha256
    assert s.run_header is not None
    assert s.run_header["kind"] == "spanchor.run"


def test_unmapped_results_take_rank_slots(corpus: Corpus, gold: GoldSet) -> None:
    junk = [
        _text(rank, f"Nothing like this is in the corpus, number {rank}.") for rank in range(1, 6)
    ]
    run = Run(RunHeader(), [_record("q1", "Why is the sky blue?", *junk, _text(6, ALPHA[11:58]))])
    result = evaluate(corpus, gold, run, k=(5, 10))
    assert result["q1"]["recall@5"] == 0.0
    assert result["q1"]["unmapped@5"] == 5.0
    assert result["q1"]["recall@10"] == 1.0
    assert result["q1"]["mrr"] == 1 / 6


def test_inputs_are_not_changed(corpus: Corpus, gold: GoldSet, run: Run) -> None:
    records = copy.deepcopy(run.records)
    entries = gold.entries
    evaluate(corpus, gold, run)
    assert run.records == records
    assert gold.entries == entries


def test_one_batched_locate_call_with_a_given_locator(
    corpus: Corpus, gold: GoldSet, run: Run
) -> None:
    class CountingLocator(Locator):
        calls: list[int]

        def locate_many(self, requests: Sequence[LocateRequest]) -> list[Location]:
            self.calls.append(len(requests))
            return super().locate_many(requests)

    locator = CountingLocator(corpus)
    locator.calls = []
    evaluate(corpus, gold, run, locator=locator)
    assert locator.calls == [6]  # q1: 3, q2: 2, q6: 1 — errored and extra records not mapped


def test_locator_for_another_corpus_is_rejected(gold: GoldSet, run: Run, corpus: Corpus) -> None:
    other = Corpus.from_texts({"alpha": ALPHA, "beta": BETA + " More."})
    with pytest.raises(InputError, match="different corpus"):
        evaluate(corpus, gold, run, locator=Locator(other))


def test_gold_that_no_longer_matches_the_corpus_stops_evaluation(run: Run) -> None:
    changed = Corpus.from_texts({"alpha": ALPHA.replace("blue", "grey"), "beta": BETA})
    original = Corpus.from_texts({"alpha": ALPHA, "beta": BETA})
    gold = GoldSet([_query(original, "q1", "Why is the sky blue?", ("alpha", 11, 58))])
    with pytest.raises(GoldError, match="q1"):
        evaluate(changed, gold, run)


@pytest.mark.parametrize(("k", "min_overlap"), [((0,), 0.5), ((), 0.5), ((5,), 1.5)])
def test_bad_settings_are_rejected(
    corpus: Corpus, gold: GoldSet, run: Run, k: tuple[int, ...], min_overlap: float
) -> None:
    with pytest.raises(InputError):
        evaluate(corpus, gold, run, k=k, min_overlap=min_overlap)


def test_empty_run_scores_every_query_as_missing(corpus: Corpus, gold: GoldSet) -> None:
    result = evaluate(corpus, gold, Run(RunHeader(), []))
    assert result.missing_in_run == ("q1", "q2", "q3", "q4", "q6")
    assert result.mean("recall@10") == 0.0
    assert result.mapping.total == 0
    assert result.mapping.unmapped_rate == 0.0


def test_run_for_another_corpus_is_noted(corpus: Corpus, gold: GoldSet) -> None:
    run = Run(RunHeader(corpus_fingerprint="0" * 64), [])
    assert any("different corpus" in w for w in evaluate(corpus, gold, run).warnings)


# -- the evaluation file ----------------------------------------------------------------------


def _same(a: Evaluation, b: Evaluation) -> None:
    assert list(a) == list(b)
    for qid in a:
        assert a[qid] == b[qid]
    assert a.settings == b.settings
    for name in ("metric_names", "missing_in_run", "not_in_gold", "unresolved", "duplicates"):
        assert getattr(a, name) == getattr(b, name), name
    assert a.errors == b.errors
    assert dict(a.skipped) == dict(b.skipped)
    assert a.mapping == b.mapping
    assert a.warnings == b.warnings


def test_write_read_round_trip(evaluation: Evaluation, tmp_path: Path) -> None:
    path = tmp_path / "out" / "evaluation.json"
    write_evaluation(evaluation, path)
    back = read_evaluation(path)
    _same(evaluation, back)
    assert back.aggregate("recall@3") == evaluation.aggregate("recall@3")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert (data["kind"], data["schema_version"]) == (EVALUATION_KIND, 1)
    assert data["aggregates"]["recall@3"]["n"] == 5
    assert list(tmp_path.joinpath("out").iterdir()) == [path]  # no temporary file left


def test_written_bytes_are_deterministic(
    corpus: Corpus, gold: GoldSet, run: Run, tmp_path: Path
) -> None:
    def text(path: Path) -> list[str]:
        return [
            line
            for line in path.read_text(encoding="utf-8").splitlines()
            if '"created_at"' not in line
        ]

    write_evaluation(evaluate(corpus, gold, run), tmp_path / "a.json")
    write_evaluation(evaluate(corpus, gold, run), tmp_path / "b.json")
    assert text(tmp_path / "a.json") == text(tmp_path / "b.json")


def test_json_schema_describes_the_file() -> None:
    schema = evaluation_json_schema()
    assert schema["properties"]["kind"]["const"] == EVALUATION_KIND
    assert "queries" in schema["required"]


def _write(tmp_path: Path, data: Any, name: str = "e.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def _spanchor_0x_evaluation() -> dict[str, Any]:
    """The shape spanchor 0.x's write_run produced (schema 0.2.0)."""
    return {
        "timestamp": "2024-01-15T10:00:00+00:00",
        "queries": [
            {
                "query_id": "q1",
                "question": "What?",
                "anchors": [{"document_id": "d", "start": 0, "end": 5, "expected_text_hash": "x"}],
                "schema_version": "0.1.0",
            }
        ],
        "per_query_metrics": {
            "q1": {"recall@5": 0.5, "hit@5": 1, "iou": 0.25},
            "q2": {"recall@5": 1.0, "hit@5": 1, "iou": 0.75},
        },
        "aggregate_metrics": {"mean_recall@5": 0.75},
        "config": {"k": 5, "min_overlap": 0.4},
        "mapper_stats": {"MAPPED_EXACT": 7, "UNMAPPED": 1},
        "schema_version": "0.2.0",
        "corpus_hash": "sha256:abc",
        "gold_set_hash": "sha256:def",
    }


def test_reads_spanchor_0x_evaluation(tmp_path: Path) -> None:
    old = _spanchor_0x_evaluation()
    result = read_evaluation(_write(tmp_path, old))
    assert result["q1"]["hit@5"] == 1.0
    assert result.mean("recall@5") == 0.75
    assert result.metric_names == ("recall@5", "hit@5", "iou")
    assert result.settings.k == (5,)
    assert result.settings.min_overlap == 0.4
    assert result.settings.source_format == "spanchor-0.x/0.2.0"
    assert result.settings.corpus_fingerprint == "sha256:abc"
    assert result["q1"].gold == (DocSpan("d", 0, 5),)
    assert result.mapping.counts["exact"] == 7
    assert result.mapping.unmapped_rate == 1 / 8
    assert result.warnings  # says the 0.x numbers compared offsets across documents


def test_rewriting_a_0x_evaluation_keeps_its_source_format(tmp_path: Path) -> None:
    # Regression: the rewritten file forgot it came from 0.x, so reports then claimed that
    # "no gold characters" were lost where 0.x had kept no result spans to look at.
    old = read_evaluation(_write(tmp_path, _spanchor_0x_evaluation()))
    write_evaluation(old, tmp_path / "rewritten.json")
    again = read_evaluation(tmp_path / "rewritten.json")
    assert again.settings.source_format == "spanchor-0.x/0.2.0"
    assert not again.has_result_spans
    assert again.metric("recall@5") == old.metric("recall@5")
    write_evaluation(again, tmp_path / "twice.json")
    assert (tmp_path / "twice.json").read_bytes() == (tmp_path / "rewritten.json").read_bytes()


def test_rewritten_0x_evaluation_reports_no_lost_evidence_claim(tmp_path: Path) -> None:
    from spanchor_core.compare import compare
    from spanchor_core.render import comparison_markdown

    worse = _spanchor_0x_evaluation()
    worse["per_query_metrics"]["q1"]["recall@5"] = 0.0
    sides = []
    for name, data in (("baseline", _spanchor_0x_evaluation()), ("candidate", worse)):
        write_evaluation(read_evaluation(_write(tmp_path, data)), tmp_path / f"{name}.json")
        sides.append(read_evaluation(tmp_path / f"{name}.json"))
    baseline, candidate = sides
    text = comparison_markdown(compare(baseline, candidate), baseline=baseline, candidate=candidate)
    assert "no gold characters lost" not in text
    assert "keeps no result spans" in text


def test_evaluation_of_this_format_reads_back_as_this_format(
    evaluation: Evaluation, tmp_path: Path
) -> None:
    write_evaluation(evaluation, tmp_path / "e.json")
    again = read_evaluation(tmp_path / "e.json")
    assert again.settings.source_format == f"{EVALUATION_KIND}/1"
    assert again.has_result_spans


def test_reads_spanchor_0x_json_report(tmp_path: Path) -> None:
    report = {
        "schema_version": "0.2.0",
        "timestamp": "2024-01-15T10:00:00Z",
        "config": {"k": 3},
        "aggregate_metrics": {},
        "per_query_metrics": {"q1": {"metrics": {"recall@3": 0.5}, "question": "What?"}},
        "mapper_stats": {},
    }
    assert read_evaluation(_write(tmp_path, report))["q1"]["recall@3"] == 0.5


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "one JSON object"),
        ({"hello": 1}, "not an evaluation file"),
        ({"timestamp": "2024-01-01T00:00:00Z", "aggregate_metrics": {}}, "aggregate metrics only"),
        ({"kind": "spanchor.run", "schema_version": 1}, "not an evaluation"),
        ({"kind": EVALUATION_KIND, "schema_version": 2}, "schema_version 2"),
        ({"kind": EVALUATION_KIND, "schema_version": 1}, ": missing"),
        (
            {"schema_version": "0.2.0", "per_query_metrics": {"q1": {"recall@5": "high"}}},
            "not a number",
        ),
        (
            {"schema_version": "0.2.0", "per_query_metrics": {"q1": {"a": 1}, "q2": {"b": 1}}},
            "lacks",
        ),
    ],
)
def test_bad_evaluation_files_name_the_file(tmp_path: Path, content: Any, message: str) -> None:
    path = _write(tmp_path, content)
    with pytest.raises(EvaluationFileError, match=message) as caught:
        read_evaluation(path)
    assert str(path) in str(caught.value)


def test_missing_file_is_an_evaluation_file_error(tmp_path: Path) -> None:
    with pytest.raises(EvaluationFileError, match="cannot read"):
        read_evaluation(tmp_path / "absent.json")


# -- real data: chunks from a text splitter, runs with chunk text only --------------------------


@pytest.mark.skipif(
    not (DATA / "chroma" / "corpora").is_dir(),
    reason=f"real data not available at {DATA / 'chroma'} (a fresh clone has no ../shared)",
)
def test_recall_on_real_chunks_equals_span_arithmetic(tmp_path: Path) -> None:
    splitters = pytest.importorskip("langchain_text_splitters")
    full = load_corpus(DATA / "chroma" / "corpora")
    names = ("chatlogs", "state_of_the_union", "wikitexts")
    corpus = Corpus.from_documents([full[name] for name in names])
    splitter = splitters.RecursiveCharacterTextSplitter(
        chunk_size=400, chunk_overlap=60, add_start_index=True
    )
    # Chunks with their true positions, verified here rather than trusted.
    chunks: list[tuple[str, DocSpan]] = []
    for name in names:
        text = corpus.text(name)
        for piece in splitter.create_documents([text]):
            start = piece.metadata["start_index"]
            assert text[start : start + len(piece.page_content)] == piece.page_content
            chunks.append(
                (piece.page_content, DocSpan(name, start, start + len(piece.page_content)))
            )
    # Keep chunks whose text occurs once in the corpus: their position is then the only answer.
    unique = [(t, s) for t, s in chunks if len(t) >= 80 and len(corpus.find_all(t)) == 1]
    assert len(unique) > 200

    rng = random.Random(20240601)
    queries: list[GoldQuery] = []
    records: list[RetrievalRecord] = []
    expected: dict[str, list[DocSpan]] = {}
    for n in range(40):
        qid = f"real-{n:02d}"
        anchors = []
        for _ in range(rng.choice((1, 1, 2))):
            _, around = rng.choice(unique)
            length = len(corpus.text(around.document_id))
            start = max(0, min(length - 1, around.start + rng.randint(-150, 300)))
            end = min(length, start + rng.randint(40, 250))
            anchors.append(Anchor.from_span(corpus, around.document_id, start, end))
        # a "retriever": chunks near the evidence mixed with random ones, in a seeded order
        near = [
            c
            for c in unique
            if any(
                c[1].document_id == a.document_id
                and c[1].start < a.end + 400
                and a.start - 400 < c[1].end
                for a in anchors
            )
        ]
        picked = rng.sample(near, min(len(near), 4)) + rng.sample(unique, 6)
        rng.shuffle(picked)
        queries.append(GoldQuery(qid, f"question {n}", tuple(anchors)))
        records.append(
            RetrievalRecord(
                qid,
                f"question {n}",
                tuple(RetrievedResult(rank=i, text=t) for i, (t, _) in enumerate(picked, 1)),
            )
        )
        expected[qid] = [span for _, span in picked]

    ks = (1, 3, 5, 10)
    result = evaluate(corpus, GoldSet(queries), Run(RunHeader(), records), k=ks)
    total = sum(len(spans) for spans in expected.values())
    assert total > 350
    assert result.mapping.counts["exact"] == result.mapping.total == total
    assert result.mapping.unmapped_rate == 0.0
    for query in queries:
        gold_chars = {(a.document_id, i) for a in query.anchors for i in range(a.start, a.end)}
        for k in ks:
            got = {
                (s.document_id, i)
                for s in expected[query.query_id][:k]
                for i in range(s.start, s.end)
            }
            assert result[query.query_id][f"recall@{k}"] == pytest.approx(
                len(gold_chars & got) / len(gold_chars), abs=1e-12
            ), (query.query_id, k)
        located = [r.span for r in result[query.query_id].results]
        assert located == expected[query.query_id]
    # the fixture is not trivial: some evidence is found, some is not
    assert 0.2 < result.mean("recall@10") < 0.95
    assert result.aggregate("recall@1").min == 0.0
    # and the numbers survive the file
    write_evaluation(result, tmp_path / "real.json")
    assert read_evaluation(tmp_path / "real.json").metric("recall@5") == result.metric("recall@5")


def test_progress_callback_reports_mapping_and_scoring() -> None:
    from spanchor_core import (
        Corpus,
        GoldQuery,
        GoldSet,
        RetrievalRecord,
        RetrievedResult,
        Run,
        anchor_from_text,
    )
    from spanchor_core import evaluate as run_evaluate
    from spanchor_core.runs import RunHeader

    corpus = Corpus.from_texts({"a": "alpha beta gamma delta"})
    gold = GoldSet(
        [GoldQuery(f"q{i}", f"question {i}", (anchor_from_text(corpus, "beta"),)) for i in range(3)]
    )
    records = [
        RetrievalRecord(f"q{i}", f"question {i}", (RetrievedResult(1, "beta gamma"),))
        for i in range(3)
    ]
    run = Run(header=RunHeader(), records=records, path=None, warnings=[])
    calls: list[tuple[str, int, int]] = []
    run_evaluate(corpus, gold, run, k=[1], progress=lambda *call: calls.append(call))
    assert calls[0] == ("map", 0, 3)
    assert ("map", 3, 3) in calls
    assert calls[-1] == ("score", 3, 3)
    assert next(c for c in calls if c[0] == "score") == ("score", 0, 3)


# -- evaluate_file: the streaming path --------------------------------------------------------


def _assert_same_evaluation(streamed: Evaluation, expected: Evaluation) -> None:
    """Equal in every field; only ``created_at`` may differ (two evaluations, two clocks)."""
    assert dict(streamed.queries) == dict(expected.queries)
    assert list(streamed) == list(expected)
    assert replace(streamed.settings, created_at=None) == replace(
        expected.settings, created_at=None
    )
    for name in (
        "metric_names",
        "missing_in_run",
        "not_in_gold",
        "unresolved",
        "duplicates",
        "errors",
        "mapping",
        "warnings",
    ):
        assert getattr(streamed, name) == getattr(expected, name), name
    assert dict(streamed.skipped) == dict(expected.skipped)


QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart"


@pytest.mark.parametrize("name", ["baseline", "candidate", "candidate-overlap"])
def test_evaluate_file_equals_evaluate_on_the_quickstart_runs(name: str) -> None:
    corpus = load_corpus(QUICKSTART / "docs")
    gold = read_gold(QUICKSTART / "gold.jsonl")
    path = QUICKSTART / "runs" / f"{name}.jsonl"
    expected = evaluate(corpus, gold, read_run(path))
    assert expected.mapping.total > 200  # a real run: every query answered, 5 results each
    locator = Locator(corpus)
    for batch in (10_000, 7, 1):
        _assert_same_evaluation(
            evaluate_file(corpus, gold, path, locator=locator, batch_results=batch), expected
        )


def _write_with_torn_tail(run: Run, path: Path) -> Path:
    write_run(run, path)
    with path.open("ab") as handle:
        handle.write(b'{"query_id": "q3", "query": "Never asked?", "results": [{"ra')
    return path


def test_evaluate_file_equals_evaluate_on_a_run_with_every_oddity(
    corpus: Corpus, gold: GoldSet, run: Run, tmp_path: Path
) -> None:
    extra = [
        _record("q5", "No evidence yet?", _text(1, "Alpha one.")),  # a query that is skipped
        _record("zzz", "Not a gold query", _text(1, "End of beta.")),  # an extra id, twice
        _record("", "Unknown question?"),  # an empty id that no text resolves
        _record("q6", "Resolved by text?", _text(1, "Beta text"), error="late failure"),
        RetrievalRecord(  # an explicit span out of bounds
            "q1", "Why is the sky blue?", (RetrievedResult(1, None, None, "alpha", 60, 999),)
        ),
        _record("q1", "Why is the sky blue?", *run.records[0].results),
    ]
    path = _write_with_torn_tail(Run(RunHeader(), [*run.records, *extra]), tmp_path / "r.jsonl")
    expected = evaluate(corpus, gold, read_run(path), k=(1, 3))
    # the run exercises what the streaming path must get right
    assert expected.duplicates == ("q1", "q2", "q6", "zzz")
    assert expected.missing_in_run == ("q3",)
    # q6 failed once and succeeded once: order-independent grouping keeps the attempt that
    # worked wherever it stands in the file (it used to be "last line wins")
    assert expected.errors == ("q4",)
    assert expected["q6"].status is QueryStatus.SCORED
    assert expected.not_in_gold == ("", "zzz")
    assert expected.unresolved == ("Unknown question?", "Unknown question?")
    assert expected.skipped == {"q5": "the gold query has no anchors"}
    (warning,) = expected.warnings
    assert "incomplete last line" in warning
    assert expected["q2"].status is QueryStatus.SCORED  # the retry after the error won
    for batch in (10_000, 3, 1):
        streamed = evaluate_file(corpus, gold, path, k=(1, 3), batch_results=batch)
        _assert_same_evaluation(streamed, expected)


_POOL = (
    "The sky is blue",
    "Alpha one.",
    "Grass  is green\n due to chlorophyll.",  # whitespace differs: normalised
    "This sentence is nowhere in the corpus at all.",
    "   ",
    None,  # an explicit span
)


@st.composite
def _generated_records(draw: st.DrawFn) -> list[RetrievalRecord]:
    questions = ["Why is the sky blue?", "Errored?", "  Resolved by text?  ", "No evidence yet?"]
    records = []
    for _ in range(draw(st.integers(min_value=0, max_value=12))):
        qid = draw(st.sampled_from([None, "", "q1", "q2", "q3", "q4", "q5", "q6", "zzz"]))
        question = draw(st.sampled_from([*questions, "Unknown question?"]))
        results = []
        for _ in range(draw(st.integers(min_value=0, max_value=4))):
            text = draw(st.sampled_from(_POOL))
            start = draw(st.none() | st.integers(min_value=0, max_value=80))
            results.append(
                RetrievedResult(
                    draw(st.integers(min_value=1, max_value=5)),  # ranks may repeat or skip
                    text,
                    document_id=draw(st.sampled_from([None, "alpha", "beta", "gamma"])),
                    start=start,
                    end=None if start is None else start + draw(st.integers(0, 40)),
                )
            )
        error = draw(st.sampled_from([None, None, None, "timeout"]))
        records.append(RetrievalRecord(qid, question, tuple(results), error=error))
    return records


@settings(max_examples=60, deadline=None)
@given(
    records=_generated_records(),
    torn=st.booleans(),
    batch=st.integers(min_value=1, max_value=8),
    mismatch=st.booleans(),
)
def test_evaluate_file_equals_evaluate_on_generated_runs(
    records: list[RetrievalRecord], torn: bool, batch: int, mismatch: bool
) -> None:
    corpus = Corpus.from_texts({"alpha": ALPHA, "beta": BETA})
    gold = _gold_set(corpus)
    header = RunHeader(corpus_fingerprint="0" * 64 if mismatch else corpus.fingerprint)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "run.jsonl"
        if torn:
            _write_with_torn_tail(Run(header, records), path)
        else:
            write_run(Run(header, records), path)
        expected = evaluate(corpus, gold, read_run(path), k=(1, 2, 5))
        streamed = evaluate_file(corpus, gold, path, k=(1, 2, 5), batch_results=batch)
        one_batch = evaluate_file(corpus, gold, path, k=(1, 2, 5))
    _assert_same_evaluation(streamed, expected)
    _assert_same_evaluation(one_batch, expected)


class _CountingLocator(Locator):
    calls: list[int]

    def locate_many(self, requests: Sequence[LocateRequest]) -> list[Location]:
        self.calls.append(len(requests))
        return super().locate_many(requests)


def test_evaluate_file_maps_in_batches_and_gives_the_same_answers(
    corpus: Corpus, gold: GoldSet, run: Run, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    write_run(run, path)
    one = _CountingLocator(corpus)
    one.calls = []
    single = evaluate_file(corpus, gold, path, locator=one)
    # mapped in file order: q1 (3 results), q2 (2, the retry), q6 (1); errored, extra and
    # unresolved records are not mapped
    assert one.calls == [6]
    three = _CountingLocator(corpus)
    three.calls = []
    batched = evaluate_file(corpus, gold, path, locator=three, batch_results=3)
    assert three.calls == [3, 3]  # q1 fills a batch; q2 and q6 the next; nothing is left
    _assert_same_evaluation(batched, single)
    _assert_same_evaluation(single, evaluate(corpus, gold, read_run(path)))


@pytest.mark.parametrize("batch", [0, -1, 2.5, True])
def test_evaluate_file_rejects_a_bad_batch_size(
    corpus: Corpus, gold: GoldSet, run: Run, tmp_path: Path, batch: Any
) -> None:
    path = tmp_path / "r.jsonl"
    write_run(run, path)
    with pytest.raises(InputError, match="batch_results"):
        evaluate_file(corpus, gold, path, batch_results=batch)


def test_evaluate_file_progress_reports_results_mapped_then_scoring(
    corpus: Corpus, gold: GoldSet, run: Run, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    write_run(run, path)
    calls: list[tuple[str, int, int]] = []
    evaluate_file(corpus, gold, path, batch_results=3, progress=lambda *call: calls.append(call))
    maps = [call for call in calls if call[0] == "map"]
    # the total is unknown (0) until the file has been read; 6 results are mapped in all
    assert maps == [("map", 0, 0), ("map", 3, 0), ("map", 6, 0), ("map", 6, 0), ("map", 6, 6)]
    assert calls.index(("map", 6, 6)) < calls.index(("score", 0, 5))
    assert calls[-1] == ("score", 5, 5)


def test_evaluate_file_counts_records_and_checks_provenance_on_the_header_alone(
    corpus: Corpus, gold: GoldSet, run: Run, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    write_run(Run(RunHeader(corpus_fingerprint="0" * 64), run.records), path)
    stream = iter_run(path)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("not json\n")  # the provenance check must not read this far
    with pytest.raises(RunError, match="recorded against another corpus"):
        check_run_provenance(stream, corpus, gold)
    with pytest.raises(RunError, match=r"r\.jsonl:9: invalid JSON"):
        evaluate_file(corpus, gold, stream)
    good = tmp_path / "good.jsonl"
    write_run(run, good)
    stream = iter_run(good)
    check_run_provenance(stream, corpus, gold)
    evaluate_file(corpus, gold, stream)
    assert stream.records_read == 7


def test_cli_evaluate_streams_the_run_and_still_counts_its_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from spanchor_core.cli import main

    lines = (QUICKSTART / "runs" / "candidate.jsonl").read_text("utf-8").splitlines()
    records = [json.loads(line) for line in lines[1:]]
    for number, record in enumerate(records):
        record["query_id"], record["query"] = f"other-{number}", f"another question {number}?"
    run = tmp_path / "unrelated.jsonl"
    run.write_text("\n".join([lines[0], *map(json.dumps, records)]) + "\n", "utf-8")
    docs, gold = str(QUICKSTART / "docs"), str(QUICKSTART / "gold.jsonl")
    assert main(["evaluate", docs, gold, str(run), "-q"]) == 2
    assert f"none of the run's {len(records)} records matches a query" in capsys.readouterr().err
    target = tmp_path / "eval.json"
    candidate = str(QUICKSTART / "runs" / "candidate.jsonl")
    assert main(["evaluate", docs, gold, candidate, "-q", "-o", str(target)]) == 0
    expected = evaluate(load_corpus(docs), read_gold(gold), read_run(candidate))
    _assert_same_evaluation(read_evaluation(target), expected)
