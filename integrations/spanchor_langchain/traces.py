"""Bookkeeping of one trace (a top-level run and everything under it) for the callback handler.

A trace collects the *context candidates* of a question — document lists that steps produced —
and decides at its end which of them reached the model. The rule (also in the README):

* A step's output holds documents when :func:`~spanchor_langchain.documents.document_lists`
  finds a list of ``Document`` objects or ``(Document, score)`` pairs in it: the output
  itself, a value of an output dict (a LangGraph node's ``{"context": docs}``), a tool
  message's ``artifact``; a tool's own ``artifact``.
* Such a list is a candidate unless one of these says it is a list the trace already has
  (compared by value: the same texts in the same order — one list is one line, however many
  steps hand it on):

  1. it is already a candidate (a graph's final state holding a node's ``context``, the
     ``ToolNode`` output holding the tool's artifact);
  2. it is a **passthrough**: the step's inputs held this list and no other (an ``assign``
     that copies its input, a node that forwards the state, a rerank that kept the order);
  3. it is what a retriever run of the trace returned, handed on by a step whose inputs held
     no other list (a chain that ends in a retriever, ``{"context": retriever, ...}``, a
     node calling ``retriever.invoke``, ``with_fallbacks``): the retrieval line already says
     it, and evaluation takes it as the context. A step that *chose* it among several lists
     (a hybrid merge that kept one side) makes it a candidate;
  4. the step hands on **every** list its inputs held (an ``assign`` adding a key to a state
     that already holds the retrieved and the reranked lists): it chose none of them, so
     none of those lists is its candidate (a new list it adds still is).
* A candidate is **superseded** when a later step took it as input and produced a new list
  (a reranker, a merge of hybrid results, a filter): the model saw the new one.
* When the top-level run ends (or fails), every candidate left is written, stage
  ``"context"``, in the order its step started; numbered after the trace's retrievals.

Chain steps *inside* a retriever run are part of that retriever and offer nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from uuid import UUID

from spanchor_langchain.documents import document_lists, documents_key

__all__ = ["Candidate", "Step", "Trace", "line_metadata", "question_of"]

_METADATA_PREFIX: Final = "ls_"
_METADATA_KEYS: Final = frozenset({"langgraph_node", "langgraph_step"})
_QUESTION_KEYS: Final = ("question", "query", "input")
_HUMAN_ROLES: Final = frozenset({"human", "user"})


def line_metadata(tags: Sequence[str] | None, metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a line keeps of a run's tags and metadata: the tags, LangChain's ``ls_*`` keys
    (``ls_retriever_name``, ``ls_vector_store_provider``, ...) and the LangGraph node."""
    kept: dict[str, Any] = {"tags": list(tags)} if tags else {}
    if metadata:
        for key, value in metadata.items():
            if key.startswith(_METADATA_PREFIX) or key in _METADATA_KEYS:
                kept[key] = value
    return kept


def _message_text(message: Any) -> str | None:
    """The text of a human message in any of LangChain's shapes, else ``None``."""
    if isinstance(message, tuple) and len(message) == 2:
        role, content = message
    elif isinstance(message, Mapping):
        role, content = message.get("role") or message.get("type"), message.get("content")
    else:
        role, content = getattr(message, "type", None), getattr(message, "content", None)
    # a role is a string: anything else (a ``(Document, score)`` pair read as a message) is
    # no human message, and may not even hash
    if isinstance(role, str) and role in _HUMAN_ROLES and isinstance(content, str):
        return content
    return None


def question_of(inputs: Any) -> str | None:
    """The user's question in a top-level run's inputs, if it can be told.

    A string; the ``question``/``query``/``input`` string of a dict; else the last human
    message of a message list (an agent's ``{"messages": [...]}`` or the list itself).
    """
    if isinstance(inputs, str):
        return inputs
    messages: Any = inputs
    if isinstance(inputs, Mapping):
        for key in _QUESTION_KEYS:
            value = inputs.get(key)
            if isinstance(value, str):
                return value
        messages = inputs.get("messages")
    if isinstance(messages, list | tuple):
        for message in reversed(messages):
            text = _message_text(message)
            if text is not None:
                return text
    return None


@dataclass(slots=True)
class Step:
    """An open chain or tool run."""

    name: str | None
    started: float
    parent: UUID | None
    root: UUID
    sequence: int
    input_keys: frozenset[tuple[str, ...]]
    metadata: dict[str, Any]
    text: str | None  # the step's input, when it is a string (a tool's query)


@dataclass(slots=True)
class Candidate:
    """A list of documents a step produced; written as a context line unless superseded."""

    key: tuple[str, ...]
    documents: Sequence[Any]
    run_id: UUID
    step: Step
    ended: float
    position: int  # several lists from one step keep their order
    field: str | None  # the output key the list was under ("context", "artifact", ...)
    superseded: bool = False


@dataclass(slots=True)
class Trace:
    """What the handler knows of one top-level run."""

    question: str | None
    query_id: str | None
    counter: int = 0
    candidates: list[Candidate] = field(default_factory=list)
    keys: set[tuple[str, ...]] = field(default_factory=set)  # candidates and retrievals
    candidate_keys: set[tuple[str, ...]] = field(default_factory=set)

    def retrieved(self, documents: Sequence[Any]) -> None:
        """A retriever run of this trace returned ``documents``: not a context candidate."""
        self.keys.add(documents_key(documents))

    def next(self) -> int:
        """The next sequence number in this trace (from 0, in the order runs start)."""
        number = self.counter
        self.counter += 1
        return number

    def input_keys(self, inputs: Any) -> frozenset[tuple[str, ...]]:
        """Keys of the document lists in a step's inputs (only looked for once the trace has
        a candidate or a retrieval: before that, no input can hold one)."""
        if not self.keys:
            return frozenset()
        return frozenset(documents_key(docs) for _, docs in document_lists(inputs))

    def offer(
        self,
        step: Step,
        run_id: UUID,
        lists: list[tuple[str | None, Sequence[Any]]],
        ended: float,
        *,
        passthrough: bool = True,
    ) -> int:
        """Take the step's document lists by the rule of the module docstring; return how
        many became candidates. ``passthrough=False`` (explicit ``record``) skips only lists
        that are already candidates."""
        added = 0
        inputs = step.input_keys
        keys = [documents_key(documents) for _, documents in lists]
        hands_on_all = passthrough and bool(inputs) and inputs <= set(keys)
        for position, ((name, documents), key) in enumerate(zip(lists, keys, strict=True)):
            if key in self.candidate_keys:
                continue  # rule 1
            if passthrough and (key in self.keys or key in inputs) and not (inputs - {key}):
                continue  # rules 2 and 3: nothing else in the inputs it could be chosen from
            if hands_on_all and key in inputs:
                continue  # rule 4: every input list handed on, none chosen
            self.keys.add(key)
            self.candidate_keys.add(key)
            self.candidates.append(Candidate(key, documents, run_id, step, ended, position, name))
            added += 1
        if added and inputs:
            for candidate in self.candidates:
                if candidate.key in inputs and candidate.step is not step:
                    candidate.superseded = True
        return added

    def remaining(self) -> list[Candidate]:
        """The candidates to write, in the order their steps started."""
        kept = [candidate for candidate in self.candidates if not candidate.superseded]
        kept.sort(key=lambda candidate: (candidate.step.sequence, candidate.position))
        return kept
