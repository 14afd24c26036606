"""Run a gold set through a retriever and write the run file: :func:`run_gold_set`.

This is the "record a baseline" step of a regression test: every gold question goes through
the retriever once, each call tagged with its gold query id (config metadata), so ids never
depend on matching question text. A query whose retrieval raises is recorded as an error line
(scored as an empty retrieval, and listed by the evaluation) instead of aborting the run: one
flaky query must not cost the other thousand. The returned :class:`~spanchor_core.Run` is the
file read back, with a warning per kind of trouble.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables import Runnable, RunnableConfig

from spanchor_core.corpus import Corpus
from spanchor_core.gold import GoldQuery, GoldSet
from spanchor_core.runs import Run, read_run, write_run
from spanchor_langchain.documents import DEFAULT_SCORE_KEYS, DocumentIdRule
from spanchor_langchain.recording import QUERY_ID_KEY
from spanchor_langchain.retriever import RecordingRetriever, describe_runnable

__all__ = ["arun_gold_set", "run_gold_set"]


@contextmanager
def _progress(total: int, enabled: bool) -> Iterator[Callable[[], None]]:
    """A step function that advances a progress bar, shown only on an interactive stderr.

    rich is imported here, not at module level: importing the integration must stay light, and
    CI logs (stderr not a terminal) want no bar at all.
    """
    if not enabled or not sys.stderr.isatty():
        yield lambda: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("spanchor: retrieving", total=total)
        yield lambda: bar.advance(task)


def _prepare(
    retriever: Runnable[str, list[Document]],
    gold: GoldSet,
    path: str | os.PathLike[str],
    *,
    concurrency: int,
    k: int | None,
    corpus: Corpus | None,
    document_id: DocumentIdRule,
    score_keys: Sequence[str],
    description: str | None,
    parameters: Mapping[str, Any] | None,
    run_tags: Mapping[str, Any] | None,
    config: RunnableConfig | None,
) -> tuple[RecordingRetriever, list[GoldQuery], list[RunnableConfig]]:
    if type(concurrency) is not int or concurrency < 1:
        raise ValueError(f"concurrency must be a positive integer, got {concurrency!r}")
    if k is not None and (type(k) is not int or k < 1):
        raise ValueError(f"k must be a positive integer or None, got {k!r}")
    found_description, found = describe_runnable(retriever)
    if parameters is None:
        parameters = {**found, "k": k, "concurrency": concurrency}
    wrapper = RecordingRetriever(
        retriever,
        path,
        gold=gold,
        corpus=corpus,
        document_id=document_id,
        score_keys=score_keys,
        max_results=k,
        description=description if description is not None else found_description,
        parameters=parameters,
        run_tags=run_tags,
    )
    queries = list(gold.values())
    base: RunnableConfig = dict(config) if config else {}  # type: ignore[assignment]
    base_metadata = dict(base.get("metadata") or {})
    configs: list[RunnableConfig] = [
        {
            **base,
            "metadata": {**base_metadata, QUERY_ID_KEY: query.query_id},
            "max_concurrency": concurrency,
        }
        for query in queries
    ]
    return wrapper, queries, configs


def _finish(path: Path, queries: list[GoldQuery], failed: list[tuple[str, Exception]]) -> Run:
    """Read the file back, put its lines in gold order, say what went wrong."""
    run = read_run(path)
    # Lines were written in completion order, which varies between runs; gold order makes two
    # recordings of the same retriever diff cleanly. The rewrite is atomic (temp file + rename).
    order = {query.query_id: index for index, query in enumerate(queries)}
    ranked = sorted(run.records, key=lambda record: order.get(record.query_id or "", len(order)))
    if any(new is not old for new, old in zip(ranked, run.records, strict=True)):
        run.records = ranked
        write_run(run, path)
    if failed:
        qid, error = min(failed, key=lambda item: order[item[0]])
        run.warnings.append(
            f"{len(failed)} of {len(queries)} retrievals raised and were recorded as "
            f"errors; the first, {qid}: {type(error).__name__}: {error}"
        )
    return run


def run_gold_set(
    retriever: Runnable[str, list[Document]],
    gold: GoldSet,
    path: str | os.PathLike[str],
    *,
    concurrency: int = 4,
    k: int | None = None,
    progress: bool = True,
    corpus: Corpus | None = None,
    document_id: DocumentIdRule = None,
    score_keys: Sequence[str] = DEFAULT_SCORE_KEYS,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    run_tags: Mapping[str, Any] | None = None,
    config: RunnableConfig | None = None,
) -> Run:
    """Retrieve every gold question, record the run file at ``path``, return it read back.

    ``concurrency`` questions run at once (LangChain's ``max_concurrency`` over its thread
    pool). ``k`` keeps only the first ``k`` results of each retrieval in the file (the
    retriever itself is not reconfigured; its own ``k`` decides what it returns). The header
    carries the gold set's hash, the corpus fingerprint when ``corpus`` is given (so the gate
    refuses a run made on other documents), and ``description``/``parameters`` (by default the
    retriever's name and search settings, plus ``k`` and ``concurrency``). ``config`` is
    passed to every call, with the query id added to its metadata. A progress bar is shown
    when ``progress`` and stderr is a terminal.
    """
    wrapper, queries, configs = _prepare(
        retriever,
        gold,
        path,
        concurrency=concurrency,
        k=k,
        corpus=corpus,
        document_id=document_id,
        score_keys=score_keys,
        description=description,
        parameters=parameters,
        run_tags=run_tags,
        config=config,
    )
    failed: list[tuple[str, Exception]] = []
    try:
        with _progress(len(queries), progress) as advance:
            if queries:
                outcomes = wrapper.batch_as_completed(
                    [query.question for query in queries], configs, return_exceptions=True
                )
                for index, outcome in outcomes:
                    if isinstance(outcome, Exception):
                        failed.append((queries[index].query_id, outcome))
                    advance()
    finally:
        wrapper.close()
    lost = wrapper.failures
    run = _finish(Path(path), queries, failed)
    if lost:
        run.warnings.append(
            f"{lost} retrievals could not be recorded (see the log); those queries are "
            "missing from the run"
        )
    return run


async def arun_gold_set(
    retriever: Runnable[str, list[Document]],
    gold: GoldSet,
    path: str | os.PathLike[str],
    *,
    concurrency: int = 4,
    k: int | None = None,
    progress: bool = True,
    corpus: Corpus | None = None,
    document_id: DocumentIdRule = None,
    score_keys: Sequence[str] = DEFAULT_SCORE_KEYS,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    run_tags: Mapping[str, Any] | None = None,
    config: RunnableConfig | None = None,
) -> Run:
    """:func:`run_gold_set` through ``ainvoke`` (``concurrency`` calls in flight at once)."""
    wrapper, queries, configs = _prepare(
        retriever,
        gold,
        path,
        concurrency=concurrency,
        k=k,
        corpus=corpus,
        document_id=document_id,
        score_keys=score_keys,
        description=description,
        parameters=parameters,
        run_tags=run_tags,
        config=config,
    )
    failed: list[tuple[str, Exception]] = []
    try:
        with _progress(len(queries), progress) as advance:
            if queries:
                outcomes = wrapper.abatch_as_completed(
                    [query.question for query in queries], configs, return_exceptions=True
                )
                async for index, outcome in outcomes:
                    if isinstance(outcome, Exception):
                        failed.append((queries[index].query_id, outcome))
                    advance()
    finally:
        wrapper.close()
    lost = wrapper.failures
    run = _finish(Path(path), queries, failed)
    if lost:
        run.warnings.append(
            f"{lost} retrievals could not be recorded (see the log); those queries are "
            "missing from the run"
        )
    return run
