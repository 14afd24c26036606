"""Live recording through LlamaIndex's instrumentation dispatcher."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("llama_index.core")

import contextlib

from llama_index.core.instrumentation import (  # type: ignore[attr-defined]
    Dispatcher,
    get_dispatcher,
)
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from spanchor_core import read_run, write_gold
from spanchor_core.cli import main as cli_main
from spanchor_llamaindex import SpanchorEventHandler, record_retrievals, tag_query
from tests.integrations.contract import SCENARIO, check_run_file, reference_run
from tests.integrations.test_llamaindex import ScenarioRetriever


def _handler_lists() -> tuple[list[object], list[object]]:
    root = get_dispatcher()
    return list(root.event_handlers), list(root.span_handlers)


def test_recorded_run_passes_the_contract(tmp_path: Path) -> None:
    before = _handler_lists()
    retriever = ScenarioRetriever(SCENARIO)
    path = tmp_path / "run.jsonl"
    with record_retrievals(path, retriever="scenario", corpus=SCENARIO.corpus) as handler:
        assert handler.installed
        for query in SCENARIO.gold.values():
            with tag_query(query.query_id):
                retriever.retrieve(query.question)
    assert not handler.installed
    assert _handler_lists() == before, "removed cleanly"
    assert (handler.records, handler.failures) == (4, 0)
    check_run_file(path)
    header = read_run(path).header
    assert header.corpus_fingerprint == SCENARIO.corpus.fingerprint
    assert header.retriever.description == "scenario"


def test_query_ids_from_the_gold_set_when_untagged(tmp_path: Path) -> None:
    retriever = ScenarioRetriever(SCENARIO)
    path = tmp_path / "run.jsonl"
    with record_retrievals(path, gold=SCENARIO.gold):
        for query in SCENARIO.gold.values():
            asyncio.run(retriever.aretrieve(query.question))
    check_run_file(path)


def test_threads_and_gather_lose_nothing(tmp_path: Path) -> None:
    retriever = ScenarioRetriever(SCENARIO)
    questions = [q.question for q in SCENARIO.gold.values()]

    def query_of(i: int) -> str:
        return f"{questions[i % 4]} #{i}"

    def in_thread(i: int) -> None:
        with tag_query(f"t{i}"):  # ContextVars do not cross into pool threads: tag inside
            retriever.retrieve(query_of(i))

    def submitted(pool: ThreadPoolExecutor, i: int) -> Future[None]:
        # The block's scope is a ContextVar too: a pool thread runs in a copy of our context.
        return pool.submit(contextvars.copy_context().run, in_thread, i)

    async def in_task(i: int) -> None:
        with tag_query(f"a{i}"):
            await retriever.aretrieve(query_of(i))

    async def gather() -> None:
        await asyncio.gather(*(in_task(i) for i in range(100)))

    path = tmp_path / "run.jsonl"
    with record_retrievals(path) as handler:
        with ThreadPoolExecutor(max_workers=8) as pool:
            for future in [submitted(pool, i) for i in range(100)]:
                future.result()
        asyncio.run(gather())
    records = read_run(path).records
    assert handler.records == len(records) == 200
    assert handler.failures == 0
    assert handler.pending == 0
    ids = sorted(str(r.query_id) for r in records)
    assert ids == sorted([f"t{i}" for i in range(100)] + [f"a{i}" for i in range(100)])
    for record in records:
        number = int(str(record.query_id)[1:])
        assert record.query == query_of(number), "each id stays with its own query"
        expected = SCENARIO.retrieve(query_of(number))
        assert [r.text for r in record.results] == [h.text for h in expected]


def test_a_failing_retrieval_is_an_error_line(tmp_path: Path) -> None:
    retriever = ScenarioRetriever(SCENARIO, fail_on="knife")
    path = tmp_path / "run.jsonl"
    with record_retrievals(path):
        for query in SCENARIO.gold.values():
            with tag_query(query.query_id), contextlib.suppress(ValueError):
                retriever.retrieve(query.question)
        with tag_query("async-fail"), pytest.raises(ValueError, match="index unavailable"):
            asyncio.run(retriever.aretrieve("sharp knife?"))
    by_id = {r.query_id: r for r in read_run(path).records}
    assert by_id["q3"].error == "ValueError: index unavailable for 'Why is a sharp knife safer?'"
    assert by_id["q3"].results == ()
    assert by_id["async-fail"].error is not None
    assert [by_id[q].error for q in ("q1", "q2", "q4")] == [None, None, None]


class _Router(BaseRetriever):
    """Delegates to another retriever: LlamaIndex emits a nested retrieval."""

    def __init__(self, inner: BaseRetriever) -> None:
        super().__init__()
        self.inner = inner

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.inner.retrieve(query_bundle)


def test_nested_retrievals_are_recorded_once(tmp_path: Path) -> None:
    router = _Router(ScenarioRetriever(SCENARIO))
    path = tmp_path / "run.jsonl"
    with record_retrievals(path) as handler:
        for query in SCENARIO.gold.values():
            with tag_query(query.query_id):
                router.retrieve(query.question)
    assert handler.nested == 4
    check_run_file(path)


class _Broken(BaseRetriever):
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=TextNode(text="ok"), score=1.0)]


def test_a_raising_resolver_costs_only_the_document_id(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(node: object) -> str:
        raise RuntimeError("resolver bug")

    path = tmp_path / "run.jsonl"
    with (
        caplog.at_level(logging.WARNING, logger="spanchor_llamaindex.nodes"),
        record_retrievals(path, document_id=explode) as handler,
    ):
        for _ in range(3):
            assert _Broken().retrieve("q")[0].node.get_content() == "ok"
    assert (handler.records, handler.failures, handler.resolver_errors) == (3, 0, 3)
    records = read_run(path).records
    assert [[(r.text, r.document_id) for r in rec.results] for rec in records] == [
        [("ok", None)]
    ] * 3
    assert sum("resolver raised" in m for m in caplog.messages) == 1, "logged once"


def test_recording_never_breaks_retrieval(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "run.jsonl"
    with (
        caplog.at_level(logging.WARNING, logger="spanchor_llamaindex.recording"),
        record_retrievals(path) as handler,
    ):
        handler.recorder.close()  # every write now fails
        for _ in range(3):
            assert _Broken().retrieve("q")[0].node.get_content() == "ok"
    assert handler.failures == 3
    assert handler.records == 0


def test_install_uninstall_is_idempotent_and_restores_lists(tmp_path: Path) -> None:
    before = _handler_lists()
    handler = SpanchorEventHandler(tmp_path / "run.jsonl")
    handler.install()
    handler.install()
    root = get_dispatcher()
    assert sum(h is handler for h in root.event_handlers) == 1
    handler.uninstall()
    handler.uninstall()
    assert _handler_lists() == before
    # Retrievals after removal are not recorded.
    _Broken().retrieve("q")
    handler.close()
    assert read_run(tmp_path / "run.jsonl").records == []


def test_recorded_run_passes_spanchor_gate(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for doc_id in SCENARIO.corpus:
        (docs / f"{doc_id}.txt").write_text(SCENARIO.corpus.text(doc_id), encoding="utf-8")
    gold_path = tmp_path / "gold.jsonl"
    write_gold(SCENARIO.gold, gold_path)
    baseline = reference_run(tmp_path / "baseline.jsonl")
    candidate = tmp_path / "candidate.jsonl"
    retriever = ScenarioRetriever(SCENARIO)
    with record_retrievals(candidate, corpus=SCENARIO.corpus, gold=SCENARIO.gold):
        for query in SCENARIO.gold.values():
            with tag_query(query.query_id):
                retriever.retrieve(query.question)
    argv = ["gate", "--docs", str(docs), "--gold", str(gold_path), "--baseline", str(baseline)]
    argv += ["--candidate", str(candidate), "--max-unmapped-rate", "0", "--quiet"]
    assert cli_main(argv) == 0
    # A candidate that lost a query's evidence fails the same gate.
    worse = tmp_path / "worse.jsonl"
    with record_retrievals(worse, corpus=SCENARIO.corpus, gold=SCENARIO.gold):
        for query in SCENARIO.gold.values():
            with tag_query(query.query_id):
                ScenarioRetriever(SCENARIO, k=1).retrieve("dull knife black basil")
    argv[-4] = str(worse)
    assert cli_main(argv) == 1


# -- scope: a record_retrievals block records its own retrievals only -----------------------------


def test_blocks_in_two_threads_record_only_their_own_query(tmp_path: Path) -> None:
    retriever = ScenarioRetriever(SCENARIO)
    questions = {"t0": SCENARIO.gold["q1"].question, "t1": SCENARIO.gold["q2"].question}
    both_inside = threading.Barrier(2, timeout=10)
    both_done = threading.Barrier(2, timeout=10)
    errors: list[BaseException] = []

    def worker(name: str) -> None:
        try:
            with record_retrievals(tmp_path / f"{name}.jsonl"):
                both_inside.wait()  # both handlers are installed on the root dispatcher now
                retriever.retrieve(questions[name])
                both_done.wait()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(name,)) for name in questions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for name, question in questions.items():
        assert [r.query for r in read_run(tmp_path / f"{name}.jsonl").records] == [question]


def test_blocks_in_concurrent_tasks_record_only_their_own_queries(tmp_path: Path) -> None:
    retriever = ScenarioRetriever(SCENARIO)
    questions = [q.question for q in SCENARIO.gold.values()]

    async def task(i: int, barrier: asyncio.Barrier) -> None:
        with record_retrievals(tmp_path / f"{i}.jsonl"):
            await barrier.wait()
            await retriever.aretrieve(questions[i])
            await barrier.wait()

    async def main() -> None:
        barrier = asyncio.Barrier(len(questions))
        await asyncio.gather(*(task(i, barrier) for i in range(len(questions))))

    asyncio.run(main())
    for i, question in enumerate(questions):
        assert [r.query for r in read_run(tmp_path / f"{i}.jsonl").records] == [question]


def _strict_block(path: Path, retriever: BaseRetriever) -> SpanchorEventHandler:
    """A block that does not adopt worker threads: one own retrieval, one in a thread."""
    with record_retrievals(path, adopt_threads=False) as handler:
        retriever.retrieve("third")
        thread = threading.Thread(target=retriever.retrieve, args=("elsewhere",))
        thread.start()
        thread.join()
    return handler


def test_nested_blocks_both_record_and_an_installed_handler_records_everything(
    tmp_path: Path,
) -> None:
    retriever = ScenarioRetriever(SCENARIO)
    everything = SpanchorEventHandler(tmp_path / "all.jsonl").install()
    try:
        with record_retrievals(tmp_path / "outer.jsonl"):
            retriever.retrieve("first")
            with record_retrievals(tmp_path / "inner.jsonl"):
                retriever.retrieve("second")
                # A thread that did not copy the context inherits no block: the open blocks
                # are nested, so both adopt it.
                thread = threading.Thread(target=retriever.retrieve, args=("pooled",))
                thread.start()
                thread.join()
            with pytest.warns(RuntimeWarning, match=r"1 LlamaIndex retrieval\(s\) ran in threads"):
                strict = _strict_block(tmp_path / "strict.jsonl", retriever)
    finally:
        everything.close()

    def queries(name: str) -> list[str]:
        return [r.query for r in read_run(tmp_path / f"{name}.jsonl").records]

    assert queries("outer") == ["first", "second", "pooled", "third", "elsewhere"]
    assert queries("inner") == ["second", "pooled"]
    assert queries("strict") == ["third"]
    assert strict.unattributed == 1
    assert queries("all") == ["first", "second", "pooled", "third", "elsewhere"]


# -- install/uninstall from many threads ----------------------------------------------------------


def test_concurrent_install_and_uninstall_leave_the_dispatcher_lists_as_they_were(
    tmp_path: Path,
) -> None:
    existing = SpanchorEventHandler(tmp_path / "existing.jsonl")
    dispatcher = Dispatcher(name="spanchor-test", propagate=False)
    existing.install(dispatcher)
    before = (list(dispatcher.event_handlers), list(dispatcher.span_handlers))
    handlers = [SpanchorEventHandler(tmp_path / f"h{i}.jsonl") for i in range(32)]
    start = threading.Barrier(len(handlers), timeout=10)
    lost: list[int] = []

    def churn(handler: SpanchorEventHandler) -> None:
        start.wait()
        for _ in range(500):
            handler.install(dispatcher)
            if not any(h is handler for h in dispatcher.event_handlers):
                lost.append(1)  # another thread's write replaced the list we had extended
            handler.uninstall()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: races show at once
    try:
        threads = [threading.Thread(target=churn, args=(h,)) for h in handlers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
        for handler in handlers:
            handler.close()
    after = (list(dispatcher.event_handlers), list(dispatcher.span_handlers))
    existing.close()
    assert lost == []
    assert [id(h) for h in after[0]] == [id(h) for h in before[0]]
    assert [id(h) for h in after[1]] == [id(h) for h in before[1]]
