"""The one place where a LangChain retrieval becomes a run-file line, shared by every recorder.

:class:`Recording` holds a :class:`spanchor_core.RunRecorder` — the process's shared one for a
path (:mod:`spanchor_langchain.shared`), or one you pass in — and knows how to turn documents
into results. Its :meth:`Recording.record` never raises, whatever goes wrong — documents it
cannot read, a full disk, a bug of ours — because a recorder that breaks the retrieval it
observes would be removed from the very pipelines it is meant to guard. Failures are counted
instead (:attr:`Recording.failures`) and the first one is logged. The exception is
``strict=True`` (or a strict recorder passed in): then a line that cannot be written raises
:class:`~spanchor_core.RecorderError`, so that CI fails at once instead of gating on a run
with holes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal
from uuid import UUID

from spanchor_core import Corpus, GoldSet, RecorderError, RunRecorder
from spanchor_core.runs import Stage  # not exported at the top level yet
from spanchor_core.runs.recorder import RecorderTarget, open_recorder_of
from spanchor_langchain.documents import (
    DEFAULT_SCORE_KEYS,
    DocumentIdRule,
    document_id_function,
    documents_to_entries,
)
from spanchor_langchain.shared import SharedFile, open_shared

__all__ = ["QUERY_ID_KEY", "RecordTarget", "Recording", "query_text"]

QUERY_ID_KEY: Final = "spanchor_query_id"
"""Config metadata key that carries the gold query id: ``{"metadata": {QUERY_ID_KEY: "q1"}}``."""

RecordTarget = RecorderTarget
"""Where to record: a run-file path (the process's shared recorder of that path, see
:mod:`spanchor_langchain.shared`) or an open :class:`~spanchor_core.RunRecorder` (yours, never
closed by us)."""

_log = logging.getLogger("spanchor_langchain")


def query_text(value: Any) -> str:
    """The query string of a retriever input (a string, or a dict holding one)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key in ("query", "question", "input"):
            found = value.get(key)
            if isinstance(found, str):
                return found
    return str(value)


class Recording:
    """A recorder plus the conversion settings; thread- and async-safe, raising only if strict.

    ``gold`` lets the core fill in query ids from the query text (and puts the gold hash in the
    header); ``corpus`` puts its fingerprint in the header, so ``spanchor gate`` refuses to
    compare the run against other documents. Header arguments are only valid with a path: an
    open recorder already wrote its header. ``mode`` is how a path is opened when it is not
    open in this process yet (``"a"`` appends, ``"w"`` starts afresh).
    """

    __slots__ = (
        "_document_id",
        "_failures",
        "_lock",
        "_max_results",
        "_score_keys",
        "_shared",
        "document_id",
        "query_id_key",
        "recorder",
        "strict",
    )

    def __init__(
        self,
        target: RecordTarget,
        *,
        gold: GoldSet | None = None,
        corpus: Corpus | None = None,
        document_id: DocumentIdRule = None,
        score_keys: Sequence[str] = DEFAULT_SCORE_KEYS,
        max_results: int | None = None,
        query_id_key: str = QUERY_ID_KEY,
        description: str = "",
        parameters: Mapping[str, Any] | None = None,
        tags: Mapping[str, Any] | None = None,
        mode: Literal["w", "a"] = "w",
        strict: bool = False,
    ) -> None:
        if isinstance(score_keys, str):
            raise TypeError("score_keys must be a sequence of metadata keys, not one string")
        if max_results is not None and (type(max_results) is not int or max_results < 1):
            raise ValueError(f"max_results must be a positive integer, got {max_results!r}")
        if mode not in ("w", "a"):
            raise ValueError(f"mode must be 'w' or 'a', got {mode!r}")
        self.document_id = document_id
        self._document_id = document_id_function(document_id)
        self._score_keys = tuple(score_keys)
        self._max_results = max_results
        self.query_id_key = query_id_key
        self._lock = threading.Lock()
        self._failures = 0
        self._shared: SharedFile | None
        given = open_recorder_of(
            target,
            gold=gold,
            corpus=corpus,
            description=description or None,
            parameters=parameters,
            tags=tags,
        )
        if isinstance(given, RunRecorder):
            self.recorder = given
            self._shared = None
            self.strict = strict or given.strict
        else:
            self._shared = open_shared(
                given,
                mode=mode,
                header={
                    "retriever": description,
                    "parameters": parameters,
                    "corpus_fingerprint": None if corpus is None else corpus.fingerprint,
                    "gold": gold,
                    "tags": tags,
                },
            )
            self.recorder = self._shared.recorder
            self.strict = strict

    @property
    def shared(self) -> SharedFile | None:
        """The process-wide file this recording writes to (``None`` for a recorder passed in)."""
        return self._shared

    @property
    def failures(self) -> int:
        """Retrievals that could not be recorded: unreadable outputs plus recorder failures."""
        return self._failures + self.recorder.failures

    @property
    def records(self) -> int:
        """Lines written so far (by anyone sharing the recorder)."""
        return self.recorder.records

    def query_id(self, metadata: Mapping[str, Any] | None) -> str | None:
        """The gold query id carried in run metadata, if any (non-strings are ignored)."""
        if not metadata:
            return None
        value = metadata.get(self.query_id_key)
        return value if isinstance(value, str) and value else None

    def record(
        self,
        query: Any,
        documents: Any,
        query_id: str | None = None,
        latency_ms: float | None = None,
        error: str | BaseException | None = None,
        source: str | None = None,
        stage: Stage | None = None,
        trace_id: str | UUID | None = None,
        run_id: str | UUID | None = None,
        parent_run_id: str | UUID | None = None,
        sequence: int | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Write one line; never raises unless strict (see the module docstring). Called on
        every retrieval: the recorders pass the arguments by position."""
        try:
            results = (
                []
                if error is not None
                else documents_to_entries(
                    documents, self._document_id, self._score_keys, self._max_results
                )
            )
        except Exception as exc:  # a recorder must never break the retrieval
            self._failed(exc)
            return
        recorder = self.recorder
        strict = self.strict
        before = recorder.failures if strict else 0
        try:
            recorder.record(
                query if type(query) is str else query_text(query),
                results,
                query_id=query_id,
                latency_ms=latency_ms,
                error=error,
                source=source,
                stage=stage,
                trace_id=trace_id,
                run_id=run_id,
                parent_run_id=parent_run_id,
                sequence=sequence,
                metadata=metadata,
            )
        except Exception as exc:
            # A strict recorder raises after counting the failure itself; anything else is new.
            if not (recorder.strict and isinstance(exc, RecorderError)):
                self._failed(exc)
            elif strict:
                raise
            return
        if strict and recorder.failures != before:
            error_text = recorder.last_error
            raise RecorderError(f"{recorder.path}: could not record a line: {error_text}")

    def _failed(self, exc: Exception) -> None:
        with self._lock:
            self._failures += 1
            first = self._failures == 1
        if first:
            _log.warning(
                "spanchor: could not record a retrieval to %s (%s: %s); the retrieval is "
                "unaffected, further failures are counted",
                self.recorder.path,
                type(exc).__name__,
                exc,
            )
        if self.strict:
            raise RecorderError(
                f"{self.recorder.path}: could not record a retrieval: {type(exc).__name__}: {exc}"
            ) from exc

    def close(self) -> None:
        """Release the shared file (closed with its last user); a recorder passed in stays
        open for its owner. Idempotent."""
        shared, self._shared = self._shared, None
        if shared is not None:
            shared.release()
