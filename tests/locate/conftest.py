"""Fixtures shared by the locator tests: the three-document corpus and one locator over it."""

from __future__ import annotations

import pytest

from spanchor_core.corpus import Corpus
from spanchor_core.locate import Locator
from tests.locate.texts import DOC_A, DOC_B, DOC_C


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus.from_texts({"a": DOC_A, "b": DOC_B, "c": DOC_C})


@pytest.fixture(scope="module")
def locator(corpus: Corpus) -> Locator:
    return Locator(corpus)
