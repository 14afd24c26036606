"""Benchmark: how often the Locator maps altered chunks onto their true source span.

Chunks of the five Chroma corpora (``../shared/data/chroma/corpora``, MIT) are cut by three
chunkers whose true positions are known (fixed windows, sentence groups, paragraph groups),
altered the way pipelines alter them, and mapped from their text alone — except the
``hinted_*`` cases, which carry the correct document id and start. Every request passes the
true span as ``prefer`` (what evaluation passes: the query's gold). Absent texts come from
XQuAD's English paragraphs (``../shared/data/xquad``, CC BY-SA 4.0), checked to occur nowhere
in the corpus, not even ignoring whitespace and case.

Per alteration it prints: mapped % (status other than unmapped), IoU >= 0.9 % (of all cases),
wrong (mapped with IoU < 0.5 against the true span; for absent texts every mapping is wrong),
confident wrong (wrong with confidence >= 0.9) and mean recall@1 with gold = the true span.

    python bench/bench_mapping_accuracy.py                    # 40 chunks per chunker x corpus
    python bench/bench_mapping_accuracy.py --per-corpus 100 --seed 1

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from spanchor_core.corpus import Corpus, load_corpus
from spanchor_core.locate import LocateRequest, Location, Locator, MatchStatus
from spanchor_core.metrics import compute_metrics, measure_coverage
from spanchor_core.spans import DocSpan

__all__ = ["ALTERATIONS", "CHUNKERS", "main"]

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

Piece = tuple[int, int]
Chunker = Callable[[str], Iterator[Piece]]


def fixed_windows(text: str, size: int = 600, stride: int = 500) -> Iterator[Piece]:
    """Windows of ``size`` characters every ``stride`` (overlapping, cut mid-word)."""
    for start in range(0, max(1, len(text) - size), stride):
        yield start, start + size


def _grouped(text: str, boundary: re.Pattern[str], least: int, most: int) -> Iterator[Piece]:
    """Runs of consecutive units (cut at ``boundary``) of ``least`` to ``most`` characters."""
    cuts = [0, *(m.end() for m in boundary.finditer(text)), len(text)]
    start = 0
    for cut in cuts[1:]:
        if cut - start >= least:
            end = min(cut, start + most)
            while end > start and text[end - 1].isspace():
                end -= 1
            if end - start >= least:
                yield start, end
            start = cut


def sentences(text: str) -> Iterator[Piece]:
    """Groups of whole sentences, 300-900 characters."""
    return _grouped(text, re.compile(r"(?<=[.!?])\s+"), 300, 900)


def paragraphs(text: str) -> Iterator[Piece]:
    """Groups of whole paragraphs, 200-1,500 characters."""
    return _grouped(text, re.compile(r"\n\s*\n"), 200, 1500)


CHUNKERS: dict[str, Chunker] = {
    "fixed": fixed_windows,
    "sentence": sentences,
    "paragraph": paragraphs,
}


@dataclass(frozen=True, slots=True)
class Case:
    """One request and its truth (``None``: the text is absent from the corpus)."""

    request: LocateRequest
    truth: DocSpan | None


_HAS_PREFER = "prefer" in getattr(LocateRequest, "__dataclass_fields__", {})


def _request(
    text: str, doc: str | None = None, start: int | None = None, prefer: DocSpan | None = None
) -> LocateRequest:
    """A request; ``prefer`` left out on a spanchor without it (to measure older versions)."""
    if _HAS_PREFER and prefer is not None:
        return LocateRequest(text, doc, start, prefer=(prefer,))
    return LocateRequest(text, doc, start)


Alteration = Callable[[str, DocSpan, str, random.Random], tuple[str, DocSpan]]


def _words_dropped(text: str, span: DocSpan, doc: str, rng: random.Random) -> tuple[str, DocSpan]:
    words = text.split(" ")
    for _ in range(3):
        if len(words) > 4:
            words.pop(rng.randrange(len(words)))
    return " ".join(words), span


def _truncated(text: str, span: DocSpan, doc: str, rng: random.Random) -> tuple[str, DocSpan]:
    cut = int(len(text) * rng.uniform(0.6, 0.9))
    return text[:cut] + "...", DocSpan(span.document_id, span.start, span.start + cut)


def _markup(text: str, span: DocSpan, doc: str, rng: random.Random) -> tuple[str, DocSpan]:
    # what a Markdown/HTML-to-text step does: markup characters gone, lines joined
    stripped = re.sub(r"[=#*_`|<>\[\]{}@]+", " ", text)
    return " ".join(stripped.split()), span


def _punctuation(text: str, span: DocSpan, doc: str, rng: random.Random) -> tuple[str, DocSpan]:
    table = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
    out = text.translate(table).replace("\u2014", "--").replace("\u2013", "-")
    return re.sub(r"[,;:]", "", out), span


MILD: dict[str, Alteration] = {
    "whitespace": lambda t, s, d, r: (" ".join(t.split()), s),
    "case": lambda t, s, d, r: (t.lower(), s),
    "punctuation": _punctuation,
    "markup": _markup,
    "header": lambda t, s, d, r: (f"title: {d}\nsource: {d}.md\n\n{t}", s),
    "truncation": _truncated,
    "3_words_dropped": _words_dropped,
}
ALTERATIONS: tuple[str, ...] = (
    "exact",
    *MILD,
    "joined_neighbours",
    "absent",
    "absent_12_30",
    "hinted_header",
    "hinted_3_words_dropped",
    "hinted_whitespace",
)


def _absent_texts(corpus: Corpus, data: Path) -> list[str]:
    """XQuAD English paragraphs, none of which occurs in the corpus."""
    squad = json.loads((data / "xquad" / "xquad.en.json").read_text(encoding="utf-8"))
    paragraphs = [p["context"] for art in squad["data"] for p in art["paragraphs"]]
    return [p for p in paragraphs if not corpus.find_all(p[:60])]


def _short_absent(texts: list[str], normalised_corpus: str, rng: random.Random) -> str:
    while True:
        text = rng.choice(texts)
        words = text.split()
        i = rng.randrange(len(words))
        piece = ""
        for word in words[i:]:
            if len(piece) + len(word) + 1 > 30:
                break
            piece = f"{piece} {word}" if piece else word
        if 12 <= len(piece) <= 30 and "".join(piece.lower().split()) not in normalised_corpus:
            return piece


def build_cases(corpus: Corpus, data: Path, per: int, seed: int) -> dict[str, list[Case]]:
    """Every alteration's requests, ``per`` chunks per chunker and corpus document."""
    rng = random.Random(seed)
    cases: dict[str, list[Case]] = {name: [] for name in ALTERATIONS}
    absent = _absent_texts(corpus, data)
    normalised_corpus = "\0".join("".join(corpus.text(d).lower().split()) for d in corpus)
    for doc_id in corpus:
        text = corpus.text(doc_id)
        for chunker in CHUNKERS.values():
            pieces = list(chunker(text))
            for i in sorted(rng.sample(range(len(pieces) - 1), min(per, len(pieces) - 1))):
                start, end = pieces[i]
                chunk, span = text[start:end], DocSpan(doc_id, start, end)
                cases["exact"].append(Case(_request(chunk, prefer=span), span))
                for name, alter in MILD.items():
                    altered, truth = alter(chunk, span, doc_id, rng)
                    cases[name].append(Case(_request(altered, prefer=truth), truth))
                    if f"hinted_{name}" in cases:
                        hinted = _request(altered, doc_id, start, prefer=truth)
                        cases[f"hinted_{name}"].append(Case(hinted, truth))
                n_start, n_end = pieces[i + 1]
                if n_start <= end + 4:  # neighbours: adjacent or overlapping
                    joined = chunk.strip() + "\n\n" + text[max(end, n_start) : n_end].strip()
                    truth = DocSpan(doc_id, start, n_end)
                    cases["joined_neighbours"].append(Case(_request(joined, prefer=truth), truth))
                other = rng.choice(absent)
                cut = rng.randrange(max(1, len(other) - (end - start)))
                cases["absent"].append(Case(_request(other[cut : cut + end - start]), None))
                short = _short_absent(absent, normalised_corpus, rng)
                cases["absent_12_30"].append(Case(_request(short), None))
    return cases


def _iou(a: DocSpan, b: DocSpan) -> float:
    if a.document_id != b.document_id:
        return 0.0
    inter = max(0, min(a.end, b.end) - max(a.start, b.start))
    return inter / (max(a.end, b.end) - min(a.start, b.start))


@dataclass(slots=True)
class Row:
    """The figures of one alteration."""

    n: int = 0
    mapped: int = 0
    close: int = 0
    wrong: int = 0
    confident_wrong: int = 0
    recall: float = 0.0

    def add(self, case: Case, loc: Location) -> None:
        self.n += 1
        span = loc.span
        if loc.status is not MatchStatus.UNMAPPED and span is not None:
            self.mapped += 1
        if case.truth is None:
            wrong = span is not None
        else:
            iou = 0.0 if span is None else _iou(span, case.truth)
            self.close += iou >= 0.9
            wrong = span is not None and iou < 0.5
            cov = measure_coverage([case.truth], [span])
            self.recall += compute_metrics(cov, k=(1,))["recall@1"]
        self.wrong += wrong
        self.confident_wrong += wrong and loc.confidence >= 0.9


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    parser.add_argument("--per-corpus", type=int, default=40, help="chunks per chunker x corpus")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tie-break", default="gold", choices=("gold", "position"))
    args = parser.parse_args(argv)
    root = args.data / "chroma" / "corpora"
    if not root.is_dir() or not (args.data / "xquad").is_dir():
        print(f"needs {root} and {args.data / 'xquad'} (../shared/data); stopping")
        return 0
    corpus = load_corpus(root)
    cases = build_cases(corpus, args.data, args.per_corpus, args.seed)
    locator = Locator(corpus, tie_break=args.tie_break) if _HAS_PREFER else Locator(corpus)
    locator.build_index(normalised=True)
    print(f"{len(corpus)} corpora, {corpus.total_chars:,} characters; tie_break={args.tie_break}")
    header = f"{'alteration':24} {'n':>5} {'mapped':>7} {'IoU>=.9':>8} {'wrong':>6}"
    print(f"{header} {'conf.wrong':>10} {'recall@1':>9} {'ms/text':>8}")
    for name in ALTERATIONS:
        row = Row()
        began = time.perf_counter()
        locations = locator.locate_many([case.request for case in cases[name]])
        took = (time.perf_counter() - began) * 1000 / max(1, len(locations))
        for case, loc in zip(cases[name], locations, strict=True):
            row.add(case, loc)
        has_truth = cases[name] and cases[name][0].truth is not None
        close = f"{100 * row.close / row.n:7.1f}%" if has_truth else f"{'-':>8}"
        recall = f"{row.recall / row.n:9.3f}" if has_truth else f"{'-':>9}"
        print(
            f"{name:24} {row.n:5d} {100 * row.mapped / row.n:6.1f}% {close} {row.wrong:6d} "
            f"{row.confident_wrong:10d} {recall} {took:8.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
