"""LangSmith evaluators that score retrieved documents against gold spans, and a dataset helper.

* :func:`span_evaluator` — ``(run, example) -> {"results": [...]}``: several metrics at once
  (``span_recall@5``, ``span_precision@5``, ``span_hit@5``, ``span_mrr@5`` by default) in
  LangSmith's multi-result form;
* :func:`span_recall_evaluator` — one metric, ``(run, example) -> {"key", "score", ...}``;
* :func:`span_summary_evaluator` — ``(runs, examples) -> {"results": [...]}``: the means over
  the whole experiment, computed as ``spanchor evaluate`` computes them;
* :func:`langsmith_examples` — a gold set as LangSmith example dicts (``inputs``, ``outputs``
  holding the gold query id, ``metadata``), built offline; uploading them
  (``client.create_examples(dataset_id=..., examples=...)``) is your call.

They need nothing from langsmith itself: ``run`` and ``example`` are read by attribute or by
key, so LangSmith's ``Run``/``Example`` objects, plain dicts and test doubles all work.

Where the documents are found, in order:

1. the run's own outputs, when they hold documents (the target *is* a retriever): a list
   itself, or a list under ``documents``, ``output``, ``outputs``, ``context``,
   ``source_documents``, ``docs``, ``result`` (or the only list value);
2. else the run tree (a whole chain, graph or agent as target): the child runs of
   ``run_type == "retriever"`` (only those named ``retriever_name``, if given), depth first in
   the order they ran; several (hybrid, several tool calls) are concatenated, each text once;
3. else the deepest-first child runs whose outputs hold documents (a LangGraph ``retrieve``
   node returning ``{"context": docs}``, a tool's artifact) — the last of them, as what the
   model saw last.

The gold query: an id under ``spanchor_query_id`` or ``query_id`` in the example's reference
outputs, then the example's metadata, then the run's metadata; else the question text
(``question``, ``query`` or ``input`` in the example's or the run's inputs, or their only string
value) looked up in the gold set. When it cannot be told, every score is ``None`` and the
comment says why: LangSmith records feedback without a value instead of a failed evaluator.

Offline (``langsmith.evaluate(..., upload_results=False)``), langchain-core's tracer still posts
the target's runs and retries each post; give ``evaluate`` a client that fails at once::

    from urllib3.util.retry import Retry
    client = langsmith.Client(api_key="offline", api_url="http://127.0.0.1:9",
                              retry_config=Retry(total=0), auto_batch_tracing=False)
    langsmith.evaluate(app, data=examples, evaluators=[span_evaluator(corpus, gold)],
                       summary_evaluators=[span_summary_evaluator(corpus, gold)],
                       upload_results=False, client=client)

(the tracer logs its connection errors and the run ends in seconds, not minutes).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final

from spanchor_core import (
    DEFAULT_MIN_OVERLAP,
    Corpus,
    GoldQuery,
    GoldSet,
    InputError,
    Locator,
    RetrievalRecord,
    Run,
    RunHeader,
    evaluate,
    metric_names,
)
from spanchor_core.evaluate import check_gold  # not exported at the top level yet
from spanchor_core.runs import RetrieverInfo  # not exported at the top level yet
from spanchor_langchain.documents import (
    DEFAULT_SCORE_KEYS,
    DocumentIdRule,
    document_lists,
    documents_to_results,
)
from spanchor_langchain.recording import QUERY_ID_KEY

__all__ = [
    "DEFAULT_METRICS",
    "langsmith_examples",
    "span_evaluator",
    "span_recall_evaluator",
    "span_summary_evaluator",
]

DEFAULT_METRICS: Final[tuple[str, ...]] = ("recall", "precision", "hit", "mrr")
_OUTPUT_KEYS: Final = (
    "documents",
    "output",
    "outputs",
    "context",
    "source_documents",
    "docs",
    "result",
)
_ID_KEYS: Final = (QUERY_ID_KEY, "query_id")
_QUESTION_KEYS: Final = ("question", "query", "input")
_MAX_RUNS: Final = 10_000  # bound on a run-tree walk

Evaluator = Callable[..., dict[str, Any]]


def _get(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _own_documents(outputs: Any) -> Sequence[Any] | None:
    if isinstance(outputs, list | tuple):
        return outputs
    if not isinstance(outputs, Mapping):
        return None
    for key in _OUTPUT_KEYS:
        value = outputs.get(key)
        if isinstance(value, list | tuple):
            return value
    lists = [value for value in outputs.values() if isinstance(value, list | tuple)]
    return lists[0] if len(lists) == 1 else None


def _descendants(run: Any) -> Iterator[Any]:
    """The run's child runs, depth first, in the order they are listed (the order they ran)."""
    stack = list(reversed(_get(run, "child_runs") or []))
    seen = 0
    while stack and seen < _MAX_RUNS:
        child = stack.pop()
        seen += 1
        yield child
        stack.extend(reversed(_get(child, "child_runs") or []))


def _is_document_like(item: Any) -> bool:
    if isinstance(item, Mapping):
        return "page_content" in item or "kwargs" in item
    return hasattr(item, "page_content")


def _tree_documents(run: Any, retriever_name: str | None) -> list[Any] | None:
    children = list(_descendants(run))
    retrievers = [
        child
        for child in children
        if _get(child, "run_type") == "retriever"
        and (retriever_name is None or _get(child, "name") == retriever_name)
    ]
    if retrievers:
        merged: list[Any] = []
        texts: set[str] = set()
        for child in retrievers:
            for item in _own_documents(_get(child, "outputs")) or ():
                text = _get(item, "page_content")
                key = text if isinstance(text, str) else repr(item)
                if key not in texts:
                    texts.add(key)
                    merged.append(item)
        return merged
    if retriever_name is not None:
        return None
    last: list[Any] | None = None
    for child in children:
        outputs = _get(child, "outputs")
        lists = document_lists(outputs)
        if not lists and isinstance(outputs, Mapping):
            value = outputs.get("output", outputs.get("artifact"))
            artifact = _get(value, "artifact")
            lists = document_lists(artifact) if artifact is not None else []
        if lists:
            last = list(lists[-1][1])
    return last


def _query_id(*sources: Any) -> str | None:
    for source in sources:
        if isinstance(source, Mapping):
            for key in _ID_KEYS:
                value = source.get(key)
                if isinstance(value, str) and value:
                    return value
    return None


def _question(inputs: Any) -> str | None:
    if isinstance(inputs, str):
        return inputs
    if not isinstance(inputs, Mapping):
        return None
    for key in _QUESTION_KEYS:
        value = inputs.get(key)
        if isinstance(value, str):
            return value
    strings = [value for value in inputs.values() if isinstance(value, str)]
    return strings[0] if len(strings) == 1 else None


class _Scorer:
    """What the evaluators share: the gold set checked once, one corpus index built once."""

    def __init__(
        self,
        corpus: Corpus,
        gold: GoldSet,
        ks: Sequence[int],
        metrics: Sequence[str],
        min_overlap: float,
        document_id: DocumentIdRule,
        score_keys: Sequence[str],
        retriever_name: str | None,
    ) -> None:
        if not ks or any(type(k) is not int or k < 1 for k in ks):
            raise ValueError(f"k must be a positive integer or a list of them, got {ks!r}")
        known = metric_names(list(ks))
        self.names = [f"{metric}@{k}" for metric in metrics for k in ks]
        for name in self.names:
            if name not in known:
                raise InputError(
                    f"unknown metric {name.split('@')[0]!r}",
                    hint="one of "
                    + ", ".join(sorted({n.split("@")[0] for n in known if "@" in n})),
                )
        check_gold(gold, corpus)
        self.corpus = corpus
        self.gold = gold
        self.ks = list(ks)
        self.min_overlap = min_overlap
        self.document_id = document_id
        self.score_keys = score_keys
        self.retriever_name = retriever_name
        self.header = RunHeader(retriever=RetrieverInfo(description="langsmith evaluator"))
        self._lock = threading.Lock()
        self._locator: Locator | None = None

    def locator(self) -> Locator:
        with self._lock:  # built on first use, once: indexing the corpus is the expensive part
            if self._locator is None:
                self._locator = Locator(self.corpus)
            return self._locator

    def query(self, run: Any, example: Any) -> tuple[GoldQuery | None, str | None]:
        reference = _get(example, "outputs")
        query_id = _query_id(reference, _get(example, "metadata"), _get(run, "metadata"))
        if query_id is not None:
            found = self.gold.get(query_id)
            return (found, None) if found else (None, f"{query_id!r} is not in the gold set")
        for inputs in (_get(example, "inputs"), _get(run, "inputs")):
            question = _question(inputs)
            if question is not None:
                found = self.gold.by_question(question)
                if found is not None:
                    return found, None
        return None, (
            "no gold query: give the example a 'spanchor_query_id' in its outputs or "
            "metadata, or a question that is in the gold set"
        )

    def documents(self, run: Any) -> Sequence[Any] | None:
        own = _own_documents(_get(run, "outputs"))
        if own is not None and (not own or all(_is_document_like(item) for item in own)):
            return own
        return _tree_documents(run, self.retriever_name)

    def record(self, run: Any, example: Any) -> tuple[RetrievalRecord | None, str]:
        """The run as a spanchor record of its gold query, or why it cannot be one."""
        query, why = self.query(run, example)
        if query is None:
            return None, why or ""
        documents = self.documents(run)
        if documents is None:
            return None, (
                f"{query.query_id}: the run holds no documents (its outputs, nor a retriever "
                "run or a step returning Documents in its run tree)"
            )
        results = documents_to_results(
            documents, document_id=self.document_id, score_keys=self.score_keys
        )
        record = RetrievalRecord(query.query_id, query.question, tuple(results))
        return record, f"{query.query_id}: {len(results)} results"

    def evaluate(self, records: list[RetrievalRecord]) -> Any:
        gold = GoldSet(self.gold[record.query_id] for record in records if record.query_id)
        return evaluate(
            self.corpus,
            gold,
            Run(header=self.header, records=records),
            k=self.ks,
            min_overlap=self.min_overlap,
            locator=self.locator(),
        )


def _ks(k: int | Sequence[int]) -> list[int]:
    return [k] if isinstance(k, int) else list(k)


def span_evaluator(
    corpus: Corpus,
    gold: GoldSet,
    k: int | Sequence[int] = 5,
    *,
    metrics: Sequence[str] = DEFAULT_METRICS,
    retriever_name: str | None = None,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    document_id: DocumentIdRule = None,
    score_keys: Sequence[str] = DEFAULT_SCORE_KEYS,
) -> Evaluator:
    """An evaluator ``(run, example) -> {"results": [{"key": "span_recall@5", ...}, ...]}``.

    One result per metric and K (keys ``span_<metric>@<k>``; ``metrics`` are spanchor per-K
    metrics: ``recall``, ``precision``, ``hit``, ``mrr``, ``full_evidence``, ``iou``, ``ndcg``
    ...). ``retriever_name`` picks the retriever runs of that name in the run tree. The gold set
    is checked against the corpus now, so a stale gold set fails here, not once per example.
    """
    scorer = _Scorer(
        corpus, gold, _ks(k), metrics, min_overlap, document_id, score_keys, retriever_name
    )
    keys = {name: f"span_{name}" for name in scorer.names}

    def span_metrics(run: Any, example: Any = None) -> dict[str, Any]:
        record, comment = scorer.record(run, example)
        if record is None:
            return {
                "results": [
                    {"key": key, "score": None, "comment": comment} for key in keys.values()
                ]
            }
        evaluation = scorer.evaluate([record])
        scores = evaluation[record.query_id]
        extra = {"query_id": record.query_id, "unmapped": evaluation.mapping.unmapped}
        return {
            "results": [
                {"key": key, "score": scores[name], "comment": comment, "extra": extra}
                for name, key in keys.items()
            ]
        }

    return span_metrics


def span_recall_evaluator(
    corpus: Corpus,
    gold: GoldSet,
    k: int = 5,
    *,
    metric: str = "recall",
    retriever_name: str | None = None,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    document_id: DocumentIdRule = None,
    score_keys: Sequence[str] = DEFAULT_SCORE_KEYS,
) -> Evaluator:
    """An evaluator ``(run, example) -> {"key", "score", "comment", "extra"}`` for one metric
    (key ``span_<metric>@<k>``); see :func:`span_evaluator` for the rest."""
    if type(k) is not int or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    scorer = _Scorer(
        corpus, gold, [k], [metric], min_overlap, document_id, score_keys, retriever_name
    )
    name = scorer.names[0]
    key = f"span_{name}"

    def span_recall(run: Any, example: Any = None) -> dict[str, Any]:
        record, comment = scorer.record(run, example)
        if record is None:
            return {"key": key, "score": None, "comment": comment}
        evaluation = scorer.evaluate([record])
        score = evaluation[record.query_id][name]
        return {
            "key": key,
            "score": score,
            "comment": f"{record.query_id}: {name} {score:.3f} over {len(record.results)} results",
            "extra": {
                "query_id": record.query_id,
                "unmapped": evaluation.mapping.unmapped,
                "results": len(record.results),
            },
        }

    span_recall.__name__ = key.replace("@", "_at_")
    span_recall.__qualname__ = span_recall.__name__
    return span_recall


def span_summary_evaluator(
    corpus: Corpus,
    gold: GoldSet,
    k: int | Sequence[int] = 5,
    *,
    metrics: Sequence[str] = DEFAULT_METRICS,
    retriever_name: str | None = None,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    document_id: DocumentIdRule = None,
    score_keys: Sequence[str] = DEFAULT_SCORE_KEYS,
) -> Callable[[Sequence[Any], Sequence[Any]], dict[str, Any]]:
    """A summary evaluator ``(runs, examples) -> {"results": [...]}``: for every metric the
    mean over the scored examples (``mean_span_recall@5`` ...) and ``span_coverage``, the share
    of examples that could be scored. An example answered twice counts once (its first run).
    """
    scorer = _Scorer(
        corpus, gold, _ks(k), metrics, min_overlap, document_id, score_keys, retriever_name
    )

    def span_summary(runs: Sequence[Any], examples: Sequence[Any]) -> dict[str, Any]:
        records: dict[str, RetrievalRecord] = {}
        for run, example in zip(runs, examples, strict=False):
            record, _ = scorer.record(run, example)
            if record is not None and record.query_id is not None:
                records.setdefault(record.query_id, record)
        total = len(runs)
        coverage = {
            "key": "span_coverage",
            "score": len(records) / total if total else None,
            "comment": f"{len(records)} of {total} examples scored",
        }
        if not records:
            return {"results": [coverage]}
        evaluation = scorer.evaluate(list(records.values()))
        return {
            "results": [
                {"key": f"mean_span_{name}", "score": evaluation.mean(name)}
                for name in scorer.names
            ]
            + [coverage]
        }

    return span_summary


def langsmith_examples(
    gold: GoldSet,
    *,
    input_mapper: Callable[[GoldQuery], Mapping[str, Any]] | None = None,
    split: str | None = None,
) -> list[dict[str, Any]]:
    """The gold set as LangSmith example dicts: ``{"inputs", "outputs", "metadata"}``.

    ``inputs`` is ``{"question": ...}`` unless ``input_mapper`` builds it from the
    :class:`~spanchor_core.GoldQuery`; ``outputs`` and ``metadata`` carry the gold query id
    (``spanchor_query_id``), which the evaluators read; the anchors stay in the gold set (the
    evaluators hold it). ``split`` is put into the metadata as LangSmith's dataset split.
    Nothing is uploaded: pass the list to ``client.create_examples(dataset_id=...,
    examples=...)``, or build ``langsmith.schemas.Example`` objects from it to evaluate
    offline.
    """
    examples: list[dict[str, Any]] = []
    for query in gold.values():
        inputs = dict(input_mapper(query)) if input_mapper else {"question": query.question}
        metadata: dict[str, Any] = {QUERY_ID_KEY: query.query_id}
        if split is not None:
            metadata["dataset_split"] = [split]
        examples.append(
            {
                "inputs": inputs,
                "outputs": {QUERY_ID_KEY: query.query_id},
                "metadata": metadata,
            }
        )
    return examples
