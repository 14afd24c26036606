"""The broadcast-and-reduce of :mod:`spanchor_core.locate.reduce` without Ray: shards as
in-process locators, many random results, the same locations as one locator over the corpus."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from spanchor_core.corpus import Corpus, shard_of
from spanchor_core.locate import LocateRequest, Location, Locator, reduce
from spanchor_core.spans import DocSpan


def _corpus(seed: int, docs: int = 60) -> Corpus:
    rng = random.Random(seed)
    vocab = [f"w{rng.randrange(800)}" for _ in range(docs * 150)]
    texts = [" ".join(vocab[i : i + rng.randrange(20, 300)]) for i in range(0, len(vocab), 150)]
    for _ in range(docs // 3):  # copies across documents (and so across shards)
        a, b = rng.randrange(len(texts)), rng.randrange(len(texts))
        cut = rng.randrange(max(1, len(texts[a]) - 200))
        texts[b] = texts[b] + " " + texts[a][cut : cut + rng.choice([60, 150, 400])]
    return Corpus.from_texts({f"doc{n:03d}": t for n, t in enumerate(texts)})


def _located(
    corpus: Corpus, shards: int, requests: list[LocateRequest], **kw: Any
) -> list[Location]:
    parts = [
        Locator(
            Corpus.from_documents([corpus[d] for d in corpus if shard_of(d, shards) == i]), **kw
        )
        for i in range(shards)
    ]
    catalog = reduce.ShardCatalog.merge([reduce.shard_catalog(p) for p in parts])
    calls: dict[str, Callable[[Locator, Any], Any]] = {
        "exact": reduce.shard_exact,
        "normalised": reduce.shard_normalised,
        "votes": reduce.shard_votes,
        "align": reduce.shard_align,
        "fuzzy_scan": reduce.shard_fuzzy_scan,
    }

    def decide(routed: list[tuple[int, str, LocateRequest]]) -> dict[int, Location]:
        out = {}
        for slot, doc_id, request in routed:
            found = parts[shard_of(doc_id, shards)].decide_without_search(request)
            if found is not None:
                out[slot] = found
        return out

    def broadcast(name: str, payload: Any) -> list[Any]:
        return [calls[name](p, payload) for p in parts]

    return reduce.locate_on_shards(requests, catalog, parts[0].settings, decide, broadcast)


def _requests(corpus: Corpus, rng: random.Random, n: int) -> list[LocateRequest]:
    ids = list(corpus)
    out = []
    for i in range(n):
        doc_id = rng.choice(ids)
        text = corpus.text(doc_id)
        length = rng.choice([15, 40, 80, 200, 500])
        # near the start or the end of a document as often as anywhere
        where = rng.choice(["start", "end", "any"])
        start = {"start": 0, "end": max(0, len(text) - length)}.get(
            where, rng.randrange(max(1, len(text) - length))
        )
        piece = text[start : start + length]
        if len(piece) < 10:
            continue
        kind = i % 7
        if kind == 1:
            piece = piece.upper().replace(" ", " \n ")
        elif kind in (2, 3):
            at = rng.randrange(len(piece) - 5)
            piece = piece[:at] + "#~" + piece[at + 2 :]
        elif kind == 4:
            piece = "Header: title\n" + piece
        prefer = (DocSpan(doc_id, start, start + length),) if i % 2 else ()
        named = doc_id if i % 5 == 0 else (rng.choice(ids) if i % 5 == 1 else None)
        hint = start + rng.choice([0, 3]) if i % 3 == 0 else None
        out.append(LocateRequest(piece, named, hint, None, prefer))
    return out


@pytest.mark.parametrize(("seed", "shards"), [(1, 2), (2, 3), (3, 5), (4, 8)])
def test_same_locations_as_one_locator(seed: int, shards: int) -> None:
    corpus = _corpus(seed)
    requests = _requests(corpus, random.Random(seed), 400)
    expected = Locator(corpus).locate_many(requests)
    got = _located(corpus, shards, requests)
    wrong = [(r, e, g) for r, e, g in zip(requests, expected, got, strict=True) if e != g]
    assert not wrong, wrong[:3]


def test_settings_reach_the_reduce() -> None:
    corpus = _corpus(9)
    requests = _requests(corpus, random.Random(9), 200)
    kw: dict[str, Any] = {"tie_break": "position", "fuzzy_scan_limit": 10_000, "max_occurrences": 3}
    assert _located(corpus, 4, requests, **kw) == Locator(corpus, **kw).locate_many(requests)
