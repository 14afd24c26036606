"""A retriever evaluator that keeps what ``RetrieverEvaluator`` throws away.

LlamaIndex's ``RetrieverEvaluator`` reduces every ``NodeWithScore`` to an id and a text before
any metric sees it: scores, ``start_char_idx``/``end_char_idx`` and source documents are lost.
:class:`SpanRetrieverEvaluator` subclasses the same ``BaseRetrievalEvaluator`` but keeps the
nodes, maps them with their document ids and offset hints (verified by the core), and:

* :meth:`~SpanRetrieverEvaluator.aevaluate` answers one query like LlamaIndex's evaluators do
  (a ``RetrievalEvalResult`` whose ``metric_dict`` holds ``span_recall@5`` & co. next to any
  LlamaIndex metrics you add), plus the nodes and the run-file record;
* :meth:`~SpanRetrieverEvaluator.evaluate_gold` runs a whole gold set with bounded
  concurrency, writes every retrieval to a run file as it completes (a crash keeps what was
  done), and returns the core :class:`~spanchor_core.Evaluation` of that run file — the same
  numbers ``spanchor evaluate`` and ``spanchor gate`` compute from it;
* :meth:`~SpanRetrieverEvaluator.aevaluate_dataset` / :meth:`~SpanRetrieverEvaluator.
  evaluate_dataset` replace the ``BaseRetrievalEvaluator.aevaluate_dataset`` that left
  llama-index-core in 0.14.21: the same call over an id-based QA dataset (a
  :class:`~spanchor_llamaindex.QADataset`, an ``EmbeddingQAFinetuneDataset`` or a
  ``LabelledRagDataset``), one result per query in dataset order, span metrics included. The
  dataset's node ids become span gold once (:func:`~spanchor_llamaindex.gold_from_qa_dataset`,
  with the context's nodes when it has them), and every query is scored against its own gold
  by id — duplicate question texts included.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr, SerializeAsAny
from llama_index.core.evaluation.retrieval.base import (
    BaseRetrievalEvaluator,
    RetrievalEvalMode,
    RetrievalEvalResult,
)
from llama_index.core.evaluation.retrieval.metrics_base import (
    BaseRetrievalMetric,
    RetrievalMetricResult,
)
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from spanchor_core import (
    DEFAULT_K,
    DEFAULT_MIN_OVERLAP,
    Corpus,
    DocSpan,
    Evaluation,
    GoldQuery,
    GoldSet,
    InputError,
    RetrievalRecord,
    RunRecorder,
    evaluate,
    read_run,
)
from spanchor_core.metrics import DEFAULT_METRICS, check_k
from spanchor_llamaindex._sync import run_sync
from spanchor_llamaindex.context import GoldEvidence, SpanContext, metric_value
from spanchor_llamaindex.datasets import QADataset, gold_from_qa_dataset
from spanchor_llamaindex.metrics import SPAN_METRIC_PREFIX
from spanchor_llamaindex.nodes import DocumentIdResolver, NodeConverter, node_text
from spanchor_llamaindex.rag_dataset import rag_to_qa_dataset

__all__ = ["GoldSetEvaluation", "SpanRetrievalEvalResult", "SpanRetrieverEvaluator"]


class SpanRetrievalEvalResult(RetrievalEvalResult):
    """A ``RetrievalEvalResult`` that also carries the nodes and the run-file record."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    query_id: str | None = Field(default=None, description="Gold query id, when known")
    nodes: list[NodeWithScore] = Field(default_factory=list, description="Retrieved nodes")
    record: RetrievalRecord | None = Field(default=None, description="The run-file record")


@dataclass(frozen=True, slots=True)
class GoldSetEvaluation:
    """What :meth:`SpanRetrieverEvaluator.evaluate_gold` produced."""

    evaluation: Evaluation
    run_path: Path
    errors: int
    """Retrievals that raised (recorded as error lines and scored as empty retrievals)."""
    seconds: float


def _progress(total: int, show: bool | None) -> Any:
    """A tqdm bar on stderr, only when stderr is a terminal (CI logs stay clean)."""
    enabled = sys.stderr.isatty() if show is None else show
    if not enabled:
        return None
    from tqdm import tqdm  # type: ignore[import-untyped]  # a llama-index-core dependency

    return tqdm(total=total, file=sys.stderr, unit="query", desc="spanchor")


class SpanRetrieverEvaluator(BaseRetrievalEvaluator):
    """Evaluate a LlamaIndex retriever on span gold evidence, keeping ``NodeWithScore``.

    Build it with :meth:`from_corpus`. ``metrics`` may hold LlamaIndex metrics (``hit_rate``,
    ``mrr``, ...) that should run beside the span metrics; they get node ids and texts as
    usual. ``k`` are the cutoffs of the span metrics; ``document_id`` maps a node to its
    corpus document (default: :func:`~spanchor_llamaindex.nodes.default_document_id`).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    metrics: list[BaseRetrievalMetric] = Field(default_factory=list)
    retriever: BaseRetriever = Field(..., description="Retriever to evaluate")
    node_postprocessors: list[SerializeAsAny[BaseNodePostprocessor]] | None = Field(
        default=None, description="Applied after retrieval, as RetrieverEvaluator does"
    )
    context: SpanContext = Field(..., exclude=True)  # corpus + index: not data to dump
    k: tuple[int, ...] = DEFAULT_K
    description: str = Field(default="", description="Retriever description for run headers")
    _converter: NodeConverter = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self.k = check_k(self.k)
        self._converter = self.context.converter

    @classmethod
    def from_corpus(
        cls,
        retriever: BaseRetriever,
        corpus: Corpus | SpanContext,
        gold: GoldSet | None = None,
        *,
        k: Sequence[int] = DEFAULT_K,
        min_overlap: float | None = None,
        metrics: Sequence[BaseRetrievalMetric] = (),
        node_postprocessors: Sequence[BaseNodePostprocessor] | None = None,
        document_id: DocumentIdResolver | None = None,
        description: str = "",
    ) -> SpanRetrieverEvaluator:
        """The evaluator for ``retriever`` over ``corpus`` (and ``gold`` for whole runs)."""
        if isinstance(corpus, SpanContext):
            if gold is not None or min_overlap is not None:
                raise InputError("pass gold and min_overlap to the SpanContext, not here")
            context = corpus
        else:
            context = SpanContext(
                corpus,
                gold,
                min_overlap=DEFAULT_MIN_OVERLAP if min_overlap is None else min_overlap,
            )
        evaluator = cls(
            retriever=retriever,
            context=context,
            k=tuple(k),
            metrics=list(metrics),
            node_postprocessors=None if node_postprocessors is None else list(node_postprocessors),
            description=description or type(retriever).__name__,
        )
        if document_id is not None:
            evaluator._converter = NodeConverter(context.corpus, document_id)
        return evaluator

    # -- one query ---------------------------------------------------------------------------

    async def _aretrieve_nodes(self, query: str) -> list[NodeWithScore]:
        nodes = await self.retriever.aretrieve(query)
        for postprocessor in self.node_postprocessors or ():
            nodes = postprocessor.postprocess_nodes(nodes, query_bundle=QueryBundle(query))
        return nodes

    async def _aget_retrieved_ids_and_texts(
        self, query: str, mode: RetrievalEvalMode = RetrievalEvalMode.TEXT
    ) -> tuple[list[str], list[str]]:
        """The base-class hook (ids and texts only); :meth:`aevaluate` keeps the nodes."""
        nodes = await self._aretrieve_nodes(query)
        return [n.node.node_id for n in nodes], [node_text(n.node) for n in nodes]

    def _score(
        self,
        query: str,
        query_id: str | None,
        spans: Sequence[DocSpan],
        nodes: Sequence[NodeWithScore],
    ) -> tuple[dict[str, float], RetrievalRecord]:
        """Every span metric at every K for ``nodes``, and the run-file record."""
        results = self._converter.results(nodes)
        locations = self.context.locate_results(results)
        coverage = self.context.coverage(spans, locations)
        values: dict[str, float] = {}
        overlap = self.context.min_overlap
        for base, metric in DEFAULT_METRICS.items():
            if not metric.score:
                continue
            for cutoff in self.k:
                values[f"{SPAN_METRIC_PREFIX}{base}@{cutoff}"] = metric_value(
                    coverage, base, cutoff, overlap
                )
            if metric.whole_list:
                values[f"{SPAN_METRIC_PREFIX}{base}"] = metric_value(coverage, base, None, overlap)
        record = RetrievalRecord(query_id, query, tuple(results))
        return values, record

    def evaluate(
        self,
        query: str,
        expected_ids: list[str],
        expected_texts: list[str] | None = None,
        mode: RetrievalEvalMode = RetrievalEvalMode.TEXT,
        **kwargs: Any,
    ) -> SpanRetrievalEvalResult:
        """:meth:`aevaluate` for synchronous code (see :func:`~spanchor_llamaindex._sync.run_sync`
        for why not LlamaIndex's ``asyncio_run``)."""
        return run_sync(self.aevaluate(query, expected_ids, expected_texts, mode, **kwargs))

    async def aevaluate(
        self,
        query: str,
        expected_ids: list[str],
        expected_texts: list[str] | None = None,
        mode: RetrievalEvalMode = RetrievalEvalMode.TEXT,
        **kwargs: Any,
    ) -> SpanRetrievalEvalResult:
        """Retrieve, keep the nodes, score span metrics (and ``self.metrics``) for one query.

        Gold comes from the context (see :meth:`SpanContext.gold_evidence`): a gold query id
        in ``expected_ids`` or ``query_id=``, the question text, or ``expected_texts``.
        """
        query_id = kwargs.pop("query_id", None)
        evidence = self.context.gold_evidence(
            query, expected_ids, expected_texts, query_id=query_id
        )
        return await self._aevaluate_against(query, expected_ids, expected_texts, mode, evidence)

    async def _aevaluate_against(
        self,
        query: str,
        expected_ids: list[str],
        expected_texts: list[str] | None,
        mode: RetrievalEvalMode,
        evidence: GoldEvidence,
    ) -> SpanRetrievalEvalResult:
        started = time.perf_counter()
        nodes = await self._aretrieve_nodes(query)
        latency = (time.perf_counter() - started) * 1000.0
        values, record = self._score(query, evidence.query_id, evidence.spans, nodes)
        metric_dict = {
            name: RetrievalMetricResult(
                score=value,
                metadata={"query_id": evidence.query_id, "gold_source": evidence.source},
            )
            for name, value in values.items()
        }
        ids = [n.node.node_id for n in nodes]
        texts = [node_text(n.node) for n in nodes]
        for metric in self.metrics:
            metric_dict[metric.metric_name] = metric.compute(
                query, expected_ids, ids, expected_texts, texts
            )
        return SpanRetrievalEvalResult(
            query=query,
            expected_ids=list(expected_ids),
            expected_texts=expected_texts,
            retrieved_ids=ids,
            retrieved_texts=texts,
            mode=mode,
            metric_dict=metric_dict,
            query_id=evidence.query_id,
            nodes=list(nodes),
            record=RetrievalRecord(
                record.query_id, record.query, record.results, latency_ms=latency
            ),
        )

    # -- an id-based QA dataset (the aevaluate_dataset that left llama-index-core) ----------

    async def aevaluate_dataset(
        self,
        dataset: Any,
        workers: int = 2,
        show_progress: bool = False,
        **kwargs: Any,
    ) -> list[SpanRetrievalEvalResult]:
        """One result per dataset query, in dataset order (LlamaIndex's old signature).

        ``dataset`` has ``queries``, ``corpus`` and ``relevant_docs`` (a
        :class:`~spanchor_llamaindex.QADataset` or an ``EmbeddingQAFinetuneDataset``), or
        ``examples`` (a ``LabelledRagDataset``). Raises one
        :class:`~spanchor_core.InputError` listing the queries whose gold cannot be anchored,
        before anything is retrieved. At most ``workers`` retrievals run at once.
        """
        if workers < 1:
            raise InputError(f"workers must be at least 1, got {workers}")
        qa = _as_qa_dataset(dataset)
        migration = gold_from_qa_dataset(
            qa,
            self.context.corpus,
            locator=self.context.locator,
            nodes=self.context.nodes_source,
            document_id=self._converter.resolve,
        )
        unanchored = [p for p in migration.problems if p.code == "no_evidence"]
        if unanchored:
            listed = "; ".join(str(p) for p in unanchored[:5])
            more = f" (and {len(unanchored) - 5} more)" if len(unanchored) > 5 else ""
            raise InputError(
                f"{len(unanchored)} of {len(qa.queries)} dataset queries have no anchorable "
                f"gold: {listed}{more}",
                hint="see gold_from_qa_dataset(...).problems, or pass the index as nodes= "
                "to the SpanContext so node ids resolve",
            )
        semaphore = asyncio.Semaphore(workers)
        bar = _progress(len(qa.queries), show_progress)

        async def one(query_id: str, question: str) -> SpanRetrievalEvalResult:
            expected = list(qa.relevant_docs.get(query_id, ()))
            texts = [qa.corpus[n] for n in expected if n in qa.corpus]
            async with semaphore:
                result = await self._aevaluate_against(
                    question,
                    expected,
                    texts,
                    RetrievalEvalMode.TEXT,
                    self.context.from_gold(migration.gold[query_id]),
                )
            if bar is not None:
                bar.update(1)
            return result

        try:
            return list(await asyncio.gather(*(one(q, text) for q, text in qa.queries.items())))
        finally:
            if bar is not None:
                bar.close()

    def evaluate_dataset(
        self, dataset: Any, workers: int = 2, show_progress: bool = False, **kwargs: Any
    ) -> list[SpanRetrievalEvalResult]:
        """:meth:`aevaluate_dataset` for synchronous code (also inside a running loop)."""
        return run_sync(self.aevaluate_dataset(dataset, workers, show_progress, **kwargs))

    # -- a whole gold set --------------------------------------------------------------------

    async def aevaluate_gold(
        self,
        run_path: str | Path,
        gold: GoldSet | None = None,
        *,
        max_concurrency: int = 4,
        show_progress: bool | None = None,
        tags: dict[str, Any] | None = None,
    ) -> GoldSetEvaluation:
        """Run every gold query through the retriever and score the run file it writes.

        At most ``max_concurrency`` retrievals are in flight. A retrieval that raises is
        recorded as an error line (scored as an empty retrieval, listed in
        ``evaluation.errors``) and the others go on. The progress bar appears only when
        stderr is a terminal unless ``show_progress`` says otherwise.
        """
        gold = gold if gold is not None else self.context.gold
        if gold is None:
            raise InputError("evaluate_gold needs a gold set", hint="pass gold= or bind one")
        if max_concurrency < 1:
            raise InputError(f"max_concurrency must be at least 1, got {max_concurrency}")
        queries: list[GoldQuery] = list(gold.values())
        path = Path(run_path)
        began = time.perf_counter()
        semaphore = asyncio.Semaphore(max_concurrency)
        bar = _progress(len(queries), show_progress)
        errors = 0
        with RunRecorder(
            path,
            retriever=self.description or type(self.retriever).__name__,
            parameters={"k": list(self.k)},
            corpus_fingerprint=self.context.corpus.fingerprint,
            gold_sha256=gold.sha256,
            tags=tags,
            strict=True,
        ) as recorder:

            async def one(query: GoldQuery) -> None:
                nonlocal errors
                async with semaphore:
                    started = time.perf_counter()
                    try:
                        nodes = await self._aretrieve_nodes(query.question)
                    except Exception as exc:  # one failing query must not end the run
                        errors += 1
                        recorder.record(
                            query.question,
                            [],
                            query_id=query.query_id,
                            latency_ms=(time.perf_counter() - started) * 1000.0,
                            error=exc,
                        )
                    else:
                        recorder.record(
                            query.question,
                            self._converter.results(nodes),
                            query_id=query.query_id,
                            latency_ms=(time.perf_counter() - started) * 1000.0,
                        )
                if bar is not None:
                    bar.update(1)

            try:
                await asyncio.gather(*(one(query) for query in queries))
            finally:
                if bar is not None:
                    bar.close()
        evaluation = evaluate(
            self.context.corpus,
            gold,
            read_run(path),
            k=self.k,
            min_overlap=self.context.min_overlap,
            locator=self.context.locator,
        )
        return GoldSetEvaluation(evaluation, path, errors, time.perf_counter() - began)

    def evaluate_gold(
        self,
        run_path: str | Path,
        gold: GoldSet | None = None,
        *,
        max_concurrency: int = 4,
        show_progress: bool | None = None,
        tags: dict[str, Any] | None = None,
    ) -> GoldSetEvaluation:
        """:meth:`aevaluate_gold` for synchronous code (also inside a running event loop)."""
        return run_sync(
            self.aevaluate_gold(
                run_path,
                gold,
                max_concurrency=max_concurrency,
                show_progress=show_progress,
                tags=tags,
            )
        )


def _as_qa_dataset(dataset: Any) -> QADataset:
    if isinstance(dataset, QADataset):
        return dataset
    if hasattr(dataset, "examples"):
        return rag_to_qa_dataset(dataset)
    try:
        return QADataset(
            dict(dataset.queries),
            dict(dataset.corpus),
            {qid: tuple(ids) for qid, ids in dict(dataset.relevant_docs).items()},
            getattr(dataset, "mode", "text"),
        )
    except (AttributeError, TypeError):
        raise InputError(
            f"cannot read a QA dataset from {type(dataset).__name__}",
            hint="pass a QADataset (read_qa_dataset), an EmbeddingQAFinetuneDataset or a "
            "LabelledRagDataset",
        ) from None
