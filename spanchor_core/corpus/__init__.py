"""Canonical source documents: canonical text and hashes, the in-memory corpus, loading it.

Canonical text is the only coordinate system spanchor uses (:mod:`.canonical`); a
:class:`Corpus` holds canonical documents by id, in sorted order, with a fingerprint over
their ids and hashes (:mod:`.model`); :func:`load_corpus` reads one from a directory
(:mod:`.load`), or from one JSONL or Parquet file in the BEIR layout (:mod:`.sources`);
:func:`open_corpus_file` opens such a file lazily, holding ids, hashes and lengths and reading a
document's text back when asked (:mod:`.lazy`), for a driver whose shards hold the texts.
"""

from __future__ import annotations

from spanchor_core.corpus.canonical import BOM, canonical_form, canonicalize, sha256_text
from spanchor_core.corpus.lazy import LazyCorpus, open_corpus_file
from spanchor_core.corpus.load import DEFAULT_GLOBS, load_corpus
from spanchor_core.corpus.model import Corpus, Document, document_id_for
from spanchor_core.corpus.sources import (
    FieldMap,
    is_corpus_file,
    iter_corpus_file,
    load_corpus_file,
    shard_of,
)

__all__ = [
    "BOM",
    "DEFAULT_GLOBS",
    "Corpus",
    "Document",
    "FieldMap",
    "LazyCorpus",
    "canonical_form",
    "canonicalize",
    "document_id_for",
    "is_corpus_file",
    "iter_corpus_file",
    "load_corpus",
    "load_corpus_file",
    "open_corpus_file",
    "sha256_text",
    "shard_of",
]
