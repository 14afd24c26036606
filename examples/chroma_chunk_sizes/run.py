"""Real data: does shrinking chunks from 1000 to 400 characters hurt BM25 retrieval?

Reads the five corpora of Chroma's chunking-evaluation study from ``../shared/data/chroma``
(MIT licence, see its ``LICENSE``; never copied into this repository), splits them with
LangChain's ``RecursiveCharacterTextSplitter`` at 1000 characters (the baseline) and at 400
characters (the candidate), retrieves with BM25 (``bm25s``), records both runs with
:class:`~spanchor_core.runs.RunRecorder`, and evaluates and compares them with spanchor.

The folder holds the corpora only, not the study's question set, so the gold set is built from
the text itself: *known-item* queries. Sentences are picked at evenly spaced places in every
document; each query is the six rarest content words of its sentence (a search-box query, not
the sentence), and the sentence is the evidence, anchored as a span. Every fourth query also
takes the next sentence when that one is plain prose too, and then has two anchors (12 of 100).
A sentence found more than once in the corpus is passed over for the next one (its anchor would
be ambiguous), and counted.

Usage::

    python examples/chroma_chunk_sizes/run.py [OUT_DIR]

Everything is written to ``OUT_DIR`` (default: a new temporary directory): ``gold.jsonl``,
``runs/``, ``evaluations/``, ``comparison.json``, ``report.md``, ``summary.json`` (the figures;
identical from one run to the next, as are the gold set and the evaluations' scores) and
``spanchor.toml``, with which ``spanchor gate --config OUT_DIR/spanchor.toml`` replays the
comparison.
Prints "skipped: ../shared/data/chroma not found" when the data is absent. Exits 0 whenever the
example ran (with the data or without): the candidate's verdict is the finding it reports, not a
failure of the script, so CI can run it like the other examples. ``spanchor gate`` on the files
it writes gives the verdict as an exit code.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import bm25s
from langchain_text_splitters import RecursiveCharacterTextSplitter

from spanchor_core import (
    Anchor,
    Corpus,
    Evaluation,
    GoldQuery,
    GoldSet,
    RetrievedResult,
    RunRecorder,
    compare,
    evaluate,
    load_corpus,
    read_run,
    write_comparison,
    write_evaluation,
    write_gold,
)
from spanchor_core.diagnosis import (
    Chunk,
    ChunkInventory,
    map_inventory,
    with_diagnosis,
    write_chunks,
)
from spanchor_core.locate import Locator
from spanchor_core.policy import policy_from_mapping
from spanchor_core.render import comparison_markdown, write_report

__all__ = ["CHUNK_SIZES", "DATA", "build_gold", "chunk", "main", "run_example"]

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "chroma"
"""The data folder, next to the repository (``/work/shared/data/chroma`` for ``/work/main``)."""

CHUNK_SIZES = (1000, 400)
"""Baseline first, then the candidate: a team shrinks chunks to send less text to the model."""

TOP_K = 10
PER_DOCUMENT = 20
"""Known-item queries per document: 100 in all, enough for the paired statistics."""
QUERY_WORDS = 6
POLICY = {"max_drop": {"recall@5": 0.10, "hit@5": 0.0}}
"""The quickstart's policy: no query may lose 0.10 of recall@5, nor its hit@5."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Za-z])")
_WORD = re.compile(r"[A-Za-z][A-Za-z-]{3,}")
_CLEAN = re.compile(r"^[A-Za-z0-9 ,.;:()%$'’\"-]+$")
# Words too common to say anything about a sentence; the rarity ranking handles the rest.
_COMMON_WORDS = """about above after again also among been before being below between both could
does doing during each from further have having here into itself just more most other over same
should some such than that their them then there these they this those through under until very
were what when where which while will with would your"""
_STOPWORDS = frozenset(_COMMON_WORDS.split())


def _sentences(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence: cut after ``.!?`` when a letter follows (the finance
    corpus is lower-case)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return spans


def _usable(sentence: str) -> bool:
    """Plain prose of 100–300 characters: no markup, table debris or line breaks."""
    return 100 <= len(sentence) <= 300 and "\n" not in sentence and bool(_CLEAN.match(sentence))


def _keywords(sentence: str, frequency: Counter[str], count: int) -> list[str]:
    """The ``count`` rarest content words of ``sentence``, in the order they appear."""
    seen: dict[str, int] = {}
    for position, match in enumerate(_WORD.finditer(sentence)):
        word = match.group().lower()
        if word not in _STOPWORDS and word not in seen:
            seen[word] = position
    rarest = sorted(seen, key=lambda word: (frequency[word], seen[word]))[:count]
    return sorted(rarest, key=seen.__getitem__)


def build_gold(corpus: Corpus) -> tuple[GoldSet, int]:
    """Known-item queries over every document, and the number of sentences passed over because
    they occur more than once in the corpus (an anchor must point at one place)."""
    frequency = Counter(word.lower() for doc in corpus.values() for word in _WORD.findall(doc.text))
    queries: list[GoldQuery] = []
    skipped = 0
    for document_id, doc in corpus.items():
        spans = _sentences(doc.text)
        usable = [i for i, (s, e) in enumerate(spans) if _usable(doc.text[s:e])]
        taken: set[int] = set()
        for n in range(PER_DOCUMENT):
            # Walk forward from the evenly spaced place to the first sentence (pair) found
            # exactly once in the corpus; the ones passed over are counted, not used.
            for index in usable[n * len(usable) // PER_DOCUMENT :]:
                picked = [index]
                if n % 4 == 3 and index + 1 < len(spans):
                    start, end = spans[index + 1]
                    if _usable(doc.text[start:end]):
                        picked.append(index + 1)
                texts = [doc.text[spans[i][0] : spans[i][1]] for i in picked]
                if taken.isdisjoint(picked) and all(
                    len(corpus.find_all(text)) == 1 for text in texts
                ):
                    break
                skipped += 1
            else:
                continue
            taken.update(picked)
            per_sentence = QUERY_WORDS // len(picked)
            words = [w for text in texts for w in _keywords(text, frequency, per_sentence)]
            queries.append(
                GoldQuery(
                    query_id=f"{document_id}-{n:02d}",
                    question=" ".join(words),
                    anchors=tuple(Anchor.from_span(corpus, document_id, *spans[i]) for i in picked),
                    tags=(document_id,),
                    metadata={"kind": "known-item", "sentences": len(picked)},
                )
            )
    description = "known-item queries over the Chroma chunking-evaluation corpora"
    return GoldSet(queries, description=description), skipped


def chunk(corpus: Corpus, size: int) -> list[tuple[str, int, str]]:
    """``(document_id, start, text)`` chunks from ``RecursiveCharacterTextSplitter``."""
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=size, chunk_overlap=0, add_start_index=True
    )
    chunks: list[tuple[str, int, str]] = []
    for document_id, doc in corpus.items():
        for piece in splitter.create_documents([doc.text]):
            chunks.append((document_id, int(piece.metadata["start_index"]), piece.page_content))
    return chunks


def inventory(out: Path, size: int, corpus: Corpus, locator: Locator) -> ChunkInventory:
    """The chunk inventory of one index (every chunk BM25 holds), written to ``chunks/`` and
    mapped onto the corpus: what lets the comparison tell the chunking's part from the ranking's."""
    description = f"RecursiveCharacterTextSplitter(chunk_size={size}, chunk_overlap=0)"
    chunks = [
        Chunk(text, document_id, start, start + len(text), f"{size}/{n}")
        for n, (document_id, start, text) in enumerate(chunk(corpus, size))
    ]
    (out / "chunks").mkdir(parents=True, exist_ok=True)
    write_chunks(
        chunks,
        out / "chunks" / f"chunks-{size}.jsonl",
        description=description,
        corpus_fingerprint=corpus.fingerprint,
        created_at="2026-01-01T00:00:00.000Z",  # the example's files are byte-stable
    )
    return map_inventory(corpus, chunks, locator=locator, description=description)


def _record(path: Path, size: int, corpus: Corpus, gold: GoldSet) -> int:
    """Index the chunks of one size with BM25, ask every query, record the top ``TOP_K``."""
    chunks = chunk(corpus, size)
    retriever = bm25s.BM25()
    corpus_tokens = bm25s.tokenize(
        [text for _, _, text in chunks], stopwords="en", show_progress=False
    )
    retriever.index(corpus_tokens, show_progress=False)
    questions = [query.question for query in gold.values()]
    tokens = bm25s.tokenize(questions, stopwords="en", show_progress=False)
    ids, scores = retriever.retrieve(tokens, k=TOP_K, show_progress=False)
    splitter = f"RecursiveCharacterTextSplitter(chunk_size={size}, chunk_overlap=0)"
    with RunRecorder(
        path,
        retriever=f"bm25s BM25 over {splitter}",
        parameters={"chunk_size": size, "chunk_overlap": 0, "k": TOP_K, "chunks": len(chunks)},
        corpus_fingerprint=corpus.fingerprint,
        gold_sha256=gold.sha256,
        strict=True,
    ) as recorder:
        for row, query in enumerate(gold.values()):
            results = []
            for rank in range(1, TOP_K + 1):
                document_id, start, text = chunks[int(ids[row][rank - 1])]
                results.append(
                    RetrievedResult(
                        rank=rank,
                        text=text,
                        score=round(float(scores[row][rank - 1]), 6),
                        document_id=document_id,
                        start=start,
                        end=start + len(text),
                    )
                )
            recorder.record(query.question, results, query_id=query.query_id)
    return len(chunks)


_REPORTED = ("recall@5", "hit@5", "full_evidence@5", "mrr@10", "recall@10", "retrieved_chars@5")


def _figures(evaluation: Evaluation, chunks: int) -> dict[str, Any]:
    means = {name: round(evaluation.mean(name), 4) for name in _REPORTED}
    return {
        "chunks": chunks,
        "queries": len(evaluation),
        "mean": means,
        "unmapped_rate": round(evaluation.mapping.unmapped_rate, 4),
    }


def run_example(out: Path) -> dict[str, Any]:
    """Build the gold set, record and evaluate both runs, compare them; return the figures."""
    corpus = load_corpus(DATA / "corpora")
    gold, skipped = build_gold(corpus)
    write_gold(gold, out / "gold.jsonl")
    (out / "runs").mkdir(parents=True, exist_ok=True)
    (out / "evaluations").mkdir(parents=True, exist_ok=True)
    evaluations: list[Evaluation] = []
    inventories: list[ChunkInventory] = []
    configs: dict[str, Any] = {}
    locator = Locator(corpus)
    for size in CHUNK_SIZES:
        name = f"chunks-{size}"
        chunks = _record(out / "runs" / f"{name}.jsonl", size, corpus, gold)
        evaluation = evaluate(
            corpus, gold, read_run(out / "runs" / f"{name}.jsonl"), locator=locator
        )
        write_evaluation(evaluation, out / "evaluations" / f"{name}.json")
        evaluations.append(evaluation)
        inventories.append(inventory(out, size, corpus, locator))
        configs[name] = _figures(evaluation, chunks)
    baseline, candidate = evaluations
    comparison = with_diagnosis(  # causes per regression, and the chunking / ranking split
        compare(baseline, candidate, policy_from_mapping(POLICY)),
        baseline,
        candidate,
        baseline_chunks=inventories[0],
        candidate_chunks=inventories[1],
    )
    write_comparison(comparison, out / "comparison.json")
    report = comparison_markdown(
        comparison, baseline=baseline, candidate=candidate, gold=gold, corpus=corpus
    )
    write_report(report, out / "report.md")
    summary = {
        "corpus": {
            "documents": len(corpus),
            "characters": sum(len(doc.text) for doc in corpus.values()),
            "fingerprint": corpus.fingerprint,
        },
        "gold": {
            "queries": len(gold),
            "two_anchor_queries": sum(len(query.anchors) == 2 for query in gold.values()),
            "passed_over_ambiguous": skipped,
            "sha256": gold.sha256,
        },
        "baseline": f"chunks-{CHUNK_SIZES[0]}",
        "candidate": f"chunks-{CHUNK_SIZES[1]}",
        "configs": configs,
        "comparison": {"passed": comparison.passed, **comparison.counts},
        "diagnosis": _diagnosis_figures(comparison.diagnosis),
    }
    text = json.dumps(summary, indent=2, sort_keys=True) + "\n"
    (out / "summary.json").write_text(text, encoding="utf-8")
    _write_gate_config(out)
    return summary


def _diagnosis_figures(diagnosis: Any) -> dict[str, Any]:
    """Why the regressions regressed, and each recall@K change split into chunking + ranking."""
    if diagnosis is None:
        return {"why": None, "splits": {}}
    return {
        "why": diagnosis.summary.line(),
        "splits": {
            split.metric: {
                "line": split.line(),
                "delta": round(split.delta, 4),
                "chunking": round(split.chunking, 4),
                "ranking": round(split.ranking, 4),
                "oracle_baseline": round(split.oracle_baseline, 4),
                "oracle_candidate": round(split.oracle_candidate, 4),
            }
            for split in diagnosis.splits
        },
    }


def _write_gate_config(out: Path) -> None:
    """``spanchor.toml`` in ``out``, so that ``spanchor gate --config`` replays the verdict."""
    drops = "\n".join(f'"{name}" = {value}' for name, value in POLICY["max_drop"].items())
    lines = [
        "# Written by examples/chroma_chunk_sizes/run.py: replays its comparison as a gate.",
        "[tool.spanchor]",
        f"docs = {json.dumps(str(DATA / 'corpora'))}",
        'gold = "gold.jsonl"',
        f'baseline = "runs/chunks-{CHUNK_SIZES[0]}.jsonl"',
        f'candidate = "runs/chunks-{CHUNK_SIZES[1]}.jsonl"',
        "",
        "[tool.spanchor.policy.max_drop]",
        drops,
    ]
    (out / "spanchor.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _print_summary(summary: dict[str, Any], out: Path, seconds: float) -> None:
    gold = summary["gold"]
    print(
        f"{summary['corpus']['documents']} documents, {summary['corpus']['characters']:,} "
        f"characters; {gold['queries']} known-item queries ({gold['two_anchor_queries']} with "
        f"two anchors, {gold['passed_over_ambiguous']} ambiguous sentences passed over)"
    )
    names = [summary["baseline"], summary["candidate"]]
    print(f"{'metric':<18}" + "".join(f"{name:>14}" for name in names))
    print(f"{'chunks':<18}" + "".join(f"{summary['configs'][n]['chunks']:>14}" for n in names))
    for metric in _REPORTED:
        row = "".join(f"{summary['configs'][n]['mean'][metric]:>14.3f}" for n in names)
        print(f"{'mean ' + metric:<18}{row}")
    result = summary["comparison"]
    verdict = "PASS" if result["passed"] else "FAIL"
    print(
        f"{verdict}: {result['compared']} queries compared — {result['regressed']} regressed, "
        f"{result['improved']} improved, {result['unchanged']} unchanged"
    )
    diagnosis = summary["diagnosis"]
    if diagnosis["why"]:
        print(f"why: {diagnosis['why']}")
    for split in diagnosis["splits"].values():
        print(split["line"])
    print(f"wrote {out} in {seconds:.1f} s")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the example and print its figures; 0 unless something went wrong."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not (DATA / "corpora").is_dir():
        print("skipped: ../shared/data/chroma not found")
        return 0
    out = Path(args[0]) if args else Path(tempfile.mkdtemp(prefix="spanchor-chroma-"))
    out.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    summary = run_example(out)
    _print_summary(summary, out, time.perf_counter() - began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
