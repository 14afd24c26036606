"""A chunking report without a retriever: how well a chunking can serve a gold set at all.

For a gold set and a :class:`~spanchor_core.diagnosis.inventory.ChunkInventory`, per query:
how many chunks each gold anchor is cut into, the share of it the best single chunk holds,
oracle recall@K for several K, and the ceiling (oracle recall with every chunk); plus
chunk-size statistics and the queries that no K can serve. Two chunkers are compared by
comparing their reports, before anything is indexed; :mod:`spanchor_core.render.chunks`
renders one report or several side by side (Markdown, HTML, text, JSON).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spanchor_core.corpus import Corpus
from spanchor_core.diagnosis.inventory import ChunkInventory, ChunkInventoryError
from spanchor_core.diagnosis.oracle import OracleRecall, oracle_recalls
from spanchor_core.evaluate import check_gold
from spanchor_core.gold import GoldSet
from spanchor_core.metrics import DEFAULT_K, check_k
from spanchor_core.spans import (
    DocSpan,
    Span,
    group_by_document,
    intersection_length,
    total_length,
    union_spans,
)

__all__ = [
    "AnchorCut",
    "ChunkReport",
    "ChunkSizeStats",
    "QueryChunking",
    "chunk_report",
]


@dataclass(frozen=True, slots=True)
class AnchorCut:
    """How the chunking cuts one gold anchor."""

    anchor: DocSpan
    pieces: int
    """Fewest chunks that together hold every character of the anchor any chunk holds
    (1: some chunk holds it whole; 0: no chunk overlaps it)."""
    overlapping: int
    """Chunks that share at least one character with the anchor."""
    best_single: float
    """Share of the anchor inside the best single chunk."""
    coverable: float
    """Share of the anchor inside some chunk (below 1.0: part of it is in no chunk at all)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "document_id": self.anchor.document_id,
            "start": self.anchor.start,
            "end": self.anchor.end,
            "pieces": self.pieces,
            "overlapping": self.overlapping,
            "best_single": self.best_single,
            "coverable": self.coverable,
        }


@dataclass(frozen=True, slots=True)
class QueryChunking:
    """One gold query against the chunking."""

    query_id: str
    anchors: tuple[AnchorCut, ...]
    oracle: Mapping[int, OracleRecall]
    ceiling: float
    """Oracle recall with every chunk: the best any K can do."""

    @property
    def servable(self) -> bool:
        """Whether some K reaches all of the evidence."""
        return self.ceiling >= 1.0

    def to_json(self) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "anchors": [cut.to_json() for cut in self.anchors],
            "oracle_recall": {str(k): value.recall for k, value in self.oracle.items()},
            "ceiling": self.ceiling,
        }


@dataclass(frozen=True, slots=True)
class ChunkSizeStats:
    """Sizes of the mapped chunks, in canonical characters (percentiles: nearest rank)."""

    chunks: int
    mapped: int
    min: int
    median: int
    mean: float
    p90: int
    max: int
    corpus_coverage: float
    """Share of the corpus's characters inside some chunk."""
    redundancy: float
    """Characters in chunks / characters covered (1.0: no overlap between chunks)."""

    @property
    def unmapped(self) -> int:
        return self.chunks - self.mapped

    def to_json(self) -> dict[str, Any]:
        mean = self.mean if math.isfinite(self.mean) else None
        return {
            "chunks": self.chunks,
            "mapped": self.mapped,
            "unmapped": self.unmapped,
            "min": self.min,
            "median": self.median,
            "mean": mean,
            "p90": self.p90,
            "max": self.max,
            "corpus_coverage": self.corpus_coverage,
            "redundancy": self.redundancy,
        }


@dataclass(frozen=True, slots=True)
class ChunkReport:
    """The chunking report of one inventory against one gold set (queries in gold order)."""

    k: tuple[int, ...]
    description: str
    sizes: ChunkSizeStats
    queries: tuple[QueryChunking, ...]
    skipped: tuple[str, ...] = ()
    """Gold queries without anchors (nothing to serve)."""

    def mean_oracle(self, k: int) -> float:
        values = [row.oracle[k].recall for row in self.queries]
        return math.fsum(values) / len(values) if values else math.nan

    def fully_served(self, k: int) -> int:
        """Queries whose whole evidence the best ``k`` chunks hold."""
        return sum(1 for row in self.queries if row.oracle[k].recall >= 1.0)

    @property
    def unservable(self) -> tuple[str, ...]:
        """Queries that no K can serve fully: part of their evidence is in no chunk."""
        return tuple(row.query_id for row in self.queries if not row.servable)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "spanchor.chunk_report",
            "schema_version": 1,
            "description": self.description,
            "k": list(self.k),
            "sizes": self.sizes.to_json(),
            "oracle_recall": {
                str(k): {
                    "mean": None if not self.queries else self.mean_oracle(k),
                    "fully_served": self.fully_served(k),
                }
                for k in self.k
            },
            "unservable": list(self.unservable),
            "skipped": list(self.skipped),
            "queries": [row.to_json() for row in self.queries],
        }


def _nearest_rank(ordered: Sequence[int], share: float) -> int:
    if not ordered:
        return 0
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _sizes(inventory: ChunkInventory, corpus: Corpus) -> ChunkSizeStats:
    lengths = sorted(item.span.length for item in inventory if item.span is not None)
    covered = sum(total_length(union_spans(spans)) for spans in inventory.spans.values())
    total = corpus.total_chars
    return ChunkSizeStats(
        chunks=len(inventory),
        mapped=len(lengths),
        min=lengths[0] if lengths else 0,
        median=_nearest_rank(lengths, 0.5),
        mean=math.fsum(lengths) / len(lengths) if lengths else math.nan,
        p90=_nearest_rank(lengths, 0.9),
        max=lengths[-1] if lengths else 0,
        corpus_coverage=covered / total if total else 0.0,
        redundancy=sum(lengths) / covered if covered else 0.0,
    )


def _cut(anchor: DocSpan, chunks: Sequence[Span]) -> AnchorCut:
    """Cut statistics of one anchor; ``chunks`` are the sorted spans of its document."""
    lo, hi = anchor.start, anchor.end
    inside = [(max(s, lo), min(e, hi)) for s, e in chunks if s < hi and e > lo]
    target = union_spans(inside)
    best = max((e - s for s, e in inside), default=0)
    # Greedy interval cover of the coverable characters: at the first character not yet
    # held, take the chunk holding it that reaches furthest (optimal for intervals).
    pieces, cursor = 0, lo
    for start, end in target:
        cursor = max(cursor, start)
        while cursor < end:
            reach = max(e for s, e in inside if s <= cursor < e)
            pieces += 1
            cursor = reach
    return AnchorCut(
        anchor=anchor,
        pieces=pieces,
        overlapping=len(inside),
        best_single=best / anchor.length,
        coverable=total_length(target) / anchor.length,
    )


def chunk_report(
    corpus: Corpus,
    gold: GoldSet,
    inventory: ChunkInventory,
    *,
    k: Sequence[int] = DEFAULT_K,
    description: str | None = None,
) -> ChunkReport:
    """The chunking report of ``inventory`` for ``gold`` (see the module docstring).

    Raises :class:`~spanchor_core.errors.GoldError` when the gold anchors do not match
    ``corpus`` and :class:`~spanchor_core.diagnosis.inventory.ChunkInventoryError` when the
    inventory was mapped onto another corpus.
    """
    ks = check_k(k)
    check_gold(gold, corpus)
    if inventory.corpus_fingerprint != corpus.fingerprint:
        raise ChunkInventoryError(
            "the inventory was mapped onto another corpus",
            hint="map the chunks onto these documents (map_inventory / load_inventory)",
        )
    rows: list[QueryChunking] = []
    skipped: list[str] = []
    for qid, query in gold.items():
        spans = [anchor.span for anchor in query.anchors]
        if not spans:
            skipped.append(qid)
            continue
        union = group_by_document(spans)
        gold_chars = sum(total_length(items) for items in union.values())
        held = sum(
            intersection_length(items, union_spans(inventory.spans.get(doc, ())))
            for doc, items in union.items()
        )
        rows.append(
            QueryChunking(
                query_id=qid,
                anchors=tuple(
                    _cut(span, inventory.spans.get(span.document_id, ())) for span in spans
                ),
                oracle=oracle_recalls(spans, inventory, ks),
                ceiling=held / gold_chars,
            )
        )
    return ChunkReport(
        k=ks,
        description=inventory.description if description is None else description,
        sizes=_sizes(inventory, corpus),
        queries=tuple(rows),
        skipped=tuple(skipped),
    )
