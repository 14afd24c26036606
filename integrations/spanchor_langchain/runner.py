"""Run a gold set through a retriever or a whole app and write the run file: :func:`run_gold_set`.

This is the "record a baseline" step of a regression test: every gold question goes through
the runnable once — a retriever, a dict-input chain, a LangGraph graph, an agent; an
``input_mapper`` turns the gold query into the app's input — each call tagged with its gold
query id (config metadata), so ids never depend on matching question text. Everything inside
is recorded by a :class:`~spanchor_langchain.SpanchorCallbackHandler` (retriever runs, node
and tool outputs holding Documents: the same lines as in production). A query whose run
raises is recorded as an error line when nothing else was (scored as an empty retrieval, and
listed by the evaluation) instead of aborting the run: one flaky query must not cost the other
thousand. The returned :class:`~spanchor_core.Run` is the file read back, in gold order, with
a warning per kind of trouble.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig

from spanchor_core import Corpus, GoldQuery, GoldSet, Run, RunRecorder, read_run, write_run
from spanchor_langchain.callbacks import NestedPolicy, SpanchorCallbackHandler
from spanchor_langchain.documents import DEFAULT_SCORE_KEYS, DocumentIdRule
from spanchor_langchain.recording import QUERY_ID_KEY
from spanchor_langchain.retriever import describe_runnable

InputMapper = Callable[[GoldQuery], Any]
"""Turns a gold query into the app's input, e.g. ``lambda q: {"question": q.question}`` or
``lambda q: {"messages": [("user", q.question)]}``. Default: the question string."""

__all__ = ["InputMapper", "arun_gold_set", "run_gold_set"]


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


class _Session:
    """One recording of a gold set: the file, the handler, the inputs and configs."""

    def __init__(
        self,
        app: Runnable[Any, Any],
        gold: GoldSet,
        path: str | os.PathLike[str],
        *,
        input_mapper: InputMapper | None,
        concurrency: int,
        k: int | None,
        corpus: Corpus | None,
        document_id: DocumentIdRule,
        score_keys: Sequence[str],
        description: str | None,
        parameters: Mapping[str, Any] | None,
        run_tags: Mapping[str, Any] | None,
        config: RunnableConfig | None,
        nested: NestedPolicy,
        contexts: bool,
        strict: bool,
    ) -> None:
        if type(concurrency) is not int or concurrency < 1:
            raise ValueError(f"concurrency must be a positive integer, got {concurrency!r}")
        if k is not None and (type(k) is not int or k < 1):
            raise ValueError(f"k must be a positive integer or None, got {k!r}")
        found_description, found = describe_runnable(app)
        if parameters is None:
            # The runnable's own settings (search_kwargs, k ...) are kept as they are; ours
            # never overwrite them.
            parameters = {**found, "concurrency": concurrency}
            if k is not None:
                parameters["max_results"] = k
        self.path = Path(path)
        # A file of our own, not the process's shared one: it is rewritten in gold order
        # at the end, which must not pull it from under another recorder.
        self.recorder = RunRecorder(
            self.path,
            retriever=description if description is not None else found_description,
            parameters=parameters,
            corpus_fingerprint=None if corpus is None else corpus.fingerprint,
            gold=gold,
            tags=run_tags,
            strict=strict,
        )
        self.handler = SpanchorCallbackHandler(
            self.recorder,
            document_id=document_id,
            score_keys=score_keys,
            max_results=k,
            nested=nested,
            contexts=contexts,
            strict=strict,
        )
        self.gold = gold
        self.queries = list(gold.values())
        mapper = input_mapper or (lambda query: query.question)
        self.inputs = [mapper(query) for query in self.queries]
        base: RunnableConfig = dict(config) if config else {}  # type: ignore[assignment]
        base_metadata = dict(base.get("metadata") or {})
        callbacks = base.get("callbacks")
        if callbacks is not None and not isinstance(callbacks, list):
            raise ValueError("config callbacks must be a list of handlers here")
        self.configs: list[RunnableConfig] = [
            {
                **base,
                "metadata": {**base_metadata, QUERY_ID_KEY: query.query_id},
                "callbacks": [*(callbacks or []), self.handler],
                "max_concurrency": concurrency,
            }
            for query in self.queries
        ]
        self.failed: list[tuple[str, BaseException]] = []

    def outcome(self, index: int, outcome: Any) -> None:
        if isinstance(outcome, BaseException):
            self.failed.append((self.queries[index].query_id, outcome))

    def finish(self) -> Run:
        try:
            self.handler.close()
            if self.failed:
                recorded = {record.query_id for record in read_run(self.path).records}
                for query_id, error in self.failed:
                    if query_id not in recorded:  # the app failed before recording anything
                        self.recorder.record(
                            self.gold[query_id].question, [], query_id=query_id, error=error
                        )
        finally:
            self.recorder.close()
        lost = self.handler.failures
        run = _finish(self.path, self.queries, self.failed)
        if lost:
            run.warnings.append(
                f"{lost} retrievals could not be recorded (see the log); those queries are "
                "missing from the run"
            )
        return run


def _finish(path: Path, queries: list[GoldQuery], failed: list[tuple[str, BaseException]]) -> Run:
    """Read the file back, put its lines in gold order, say what went wrong."""
    run = read_run(path)
    # Lines were written in completion order, which varies between runs; gold order (and,
    # within a query, stage and sequence) makes two recordings of the same app diff cleanly.
    # The rewrite is atomic (temp file + rename).
    order = {query.query_id: index for index, query in enumerate(queries)}
    stages = {"retrieval": 0, "postprocessed": 1, "context": 2}
    ranked = sorted(
        run.records,
        key=lambda record: (
            order.get(record.query_id or "", len(order)),
            stages.get(record.stage or "", 3),
            record.source or "",
            record.sequence or 0,
        ),
    )
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
    app: Runnable[Any, Any],
    gold: GoldSet,
    path: str | os.PathLike[str],
    *,
    input_mapper: InputMapper | None = None,
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
    nested: NestedPolicy = "outermost",
    contexts: bool = True,
    strict: bool = False,
) -> Run:
    """Run every gold question through ``app``, record the run file at ``path``, return it
    read back.

    ``app`` is any runnable: a retriever, a chain (dict input: give ``input_mapper``), a
    LangGraph graph, an agent. ``input_mapper`` turns each :class:`~spanchor_core.GoldQuery`
    into the app's input (default: the question string). ``concurrency`` questions run at
    once. ``k`` keeps only the first ``k`` results of each line in the file (the app is not
    reconfigured; the retriever's own ``k`` decides what it returns, and stays in the header
    as it was; ours is ``max_results``). The header carries the gold set's hash, the corpus
    fingerprint when ``corpus`` is given (so the gate refuses a run made on other documents),
    and ``description``/``parameters`` (by default the runnable's name and search settings,
    plus ``concurrency``). ``config`` is passed to every call, with the query id added to its
    metadata and the recording handler to its callbacks. ``nested``, ``contexts`` and
    ``strict`` are those of :class:`~spanchor_langchain.SpanchorCallbackHandler`. A progress
    bar is shown when ``progress`` and stderr is a terminal.
    """
    session = _Session(
        app, gold, path, input_mapper=input_mapper, concurrency=concurrency, k=k,
        corpus=corpus, document_id=document_id, score_keys=score_keys,
        description=description, parameters=parameters, run_tags=run_tags, config=config,
        nested=nested, contexts=contexts, strict=strict,
    )  # fmt: skip
    try:
        with _progress(len(session.queries), progress) as advance:
            if session.queries:
                outcomes = app.batch_as_completed(
                    session.inputs, session.configs, return_exceptions=True
                )
                for index, outcome in outcomes:
                    session.outcome(index, outcome)
                    advance()
    finally:
        run = session.finish()
    return run


async def arun_gold_set(
    app: Runnable[Any, Any],
    gold: GoldSet,
    path: str | os.PathLike[str],
    *,
    input_mapper: InputMapper | None = None,
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
    nested: NestedPolicy = "outermost",
    contexts: bool = True,
    strict: bool = False,
) -> Run:
    """:func:`run_gold_set` through ``ainvoke`` (``concurrency`` calls in flight at once)."""
    session = _Session(
        app, gold, path, input_mapper=input_mapper, concurrency=concurrency, k=k,
        corpus=corpus, document_id=document_id, score_keys=score_keys,
        description=description, parameters=parameters, run_tags=run_tags, config=config,
        nested=nested, contexts=contexts, strict=strict,
    )  # fmt: skip
    try:
        with _progress(len(session.queries), progress) as advance:
            if session.queries:
                outcomes = app.abatch_as_completed(
                    session.inputs, session.configs, return_exceptions=True
                )
                async for index, outcome in outcomes:
                    session.outcome(index, outcome)
                    advance()
    finally:
        run = session.finish()
    return run
