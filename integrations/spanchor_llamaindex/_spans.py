"""The open spans of LlamaIndex's dispatcher: parents, instances, roots (for the recorder).

LlamaIndex opens a span around every instrumented call (``BaseRetriever.retrieve``,
``BaseQueryEngine.query``, ``BaseSynthesizer.synthesize``, a postprocessor's
``_postprocess_nodes``...) and passes each new span its parent, the object the method was
called on and its bound arguments. The recorder needs three things from that tree:

* the **root** of an event's span — the user's call (``query_engine.query(...)``, or the
  retrieval itself) — whose id is the trace id of every line it causes, and whose arguments
  hold the user's question;
* the **instance** of a retrieval's span (the retriever: its class names the source);
* whether a retrieval is **nested** in another one being recorded.

It also holds the recorder's two records of progress: a :class:`Trace` (what the lines of one
root call share) and a :class:`Pending` stage (started, waiting for its end event).

:class:`SpanWatcher` keeps one tuple per open span in a plain dict, :attr:`SpanWatcher.table`,
and drops it when the span closes; it sees every span of the application, so it does one dict
operation per span event, lock-free (single dict operations are atomic in CPython). The
queries over that table (:func:`lineage`, :func:`has_ancestor_in`) are plain functions: the
recorder keeps the table itself and asks them once or twice per recorded stage, where a
method of the watcher would be looked up through pydantic's attribute hook each time.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Container, Iterator
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from llama_index.core.bridge.pydantic import BaseModel, PrivateAttr
from llama_index.core.instrumentation.span import BaseSpan
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
from llama_index.core.schema import QueryBundle

__all__ = [
    "Pending",
    "SpanInfo",
    "SpanWatcher",
    "Stage",
    "Trace",
    "class_name",
    "has_ancestor_in",
    "lineage",
    "private",
    "question_of",
    "text_of",
]

Stage = Literal["retrieval", "postprocessed", "context"]

_MISSING: Final = object()
_MAX_DEPTH: Final = 1000  # a cycle in the span tree would be a LlamaIndex bug

# The parameters that carry the user's question in LlamaIndex's entry points:
# query engines (``str_or_query_bundle``), retrievers, chat engines (``message``), agents.
_QUESTION_PARAMETERS: Final = (
    "str_or_query_bundle",
    "query_bundle",
    "query",
    "message",
    "user_msg",
)

SpanInfo = tuple[str | None, Any, inspect.BoundArguments | None]
"""``(parent id, instance, bound arguments)``; the arguments are kept for root spans only."""


def question_of(value: Any) -> str | None:
    """The question text in an argument value (a string, a ``QueryBundle``), else ``None``."""
    if type(value) is str:  # the usual case, before the slower ABC check of QueryBundle
        return value
    if isinstance(value, QueryBundle):
        return value.query_str
    if isinstance(value, str):
        return value
    content = getattr(value, "content", None)  # a ChatMessage
    return content if isinstance(content, str) else None


def text_of(value: Any) -> str:
    found = question_of(value)
    return found if found is not None else str(value)


@dataclass(slots=True)
class Trace:
    """What the lines of one root call share."""

    root: str
    question: str
    query_id: str | None
    started: float
    sequence: Iterator[int] = field(default_factory=itertools.count)
    seen: set[str] = field(default_factory=set)  # node ids retrieved or reranked in the trace


@dataclass(slots=True)
class Pending:
    """A started stage waiting for its end event."""

    trace: Trace
    stage: Stage
    query: str
    query_id: str | None
    sequence: int
    parent: str | None
    source: str
    started: float


def private(model: BaseModel) -> dict[str, Any]:
    """A pydantic model's private attributes, read without pydantic's ``__getattr__``: the
    dispatcher calls the recorder on every event and span of the application, and
    ``self._spans`` costs tens of times more than this dictionary look-up."""
    found = model.__pydantic_private__
    if found is None:  # pragma: no cover - only models without private attributes
        raise AttributeError(f"{type(model).__name__} has no private attributes")
    return found


def class_name(instance: Any, default: str) -> str:
    return type(instance).__name__ if instance is not None else default


class SpanWatcher(BaseSpanHandler[BaseSpan]):
    """Open spans of the dispatcher, for the recorder (see the module docstring).

    ``on_drop(span_id, err)`` is called when a span ends with an exception, ``on_root_closed
    (span_id)`` when a root span ends either way.
    """

    _spans: dict[str, SpanInfo] = PrivateAttr(default_factory=dict)
    _on_drop: Callable[[str, BaseException | None], None] = PrivateAttr()
    _on_root_closed: Callable[[str], None] = PrivateAttr()

    def __init__(
        self,
        on_drop: Callable[[str, BaseException | None], None],
        on_root_closed: Callable[[str], None],
    ) -> None:
        super().__init__()
        self._spans: dict[str, SpanInfo] = {}
        self._on_drop = on_drop
        self._on_root_closed = on_root_closed

    @classmethod
    def class_name(cls) -> str:
        return "SpanchorSpanWatcher"

    # The dispatcher calls this watcher on every span of the application: the methods below
    # read the private attributes through ``private(self)`` (see there), the two per span
    # (enter, exit) straight from ``__pydantic_private__``, a dict once the model is built,
    # without even that call.

    def span_enter(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        parent_id: str | None = None,
        tags: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.__pydantic_private__["_spans"][id_] = (  # type: ignore[index]
            parent_id,
            instance,
            bound_args if parent_id is None else None,
        )

    def span_exit(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        result: Any | None = None,
        **kwargs: Any,
    ) -> None:
        attributes: dict[str, Any] = self.__pydantic_private__  # type: ignore[assignment]
        info = attributes["_spans"].pop(id_, _MISSING)
        if info is not _MISSING and info[0] is None:
            attributes["_on_root_closed"](id_)

    def span_drop(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        err: BaseException | None = None,
        **kwargs: Any,
    ) -> None:
        info = private(self)["_spans"].pop(id_, _MISSING)
        private(self)["_on_drop"](id_, err)
        if info is not _MISSING and info[0] is None:
            private(self)["_on_root_closed"](id_)

    @property
    def table(self) -> dict[str, SpanInfo]:
        """The open spans, ``span id -> (parent id, instance, bound arguments)``: the same
        dict for the watcher's whole life (:meth:`clear` empties it in place)."""
        table: dict[str, SpanInfo] = private(self)["_spans"]
        return table

    def clear(self) -> None:
        self._spans.clear()

    # The abstract hooks of BaseSpanHandler; unused because the three methods above are
    # overridden, but they must exist.
    def new_span(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        parent_span_id: str | None = None,
        tags: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> BaseSpan | None:
        return None

    def prepare_to_exit_span(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        result: Any | None = None,
        **kwargs: Any,
    ) -> BaseSpan | None:
        return None

    def prepare_to_drop_span(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        err: BaseException | None = None,
        **kwargs: Any,
    ) -> BaseSpan | None:
        return None


# -- queries over the open spans (a watcher's table) ----------------------------------------


def lineage(table: dict[str, SpanInfo], span_id: str) -> tuple[str, str | None, str | None, Any]:
    """``(root, question, parent, instance)`` of ``span_id`` in one walk: the root span, the
    question in the root's arguments (if any), the span's parent and instance."""
    info = table.get(span_id)
    if info is None:
        return span_id, None, None, None
    parent, instance = info[0], info[1]
    current = span_id
    depth = 0
    while info is not None and info[0] is not None and depth < _MAX_DEPTH:
        current = info[0]
        info = table.get(current)
        depth += 1
    question = None
    if info is not None and info[2] is not None:
        arguments = info[2].arguments
        for name in _QUESTION_PARAMETERS:
            if name in arguments:
                question = question_of(arguments[name])
                if question is not None:
                    break
    return current, question, parent, instance


def has_ancestor_in(table: dict[str, SpanInfo], span_id: str, spans: Container[str]) -> bool:
    """Whether a span above ``span_id`` (its parent, theirs...) is one of ``spans``."""
    info = table.get(span_id)
    parent = None if info is None else info[0]
    depth = 0
    while parent is not None and depth < _MAX_DEPTH:
        if parent in spans:
            return True
        info = table.get(parent)
        parent = None if info is None else info[0]
        depth += 1
    return False
