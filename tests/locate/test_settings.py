"""Locator construction and request checks: every bad argument is an InputError (issue 15)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from spanchor_core.corpus import Corpus
from spanchor_core.errors import InputError, SpanchorError
from spanchor_core.locate import LocateRequest, Locator, LocatorSettings


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"fuzzy_threshold": 1.5}, "fuzzy_threshold"),
        ({"fuzzy_threshold": -0.1}, "fuzzy_threshold"),
        ({"fuzzy_threshold": math.nan}, "fuzzy_threshold"),
        ({"fuzzy_threshold": "0.5"}, "fuzzy_threshold"),
        ({"fuzzy_threshold": True}, "fuzzy_threshold"),
        ({"kgram": 2}, "kgram"),
        ({"kgram": 20.0}, "kgram"),
        ({"kgram": "20"}, "kgram"),
        ({"window": 1}, "window"),
        ({"max_candidates": 0}, "max_candidates"),
        ({"max_occurrences": 0}, "max_occurrences"),
        ({"max_occurrences": None}, "max_occurrences"),
        ({"fuzzy_scan_limit": -1}, "fuzzy_scan_limit"),
    ],
)
def test_bad_parameters_raise_input_errors_not_builtin_ones(
    options: dict[str, Any], message: str
) -> None:
    corpus = Corpus.from_texts({"a": "some text"})
    with pytest.raises(InputError, match=message) as info:
        Locator(corpus, **options)
    assert isinstance(info.value, SpanchorError)
    assert isinstance(info.value, ValueError)  # `except ValueError` keeps working
    with pytest.raises(InputError, match=message):
        LocatorSettings(**options)


def test_numpy_whole_numbers_and_floats_are_accepted() -> None:
    corpus = Corpus.from_texts({"a": "some text that is long enough to be found"})
    kgram: Any = np.int64(8)  # e.g. read from a numpy config array
    window: Any = np.int32(6)
    locator = Locator(corpus, kgram=kgram, window=window, fuzzy_threshold=np.float64(0.7))
    assert (locator.kgram, locator.window, locator.fuzzy_threshold) == (8, 6, 0.7)
    assert type(locator.kgram) is int
    assert locator.min_indexed_length == 13
    assert locator.locate("long enough").span is not None


def test_a_corpus_is_required() -> None:
    bad: Any = {"a": "some text"}
    with pytest.raises(InputError, match="Locator needs a Corpus, got dict"):
        Locator(bad)


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ("plain text", "request 1 is a str, not a LocateRequest"),
        (LocateRequest(b"bytes"), "request 1: text must be a string, got bytes"),  # type: ignore[arg-type]
        (LocateRequest("text", 3), "request 1: document_id must be a string"),  # type: ignore[arg-type]
        (LocateRequest("text", "a", "0"), "request 1: start must be a whole number"),  # type: ignore[arg-type]
        (LocateRequest(None, "a", 0, 1.5), "request 1: end must be a whole number"),  # type: ignore[arg-type]
    ],
)
def test_malformed_requests_raise_input_errors(request_: Any, message: str) -> None:
    locator = Locator(Corpus.from_texts({"a": "some text"}))
    with pytest.raises(InputError, match=message):
        locator.locate_many([LocateRequest("some"), request_])


def test_parameters_are_read_only() -> None:
    locator = Locator(Corpus.from_texts({"a": "some text"}), fuzzy_threshold=0.5)
    assert locator.settings == LocatorSettings(fuzzy_threshold=0.5)
    with pytest.raises(AttributeError):
        locator.fuzzy_threshold = 0.9  # type: ignore[misc]
