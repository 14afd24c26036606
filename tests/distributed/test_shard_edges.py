"""Document edges on a sharded corpus: the evaluation is the same bytes as one process's.

A shard's neighbours differ from the whole corpus's, so anything the index took from a
neighbour would show here. Random multi-document corpora, with results that abut a
document's start or end, straddle two neighbouring documents (a chunker that ran across
files), or are altered near an edge, are evaluated by one locator and by in-process shards
reduced on the driver (:mod:`spanchor_core.locate.reduce`, what the Ray engine runs), with
small and default index parameters; the written evaluations must be byte-identical.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanchor_core.corpus import Corpus, shard_of
from spanchor_core.evaluate import write_evaluation
from spanchor_core.gold import Anchor, GoldQuery, GoldSet, write_gold
from spanchor_core.locate import LocateRequest, Location, Locator, reduce
from spanchor_core.pipeline import run_evaluation

_CALLS: dict[str, Callable[[Locator, Any], Any]] = {
    "exact": reduce.shard_exact,
    "normalised": reduce.shard_normalised,
    "votes": reduce.shard_votes,
    "align": reduce.shard_align,
    "fuzzy_scan": reduce.shard_fuzzy_scan,
}


class InProcessShards(Locator):
    """A locator whose batches are searched on ``shards`` in-process shard locators and
    reduced on the driver, as :class:`~spanchor_core.distributed.RayLocator` does on actors."""

    def __init__(self, corpus: Corpus, shards: int, **kw: Any) -> None:
        super().__init__(corpus, **kw)
        self.shards = shards
        self.parts = [
            Locator(
                Corpus.from_documents([corpus[d] for d in corpus if shard_of(d, shards) == i]), **kw
            )
            for i in range(shards)
        ]
        self.catalog = reduce.ShardCatalog.merge([reduce.shard_catalog(p) for p in self.parts])

    def _decide(self, routed: list[tuple[int, str, LocateRequest]]) -> dict[int, Location]:
        out = {}
        for slot, doc_id, request in routed:
            found = self.parts[shard_of(doc_id, self.shards)].decide_without_search(request)
            if found is not None:
                out[slot] = found
        return out

    def _broadcast(self, name: str, payload: Any) -> list[Any]:
        return [_CALLS[name](p, payload) for p in self.parts if len(p.corpus)]

    def locate_many(self, requests: Sequence[LocateRequest]) -> list[Location]:
        return reduce.locate_on_shards(
            list(requests), self.catalog, self.settings, self._decide, self._broadcast
        )


_PARAMS: list[dict[str, Any]] = [
    # small windows put much of every document near an edge; a low max_occurrences makes the
    # counts of repeated k-grams decide which minimizers vote (where a neighbour would show)
    {"kgram": 8, "window": 6, "max_occurrences": 4},
    {"kgram": 12, "window": 10, "max_occurrences": 2},
    {"kgram": 8, "window": 6},
    {},
]
_WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa"]


@st.composite
def _documents(draw: st.DrawFn) -> list[str]:
    """Documents of words from a small vocabulary (so k-grams repeat across documents), some
    shorter than a minimizer window, some copying another's edge."""
    n = draw(st.integers(2, 9))
    texts = []
    for i in range(n):  # the first one is never empty: a gold anchor can always point at it
        words = draw(st.lists(st.sampled_from(_WORDS), min_size=5 if i == 0 else 0, max_size=90))
        salt = draw(st.integers(0, 10**6))
        texts.append(" ".join(f"{w}{(salt + i * 7919) % 97}" for i, w in enumerate(words)))
    for _ in range(draw(st.integers(0, 3))):  # one document's edge copied into another
        a, b = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        piece = texts[a][: draw(st.integers(20, 200))]
        texts[b] = piece + texts[b] if draw(st.booleans()) else texts[b] + piece
    # boilerplate: one header and one footer on many documents, so that the same k-grams sit
    # at many edges and their counts decide which minimizers may vote
    header, footer = draw(st.sampled_from(["", "Page 1 of 3. Confidential. "])), ""
    if draw(st.booleans()):
        footer = " -- end of document, all rights reserved"
    marked = draw(st.sets(st.integers(0, n - 1)))
    return [header + t + footer if i in marked else t for i, t in enumerate(texts)]


def _alter(text: str, how: int) -> str:
    if how == 1:
        return text.upper().replace(" ", "  ")
    if how == 2 and len(text) > 40:
        return text[:15] + "#~" + text[17:]
    if how == 3:
        return "Header: title\n" + text
    if how == 4:
        return text.replace(" ", "\n  ")
    return text


@st.composite
def _results(draw: st.DrawFn, texts: list[str]) -> list[tuple[str, int, int, int]]:
    """``(text, document number, start, end)``: chunks at, across and near document edges."""
    out = []
    for _ in range(draw(st.integers(8, 40))):
        d = draw(st.integers(0, len(texts) - 1))
        text = texts[d]
        size = draw(st.sampled_from([12, 35, 70, 120, 260]))
        where = draw(st.sampled_from(["start", "end", "near", "straddle", "any"]))
        if where == "start":
            start = 0
        elif where == "end":
            start = max(0, len(text) - size)
        elif where == "near":
            start = max(0, min(len(text) - size, draw(st.integers(1, 30))))
        else:
            start = draw(st.integers(0, max(0, len(text) - size)))
        piece = text[start : start + size]
        if where == "straddle" and d + 1 < len(texts):  # the end of d, then the start of d + 1
            cut = draw(st.integers(0, size))
            piece = text[max(0, len(text) - cut) :] + texts[d + 1][: size - cut]
            start = max(0, len(text) - cut)
        out.append((_alter(piece, draw(st.integers(0, 4))), d, start, start + size))
    return out


def _evaluation_bytes(corpus: Corpus, locator: Locator, gold: Path, run: Path, out: Path) -> bytes:
    write_evaluation(run_evaluation(corpus, gold, run, locator=locator).evaluation, out)
    data = json.loads(out.read_bytes())
    data.pop("created_at", None)
    return json.dumps(data, sort_keys=True).encode()


@settings(
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    texts=_documents(),
    data=st.data(),
    shards=st.integers(2, 5),
    params=st.sampled_from(_PARAMS),
)
def test_sharded_evaluation_is_byte_identical_at_document_edges(
    texts: list[str], data: st.DataObject, shards: int, params: dict[str, Any]
) -> None:
    corpus = Corpus.from_texts({f"doc{n:02d}": t for n, t in enumerate(texts)})
    ids = list(corpus)
    canonical = [corpus.text(i) for i in ids]
    results = data.draw(_results(canonical))
    queries, lines = [], []
    for q in range(0, len(results), 4):
        batch = results[q : q + 4]
        anchors = tuple(
            Anchor.from_span(corpus, ids[d], s, min(e, len(canonical[d])))
            for _, d, s, e in batch
            if min(e, len(canonical[d])) > s
        ) or (Anchor.from_span(corpus, ids[0], 0, 3),)
        queries.append(GoldQuery(f"q{q}", f"query {q}", anchors))
        named = [ids[d] if (q + r) % 3 == 0 else None for r, (_, d, _, _) in enumerate(batch)]
        shown = [
            {"text": t} | ({"document_id": n} if n is not None else {})
            for (t, _, _, _), n in zip(batch, named, strict=True)
        ]
        lines.append(json.dumps({"query_id": f"q{q}", "results": shown}))
    with tempfile.TemporaryDirectory(prefix="spanchor-edges-") as temp:
        root = Path(temp)
        write_gold(GoldSet(tuple(queries)), root / "gold.jsonl")
        (root / "run.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        args = (root / "gold.jsonl", root / "run.jsonl")
        single = _evaluation_bytes(corpus, Locator(corpus, **params), *args, root / "a.json")
        sharded = InProcessShards(corpus, shards, **params)
        assert _evaluation_bytes(corpus, sharded, *args, root / "b.json") == single
