"""An evaluator for ``BatchEvalRunner``: score a response's source nodes on span gold evidence.

:class:`SpanEvidenceEvaluator` is a ``BaseEvaluator``: put it in a ``BatchEvalRunner`` beside
faithfulness or relevancy evaluators and it judges the retrieval half of each response —
``Response.source_nodes`` (after the query engine's postprocessors, with their scores,
document ids and offset hints) against the gold anchors of the query.

Gold per query arrives the way ``BatchEvalRunner`` passes per-query arguments, as one list per
keyword (the runner hands item ``i`` of each list to call ``i``):

* ``query_id=[...]`` (or ``query_ids=[...]``): gold query ids of the bound gold set;
* ``evidence=[...]``: the evidence itself, a text or a list of texts per query, located in the
  corpus (each must occur once);
* neither: the query text is looked up in the bound gold set.

The runner passes every keyword to every evaluator, so the others' keywords reach this one
too: ``reference=[answers]`` (what ``CorrectnessEvaluator`` needs) and any keyword not listed
above are ignored (named in :attr:`SpanEvaluationResult.ignored_arguments`), never read as
evidence and never an invalid result. The evidence keyword can be renamed
(``evidence_keyword=``).

Results are :class:`SpanEvaluationResult` objects: an ``EvaluationResult`` (``score`` is the chosen
metric) that also carries every metric at every K as numbers (``metrics``) and the gold query
id; :func:`~spanchor_llamaindex.tables.span_results_table` turns a batch into a table.
Streaming responses (``StreamingResponse``, which has no ``.response``) are scored from their
``source_nodes`` like any other.

Failing fast and plainly. ``BatchEvalRunner`` wraps every evaluator call in a tenacity retry
(3 attempts, at least 4 s apart) and its ``asyncio_run`` rewrites a ``RuntimeError`` into a
misleading "nested async" message, so a raising evaluator turns one bad query id into an 8 s
wait and a wrong diagnosis. This evaluator therefore never raises over its inputs: a query it
cannot score comes back at once as ``EvaluationResult(passing=False, invalid_result=True,
invalid_reason=...)``. :meth:`SpanEvidenceEvaluator.check_inputs` validates every query before
the runner starts and raises one :class:`~spanchor_core.InputError` listing every problem.

Every scored response is also kept as a run-file record: :meth:`~SpanEvidenceEvaluator.
write_run` writes them (for ``spanchor gate``) and :meth:`~SpanEvidenceEvaluator.evaluation`
scores them with the core, exactly as the gate would. One record is kept per query id: running
the same evaluator through a second batch replaces the first batch's records query by query
(the replacement is logged once — call :meth:`~SpanEvidenceEvaluator.reset` between batches to
start clean), so a run file never holds one query twice.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from llama_index.core.base.response.schema import RESPONSE_TYPE
from llama_index.core.bridge.pydantic import Field
from llama_index.core.evaluation.base import BaseEvaluator, EvaluationResult
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.schema import NodeWithScore

from spanchor_core import (
    DEFAULT_K,
    DEFAULT_MIN_OVERLAP,
    Anchor,
    Corpus,
    Evaluation,
    GoldQuery,
    GoldSet,
    InputError,
    RetrievalRecord,
    RetrievedResult,
    Run,
    RunHeader,
    evaluate,
    write_run,
)
from spanchor_core.metrics import check_k, metric_names, split_metric_name
from spanchor_core.runs import RetrieverInfo
from spanchor_llamaindex._sync import run_sync
from spanchor_llamaindex.context import GoldEvidence, SpanContext, metric_value
from spanchor_llamaindex.nodes import DocumentIdResolver, NodeConverter

__all__ = ["SpanEvaluationResult", "SpanEvidenceEvaluator"]

_ID_KEYWORDS = ("query_id", "query_ids")


class SpanEvaluationResult(EvaluationResult):
    """An ``EvaluationResult`` with every span metric as a number, and the gold query id."""

    query_id: str | None = Field(default=None, description="Gold query id, when known")
    metrics: dict[str, float] = Field(
        default_factory=dict, description="Every span metric at every K (recall@5, mrr, ...)"
    )
    gold_source: str | None = Field(default=None, description="Where the gold evidence came from")
    ignored_arguments: list[str] = Field(
        default_factory=list, description="Keywords meant for other evaluators, ignored here"
    )


_log = logging.getLogger(__name__)


def _synthetic_id(query: str) -> str:
    """A stable id for a query judged by reference texts only (no gold query id)."""
    return "query-" + hashlib.sha256(query.encode("utf-8")).hexdigest()[:12]


class SpanEvidenceEvaluator(BaseEvaluator):
    """Scores ``Response.source_nodes`` against span gold evidence, for ``BatchEvalRunner``.

    ``score`` is ``metric`` (default ``recall@5``); ``passing`` is ``score >= threshold``;
    ``metrics`` (and, rounded, ``feedback``) hold every metric at every K. ``k`` are the
    cutoffs computed; ``document_id`` maps nodes to corpus ids (default:
    :func:`~spanchor_llamaindex.nodes.default_document_id`); ``evidence_keyword`` names the
    per-query evidence list (default ``evidence``; see the module docstring).
    """

    def __init__(
        self,
        corpus: Corpus | SpanContext,
        gold: GoldSet | None = None,
        *,
        k: Sequence[int] = DEFAULT_K,
        metric: str = "recall@5",
        threshold: float = 0.5,
        min_overlap: float | None = None,
        document_id: DocumentIdResolver | None = None,
        evidence_keyword: str = "evidence",
    ) -> None:
        if evidence_keyword in _ID_KEYWORDS or not evidence_keyword.isidentifier():
            raise InputError(f"evidence_keyword {evidence_keyword!r} is not a usable keyword")
        self.evidence_keyword = evidence_keyword
        if isinstance(corpus, SpanContext):
            if gold is not None or min_overlap is not None:
                raise InputError("pass gold and min_overlap to the SpanContext, not here")
            self.context = corpus
        else:
            self.context = SpanContext(
                corpus,
                gold,
                min_overlap=DEFAULT_MIN_OVERLAP if min_overlap is None else min_overlap,
            )
        self.k = check_k(k)
        base, cutoff = split_metric_name(metric)
        if metric not in metric_names(self.k):
            raise InputError(
                f"metric {metric!r} is not computed with k={list(self.k)}",
                hint=f"choose one of {', '.join(metric_names(self.k))}",
            )
        self.metric = metric
        self._base, self._cutoff = base, cutoff
        self.threshold = float(threshold)
        self._converter = (
            NodeConverter(self.context.corpus, document_id)
            if document_id is not None
            else self.context.converter
        )
        self._lock = threading.Lock()
        # query id -> its latest record, in completion order (a replaced one moves to the end)
        self._records: dict[str, RetrievalRecord] = {}
        self._replaced_warned = False
        self._gold_used: dict[str, GoldQuery] = {}

    # -- PromptMixin: this evaluator uses no prompts -----------------------------------------

    def _get_prompts(self) -> PromptDictType:
        return {}

    def _update_prompts(self, prompts_dict: PromptDictType) -> None:
        return None

    # -- validation --------------------------------------------------------------------------

    def check_inputs(
        self,
        queries: Sequence[str],
        *,
        query_id: Sequence[str | None] | None = None,
        **lists: Sequence[Any],
    ) -> None:
        """Raise one InputError listing every query that cannot be scored, before a run.

        Pass the same lists you will give ``BatchEvalRunner`` (other evaluators' lists are
        ignored). Checks lengths, that every id is in the gold set, and that every evidence
        text occurs once in the corpus.
        """
        reference = lists.get(self.evidence_keyword)
        problems: list[str] = []
        for name, values in (("query_id", query_id), (self.evidence_keyword, reference)):
            if values is not None and len(values) != len(queries):
                problems.append(f"{name} has {len(values)} items for {len(queries)} queries")
        if not problems:
            for index, query in enumerate(queries):
                qid = query_id[index] if query_id is not None else None
                ref = reference[index] if reference is not None else None
                try:
                    self._evidence(query, qid, ref)
                except InputError as err:
                    problems.append(f"query {index + 1} ({query[:40]!r}): {err.message}")
        if problems:
            more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
            raise InputError(
                f"{len(problems)} of {len(queries)} queries cannot be scored: "
                + "; ".join(problems[:5])
                + more,
                hint="fix the query ids or evidence before running BatchEvalRunner",
            )

    def _evidence(
        self, query: str | None, query_id: str | None, reference: str | Sequence[str] | None
    ) -> GoldEvidence:
        if reference is not None and query_id is None:
            texts = [reference] if isinstance(reference, str) else list(reference)
            if not texts:
                raise InputError(f"{self.evidence_keyword} is empty")
            return GoldEvidence(None, self.context.locate_evidence(texts), "evidence")
        return self.context.gold_evidence(query, None, None, query_id=query_id)

    # -- evaluation --------------------------------------------------------------------------

    def _invalid(self, query: str | None, reason: str, ignored: list[str]) -> EvaluationResult:
        return SpanEvaluationResult(
            query=query,
            passing=False,
            feedback=f"spanchor: {reason}",
            invalid_result=True,
            invalid_reason=reason,
            ignored_arguments=ignored,
        )

    def _judge(
        self,
        query: str | None,
        response: str | None,
        results: list[RetrievedResult],
        kwargs: Mapping[str, Any],
    ) -> EvaluationResult:
        ignored = sorted(set(kwargs) - {*_ID_KEYWORDS, self.evidence_keyword})
        query_id = kwargs.get("query_id", kwargs.get("query_ids"))
        if query_id is not None and not isinstance(query_id, str):
            return self._invalid(query, f"query_id must be a string, got {query_id!r}", ignored)
        try:
            evidence = self._evidence(query, query_id, kwargs.get(self.evidence_keyword))
        except InputError as err:
            return self._invalid(query, err.message, ignored)
        locations = self.context.locate_results(results)
        coverage = self.context.coverage(evidence.spans, locations)
        overlap = self.context.min_overlap
        values = {
            name: metric_value(coverage, *split_metric_name(name), overlap)
            for name in metric_names(self.k)
        }
        score = values[self.metric]
        self._keep(query or "", evidence, results)
        shown = " ".join(
            f"{name}={value:.3g}" for name, value in values.items() if not name.startswith("un")
        )
        unmapped = coverage.unmapped[-1]
        return SpanEvaluationResult(
            query=query,
            query_id=self._records_id(query or "", evidence),
            metrics=values,
            gold_source=evidence.source,
            ignored_arguments=ignored,
            contexts=[r.text or "" for r in results],
            response=response,
            passing=score >= self.threshold,
            score=score,
            feedback=f"{self.metric}={score:.3g} ({len(results)} sources, {unmapped} unmapped); "
            + shown,
        )

    def _records_id(self, query: str, evidence: GoldEvidence) -> str:
        return evidence.query_id if evidence.query_id is not None else _synthetic_id(query)

    def _keep(self, query: str, evidence: GoldEvidence, results: list[RetrievedResult]) -> None:
        if evidence.query_id is not None and self.context.gold is not None:
            gold_query = self.context.gold[evidence.query_id]
        else:
            qid = _synthetic_id(query)
            anchors = tuple(Anchor.from_span(self.context.corpus, *span) for span in evidence.spans)
            gold_query = GoldQuery(qid, query, anchors)
        record = RetrievalRecord(gold_query.query_id, query, tuple(results))
        with self._lock:
            replaced = self._records.pop(gold_query.query_id, None) is not None
            self._records[gold_query.query_id] = record
            self._gold_used[gold_query.query_id] = gold_query
            warn = replaced and not self._replaced_warned
            if warn:
                self._replaced_warned = True
        if warn:
            _log.warning(
                "spanchor: query %r was scored again; the new result replaces the earlier one "
                "(one record per query id is kept; call reset() between batches to start "
                "clean). Further replacements are not logged.",
                gold_query.query_id,
            )

    def evaluate(
        self,
        query: str | None = None,
        response: str | None = None,
        contexts: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> EvaluationResult:
        """:meth:`aevaluate` for synchronous code (never LlamaIndex's ``asyncio_run``)."""
        return run_sync(self.aevaluate(query, response, contexts, **kwargs))

    def evaluate_response(
        self,
        query: str | None = None,
        response: RESPONSE_TYPE | None = None,
        **kwargs: Any,
    ) -> EvaluationResult:
        """:meth:`aevaluate_response` for synchronous code."""
        return run_sync(self.aevaluate_response(query, response, **kwargs))

    async def aevaluate(
        self,
        query: str | None = None,
        response: str | None = None,
        contexts: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> EvaluationResult:
        """Score context strings (no offsets or document ids: located by text alone)."""
        results = [RetrievedResult(rank, text) for rank, text in enumerate(contexts or (), start=1)]
        return self._judge(query, response, results, kwargs)

    async def aevaluate_response(
        self,
        query: str | None = None,
        response: RESPONSE_TYPE | None = None,
        **kwargs: Any,
    ) -> EvaluationResult:
        """Score ``response.source_nodes`` with their scores, document ids and offset hints.

        Any response type works, streaming ones included (their text is ``response_txt``
        once consumed, else ``None``; the source nodes are there from the start).
        """
        nodes: list[NodeWithScore] = list(getattr(response, "source_nodes", None) or ())
        text = getattr(response, "response", None)
        if text is None:
            text = getattr(response, "response_txt", None)
        answer = text if isinstance(text, str) else None
        return self._judge(query, answer, self._converter.results(nodes), kwargs)

    # -- the run behind the results -----------------------------------------------------------

    @property
    def records(self) -> list[RetrievalRecord]:
        """The scored retrievals so far, the latest per query id, in completion order."""
        with self._lock:
            return list(self._records.values())

    def gold_set(self) -> GoldSet:
        """The gold queries the scored retrievals were judged against."""
        with self._lock:
            return GoldSet(self._gold_used.values())

    def run(self, *, retriever: str = "llama_index query engine") -> Run:
        """The scored retrievals as a run (what ``spanchor gate`` reads)."""
        header = RunHeader(
            retriever=RetrieverInfo(description=retriever, parameters={"k": list(self.k)}),
            corpus_fingerprint=self.context.corpus.fingerprint,
            created_at=datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        )
        return Run(header=header, records=self.records)

    def write_run(
        self, path: str | os.PathLike[str], *, retriever: str = "llama_index query engine"
    ) -> None:
        """Write the scored retrievals as a run file."""
        write_run(self.run(retriever=retriever), path)

    def evaluation(self) -> Evaluation:
        """The core evaluation of the scored retrievals (the numbers the gate would see)."""
        return evaluate(
            self.context.corpus,
            self.gold_set(),
            self.run(),
            k=self.k,
            min_overlap=self.context.min_overlap,
            locator=self.context.locator,
        )

    def reset(self) -> None:
        """Forget the scored retrievals (start a new batch)."""
        with self._lock:
            self._records.clear()
            self._gold_used.clear()
            self._replaced_warned = False
