"""Shared fixtures for the LangChain tests (imported by the other ``test_langchain*`` modules),
and tests that the fixtures are what the other tests assume: a real splitter over a real
corpus, and a local embedding whose rankings mean something.
"""

from __future__ import annotations

import asyncio
import math
import re
import zlib
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_text_splitters")

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    BaseCallbackHandler,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_text_splitters import RecursiveCharacterTextSplitter

from spanchor_core import Corpus, GoldQuery, GoldSet, anchor_from_text
from tests.integrations.contract import SCENARIO, Scenario

__all__ = [
    "GARDEN_TEXTS",
    "CollectingHandler",
    "FailingRetriever",
    "HashedBagOfWords",
    "ScenarioRetriever",
    "garden_corpus",
    "garden_gold",
    "split_documents",
    "vector_store",
]

GARDEN_TEXTS = {
    "guides/tomatoes": (
        "Tomatoes need at least six hours of direct sun every day.\n\n"
        "Water tomato plants deeply at the base, early in the morning, and never on the "
        "leaves, which invites blight.\n\n"
        "Stake or cage each tomato plant when it is planted so the stems do not snap later."
    ),
    "guides/bread": (
        "A sourdough starter must be fed with flour and water once a day.\n\n"
        "Bake bread in a very hot oven, around 250 degrees, with steam for the first "
        "twenty minutes so the crust can rise.\n\n"
        "Let the loaf cool for an hour before slicing, or the crumb turns gummy."
    ),
    "guides/bicycles": (
        "Check bicycle tyre pressure every week; soft tyres wear fast and puncture easily.\n\n"
        "Clean and oil the chain after riding in rain, or rust will stiffen its links.\n\n"
        "Brake pads are worn out when the grooves on them are gone."
    ),
    "guides/bees": (
        "Honey bees collect nectar from flowers within a few kilometres of the hive.\n\n"
        "A beekeeper should wear a veil and gloves and move slowly near the hive.\n\n"
        "Leave enough honey in the hive for the bees to survive the winter."
    ),
}

GARDEN_QUESTIONS = {
    "q1": ("How many hours of sun do tomatoes need?", "guides/tomatoes", "six hours of direct sun"),
    "q2": ("How should I water tomato plants?", "guides/tomatoes", "at the base, early in the"),
    "q3": ("How hot should the oven be to bake bread?", "guides/bread", "around 250 degrees"),
    "q4": ("When should I slice the loaf of bread?", "guides/bread", "cool for an hour"),
    "q5": ("How often should I check bicycle tyre pressure?", "guides/bicycles", "every week"),
    "q6": ("What should I do with the chain after rain?", "guides/bicycles", "Clean and oil"),
    "q7": ("What should a beekeeper wear near the hive?", "guides/bees", "wear a veil and gloves"),
    "q8": ("How much honey should stay in the hive for winter?", "guides/bees", "enough honey"),
}


def garden_corpus() -> Corpus:
    return Corpus.from_texts(GARDEN_TEXTS)


def garden_gold(corpus: Corpus | None = None) -> GoldSet:
    corpus = corpus or garden_corpus()
    return GoldSet(
        GoldQuery(qid, question, (anchor_from_text(corpus, evidence, document_id=doc),))
        for qid, (question, doc, evidence) in GARDEN_QUESTIONS.items()
    )


class HashedBagOfWords(Embeddings):
    """A deterministic local embedding: hashed counts of lowercase words, L2-normalised.

    crc32, not ``hash()``: Python salts string hashes per process, and the rankings must be the
    same in every test run and in the subprocess tests.
    """

    STOP = frozenset(
        [
            "a",
            "an",
            "and",
            "at",
            "do",
            "every",
            "for",
            "how",
            "i",
            "in",
            "is",
            "it",
            "of",
            "on",
            "or",
            "should",
            "so",
            "the",
            "to",
        ]
    )

    def __init__(self, dimensions: int = 512) -> None:
        self.dimensions = dimensions

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        for word in re.findall(r"\w+", text.lower()):
            if word not in self.STOP:
                vector[zlib.crc32(word.rstrip("s").encode()) % self.dimensions] += 1.0
        norm = math.sqrt(sum(value * value for value in vector)) or 1.0
        return [value / norm for value in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def split_documents(corpus: Corpus, chunk_size: int = 120) -> list[Document]:
    """The corpus cut by LangChain's real splitter, offsets on (``start_index``)."""
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=chunk_size, chunk_overlap=20, add_start_index=True
    )
    ids = list(corpus)
    return splitter.create_documents(
        [corpus.text(doc_id) for doc_id in ids],
        metadatas=[{"source": f"docs/{doc_id}.md", "corpus_id": doc_id} for doc_id in ids],
    )


def vector_store(corpus: Corpus | None = None) -> InMemoryVectorStore:
    store = InMemoryVectorStore(HashedBagOfWords())
    store.add_documents(split_documents(corpus or garden_corpus()))
    return store


class ScenarioRetriever(BaseRetriever):
    """The shared contract's deterministic retriever as a LangChain retriever."""

    scenario: Scenario = SCENARIO
    k: int = 3

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [
            Document(
                page_content=hit.text, metadata={"source": hit.document_id, "score": hit.score}
            )
            for hit in self.scenario.retrieve(query, self.k)
        ]


class FailingRetriever(BaseRetriever):
    """Raises ``error`` (the same object every time) for queries containing ``trigger``."""

    error: Exception
    trigger: str = "fail"

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self.trigger in query:
            raise self.error
        return [Document(page_content=f"about {query}", metadata={"score": 1.0})]


class SlowRetriever(BaseRetriever):
    """Sleeps ``delay`` seconds before answering: something for ``asyncio.wait_for`` to cancel."""

    delay: float = 30.0

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        raise NotImplementedError("async only")

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        await asyncio.sleep(self.delay)
        return [Document(page_content=f"late {query}")]


class CollectingHandler(BaseCallbackHandler):
    """Remembers retriever starts (name, tags, metadata) to show what reached the callbacks."""

    def __init__(self) -> None:
        self.starts: list[dict[str, Any]] = []

    def on_retriever_start(
        self,
        serialized: dict[str, Any] | None,
        query: str,
        *,
        tags: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.starts.append(
            {"query": query, "tags": list(tags or ()), "metadata": dict(metadata or {}), **kwargs}
        )


# -- the fixtures are what the other tests assume -------------------------------------------------


def test_embedding_is_deterministic_and_normalised() -> None:
    embedding = HashedBagOfWords()
    first = embedding.embed_query("Bake bread in a hot oven")
    assert first == HashedBagOfWords().embed_query("Bake bread in a hot oven")
    assert math.isclose(sum(value * value for value in first), 1.0)
    assert embedding.embed_query("") == [0.0] * embedding.dimensions


def test_vector_store_ranks_the_evidence_first_for_every_gold_question() -> None:
    corpus = garden_corpus()
    gold = garden_gold(corpus)
    store = vector_store(corpus)
    for query in gold.values():
        top = store.similarity_search(query.question, k=1)[0]
        anchor = query.anchors[0]
        assert top.metadata["corpus_id"] == anchor.document_id, query.query_id
        start = top.metadata["start_index"]
        assert start <= anchor.start, query.query_id
        assert anchor.end <= start + len(top.page_content), query.query_id


def test_splitter_offsets_are_right_on_this_corpus() -> None:
    corpus = garden_corpus()
    documents = split_documents(corpus)
    assert len(documents) > len(corpus)
    for document in documents:
        start = document.metadata["start_index"]
        text = corpus.text(document.metadata["corpus_id"])
        assert text[start : start + len(document.page_content)] == document.page_content
