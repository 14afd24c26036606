"""Retrievers: a recording wrapper around any retriever, and a vector-store retriever with scores.

:class:`RecordingRetriever` wraps any ``Runnable[str, list[Document]]`` — a ``BaseRetriever``, a
``.with_config()`` binding (a ``RunnableBinding``, not a ``BaseRetriever``), a vector store's
``as_retriever()``, a chain that ends in documents — and writes one run-file line per call. It is
itself a ``BaseRetriever``, so it goes wherever the original went (LCEL chains, retriever tools).

It is transparent on purpose: ``invoke`` and ``ainvoke`` hand the input, the config (callbacks,
tags, metadata, ``configurable``, run name) and keyword arguments to the wrapped runnable
unchanged and return its output object itself; exceptions propagate unchanged (the same object,
with its traceback) after being recorded as an error line — ``BaseException`` included, so a
cancelled ``ainvoke`` (``asyncio.wait_for``) is a ``CancelledError`` line, not a lost one. The
wrapper starts no run of its own, so traces and callback handlers see exactly the runs they saw
before — and a :class:`~spanchor_langchain.SpanchorCallbackHandler` in the same chain never
sees a duplicate.
``batch``/``abatch`` are LangChain's defaults, which call ``invoke``/``ainvoke`` per input
(``max_concurrency`` honoured), exactly as they do for ``BaseRetriever`` itself.

:class:`ScoredVectorStoreRetriever` exists because ``VectorStoreRetriever`` calls
``similarity_search`` and throws the scores away; it calls ``similarity_search_with_score``
instead and puts each score in a copy of the document's metadata, where every recorder reads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from time import perf_counter
from typing import Any, Literal, Self

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.vectorstores import VectorStore, VectorStoreRetriever
from pydantic import Field, PrivateAttr

from spanchor_core import Corpus, GoldSet, RunRecorder
from spanchor_langchain.documents import DEFAULT_SCORE_KEYS, DocumentIdRule
from spanchor_langchain.recording import QUERY_ID_KEY, Recording, RecordTarget

__all__ = ["RecordingRetriever", "ScoredVectorStoreRetriever", "describe_runnable"]

_PARAMETER_ATTRIBUTES = ("search_type", "search_kwargs", "k")


def describe_runnable(runnable: Runnable[Any, Any]) -> tuple[str, dict[str, Any]]:
    """A run-header description and parameters for ``runnable`` (its name and search settings).

    Bindings are unwrapped to what they bind, so ``retriever.with_config(...)`` is described by
    the retriever. Only plain settings are taken (``search_type``, ``search_kwargs``, ``k``).
    """
    inner: Any = runnable
    for _ in range(8):  # bindings of bindings; bounded so a cycle cannot hang us
        bound = getattr(inner, "bound", None)
        if not isinstance(bound, Runnable):
            break
        inner = bound
    parameters: dict[str, Any] = {}
    for name in _PARAMETER_ATTRIBUTES:
        value = getattr(inner, name, None)
        if isinstance(value, str | int | float | Mapping) and not isinstance(value, bool):
            parameters[name] = dict(value) if isinstance(value, Mapping) else value
    vectorstore = getattr(inner, "vectorstore", None)
    if vectorstore is not None:
        parameters["vectorstore"] = type(vectorstore).__name__
    return f"langchain:{runnable.get_name()}", parameters


def _query_id(config: RunnableConfig | None, key: str) -> str | None:
    """The query id a retriever run would carry in its metadata: the given config's first,
    then the config LangChain propagates through the context (a parent chain's)."""
    for candidate in (config, var_child_runnable_config.get()):
        if candidate:
            metadata = candidate.get("metadata")
            if metadata:
                value = metadata.get(key)
                if isinstance(value, str) and value:
                    return value
    return None


class RecordingRetriever(BaseRetriever):
    """Record every call of ``retriever`` into a run file; behave exactly like ``retriever``.

    ``target`` is a run-file path (opened now, truncated unless ``mode="a"``, closed by
    :meth:`close` or at exit of a ``with`` block) or an open :class:`~spanchor_core.RunRecorder`
    shared with other recorders. Query ids come from the call's config metadata
    (``{"metadata": {"spanchor_query_id": "q1"}}``), else from the query text when ``gold`` is
    given (else they are resolved at evaluation). ``document_id`` maps a ``Document`` to its
    corpus id (a metadata key, a function such as :func:`~spanchor_langchain.source_to_document_id`,
    or ``None``); ``score_keys`` says where scores live; ``max_results`` keeps only the top results
    in the file. ``description``, ``parameters`` and ``run_tags`` go into the run header
    (defaults describe the wrapped retriever). A recording failure is counted in
    :attr:`failures`, never raised — unless ``strict=True`` (or the recorder passed in is
    strict): then :class:`~spanchor_core.RecorderError` reaches the caller after the
    retrieval. Each line names the wrapped runnable (``source``) and its stage
    (``"retrieval"``). A path already open in this process (another wrapper's, a handler's) is
    shared, not reopened.
    """

    retriever: Runnable[str, list[Document]]
    """The wrapped runnable; called with the caller's input, config and keyword arguments."""

    _recording: Recording = PrivateAttr()
    _source: str = PrivateAttr()

    def __init__(
        self,
        retriever: Runnable[str, list[Document]],
        target: RecordTarget,
        *,
        gold: GoldSet | None = None,
        corpus: Corpus | None = None,
        document_id: DocumentIdRule = None,
        score_keys: Sequence[str] = DEFAULT_SCORE_KEYS,
        max_results: int | None = None,
        query_id_key: str = QUERY_ID_KEY,
        description: str | None = None,
        parameters: Mapping[str, Any] | None = None,
        run_tags: Mapping[str, Any] | None = None,
        mode: Literal["w", "a"] = "w",
        strict: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(retriever=retriever, **kwargs)
        self._source = retriever.get_name()
        if not isinstance(target, RunRecorder):  # we write the header: describe what we wrap
            found_description, found = describe_runnable(retriever)
            if description is None:
                description = found_description
            if parameters is None:
                parameters = {**found, "max_results": max_results} if max_results else found
        self._recording = Recording(
            target,
            gold=gold,
            corpus=corpus,
            document_id=document_id,
            score_keys=score_keys,
            max_results=max_results,
            query_id_key=query_id_key,
            description=description or "",
            parameters=parameters,
            tags=run_tags,
            mode=mode,
            strict=strict,
        )

    # -- what callers see ---------------------------------------------------------------------

    @property
    def recorder(self) -> RunRecorder:
        """The recorder lines go to (shared when one was passed in)."""
        return self._recording.recorder

    @property
    def records(self) -> int:
        """Lines written to the recorder so far."""
        return self._recording.records

    @property
    def failures(self) -> int:
        """Retrievals that could not be recorded (each retrieval itself went through)."""
        return self._recording.failures

    def close(self) -> None:
        """Close the run file if this wrapper opened it. Retrieval keeps working afterwards;
        later calls are counted as recording failures."""
        self._recording.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- running ------------------------------------------------------------------------------

    def invoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """Call the wrapped runnable with everything given, record the call, return its output."""
        started = perf_counter()
        try:
            documents = self.retriever.invoke(input, config, **kwargs)
        except BaseException as error:  # cancellation too: the line must not be lost
            self._record(input, config, None, started, error)
            raise
        self._record(input, config, documents, started, None)
        return documents

    async def ainvoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """:meth:`invoke` for async code; the line is written inline (one small write)."""
        started = perf_counter()
        try:
            documents = await self.retriever.ainvoke(input, config, **kwargs)
        except BaseException as error:  # cancellation too: the line must not be lost
            self._record(input, config, None, started, error)
            raise
        self._record(input, config, documents, started, None)
        return documents

    def _record(
        self,
        query: Any,
        config: RunnableConfig | None,
        documents: Any,
        started: float,
        error: BaseException | None,
    ) -> None:
        latency_ms = (perf_counter() - started) * 1000.0
        # Pydantic finds private attributes through ``__getattr__`` after a failed lookup
        # (microseconds each); on every retrieval we read them from their dict directly.
        private: Any = self.__pydantic_private__
        recording: Recording = private["_recording"]
        try:
            query_id = _query_id(config, recording.query_id_key)
        except Exception:  # a hostile config object; the line is still worth writing
            query_id = None
        recording.record(
            query, documents, query_id, latency_ms, error, private["_source"], "retrieval"
        )

    # BaseRetriever's abstract hooks: only reached by code that calls them directly, since
    # invoke/ainvoke above do not go through BaseRetriever's run machinery.
    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return self.invoke(query, {"callbacks": run_manager.get_child()})

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        return await self.ainvoke(query, {"callbacks": run_manager.get_child()})


def _with_score(document: Document, score: float, key: str) -> Document:
    # A copy: a store may hand out the documents it holds, and we must not write into them.
    return Document(
        page_content=document.page_content,
        metadata={**document.metadata, key: float(score)},
        id=document.id,
    )


class ScoredVectorStoreRetriever(BaseRetriever):
    """A vector-store retriever that keeps the scores, in ``metadata[score_key]``.

    Uses ``similarity_search_with_score`` (the store's raw score: a distance for some stores, a
    similarity for others), or ``similarity_search_with_relevance_scores`` (normalised to
    ``[0, 1]``, higher is better; not every store can) with ``relevance_scores=True``.
    ``search_kwargs`` are passed on as ``VectorStoreRetriever`` passes them (``k``, ``filter``,
    ``score_threshold`` ...). Build one from an existing ``as_retriever()`` with
    :meth:`from_retriever`.
    """

    vectorstore: VectorStore
    search_kwargs: dict[str, Any] = Field(default_factory=lambda: {"k": 4})
    score_key: str = "score"
    relevance_scores: bool = False

    @classmethod
    def from_retriever(cls, retriever: VectorStoreRetriever, **kwargs: Any) -> Self:
        """The same store and search settings as ``retriever``, with scores kept.

        ``similarity`` becomes raw scores, ``similarity_score_threshold`` relevance scores
        (the threshold applies as before); MMR has no scores and is refused.
        """
        if retriever.search_type not in ("similarity", "similarity_score_threshold"):
            raise ValueError(
                f"search_type {retriever.search_type!r} returns no scores; "
                "use 'similarity' or 'similarity_score_threshold'"
            )
        settings: dict[str, Any] = {
            "vectorstore": retriever.vectorstore,
            "search_kwargs": dict(retriever.search_kwargs),
            "relevance_scores": retriever.search_type == "similarity_score_threshold",
            "tags": retriever.tags,
            "metadata": retriever.metadata,
        }
        settings.update(kwargs)
        return cls(**settings)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self.relevance_scores:
            pairs = self.vectorstore.similarity_search_with_relevance_scores(
                query, **self.search_kwargs
            )
        else:
            pairs = self.vectorstore.similarity_search_with_score(query, **self.search_kwargs)
        return [_with_score(document, score, self.score_key) for document, score in pairs]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self.relevance_scores:
            pairs = await self.vectorstore.asimilarity_search_with_relevance_scores(
                query, **self.search_kwargs
            )
        else:
            pairs = await self.vectorstore.asimilarity_search_with_score(
                query, **self.search_kwargs
            )
        return [_with_score(document, score, self.score_key) for document, score in pairs]
