"""A LangSmith-compatible evaluator that scores retrieved documents by gold-span recall.

``span_recall_evaluator(corpus, gold, k=5)`` returns a plain function ``(run, example) -> dict``,
the custom-evaluator shape ``langsmith.evaluate(..., evaluators=[...])`` accepts (and which
works offline with ``upload_runs=False``). It needs nothing from langsmith itself: ``run`` and
``example`` are read by attribute or by key, so LangSmith's ``Run``/``Example`` objects, plain
dicts and simple test doubles all work.

What it reads:

* the retrieved documents from ``run.outputs``: a list itself, or the first list under
  ``documents``, ``output``, ``outputs``, ``context``, ``source_documents``, ``docs``, ``result``
  (or the only list value). Items may be ``Document`` objects, their serialised dict forms
  (``{"page_content", "metadata"}`` or LangChain's ``{"lc": 1, ..., "kwargs": {...}}``), result
  dicts or strings;
* the gold query: an id under ``spanchor_query_id`` or ``query_id`` in the example's reference
  outputs, then the example's metadata, then the run's metadata; else the question text
  (``question``, ``query`` or ``input`` in the example's or the run's inputs, or their only
  string value) looked up in the gold set.

It scores exactly as ``spanchor evaluate`` would score a run holding that one retrieval (the
same mapping and metrics, against the corpus and gold set captured when it was made), and
returns ``{"key": "span_recall@5", "score": ..., "comment": ..., "extra": {...}}``. When it
cannot tell which gold query a run answers, ``score`` is ``None`` and the comment says why:
LangSmith records that as feedback without a value instead of a failed evaluator.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from spanchor_core.corpus import Corpus
from spanchor_core.errors import InputError
from spanchor_core.evaluate import check_gold, evaluate
from spanchor_core.gold import GoldQuery, GoldSet
from spanchor_core.locate import Locator
from spanchor_core.metrics import DEFAULT_MIN_OVERLAP, metric_names
from spanchor_core.runs import RetrievalRecord, RetrieverInfo, Run, RunHeader
from spanchor_langchain.documents import DEFAULT_SCORE_KEYS, DocumentIdRule, documents_to_results
from spanchor_langchain.recording import QUERY_ID_KEY

__all__ = ["span_recall_evaluator"]

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

Evaluator = Callable[..., dict[str, Any]]


def _get(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _documents(outputs: Any) -> Sequence[Any] | None:
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


def span_recall_evaluator(
    corpus: Corpus,
    gold: GoldSet,
    k: int = 5,
    *,
    metric: str = "recall",
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    document_id: DocumentIdRule = None,
    score_keys: Sequence[str] = DEFAULT_SCORE_KEYS,
) -> Evaluator:
    """An evaluator ``(run, example) -> {"key", "score", "comment", "extra"}`` (see module doc).

    ``metric`` is any per-K spanchor metric (``recall``, ``precision``, ``hit``,
    ``full_evidence``, ``iou``, ``ndcg`` ...); the key is ``span_<metric>@<k>``. The gold set is
    checked against the corpus now, so a stale gold set fails here, not once per example.
    """
    if type(k) is not int or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    name = f"{metric}@{k}"
    known = metric_names([k])
    if name not in known:
        raise InputError(
            f"unknown metric {metric!r}",
            hint="one of " + ", ".join(sorted({n.split("@")[0] for n in known if "@" in n})),
        )
    check_gold(gold, corpus)
    key = f"span_{name}"
    header = RunHeader(retriever=RetrieverInfo(description="langsmith evaluator"))
    locator_lock = threading.Lock()
    locators: list[Locator] = []

    def shared_locator() -> Locator:
        # Built on first use, once: indexing the corpus is the expensive part.
        with locator_lock:
            if not locators:
                locators.append(Locator(corpus))
            return locators[0]

    def span_recall(run: Any, example: Any = None) -> dict[str, Any]:
        reference = _get(example, "outputs")
        query_id = _query_id(reference, _get(example, "metadata"), _get(run, "metadata"))
        query: GoldQuery | None = None
        if query_id is not None:
            query = gold.get(query_id)
            if query is None:
                return {
                    "key": key,
                    "score": None,
                    "comment": f"{query_id!r} is not in the gold set",
                }
        else:
            for inputs in (_get(example, "inputs"), _get(run, "inputs")):
                question = _question(inputs)
                if question is not None:
                    query = gold.by_question(question)
                    if query is not None:
                        break
        if query is None:
            return {
                "key": key,
                "score": None,
                "comment": "no gold query: give the example a 'spanchor_query_id' in its "
                "outputs or metadata, or a question that is in the gold set",
            }
        documents = _documents(_get(run, "outputs"))
        if documents is None:
            return {
                "key": key,
                "score": None,
                "comment": "the run's outputs hold no list of documents",
            }
        results = documents_to_results(documents, document_id=document_id, score_keys=score_keys)
        record = RetrievalRecord(query.query_id, query.question, tuple(results))
        evaluation = evaluate(
            corpus,
            GoldSet([query]),
            Run(header=header, records=[record]),
            k=[k],
            min_overlap=min_overlap,
            locator=shared_locator(),
        )
        scores = evaluation[query.query_id]
        return {
            "key": key,
            "score": scores[name],
            "comment": f"{query.query_id}: {name} {scores[name]:.3f} over {len(results)} results",
            "extra": {
                "query_id": query.query_id,
                "unmapped": evaluation.mapping.unmapped,
                "results": len(results),
            },
        }

    span_recall.__name__ = key.replace("@", "_at_")
    span_recall.__qualname__ = span_recall.__name__
    return span_recall
