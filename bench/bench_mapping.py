"""Benchmark: map retrieved chunks back onto source spans with :class:`spanchor_core.Locator`.

Generates synthetic corpora deterministically from a seed (word-level prose from a
pseudo-word vocabulary, a little Markdown), draws runs of queries x 10 chunks of 500-1,000
characters (about 20 % with altered whitespace, 5 % absent from the corpus, 3 % with a
prepended metadata header, 2 % with Markdown markup stripped, 30 % carrying offsets of
which a third are wrong) and prints wall time per phase, peak memory and counts per
status. ``--chroma`` runs the same measurement over the real corpora in
``../shared/data/chroma`` split with LangChain's RecursiveCharacterTextSplitter.

    python bench/bench_mapping.py --sizes 1,10,50 --queries 100,1000,10000
    python bench/bench_mapping.py --chroma

Not part of the test suite; ``tests/locate/test_real_data.py`` runs a 0.1 MB smoke case.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import subprocess
import sys
import time
import tracemalloc
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from spanchor_core.corpus import Corpus, load_corpus
from spanchor_core.locate import LocateRequest, Location, Locator, MatchStatus

__all__ = ["Chunk", "make_chunks", "make_corpus_texts", "run_mapping"]

DOC_CHARS = 512 * 1024
CHUNKS_PER_QUERY = 10
CHROMA = Path(__file__).resolve().parents[2] / "shared" / "data" / "chroma" / "corpora"


# ------------------------------------------------------------------ synthetic data


def _vocabulary(rng: np.random.Generator, size: int = 6000) -> list[str]:
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["th", "st", "qu", "ion"]
    words: set[str] = set()
    while len(words) < size:
        n = int(rng.integers(1, 5))
        words.add("".join(syllables[int(i)] for i in rng.integers(0, len(syllables), n)))
    return sorted(words)


def _prose(rng: np.random.Generator, vocab: list[str], chars: int) -> str:
    """Paragraphs of sentences of Zipf-distributed words; some headings and bold words."""
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()
    n_words = max(16, chars // 6)
    ids = rng.choice(len(vocab), size=n_words, p=weights)
    tokens = [vocab[i] for i in ids.tolist()]
    bold = rng.random(n_words) < 0.01
    for i in np.flatnonzero(bold).tolist():
        tokens[i] = f"**{tokens[i]}**"
    paragraphs: list[str] = []
    pos = 0
    size = 0
    while pos < n_words and size < chars:
        sentences: list[str] = []
        for _ in range(int(rng.integers(2, 7))):
            length = int(rng.integers(5, 22))
            words = tokens[pos : pos + length]
            pos += length
            if not words:
                break
            words[0] = words[0][:1].upper() + words[0][1:]
            sentences.append(" ".join(words) + ".")
        if not sentences:
            break
        paragraph = " ".join(sentences)
        if rng.random() < 0.05:
            paragraph = (
                "## "
                + " ".join(vocab[int(i)] for i in rng.integers(0, 500, 3))
                + "\n\n"
                + paragraph
            )
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(paragraphs)[:chars]


def make_corpus_texts(size_mb: float, seed: int = 0) -> dict[str, str]:
    """``{document_id: text}`` totalling ``size_mb`` MB, at least four documents."""
    rng = np.random.default_rng(seed)
    vocab = _vocabulary(rng)
    total = int(size_mb * 1024 * 1024)
    n_docs = max(4, total // DOC_CHARS)
    per_doc = total // n_docs
    return {f"doc{i:04d}": _prose(rng, vocab, per_doc) for i in range(n_docs)}


@dataclass(frozen=True, slots=True)
class Chunk:
    """One synthetic retrieved chunk and the span it really came from (None if absent)."""

    request: LocateRequest
    kind: str
    truth: tuple[str, int, int] | None


def _strip_ws_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    piece = text[start:end]
    return start + (len(piece) - len(piece.lstrip())), end - (len(piece) - len(piece.rstrip()))


def make_chunks(texts: dict[str, str], n_chunks: int, seed: int = 1) -> list[Chunk]:
    """Chunks of 500-1,000 characters drawn from ``texts`` with the mix in the module doc."""
    rng = np.random.default_rng(seed)
    absent_rng = np.random.default_rng(seed + 10_000)
    vocab = _vocabulary(np.random.default_rng(seed + 20_000))
    ids = sorted(texts)
    lengths = np.array([len(texts[i]) for i in ids], dtype=np.float64)
    docs = rng.choice(len(ids), size=n_chunks, p=lengths / lengths.sum())
    sizes = rng.integers(500, 1001, n_chunks)
    kinds = rng.random(n_chunks)
    hints = rng.random(n_chunks)
    out: list[Chunk] = []
    for n in range(n_chunks):
        doc_id = ids[int(docs[n])]
        text = texts[doc_id]
        size = min(int(sizes[n]), len(text))
        start = int(rng.integers(0, len(text) - size + 1))
        end = start + size
        chunk = text[start:end]
        u = float(kinds[n])
        if u < 0.05:
            out.append(Chunk(LocateRequest(_prose(absent_rng, vocab, size)), "absent", None))
            continue
        if u < 0.25:
            variant = n % 3
            if variant == 0:
                altered = " ".join(chunk.split())
            elif variant == 1:
                altered = chunk.replace("\n\n", "\n").replace(". ", ".  ")
            else:
                altered = chunk.replace(" ", "\n", 3)
            s, e = _strip_ws_bounds(text, start, end)
            out.append(Chunk(LocateRequest(altered), "whitespace", (doc_id, s, e)))
            continue
        if u < 0.28:
            header = f"title: {doc_id}\nsource: corpus/{doc_id}.md\n\n"
            out.append(Chunk(LocateRequest(header + chunk), "header", (doc_id, start, end)))
            continue
        if u < 0.30:
            stripped = chunk.replace("**", "").replace("## ", "")
            out.append(Chunk(LocateRequest(stripped), "markup", (doc_id, start, end)))
            continue
        h = float(hints[n])
        if h < 0.2:
            out.append(
                Chunk(LocateRequest(chunk, doc_id, start, end), "hint", (doc_id, start, end))
            )
        elif h < 0.3:
            wrong = max(0, start - int(rng.integers(1, 200)))
            request = LocateRequest(chunk, doc_id, wrong, None)
            out.append(Chunk(request, "wrong-hint", (doc_id, start, end)))
        else:
            out.append(Chunk(LocateRequest(chunk), "exact", (doc_id, start, end)))
    return out


# ------------------------------------------------------------------ measuring


def _rss_kib() -> tuple[int, int]:
    """(current RSS, peak RSS) in KiB from /proc/self/status (VmRSS, VmHWM)."""
    values = {"VmRSS": 0, "VmHWM": 0}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key = line.split(":", 1)[0]
            if key in values:
                values[key] = int(line.split()[1])
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak, peak
    return values["VmRSS"], values["VmHWM"]


def _reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark (Linux: write 5 to /proc/self/clear_refs)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


@contextmanager
def _timed(label: str, phases: dict[str, float]) -> Iterator[None]:
    t0 = time.perf_counter()
    yield
    phases[label] = time.perf_counter() - t0


@dataclass(slots=True)
class Report:
    """What one mapping run measured."""

    phases: dict[str, float]
    statuses: Counter[str]
    correct: Counter[str]
    kinds: Counter[str]
    peak_extra_mib: float
    peak_method: str
    index_mib: float
    baseline_mib: float
    query_mib: float


def _is_correct(chunk: Chunk, loc: Location, tolerance: int) -> bool:
    if chunk.truth is None:
        return loc.status is MatchStatus.UNMAPPED
    span = loc.span
    if span is None:
        return False
    doc_id, start, end = chunk.truth
    slack = 0 if chunk.kind in ("exact", "hint", "wrong-hint", "whitespace") else tolerance
    return (
        span.document_id == doc_id
        and abs(span.start - start) <= slack
        and abs(span.end - end) <= slack
    )


def run_mapping(
    corpus: Corpus, chunks: Sequence[Chunk], *, use_tracemalloc: bool = False
) -> tuple[Report, list[Location]]:
    """Build the indexes and map every chunk; time each phase and the extra peak memory."""
    phases: dict[str, float] = {}
    gc.collect()
    if use_tracemalloc:
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
    else:
        base = _rss_kib()[0] * 1024
        _reset_peak()
    locator = Locator(corpus)
    with _timed("index (exact)", phases):
        locator.build_index()
    with _timed("index (normalised)", phases):
        locator.build_index(normalised=True)
    requests = [chunk.request for chunk in chunks]
    with _timed("map", phases):
        locations = locator.locate_many(requests)
    if use_tracemalloc:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        method = "tracemalloc peak of Python + numpy allocations during index+map"
    else:
        peak = _rss_kib()[1] * 1024
        method = "VmHWM (peak RSS, reset before index build) minus RSS before"
    statuses = Counter(loc.status.value for loc in locations)
    kinds = Counter(chunk.kind for chunk in chunks)
    correct = Counter(
        chunk.kind
        for chunk, loc in zip(chunks, locations, strict=True)
        if _is_correct(chunk, loc, tolerance=3)
    )
    report = Report(
        phases,
        statuses,
        correct,
        kinds,
        (peak - base) / 2**20,
        method,
        locator.index_nbytes / 2**20,
        base / 2**20,
        sum(len(r.text or "") for r in requests) / 2**20,
    )
    return report, locations


def _print_report(title: str, input_mib: float, n_chunks: int, report: Report) -> None:
    print(f"\n== {title}: {n_chunks:,} chunks over {input_mib:.1f} MiB of text")
    for name, seconds in report.phases.items():
        print(f"  {name:<22} {seconds:8.3f} s")
    build_map = sum(v for k, v in report.phases.items() if k.startswith(("index", "map")))
    rate = n_chunks / max(build_map, 1e-9)
    print(f"  {'index + map':<22} {build_map:8.3f} s   ({rate:,.0f} chunks/s, build included)")
    print(
        f"  peak extra memory      {report.peak_extra_mib:8.1f} MiB "
        f"({report.peak_extra_mib / max(input_mib, 1e-9):.2f}x input; {report.peak_method})"
    )
    print(
        f"  memory before          {report.baseline_mib:8.1f} MiB "
        f"(interpreter, corpus, {report.query_mib:.1f} MiB of chunk text and test data)"
    )
    print(f"  index arrays           {report.index_mib:8.1f} MiB")
    print(
        "  status counts          "
        + ", ".join(f"{k}={v}" for k, v in sorted(report.statuses.items()))
    )
    accuracy = ", ".join(
        f"{kind} {report.correct[kind]}/{count}" for kind, count in sorted(report.kinds.items())
    )
    print(f"  right span by kind     {accuracy}")


def _synthetic_one(size: float, n_queries: int, seed: int, traced: bool) -> None:
    phases: dict[str, float] = {}
    with _timed("generate", phases):
        texts = make_corpus_texts(size, seed)
    with _timed("load/canonicalise", phases):
        corpus = Corpus.from_texts(texts)
    n_chunks = n_queries * CHUNKS_PER_QUERY
    with _timed("chunks", phases):
        chunks = make_chunks(texts, n_chunks, seed + 1)
    report, _ = run_mapping(corpus, chunks, use_tracemalloc=traced)
    report.phases = {"load/canonicalise": phases["load/canonicalise"], **report.phases}
    _print_report(
        f"synthetic {size:g} MB x {n_queries:,} queries "
        f"(corpus generated in {phases['generate']:.1f} s, "
        f"chunks in {phases['chunks']:.1f} s, not counted)",
        corpus.total_chars / 2**20,
        n_chunks,
        report,
    )


def _synthetic(sizes: Sequence[float], queries: Sequence[int], seed: int, traced: bool) -> None:
    """One fresh interpreter per configuration, so that peak RSS belongs to that run alone."""
    for size in sizes:
        for n_queries in queries:
            command = [
                sys.executable,
                __file__,
                "--one",
                f"{size},{n_queries}",
                "--seed",
                str(seed),
            ]
            if traced:
                command.append("--tracemalloc")
            sys.stdout.flush()
            subprocess.run(command, check=True)


def _chroma(traced: bool) -> None:
    if not CHROMA.is_dir():
        print(
            f"\n== chroma: skipped, {CHROMA} is absent "
            "(needs ../shared/data next to the repository)"
        )
        return
    try:
        from langchain_text_splitters import RecursiveCharacterTextSplitter
    except ImportError:
        print("\n== chroma: skipped, langchain-text-splitters is not installed")
        return
    phases: dict[str, float] = {}
    with _timed("load/canonicalise", phases):
        corpus = load_corpus(CHROMA)
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=800, chunk_overlap=100, add_start_index=True
    )
    chunks: list[Chunk] = []
    for doc_id in corpus:
        for piece in splitter.create_documents([corpus.text(doc_id)]):
            start = int(piece.metadata["start_index"])
            truth = (doc_id, start, start + len(piece.page_content))
            chunks.append(Chunk(LocateRequest(piece.page_content), "exact", truth))
    report, locations = run_mapping(corpus, chunks, use_tracemalloc=traced)
    report.phases = {"load/canonicalise": phases["load/canonicalise"], **report.phases}
    # A chunk that occurs twice is right if its text is right; count those separately.
    report.correct["exact"] = sum(
        1
        for chunk, loc in zip(chunks, locations, strict=True)
        if loc.span is not None
        and corpus.text(loc.span.document_id)[loc.span.start : loc.span.end] == chunk.request.text
    )
    _print_report(
        "chroma corpora (RecursiveCharacterTextSplitter 800/100, text only)",
        corpus.total_chars / 2**20,
        len(chunks),
        report,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,10,50", help="corpus sizes in MB, comma-separated")
    parser.add_argument("--queries", default="100,1000,10000", help="query counts (x10 chunks)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chroma", action="store_true", help="only the chroma corpora")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # SIZE,QUERIES: one run, no banner
    parser.add_argument(
        "--tracemalloc", action="store_true", help="measure memory with tracemalloc (slower)"
    )
    args = parser.parse_args(argv)
    if args.one:
        size, n_queries = args.one.split(",")
        _synthetic_one(float(size), int(n_queries), args.seed, args.tracemalloc)
        return 0
    print(
        f"spanchor mapping benchmark; Python {platform.python_version()}, numpy {np.__version__}, "
        f"{platform.machine()}, {_cpu_count()} CPUs; wall times from time.perf_counter"
    )
    if args.chroma:
        _chroma(args.tracemalloc)
        return 0
    sizes = [float(x) for x in args.sizes.split(",") if x]
    queries = [int(x) for x in args.queries.split(",") if x]
    _synthetic(sizes, queries, args.seed, args.tracemalloc)
    return 0


def _cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


if __name__ == "__main__":
    sys.exit(main())
