"""spanchor: regression tests for RAG retrieval against source-document anchors.

The public API is re-exported here; everything else is internal. Importing this package
never imports a framework (LangChain, LlamaIndex) nor the CLI's typer and rich.
"""

from spanchor_core._version import __version__
from spanchor_core.corpus import Corpus, Document, canonicalize, load_corpus, sha256_text
from spanchor_core.errors import (
    AnchorError,
    CorpusError,
    EvaluationFileError,
    GoldError,
    InputError,
    RecorderError,
    RunError,
    SpanchorError,
)
from spanchor_core.spans import DocSpan, Span

__all__ = [
    "AnchorError",
    "Corpus",
    "CorpusError",
    "DocSpan",
    "Document",
    "EvaluationFileError",
    "GoldError",
    "InputError",
    "RecorderError",
    "RunError",
    "Span",
    "SpanchorError",
    "__version__",
    "canonicalize",
    "load_corpus",
    "sha256_text",
]
