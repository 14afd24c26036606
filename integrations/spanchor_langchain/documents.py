"""Turning LangChain ``Document`` objects into spanchor results, and framework ids into ours.

This is the whole translation layer of the integration: every recorder (the wrapper, the
callback handler, the gold-set runner, the LangSmith evaluator) goes through
:func:`documents_to_results`, so that the same documents always become the same run-file lines
whichever way they were captured.

What is taken from a ``Document`` and why:

* ``page_content`` is the result's text: it is what the model saw, and the core maps it back
  onto the source by itself, so nothing else is required.
* a score from the first of ``score_keys`` in its metadata that holds a real number
  (``"score"``, then ``"relevance_score"``, the key rerankers such as Cohere's and FlashRank's
  write). ``VectorStoreRetriever`` drops scores;
  :class:`~spanchor_langchain.ScoredVectorStoreRetriever` keeps them in ``metadata["score"]``.
* ``metadata["start_index"]`` (text splitters with ``add_start_index=True``) as an offset
  *hint*: LangChain computes it with ``str.find`` from a guessed position, which is wrong in
  known cases, so the core verifies it against the text and re-anchors when it does not match.
  A hint is only checkable inside a named document, hence the document-id rule below.
* a corpus document id, only through an explicit rule (``document_id=``). ``metadata["source"]``
  is whatever the loader was given (a relative or absolute path, a URL), not a corpus id; a
  guessed id would be a wrong hint. :func:`source_to_document_id` turns paths under the corpus
  root into ids by the corpus rule (relative POSIX path without its suffix).
* the whole metadata dict, copied, as provenance.

``(Document, score)`` pairs — what ``similarity_search_with_score`` returns, and what a step
may pass on as is — are read as the document with that score (the pair's score wins over
metadata). :func:`document_lists` finds such lists in a step's outputs (see its docstring).
"""

from __future__ import annotations

import functools
import itertools
import numbers
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Final, TypeAlias

from langchain_core.documents import Document

from spanchor_core import RetrievedResult
from spanchor_core.corpus import document_id_for  # not exported at the top level yet
from spanchor_core.runs import result_from_mapping  # not exported at the top level yet
from spanchor_core.runs.write import ResultEntries, result_entry

__all__ = [
    "DEFAULT_SCORE_KEYS",
    "DocumentIdRule",
    "document_id_function",
    "document_lists",
    "documents_key",
    "documents_to_entries",
    "documents_to_results",
    "is_document",
    "source_to_document_id",
]

DEFAULT_SCORE_KEYS: Final[tuple[str, ...]] = ("score", "relevance_score")
"""Metadata keys searched for a document's score, in order."""

DocumentIdRule: TypeAlias = str | Callable[[Document], str | None] | None
"""How a ``Document`` names its corpus document: a metadata key whose value *is* the corpus id,
a function ``Document -> id | None``, or ``None`` (no id: the core finds the text itself)."""


def document_id_function(rule: DocumentIdRule) -> Callable[[Document], str | None] | None:
    """The rule as a function (``None`` stays ``None``, so callers skip the call entirely)."""
    if rule is None or callable(rule):
        return rule
    if isinstance(rule, str):
        key = rule

        def from_metadata(document: Document) -> str | None:
            value = document.metadata.get(key)
            return value if isinstance(value, str) and value else None

        from_metadata.__name__ = f"metadata[{key!r}]"
        return from_metadata
    raise TypeError(
        f"document_id must be a metadata key, a function or None, got {type(rule).__name__}"
    )


def source_to_document_id(
    root: str | os.PathLike[str], *, key: str = "source"
) -> Callable[[Document], str | None]:
    """A ``document_id`` rule for documents loaded from files under the corpus root ``root``.

    ``metadata[key]`` is read as a path (relative paths are taken relative to the working
    directory at the time this function is called, as loaders saw them), resolved, and turned
    into the corpus id of that file: its POSIX path relative to ``root`` without the last
    suffix, the rule :func:`spanchor_core.load_corpus` uses. A source outside the root, a URL or
    a missing source gives ``None``: an unknown id is better than a wrong one.
    """
    base = Path(root).resolve()
    cwd = Path.cwd()

    @functools.lru_cache(maxsize=4096)
    def convert(source: str) -> str | None:
        if "://" in source:
            return None
        path = Path(source)
        if not path.is_absolute():
            path = cwd / path
        try:
            relative = path.resolve().relative_to(base)
        except (ValueError, OSError):
            return None
        if not relative.parts:
            return None
        return document_id_for(PurePosixPath(relative.as_posix()))

    def document_id(document: Document) -> str | None:
        source = document.metadata.get(key)
        if isinstance(source, os.PathLike):
            source = os.fspath(source)
        return convert(source) if isinstance(source, str) and source else None

    return document_id


def _score(metadata: Mapping[str, Any], keys: Sequence[str]) -> float | None:
    for key in keys:
        value = metadata.get(key)
        if value is None:
            continue
        kind = type(value)
        if kind is float:  # the common case, without the slower ABC check below
            return float(value)
        if kind is not bool and isinstance(value, numbers.Real):  # int, numpy scalars
            return float(value)
    return None


def _is_score(value: Any) -> bool:
    kind = type(value)
    return kind is float or (kind is not bool and isinstance(value, numbers.Real))


def is_document(item: Any) -> bool:
    """A ``Document`` or a ``(Document, score)`` pair."""
    if type(item) is tuple and len(item) == 2 and _is_score(item[1]):
        item = item[0]
    return isinstance(item, Document)


_MESSAGE_KEYS: Final = ("messages",)


def document_lists(value: Any) -> list[tuple[str | None, Sequence[Any]]]:
    """The lists of documents a step's outputs (or inputs) hold, with the key they are under.

    Looked at, and nothing deeper (a bounded look, so that a chain end costs next to nothing):
    the value itself as a non-empty list or tuple whose items are all ``Document`` objects or
    ``(Document, score)`` pairs; each value of a dict (a LangGraph state update such as
    ``{"context": docs}``, a ``RunnableParallel`` output); and the ``artifact`` of each message
    in a list under ``"messages"`` (tool results in an agent's state). Empty lists are not
    documents: nothing says what they would have held.
    """
    found: list[tuple[str | None, Sequence[Any]]] = []
    if isinstance(value, list | tuple):
        if _all_documents(value):
            found.append((None, value))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(item, list | tuple) and item:
                if _all_documents(item):
                    found.append((str(key), item))
                elif key in _MESSAGE_KEYS:
                    for message in item:
                        artifact = getattr(message, "artifact", None)
                        if isinstance(artifact, list | tuple) and _all_documents(artifact):
                            found.append((str(key), artifact))
    return found


def _all_documents(items: Sequence[Any]) -> bool:
    if not items or not is_document(items[0]):
        return False
    return all(is_document(item) for item in items)


def documents_key(documents: Sequence[Any]) -> tuple[str, ...]:
    """What makes two lists "the same documents in the same order": their texts.

    By value, not identity: LangGraph state and copies made on the way (adding a score to a
    copy of the metadata) keep the texts; a reranker that changes only scores does not make a
    new list. Python caches a string's hash, so hashing the key is cheap.
    """
    key = []
    for item in documents:
        text = getattr(item[0] if type(item) is tuple else item, "page_content", None)
        key.append(text if type(text) is str else repr(item))
    return tuple(key)


def _hint(metadata: Mapping[str, Any], text: str) -> tuple[int | None, int | None]:
    start = metadata.get("start_index")
    # LangChain writes -1 when its own search failed; that is no hint at all.
    if type(start) is int and start >= 0:
        return start, start + len(text)
    return None, None


def documents_to_results(
    documents: Iterable[Any],
    *,
    document_id: DocumentIdRule = None,
    score_keys: Sequence[str] = DEFAULT_SCORE_KEYS,
    max_results: int | None = None,
) -> list[RetrievedResult]:
    """Ranked results (rank = position, from 1) for what a retriever returned.

    Items may be ``Document`` objects (or anything with ``page_content`` and ``metadata``),
    plain dicts in the shapes :func:`spanchor_core.runs.result_from_mapping` reads (including
    LangChain's own ``{"page_content", "metadata"}`` serialisation) or bare strings. Anything
    else raises ``TypeError``: a recorder counts it as a failure rather than guess.
    ``max_results`` keeps only the first results.
    """
    return _convert(documents, document_id_function(document_id), tuple(score_keys), max_results)


def documents_to_entries(
    documents: Iterable[Any],
    rule: Callable[[Document], str | None] | None,
    score_keys: tuple[str, ...],
    max_results: int | None,
) -> ResultEntries:
    """:func:`documents_to_results` for the recorder's hot path: the same results, built
    directly in line form (see :class:`~spanchor_core.runs.write.ResultEntries`; their
    ``characters`` counted on the way), document
    metadata not copied (the line is encoded before the retrieval returns), the rule already
    a function. Raises ``TypeError`` where :func:`documents_to_results` or writing would."""
    entries = ResultEntries()
    append = entries.append
    first_key = score_keys[0] if score_keys else _NO_KEY
    characters = 0  # of the texts, for the size check before encoding
    items = documents if max_results is None else itertools.islice(documents, max_results)
    rank = 0
    for item in items:
        rank += 1
        if type(item) is Document:  # the usual case: a plain Document
            # Its fields from its __dict__ (one attribute lookup; a pydantic model's attribute
            # lookups go through its __getattr__ hook, which CPython does not specialise).
            fields = item.__dict__
            text = fields["page_content"]
            metadata = fields["metadata"]
            pair_score: float | None = None
        elif (
            type(item) is tuple
            and len(item) == 2
            and type(item[0]) is Document
            and _is_score(item[1])
        ):
            fields = item[0].__dict__
            text = fields["page_content"]
            metadata = fields["metadata"]
            pair_score = float(item[1])
        else:  # dicts, strings, Document subclasses and look-alikes: the general conversion
            entry = _general_entry(item, rank, rule, score_keys)
            characters += len(entry["text"] or "")
            append(entry)
            continue
        if type(text) is not str:
            entry = _general_entry(item, rank, rule, score_keys)
            characters += len(entry["text"] or "")
            append(entry)
            continue
        size = len(text)
        characters += size
        if type(metadata) is not dict:
            metadata = dict(metadata) if isinstance(metadata, Mapping) else {}
        start = metadata.get("start_index")
        if type(start) is int and start >= 0:
            end: int | None = start + size
        else:
            start = end = None
        doc_id = None
        if rule is not None:
            doc_id = rule(item if pair_score is None else item[0])
            if doc_id is not None and type(doc_id) is not str:
                raise TypeError(f"document_id must be a string, got {type(doc_id).__name__}")
        if pair_score is None:
            score = metadata.get(first_key)
            if type(score) is not float:  # absent, an int, numpy, not a number: the full rule
                score = _score(metadata, score_keys)
        else:
            score = pair_score
        if score is not None and score - score != 0.0:
            score = None  # NaN or infinite: unknown
        append(
            {
                "rank": rank,
                "text": text,
                "score": score,
                "document_id": doc_id,
                "start": start,
                "end": end,
                "metadata": metadata,
            }
        )
    entries.characters = characters
    return entries


_NO_KEY: Final = object()  # no score keys: a key no metadata holds


def _general_entry(
    item: Any,
    rank: int,
    rule: Callable[[Document], str | None] | None,
    score_keys: tuple[str, ...],
) -> dict[str, Any]:
    """One item the hot path does not read itself, converted as :func:`documents_to_results`
    converts it, then checked as the writer checks results."""
    (result,) = _convert([item], rule, score_keys, None, rank)
    return result_entry(*astuple_result(result))


def astuple_result(result: RetrievedResult) -> tuple[Any, ...]:
    """A result's fields in :func:`~spanchor_core.runs.write.result_entry`'s order."""
    return (
        result.rank,
        result.text,
        result.score,
        result.document_id,
        result.start,
        result.end,
        result.metadata,
    )


def _convert(
    documents: Iterable[Any],
    rule: Callable[[Document], str | None] | None,
    keys: tuple[str, ...],
    max_results: int | None,
    first_rank: int = 1,
) -> list[RetrievedResult]:
    results: list[RetrievedResult] = []
    for rank, item in enumerate(documents, start=first_rank):
        if max_results is not None and rank - first_rank >= max_results:
            break
        pair_score: float | None = None
        if type(item) is tuple and len(item) == 2 and _is_score(item[1]):
            item, pair_score = item[0], float(item[1])
        text = getattr(item, "page_content", None)
        if type(text) is str or isinstance(text, str):
            raw_metadata = getattr(item, "metadata", None)
            if type(raw_metadata) is dict or isinstance(raw_metadata, Mapping):
                metadata = dict(raw_metadata)
            else:
                metadata = {}
            start, end = _hint(metadata, text)
            doc_id = rule(item) if rule is not None else None
            score = pair_score if pair_score is not None else _score(metadata, keys)
            results.append(RetrievedResult(rank, text, score, doc_id, start, end, metadata))
        elif isinstance(item, Mapping):
            results.append(_result_from_dict(item, rank, rule, keys))
        elif isinstance(item, str):
            results.append(RetrievedResult(rank, item))
        else:
            raise TypeError(
                f"result {rank} is a {type(item).__name__}, not a Document, a dict or a string"
            )
    return results


def _result_from_dict(
    item: Mapping[str, Any],
    rank: int,
    rule: Callable[[Document], str | None] | None,
    keys: tuple[str, ...],
) -> RetrievedResult:
    kwargs = item.get("kwargs")
    if item.get("lc") == 1 and isinstance(kwargs, Mapping):
        item = kwargs  # dumpd(Document): {"lc": 1, "type": "constructor", "kwargs": {...}}
    content = item.get("page_content")
    if isinstance(content, str):
        raw_metadata = item.get("metadata")
        metadata = dict(raw_metadata) if isinstance(raw_metadata, Mapping) else {}
        document = Document(page_content=content, metadata=metadata)
        start, end = _hint(metadata, content)
        doc_id = rule(document) if rule is not None else None
        return RetrievedResult(rank, content, _score(metadata, keys), doc_id, start, end, metadata)
    return result_from_mapping(item, rank=rank)
