"""The normalised view's map back and forth for offsets outside a document (a hint can be
any integer): clipped to the document, never a numpy overflow."""

from __future__ import annotations

from spanchor_core.corpus import Corpus
from spanchor_core.locate.documents import CorpusTexts
from spanchor_core.locate.hashing import KgramHasher
from spanchor_core.locate.normalised_view import CHECKPOINT, build_normalised_view


def test_to_normalised_clips_offsets_outside_the_document() -> None:
    texts = {"a": "Some  TEXT\n\nwith   spaces " * 40, "b": "x y " * 100}
    documents = CorpusTexts(Corpus.from_texts(texts))
    view = build_normalised_view(documents, KgramHasher(8), 4)
    for d in range(len(documents.texts)):
        last = (int(view.lengths[d]) - 1) // CHECKPOINT * CHECKPOINT
        assert view.to_normalised(d, -(10**30)) == 0
        assert view.to_normalised(d, -1) == 0
        assert view.to_normalised(d, 10**30) == last
        assert view.to_normalised(d, len(documents.texts[d]) + 5) == last
