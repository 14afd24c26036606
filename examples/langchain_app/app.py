"""Orbit's support assistant: a small LangChain RAG app over the quickstart documents.

The application under test, written the way a LangChain app usually is and knowing nothing of
spanchor (``record.py`` adds the recording from outside)::

    files -> RecursiveCharacterTextSplitter(add_start_index=True) -> InMemoryVectorStore
    question -> retriever | format_docs -> prompt -> LLM -> StrOutputParser -> answer

Everything runs offline and is deterministic: :class:`HashedBagOfWords` embeds text as hashed
word counts (crc32, so rankings are the same in every process) and :class:`ExtractiveLLM`
stands in for the model by answering with the context sentence that best matches the
question — so a worse retriever visibly gives worse answers. Swap in a real embedding model and
chat model and nothing else changes.

Usage::

    python examples/langchain_app/app.py "How long is the warranty?" [--chunk-size 500]
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models.llms import LLM
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import PromptTemplate
from langchain_core.runnables import Runnable, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore, VectorStoreRetriever
from langchain_text_splitters import RecursiveCharacterTextSplitter

__all__ = [
    "DOCS",
    "PROMPT",
    "ExtractiveLLM",
    "HashedBagOfWords",
    "build_chain",
    "build_retriever",
    "format_docs",
    "load_documents",
    "main",
]

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent / "quickstart" / "docs"
"""The product documentation the assistant answers from (shared with the quickstart)."""

PROMPT = PromptTemplate.from_template(
    "You are Orbit's support assistant. Answer the customer's question from the context "
    "only.\n\nContext:\n{context}\n\nQuestion: {question}\nAnswer:"
)

# One string, not a 34-line list literal: easier to read and to edit.
_STOP_WORDS = frozenset(
    "a an and are at be by can do does for from how i if in is it my of on or should so that "  # noqa: SIM905
    "the this to what when which while why with".split()
)


def _words(text: str) -> list[str]:
    """Lowercase content words, plural 's' dropped: the vocabulary both fakes share."""
    return [
        word.removesuffix("s")
        for word in re.findall(r"\w+", text.lower())
        if word not in _STOP_WORDS
    ]


class HashedBagOfWords(Embeddings):
    """A deterministic local embedding: hashed counts of content words, L2-normalised.

    Not semantic, but ranks by shared vocabulary, which is enough for a meaningful offline
    retriever. crc32 rather than ``hash()``: Python salts string hashes per process, and the
    recorded runs must be identical from one run to the next.
    """

    def __init__(self, dimensions: int = 1024) -> None:
        self.dimensions = dimensions

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        for word in _words(text):
            vector[zlib.crc32(word.encode()) % self.dimensions] += 1.0
        norm = math.sqrt(sum(value * value for value in vector)) or 1.0
        return [value / norm for value in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


class ExtractiveLLM(LLM):
    """An offline stand-in for the chat model: answers with the best-matching context sentence.

    It reads the prompt like a model would — the context block and the question — and returns
    the context sentence that shares the most question words, each weighted by how rare it is
    in the context (ties: the earlier sentence), or says it does not know. Deterministic, so
    the app's answers can be tested.
    """

    @property
    def _llm_type(self) -> str:
        return "extractive-fake"

    def _call(
        self,
        prompt: str,
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> str:
        context, _, question = prompt.partition("\n\nQuestion: ")
        wanted = set(_words(question.removesuffix("\nAnswer:")))
        sentences = [
            sentence
            for paragraph in context.partition("Context:\n")[2].split("\n\n")
            for sentence in re.split(
                r"(?<=[.!?])\s+",
                " ".join(
                    line.replace("**", "").strip()
                    for line in paragraph.splitlines()
                    if not line.lstrip().startswith("#")  # headings are not answers
                ),
            )
            if sentence
        ]
        vocabularies = [set(_words(sentence)) for sentence in sentences]
        # Words found in fewer context sentences say more (an IDF within the context).
        weight = {
            word: 1.0 / sum(word in v for v in vocabularies) for word in set().union(*vocabularies)
        }
        best, best_score = "", 0.0
        for sentence, vocabulary in zip(sentences, vocabularies, strict=True):
            score = sum(weight[word] for word in wanted & vocabulary)
            if score > best_score:
                best, best_score = sentence, score
        return best or "Sorry, I could not find that in the documentation."


def load_documents(docs: Path = DOCS) -> list[Document]:
    """One ``Document`` per file, ``metadata["source"]`` its path (what a file loader sets)."""
    return [
        Document(page_content=path.read_text(encoding="utf-8"), metadata={"source": str(path)})
        for path in sorted(docs.iterdir())
        if path.suffix in {".md", ".txt"}
    ]


def build_retriever(
    chunk_size: int = 500, chunk_overlap: int = 0, k: int = 5, docs: Path = DOCS
) -> VectorStoreRetriever:
    """Split, embed and index the documents; the top-``k`` retriever over them."""
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, add_start_index=True
    )
    store = InMemoryVectorStore(HashedBagOfWords())
    store.add_documents(splitter.split_documents(load_documents(docs)))
    return store.as_retriever(search_kwargs={"k": k})


def format_docs(documents: Sequence[Document]) -> str:
    """The retrieved chunks as the prompt's context block."""
    return "\n\n".join(document.page_content for document in documents)


def build_chain(retriever: Runnable[str, list[Document]]) -> Runnable[str, str]:
    """The LCEL chain: question -> retrieved context -> prompt -> LLM -> answer text."""
    return (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | PROMPT
        | ExtractiveLLM()
        | StrOutputParser()
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Ask Orbit's support assistant.")
    parser.add_argument("questions", nargs="+", metavar="QUESTION")
    parser.add_argument("--chunk-size", type=int, default=500)
    parser.add_argument("--chunk-overlap", type=int, default=0)
    args = parser.parse_args(argv)
    retriever = build_retriever(args.chunk_size, args.chunk_overlap)
    chain = build_chain(retriever)
    for question, answer in zip(args.questions, chain.batch(args.questions), strict=True):
        print(f"Q: {question}\nA: {answer}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
