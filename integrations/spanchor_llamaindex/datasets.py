"""LlamaIndex QA datasets (node-id gold) and their migration to span gold sets.

LlamaIndex's retrieval eval sets (``EmbeddingQAFinetuneDataset``, written by
``generate_question_context_pairs``) are JSON::

    {"queries": {qid: question}, "corpus": {node_id: node text},
     "relevant_docs": {qid: [node_id, ...]}, "mode": "text"}

Their gold is *node ids*, which die with the chunking that made them. The class left
llama-index-core in 0.14.21 (it now lives in llama-index-finetuning, which pulls
sentence-transformers), so :func:`read_qa_dataset` and :func:`write_qa_dataset` handle the
JSON themselves, and :func:`gold_from_qa_dataset` turns it into a span gold set by locating
each relevant node's text in the source documents — after which the eval set survives any
re-chunking.

Locating rules (each relevant node is one anchor):

* found exactly, or up to whitespace and case, once in the corpus: anchored;
* found more than once: anchored only if ``node_documents`` names its document and it occurs
  once there; otherwise reported as ``ambiguous`` (or anchored at the first occurrence when
  ``allow_ambiguous=True``, still reported);
* found only approximately (the text was altered, e.g. metadata prepended): reported as
  ``fuzzy`` and anchored only when ``accept_fuzzy=True``;
* not found, or a node id the dataset's corpus lacks: reported, not anchored.

* given the nodes themselves (``nodes=``: the index, its docstore, or the nodes), a relevant
  node is located with its document id and offsets (raw-file offsets made canonical), so text
  repeated within or across documents lands where the node came from.

A query left without any anchor is left out of the gold set and reported as ``no_evidence``:
a gold query without evidence cannot be scored. A question whose text equals an earlier
query's is kept (with its own id and anchors) and reported as ``duplicate_question``: scoring
or recording *by question text* would give both the first one's gold, so pass query ids
(``tag_query``, ``query_id=``) for them. Every problem names the query and node.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from spanchor_core import (
    Anchor,
    Corpus,
    GoldQuery,
    GoldSet,
    InputError,
    LocateRequest,
    Location,
    Locator,
    MatchStatus,
    canonicalize,
)
from spanchor_llamaindex.context import NodeSource, gold_span, node_lookup
from spanchor_llamaindex.nodes import DocumentIdResolver, NodeConverter

__all__ = [
    "MigrationProblem",
    "QADataset",
    "QAMigration",
    "gold_from_qa_dataset",
    "node_texts",
    "read_qa_dataset",
    "write_qa_dataset",
]

ProblemCode = Literal[
    "unknown_node", "unlocated", "ambiguous", "fuzzy", "no_evidence", "duplicate_question"
]

_SOURCE_TAG: Final = "llamaindex-qa"


@dataclass(frozen=True, slots=True)
class QADataset:
    """A LlamaIndex QA dataset: questions, node texts, and which nodes answer which question."""

    queries: Mapping[str, str]
    corpus: Mapping[str, str]
    relevant_docs: Mapping[str, tuple[str, ...]]
    mode: str = "text"
    path: Path | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class MigrationProblem:
    """One relevant node that did not become a clean anchor, or a query left without any."""

    code: ProblemCode
    query_id: str
    node_id: str | None
    message: str
    anchored: bool = False
    """True when an anchor was still made (``allow_ambiguous`` / ``accept_fuzzy``)."""

    def __str__(self) -> str:
        node = f" node {self.node_id!r}" if self.node_id is not None else ""
        return f"query {self.query_id!r}{node}: {self.code}: {self.message}"


@dataclass(frozen=True, slots=True)
class QAMigration:
    """The span gold set made from a QA dataset, and everything that did not carry over."""

    gold: GoldSet
    problems: tuple[MigrationProblem, ...]

    @property
    def ok(self) -> bool:
        """Every relevant node became an anchor without approximation or a guess."""
        return not self.problems

    def counts(self) -> dict[str, int]:
        """Problems per code, in a stable order."""
        out: dict[str, int] = {}
        for problem in self.problems:
            out[problem.code] = out.get(problem.code, 0) + 1
        return dict(sorted(out.items()))


def _string_map(value: Any, name: str, path: Path) -> dict[str, str]:
    if not isinstance(value, dict):
        raise InputError(f"{name!r} must be an object of id -> text", path=path)
    for key, text in value.items():
        if not isinstance(text, str):
            raise InputError(f"{name}[{key!r}] must be a string", path=path)
    return dict(value)


def read_qa_dataset(path: str | os.PathLike[str]) -> QADataset:
    """Read a LlamaIndex QA dataset JSON file (``EmbeddingQAFinetuneDataset.save_json``)."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("file does not exist", path=file) from None
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read file: {err}", path=file) from None
    except json.JSONDecodeError as err:
        raise InputError(f"not JSON: {err.msg}", path=file, line=err.lineno) from None
    if not isinstance(data, dict):
        raise InputError("expected a JSON object", path=file)
    missing = [key for key in ("queries", "corpus", "relevant_docs") if key not in data]
    if missing:
        raise InputError(
            f"missing key {missing[0]!r}",
            path=file,
            hint="a LlamaIndex QA dataset has queries, corpus and relevant_docs",
        )
    queries = _string_map(data["queries"], "queries", file)
    corpus = _string_map(data["corpus"], "corpus", file)
    relevant_raw = data["relevant_docs"]
    if not isinstance(relevant_raw, dict):
        raise InputError("'relevant_docs' must be an object of query id -> node ids", path=file)
    relevant: dict[str, tuple[str, ...]] = {}
    for qid, node_ids in relevant_raw.items():
        if not isinstance(node_ids, list) or not all(isinstance(n, str) for n in node_ids):
            raise InputError(f"relevant_docs[{qid!r}] must be a list of node ids", path=file)
        relevant[qid] = tuple(node_ids)
    mode = data.get("mode", "text")
    if mode != "text":
        raise InputError(
            f"mode {mode!r} is not supported", path=file, hint="only text datasets have spans"
        )
    return QADataset(queries, corpus, relevant, mode, path=file)


def write_qa_dataset(dataset: QADataset, path: str | os.PathLike[str]) -> None:
    """Write ``dataset`` in LlamaIndex's JSON layout (atomically: a temp file, then rename)."""
    file = Path(path)
    payload = {
        "queries": dict(dataset.queries),
        "corpus": dict(dataset.corpus),
        "relevant_docs": {qid: list(ids) for qid, ids in dataset.relevant_docs.items()},
        "mode": dataset.mode,
    }
    temp = file.with_name(f".{file.name}.tmp")
    temp.write_text(json.dumps(payload, ensure_ascii=False, indent=4) + "\n", encoding="utf-8")
    os.replace(temp, file)


def gold_from_qa_dataset(
    dataset: QADataset,
    corpus: Corpus,
    *,
    node_documents: Mapping[str, str] | None = None,
    allow_ambiguous: bool = False,
    accept_fuzzy: bool = False,
    locator: Locator | None = None,
    nodes: NodeSource | None = None,
    document_id: DocumentIdResolver | None = None,
    source: str = _SOURCE_TAG,
) -> QAMigration:
    """Turn node-id gold into span anchors by locating each relevant node's text.

    ``node_documents`` optionally maps node ids to corpus document ids (it resolves text that
    occurs in several documents); ``nodes`` (the index, its docstore or the nodes) gives each
    known node's document id and offsets instead (``document_id`` resolves nodes to corpus
    ids; default :func:`~spanchor_llamaindex.nodes.default_document_id`). Queries keep their
    ids and questions, in dataset order; each gets the tag ``source`` and
    ``metadata["node_ids"]``. See the module docstring for the rules and
    :class:`MigrationProblem` for what is reported.
    """
    finder = locator if locator is not None else Locator(corpus)
    documents = node_documents or {}
    lookup = node_lookup(nodes)
    converter = NodeConverter(corpus, document_id)
    # One batched locate over every distinct relevant node.
    node_ids = sorted(
        {n for qid in dataset.queries for n in dataset.relevant_docs.get(qid, ())}
        & set(dataset.corpus)
    )

    def request(node_id: str) -> LocateRequest:
        node = lookup(node_id) if lookup is not None else None
        if node is None:
            return LocateRequest(dataset.corpus[node_id], documents.get(node_id))
        result = converter.result(node, 1)
        document = documents.get(node_id, result.document_id)
        return LocateRequest(result.text, document, result.start, result.end)

    locations = dict(zip(node_ids, finder.locate_many([request(n) for n in node_ids]), strict=True))
    problems: list[MigrationProblem] = []
    queries: list[GoldQuery] = []
    first_with: dict[str, str] = {}
    for qid, question in dataset.queries.items():
        key = canonicalize(question).strip()
        if key in first_with:
            problems.append(
                MigrationProblem(
                    "duplicate_question",
                    qid,
                    None,
                    f"same question as query {first_with[key]!r}; kept with its own anchors, "
                    "identify it by id (not by text) when scoring or recording",
                    anchored=True,
                )
            )
        else:
            first_with[key] = qid
        anchors: list[Anchor] = []
        relevant = dataset.relevant_docs.get(qid, ())
        for node_id in relevant:
            if node_id not in dataset.corpus:
                problems.append(
                    MigrationProblem(
                        "unknown_node", qid, node_id, "the dataset's corpus has no such node"
                    )
                )
                continue
            anchor, problem = _anchor(
                corpus, qid, node_id, locations[node_id], allow_ambiguous, accept_fuzzy
            )
            if problem is not None:
                problems.append(problem)
            if anchor is not None and anchor not in anchors:
                anchors.append(anchor)
        if not anchors:
            reason = "no relevant nodes" if not relevant else "none of its nodes was anchored"
            problems.append(MigrationProblem("no_evidence", qid, None, reason))
            continue
        queries.append(
            GoldQuery(
                qid,
                question,
                tuple(anchors),
                tags=(source,),
                metadata={"node_ids": list(relevant)},
            )
        )
    return QAMigration(
        GoldSet(queries, metadata={"source": source}),
        tuple(problems),
    )


def _anchor(
    corpus: Corpus,
    qid: str,
    node_id: str,
    location: Location,
    allow_ambiguous: bool,
    accept_fuzzy: bool,
) -> tuple[Anchor | None, MigrationProblem | None]:
    status = location.status
    span = location.span

    def anchor() -> Anchor | None:
        return None if span is None else Anchor.from_span(corpus, *span)

    if gold_span(location) is not None:
        return anchor(), None
    if status is MatchStatus.AMBIGUOUS:
        where = ", ".join(f"{c.document_id}[{c.start}:{c.end}]" for c in location.candidates[:3])
        message = f"the text occurs {len(location.candidates)} times ({where}, ...)"
        if allow_ambiguous:
            return anchor(), MigrationProblem(
                "ambiguous", qid, node_id, message + "; anchored at the first", anchored=True
            )
        return None, MigrationProblem(
            "ambiguous", qid, node_id, message + "; name its document in node_documents"
        )
    if status is MatchStatus.FUZZY:
        message = f"only found approximately (score {location.confidence:.2f})"
        if accept_fuzzy:
            return anchor(), MigrationProblem("fuzzy", qid, node_id, message, anchored=True)
        return None, MigrationProblem("fuzzy", qid, node_id, message)
    reason = location.reason or "not found"
    return None, MigrationProblem("unlocated", qid, node_id, f"not in the corpus ({reason})")


def node_texts(dataset: QADataset, query_id: str) -> Sequence[str]:
    """The texts of a query's relevant nodes (what ``expected_texts`` would be)."""
    return [
        dataset.corpus[n] for n in dataset.relevant_docs.get(query_id, ()) if n in dataset.corpus
    ]
