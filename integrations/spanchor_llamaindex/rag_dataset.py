"""LlamaIndex ``LabelledRagDataset`` files (``reference_contexts``) as span gold sets.

``LabelledRagDataset.save_json`` (and the datasets of LlamaHub) write::

    {"examples": [{"query": "...", "reference_contexts": ["...", ...],
                   "reference_answer": "...", "query_by": {...}, ...}, ...]}

``llama_dataset`` left llama-index-core, so :func:`read_rag_dataset` reads that JSON itself
(an in-memory ``LabelledRagDataset``, or anything with ``.examples`` of objects with ``.query``
and ``.reference_contexts``, is accepted by :func:`rag_to_qa_dataset` too). The examples carry
no ids: query ``i`` (from 1) gets ``rag-0001``-style ids and context ``j`` of it the node id
``rag-0001/ctx-1``; then the rules of :func:`~spanchor_llamaindex.datasets.gold_from_qa_dataset`
apply unchanged, duplicate questions included.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from spanchor_core import Corpus, InputError, Locator
from spanchor_llamaindex.datasets import QADataset, QAMigration, gold_from_qa_dataset

__all__ = [
    "RagDataset",
    "RagExample",
    "gold_from_rag_dataset",
    "rag_to_qa_dataset",
    "read_rag_dataset",
]

_SOURCE_TAG: Final = "llamaindex-rag"


@dataclass(frozen=True, slots=True)
class RagExample:
    """One labelled example: a question, the contexts that answer it, the reference answer."""

    query: str
    reference_contexts: tuple[str, ...]
    reference_answer: str | None = None


@dataclass(frozen=True, slots=True)
class RagDataset:
    """The examples of a ``LabelledRagDataset`` file, in file order."""

    examples: tuple[RagExample, ...]
    path: Path | None = field(default=None, compare=False)


def read_rag_dataset(path: str | os.PathLike[str]) -> RagDataset:
    """Read a ``LabelledRagDataset`` JSON file (``{"examples": [...]}``)."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("file does not exist", path=file) from None
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read file: {err}", path=file) from None
    except json.JSONDecodeError as err:
        raise InputError(f"not JSON: {err.msg}", path=file, line=err.lineno) from None
    examples = data.get("examples") if isinstance(data, dict) else None
    if not isinstance(examples, list):
        raise InputError(
            "expected an object with an 'examples' list",
            path=file,
            hint="a LabelledRagDataset file, as LabelledRagDataset.save_json writes it",
        )
    parsed: list[RagExample] = []
    for number, example in enumerate(examples, start=1):
        where = f"examples[{number - 1}]"
        if not isinstance(example, dict):
            raise InputError(f"{where} must be an object", path=file)
        query = example.get("query")
        contexts = example.get("reference_contexts")
        if not isinstance(query, str) or not query.strip():
            raise InputError(f"{where}.query must be a non-empty string", path=file)
        if contexts is None:
            contexts = []
        if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
            raise InputError(f"{where}.reference_contexts must be a list of strings", path=file)
        answer = example.get("reference_answer")
        parsed.append(
            RagExample(query, tuple(contexts), answer if isinstance(answer, str) else None)
        )
    return RagDataset(tuple(parsed), path=file)


def _examples(dataset: Any) -> Sequence[Any]:
    examples = getattr(dataset, "examples", None)
    if examples is None:
        raise InputError("expected a LabelledRagDataset (an object with .examples)")
    return list(examples)


def rag_to_qa_dataset(dataset: RagDataset | Any) -> QADataset:
    """The examples as an id-based QA dataset (ids as in the module docstring)."""
    examples = _examples(dataset)
    width = max(4, len(str(len(examples))))
    queries: dict[str, str] = {}
    corpus: dict[str, str] = {}
    relevant: dict[str, tuple[str, ...]] = {}
    for number, example in enumerate(examples, start=1):
        qid = f"rag-{number:0{width}d}"
        queries[qid] = str(example.query)
        ids = []
        for index, text in enumerate(example.reference_contexts or (), start=1):
            node_id = f"{qid}/ctx-{index}"
            corpus[node_id] = str(text)
            ids.append(node_id)
        relevant[qid] = tuple(ids)
    return QADataset(queries, corpus, relevant, path=getattr(dataset, "path", None))


def gold_from_rag_dataset(
    dataset: RagDataset | Any,
    corpus: Corpus,
    *,
    allow_ambiguous: bool = False,
    accept_fuzzy: bool = False,
    locator: Locator | None = None,
) -> QAMigration:
    """Reference contexts as span anchors (tag ``llamaindex-rag``); problems are reported.

    Each reference context becomes one anchor, by the rules of
    :func:`~spanchor_llamaindex.datasets.gold_from_qa_dataset`; a context LlamaIndex altered
    (metadata prepended) is ``fuzzy`` unless ``accept_fuzzy``.
    """
    return gold_from_qa_dataset(
        rag_to_qa_dataset(dataset),
        corpus,
        allow_ambiguous=allow_ambiguous,
        accept_fuzzy=accept_fuzzy,
        locator=locator,
        source=_SOURCE_TAG,
    )
