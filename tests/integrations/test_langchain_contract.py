"""The shared recorder contract, driven through LangChain: wrapper, callback handler, context
manager and gold-set runner all write the scenario's retrievals exactly; the README's two lines
work and their run file passes ``spanchor gate``."""

from __future__ import annotations

import asyncio
import re
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_text_splitters")

from langchain_core.runnables import RunnableConfig, RunnableLambda

from spanchor_core import evaluate, read_run, write_gold
from spanchor_core.cli import main as cli_main
from spanchor_core.pipeline import run_gate
from spanchor_core.settings import GateConfig
from spanchor_langchain import (
    RecordingRetriever,
    SpanchorCallbackHandler,
    arun_gold_set,
    record_retrievals,
    run_gold_set,
)
from tests.integrations.contract import SCENARIO, check_run_file, reference_run
from tests.integrations.test_langchain_helpers import (
    ScenarioRetriever,
    garden_corpus,
    garden_gold,
    vector_store,
)


def tagged(query_id: str) -> RunnableConfig:
    return {"metadata": {"spanchor_query_id": query_id}}


def test_wrapper_passes_the_contract(tmp_path: Path) -> None:
    path = tmp_path / "wrapper.jsonl"
    with RecordingRetriever(ScenarioRetriever(), path, document_id="source") as wrapped:
        for query in SCENARIO.gold.values():
            wrapped.invoke(query.question, tagged(query.query_id))
    check_run_file(path)
    assert [r.results[0].document_id for r in read_run(path).records] == [
        SCENARIO.retrieve(q.question)[0].document_id for q in SCENARIO.gold.values()
    ]


def test_wrapper_batch_passes_the_contract(tmp_path: Path) -> None:
    path = tmp_path / "wrapper-batch.jsonl"
    queries = list(SCENARIO.gold.values())
    with RecordingRetriever(ScenarioRetriever(), path, document_id="source") as wrapped:
        wrapped.batch([q.question for q in queries], [tagged(q.query_id) for q in queries])
    check_run_file(path)


def test_callback_handler_passes_the_contract(tmp_path: Path) -> None:
    path = tmp_path / "callback.jsonl"
    chain = RunnableLambda(lambda x: x["question"]) | ScenarioRetriever()
    handler = SpanchorCallbackHandler(path, document_id="source")
    for query in SCENARIO.gold.values():
        chain.invoke(
            {"question": query.question}, {**tagged(query.query_id), "callbacks": [handler]}
        )
    handler.close()
    check_run_file(path)


def test_callback_handler_resolving_ids_by_text_passes_the_contract(tmp_path: Path) -> None:
    path = tmp_path / "callback-text.jsonl"
    handler = SpanchorCallbackHandler(path, gold=SCENARIO.gold)
    questions = [query.question for query in SCENARIO.gold.values()]
    asyncio.run(ScenarioRetriever().abatch(questions, config={"callbacks": [handler]}))
    check_run_file(path)


def test_context_manager_passes_the_contract(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    chain = RunnableLambda(lambda x: x["question"]) | ScenarioRetriever()
    queries = list(SCENARIO.gold.values())
    with record_retrievals(path, document_id="source"):
        chain.batch(
            [{"question": q.question} for q in queries], [tagged(q.query_id) for q in queries]
        )
    check_run_file(path)


def test_run_gold_set_passes_the_contract(tmp_path: Path) -> None:
    path = tmp_path / "gold-run.jsonl"
    run = run_gold_set(
        ScenarioRetriever(), SCENARIO.gold, path, corpus=SCENARIO.corpus, progress=False
    )
    check_run_file(path)
    assert run.header.corpus_fingerprint == SCENARIO.corpus.fingerprint
    assert run.header.gold_sha256 == SCENARIO.gold.sha256
    assert [r.query_id for r in run.records] == list(SCENARIO.gold)


def test_arun_gold_set_passes_the_contract(tmp_path: Path) -> None:
    path = tmp_path / "gold-arun.jsonl"
    asyncio.run(arun_gold_set(ScenarioRetriever(), SCENARIO.gold, path, progress=False))
    check_run_file(path)


def test_wrapper_and_callback_recordings_of_the_same_retrievals_evaluate_identically(
    tmp_path: Path,
) -> None:
    corpus = garden_corpus()
    gold = garden_gold(corpus)
    retriever = vector_store(corpus).as_retriever(search_kwargs={"k": 3})
    queries = list(gold.values())
    configs = [tagged(q.query_id) for q in queries]
    with RecordingRetriever(retriever, tmp_path / "wrapper.jsonl") as wrapped:
        wrapped.batch([q.question for q in queries], configs)
    handler = SpanchorCallbackHandler(tmp_path / "callback.jsonl")
    retriever.batch([q.question for q in queries], [{**c, "callbacks": [handler]} for c in configs])
    by_wrapper = evaluate(corpus, gold, read_run(tmp_path / "wrapper.jsonl"))
    by_callback = evaluate(corpus, gold, read_run(tmp_path / "callback.jsonl"))
    assert list(by_wrapper) == list(by_callback) == list(gold)
    for qid in gold:
        assert dict(by_wrapper[qid]) == dict(by_callback[qid]), qid
    assert by_wrapper.mean("recall@3") > 0.5, "the local embedding retrieves the evidence"
    assert by_wrapper.mapping.unmapped_rate == 0.0


# -- the README's two lines ---------------------------------------------------------------------


def test_the_readme_langchain_block_runs_and_records_every_gold_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = Path(__file__).resolve().parents[2]
    blocks = re.findall(
        r"^```python\n(.*?)^```", (root / "README.md").read_text(encoding="utf-8"), re.M | re.S
    )
    [block] = [b for b in blocks if re.search(r"^from spanchor_langchain import ", b, re.M)]
    monkeypatch.chdir(root)
    monkeypatch.setattr(tempfile, "mkdtemp", lambda *args, **kwargs: str(tmp_path))
    namespace: dict[str, object] = {"__name__": "__readme__"}
    exec(compile(block, "README.md (spanchor_langchain block)", "exec"), namespace)
    path = tmp_path / "candidate.jsonl"
    assert namespace["path"] == path
    run = read_run(path)
    assert len(run.records) == 57, "one line per question of examples/quickstart/gold.jsonl"
    gold = namespace["gold"]
    assert sorted(r.query for r in run.records) == sorted(
        q.question
        for q in gold.values()  # type: ignore[attr-defined]
    )
    [printed] = capsys.readouterr().out.splitlines()
    expected = evaluate(namespace["corpus"], gold, run).mean("recall@5")  # type: ignore[arg-type]
    assert float(printed) == expected
    assert 0.0 < expected < 1.0


def _readme_two_lines(chain: object, questions: list[str]) -> None:
    # Exactly the two lines the README shows (the names `chain` and `questions` are the user's).
    from spanchor_langchain import SpanchorCallbackHandler

    chain.batch(questions, config={"callbacks": [SpanchorCallbackHandler("runs/candidate.jsonl")]})  # type: ignore[attr-defined]


def test_the_readme_two_lines_record_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    chain = RunnableLambda(lambda question: question) | ScenarioRetriever()
    questions = [query.question for query in SCENARIO.gold.values()]
    _readme_two_lines(chain, questions)
    run = read_run(tmp_path / "runs" / "candidate.jsonl")
    assert sorted(r.query for r in run.records) == sorted(questions)


def test_the_readme_single_invoke_form_works_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    chain = RunnableLambda(lambda question: question) | ScenarioRetriever()
    question = SCENARIO.gold["q2"].question
    chain.invoke(question, config={"callbacks": [SpanchorCallbackHandler("runs/candidate.jsonl")]})
    (record,) = read_run(tmp_path / "runs" / "candidate.jsonl").records
    assert record.query == question


def test_the_readme_run_file_passes_spanchor_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for doc_id in SCENARIO.corpus:
        (docs / f"{doc_id}.md").write_text(SCENARIO.corpus.text(doc_id), encoding="utf-8")
    write_gold(SCENARIO.gold, tmp_path / "gold.jsonl")
    baseline = reference_run(tmp_path / "runs" / "baseline.jsonl")
    monkeypatch.chdir(tmp_path)
    chain = RunnableLambda(lambda question: question) | ScenarioRetriever()
    _readme_two_lines(chain, [query.question for query in SCENARIO.gold.values()])
    config = GateConfig(
        docs=docs,
        gold=tmp_path / "gold.jsonl",
        baseline=baseline,
        candidate=tmp_path / "runs" / "candidate.jsonl",
    )
    outcome = run_gate(config)
    assert outcome.exit_code == 0
    assert outcome.comparison.passed
    assert sorted(outcome.candidate) == sorted(SCENARIO.gold)
    argv = [
        "gate",
        "--docs",
        str(docs),
        "--gold",
        str(tmp_path / "gold.jsonl"),
        "--baseline",
        str(baseline),
        "--candidate",
        "runs/candidate.jsonl",
    ]
    assert cli_main(argv) == 0


def test_a_worse_langchain_candidate_fails_the_gate(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for doc_id in SCENARIO.corpus:
        (docs / f"{doc_id}.md").write_text(SCENARIO.corpus.text(doc_id), encoding="utf-8")
    write_gold(SCENARIO.gold, tmp_path / "gold.jsonl")
    baseline = reference_run(tmp_path / "baseline.jsonl")
    worse = tmp_path / "worse.jsonl"
    # k=1 and the last-ranked hit only: the gate must notice the lost evidence.
    reversed_retriever = ScenarioRetriever() | RunnableLambda(lambda docs: docs[::-1][:1])
    run_gold_set(reversed_retriever, SCENARIO.gold, worse, progress=False)
    outcome = run_gate(
        GateConfig(docs=docs, gold=tmp_path / "gold.jsonl", baseline=baseline, candidate=worse)
    )
    assert outcome.exit_code == 1
