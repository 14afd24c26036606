"""The chunking report: cuts per anchor, oracle recall by K, sizes, unservable queries."""

from __future__ import annotations

import json
import math

import pytest

from spanchor_core.corpus import Corpus
from spanchor_core.diagnosis import (
    Chunk,
    ChunkInventoryError,
    chunk_report,
    map_inventory,
)
from spanchor_core.errors import GoldError
from spanchor_core.gold import Anchor, GoldQuery, GoldSet
from spanchor_core.render.chunks import chunk_report_markdown

TEXT = "".join(chr(ord("a") + i % 26) for i in range(100))
CORPUS = Corpus.from_texts({"d": TEXT, "e": "z" * 10})


def gold(*queries: tuple[str, list[tuple[str, int, int]]]) -> GoldSet:
    return GoldSet(
        [
            GoldQuery(
                qid,
                f"question {qid}?",
                tuple(Anchor.from_span(CORPUS, doc, start, end) for doc, start, end in spans),
            )
            for qid, spans in queries
        ]
    )


def windows(size: int, overlap: int = 0) -> list[Chunk]:
    stride = size - overlap
    return [
        Chunk(TEXT[start : start + size], "d", start, min(start + size, len(TEXT)))
        for start in range(0, len(TEXT) - overlap, stride)
    ]


GOLD = gold(
    ("inside", [("d", 2, 8)]),
    ("cut", [("d", 15, 25)]),
    ("two", [("d", 30, 35), ("d", 70, 72)]),
    ("elsewhere", [("e", 0, 4)]),
)


def test_cuts_oracle_and_ceiling_per_query() -> None:
    inventory = map_inventory(CORPUS, windows(20), description="20-char windows")
    report = chunk_report(CORPUS, GOLD, inventory, k=[1, 2])
    rows = {row.query_id: row for row in report.queries}
    inside = rows["inside"].anchors[0]
    assert (inside.pieces, inside.overlapping, inside.best_single, inside.coverable) == (
        1,
        1,
        1.0,
        1.0,
    )
    cut = rows["cut"].anchors[0]
    assert (cut.pieces, cut.overlapping, cut.best_single) == (2, 2, 0.5)
    assert rows["cut"].oracle[1].recall == 0.5
    assert rows["cut"].oracle[2].recall == 1.0
    assert rows["two"].oracle[1].recall == pytest.approx(5 / 7)
    assert rows["elsewhere"].anchors[0].pieces == 0
    assert rows["elsewhere"].ceiling == 0.0
    assert report.unservable == ("elsewhere",)
    assert report.fully_served(1) == 1
    assert report.fully_served(2) == 3
    assert report.mean_oracle(2) == pytest.approx(0.75)
    assert report.description == "20-char windows"


def test_overlapping_windows_hold_every_short_anchor_whole() -> None:
    report = chunk_report(CORPUS, GOLD, map_inventory(CORPUS, windows(20, overlap=10)), k=[1])
    rows = {row.query_id: row for row in report.queries}
    assert rows["cut"].anchors[0].pieces == 1
    assert rows["cut"].anchors[0].overlapping == 3
    assert report.sizes.redundancy == pytest.approx(
        180 / 100
    )  # 9 windows of 20 over 100 characters


def test_sizes_and_unmapped_chunks() -> None:
    chunks = [*windows(30), Chunk("not in the corpus, not at all")]
    report = chunk_report(CORPUS, GOLD, map_inventory(CORPUS, chunks), k=[1])
    sizes = report.sizes
    assert (sizes.chunks, sizes.mapped, sizes.unmapped) == (5, 4, 1)
    assert (sizes.min, sizes.median, sizes.p90, sizes.max) == (10, 30, 30, 30)
    assert sizes.mean == 25.0
    assert sizes.corpus_coverage == pytest.approx(100 / 110)
    assert sizes.redundancy == 1.0


def test_to_json_is_json_and_markdown_names_every_part() -> None:
    empty = GoldSet([*GOLD.values(), GoldQuery("none", "no evidence?", ())])
    report = chunk_report(CORPUS, empty, map_inventory(CORPUS, windows(20)), k=[1, 2])
    data = report.to_json()
    assert json.loads(json.dumps(data)) == data
    assert (data["kind"], data["schema_version"]) == ("spanchor.chunk_report", 1)
    assert data["oracle_recall"]["2"]["fully_served"] == 3
    assert data["skipped"] == ["none"]
    assert data["queries"][1]["anchors"][0]["pieces"] == 2
    text = chunk_report_markdown(report)
    assert text.startswith("# Chunking report\n")
    assert "| 2 | 0.750 | 3 of 4 |" in text
    assert "| elsewhere | 0.0% |" in text
    assert "| cut | 2 | 50% | 0.500 | 1.000 |" in text
    assert text.index("## Oracle recall") < text.index("## Queries no K") < text.index("## Per")
    assert "skipped (no anchors): none" in text


def test_empty_inventory_and_markdown_escapes() -> None:
    report = chunk_report(CORPUS, GOLD, map_inventory(CORPUS, []), k=[3], description="a|b")
    assert math.isnan(report.sizes.mean)
    assert report.to_json()["sizes"]["mean"] is None
    assert report.unservable == ("inside", "cut", "two", "elsewhere")
    assert "# Chunking report: a\\|b" in chunk_report_markdown(report)


def test_mismatched_inputs_are_refused() -> None:
    other = Corpus.from_texts({"d": "other"})
    with pytest.raises(ChunkInventoryError, match="another corpus"):
        chunk_report(CORPUS, GOLD, map_inventory(other, []))
    with pytest.raises(GoldError):
        chunk_report(other, GOLD, map_inventory(other, []))


def test_html_and_text_escape_and_list_the_unservable_queries() -> None:
    from spanchor_core.render.chunks import chunk_report_html, chunk_report_lines

    report = chunk_report(
        CORPUS, GOLD, map_inventory(CORPUS, []), k=[3], description="<b>x</b>\x1b[31m"
    )
    page = chunk_report_html(report)
    assert "<b>x</b>" not in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page
    assert '<td>elsewhere</td><td class="num">0.0%</td>' in page
    lines = chunk_report_lines(report)
    assert not any("\x1b" in line for line in lines)
    assert "no K can serve: inside, cut, two, elsewhere" in lines
