"""Benchmark: the input classes that leave the ordinary evaluation path (issue 16's table).

Each *case* writes a corpus, a gold set and a run file of N queries x 10 results, then a
fresh interpreter runs the user path of ``bench_evaluate.py`` (``load_corpus`` ->
``read_gold`` -> index build -> ``evaluate_file`` -> ``write_evaluation``) and prints wall,
CPU and peak per phase and the cost per result, so each class can be set against
``ordinary``:

- ``ordinary``: the chunk mix of ``bench_evaluate.py`` (20 % whitespace-altered, 5 % absent...);
- ``boilerplate``: documents of 50 kB, every one starting and ending with the same 3 kB
  header and footer, 30 % of them with a near-copy (a few words changed); chunks drawn from
  the whole documents, boilerplate included;
- ``short``: exact chunks of 20-50 characters (5 % absent);
- ``header``: every chunk with a metadata header prepended;
- ``markup``: every chunk with its Markdown markup stripped and its lines joined;
- ``tiny``: 100,000 tiny documents (``--size`` MB spread over them), chunks of 100-400
  characters within one document;
- ``tiny-short``: the tiny documents with chunks of 20-50 characters.

    python bench/bench_adversarial.py --cases ordinary,boilerplate --size 50 --queries 10000
    python bench/bench_adversarial.py --cases short --size 10 --queries 2000 --workdir /tmp/adv
    python bench/bench_adversarial.py --cases boilerplate --size 100 --queries 10000  # doubling
    python bench/bench_adversarial.py --cases ordinary --legacy   # the run as 0.x results JSON

``--legacy`` scores the same run written as a spanchor 0.x results file instead: one JSON
object ``{query_id: [{"text", "score", "doc_id", "start", "end"}, ...]}`` on one line, as
``json.dump`` writes it (``run-0x.json``, derived from ``run.jsonl``).

Before each row is measured the parent reads its corpus files once (not counted), so every
row loads from a warm page cache as ``ordinary`` does; ``--cold`` leaves the cache as it is
(the 100,000 files of the tiny rows then cost about twice the CPU to load if the kernel has
dropped them).

Deterministic from ``--seed``. Generated files are kept with ``--workdir`` and reused. Not
part of the test suite.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

import numpy as np

from spanchor_core.corpus import Corpus
from spanchor_core.gold import GoldQuery, GoldSet, write_gold
from spanchor_core.runs import RetrievedResult, RunRecorder

__all__ = ["CASES", "generate_case", "write_legacy_run"]

_HERE = Path(__file__).resolve().parent
CHUNKS_PER_QUERY = 10
TINY_DOCUMENTS = 100_000


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_{name}", _HERE / f"{name}.py")
    if spec is None or spec.loader is None:  # pragma: no cover - the files are side by side
        raise RuntimeError(f"cannot load {name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


Chunk = tuple[str, str | None, int | None, int | None, tuple[str, int, int] | None]
"""(text, document_id, start, end, truth): one retrieved result and where it came from."""


def _prose(rng: np.random.Generator, chars: int) -> str:
    mapping = _load("bench_mapping")
    return str(mapping._prose(rng, mapping._vocabulary(rng), chars))


def _split(texts: dict[str, str], per_doc: int) -> dict[str, str]:
    """The prose of ``texts`` cut into documents of about ``per_doc`` characters."""
    whole = "\n\n".join(texts[k] for k in sorted(texts))
    return {
        f"d{n:06d}": whole[i : i + per_doc] for n, i in enumerate(range(0, len(whole), per_doc))
    }


def _near_copy(rng: np.random.Generator, text: str) -> str:
    words = text.split(" ")
    for _ in range(5):
        words[int(rng.integers(0, len(words)))] = "altered"
    return " ".join(words)


def _cut(
    rng: np.random.Generator, texts: dict[str, str], n: int, low: int, high: int, absent: float
) -> list[Chunk]:
    """``n`` exact chunks of ``low..high`` characters (a share ``absent`` of fresh prose)."""
    ids = sorted(texts)
    lengths = np.array([len(texts[i]) for i in ids], dtype=np.float64)
    docs = rng.choice(len(ids), size=n, p=lengths / lengths.sum())
    fresh = _prose(np.random.default_rng(int(rng.integers(1 << 30)) + 7), 2 * high + 10)
    out: list[Chunk] = []
    for m in range(n):
        size = int(rng.integers(low, high + 1))
        if rng.random() < absent:
            start = int(rng.integers(0, len(fresh) - size))
            out.append((fresh[start : start + size] + " zq", None, None, None, None))
            continue
        doc_id = ids[int(docs[m])]
        text = texts[doc_id]
        size = min(size, len(text))
        start = int(rng.integers(0, len(text) - size + 1))
        piece = text[start : start + size]
        stripped = piece.strip()
        if not stripped:
            out.append((piece, None, None, None, None))
            continue
        start += len(piece) - len(piece.lstrip())
        out.append((stripped, None, None, None, (doc_id, start, start + len(stripped))))
    return out


def _ordinary(rng: np.random.Generator, size: float, n: int) -> tuple[dict[str, str], list[Chunk]]:
    mapping = _load("bench_mapping")
    texts: dict[str, str] = mapping.make_corpus_texts(size, int(rng.integers(1 << 30)))
    chunks = mapping.make_chunks(texts, n, int(rng.integers(1 << 30)))
    return texts, [
        (c.request.text, c.request.document_id, c.request.start, c.request.end, c.truth)
        for c in chunks
    ]


def _boilerplate(
    rng: np.random.Generator, size: float, n: int
) -> tuple[dict[str, str], list[Chunk]]:
    base = _split(_load("bench_mapping").make_corpus_texts(size, 0), 50_000 - 6_000)
    header, footer = _prose(rng, 3_000), _prose(rng, 3_000)
    texts = {}
    for doc_id, body in base.items():
        copy = rng.random() < 0.3
        head = _near_copy(rng, header) if copy else header
        foot = _near_copy(rng, footer) if copy else footer
        texts[doc_id] = f"{head}\n\n{body}\n\n{foot}"
    return texts, _cut(rng, texts, n, 500, 1_000, 0.05)


def _short(rng: np.random.Generator, size: float, n: int) -> tuple[dict[str, str], list[Chunk]]:
    texts = _load("bench_mapping").make_corpus_texts(size, 0)
    return texts, _cut(rng, texts, n, 20, 50, 0.05)


def _altered(how: Callable[[str], str]) -> Callable[..., tuple[dict[str, str], list[Chunk]]]:
    def make(rng: np.random.Generator, size: float, n: int) -> tuple[dict[str, str], list[Chunk]]:
        texts = _load("bench_mapping").make_corpus_texts(size, 0)
        chunks = _cut(rng, texts, n, 500, 1_000, 0.0)
        return texts, [(how(t), d, s, e, truth) for t, d, s, e, truth in chunks]

    return make


def _with_header(text: str) -> str:
    return f"source: corpus/file.md\ntitle: A synthetic document\n\n{text}"


def _without_markup(text: str) -> str:
    return " ".join(text.replace("**", "").replace("## ", "").split("\n"))


def _tiny(low: int, high: int) -> Callable[..., tuple[dict[str, str], list[Chunk]]]:
    def make(rng: np.random.Generator, size: float, n: int) -> tuple[dict[str, str], list[Chunk]]:
        base = _load("bench_mapping").make_corpus_texts(size, 0)
        per_doc = max(60, int(size * 1024 * 1024) // TINY_DOCUMENTS)
        texts = _split(base, per_doc)
        top = min(high, per_doc - 10)
        return texts, _cut(rng, texts, n, min(low, top), top, 0.05)

    return make


CASES: dict[str, Callable[..., tuple[dict[str, str], list[Chunk]]]] = {
    "ordinary": _ordinary,
    "boilerplate": _boilerplate,
    "short": _short,
    "header": _altered(_with_header),
    "markup": _altered(_without_markup),
    "tiny": _tiny(100, 400),
    "tiny-short": _tiny(20, 50),
}


def _dirs(workdir: Path, case: str, size: float, n_queries: int, seed: int) -> tuple[Path, Path]:
    root = workdir / f"adv-{case}-{size:g}mb-{n_queries}q-seed{seed}"
    return root, root / "corpus"


def generate_case(workdir: Path, case: str, size: float, n_queries: int, seed: int) -> Path:
    """Write the corpus, gold set and run file of ``case`` (once); return its directory."""
    root, corpus_dir = _dirs(workdir, case, size, n_queries, seed)
    if (root / "run.jsonl").is_file():
        return root
    rng = np.random.default_rng(seed)
    texts, chunks = CASES[case](rng, size, n_queries * CHUNKS_PER_QUERY)
    corpus_dir.mkdir(parents=True, exist_ok=True)
    for doc_id, text in texts.items():
        (corpus_dir / f"{doc_id}.md").write_text(text, encoding="utf-8", newline="")
    bench_evaluate = _load("bench_evaluate")
    queries: list[GoldQuery] = []
    for q in range(n_queries):
        batch = chunks[q * CHUNKS_PER_QUERY : (q + 1) * CHUNKS_PER_QUERY]
        found = [truth for *_, truth in batch if truth is not None] or [
            (sorted(texts)[0], 0, min(50, len(texts[sorted(texts)[0]])))
        ]
        doc_id, start, end = found[int(rng.integers(0, len(found)))]
        anchor = bench_evaluate._anchor(texts[doc_id], doc_id, start, end)
        queries.append(GoldQuery(f"q{q:05d}", f"question {q}?", (anchor,)))
    gold = GoldSet(queries)
    write_gold(gold, root / "gold.jsonl")
    with RunRecorder(
        root / "run.partial.jsonl",
        retriever=f"synthetic (bench_adversarial.py {case})",
        parameters={"case": case, "size_mb": size, "queries": n_queries, "seed": seed},
        corpus_fingerprint=Corpus.from_texts(texts).fingerprint,
        gold_sha256=gold.sha256,
        strict=True,
    ) as recorder:
        for q, query in enumerate(queries):
            batch = chunks[q * CHUNKS_PER_QUERY : (q + 1) * CHUNKS_PER_QUERY]
            results = [
                RetrievedResult(rank, text, round(1.0 - rank / 20, 3), doc, start, end)
                for rank, (text, doc, start, end, _) in enumerate(batch, start=1)
            ]
            recorder.record(query.question, results, query_id=query.query_id)
    (root / "run.partial.jsonl").rename(root / "run.jsonl")
    return root


LEGACY_RUN = "run-0x.json"


def write_legacy_run(root: Path) -> Path:
    """``run.jsonl`` of ``root`` as spanchor 0.x results (once): ``{query_id: [result]}``."""
    target = root / LEGACY_RUN
    if target.is_file():
        return target
    document: dict[str, list[dict[str, object]]] = {}
    with (root / "run.jsonl").open(encoding="utf-8") as lines:
        next(lines)  # the header
        for line in lines:
            record = json.loads(line)
            document[record["query_id"]] = [
                {
                    key: value
                    for key, value in (
                        ("text", result["text"]),
                        ("score", result.get("score")),
                        ("doc_id", result.get("document_id")),
                        ("start", result.get("start")),
                        ("end", result.get("end")),
                    )
                    if value is not None
                }
                for result in record["results"]
            ]
    partial = root / f"{LEGACY_RUN}.partial"
    with partial.open("w", encoding="utf-8") as out:
        json.dump(document, out, ensure_ascii=False)
    partial.rename(target)
    return target


def _measure(
    workdir: Path, case: str, size: float, n_queries: int, seed: int, legacy: bool = False
) -> None:
    root, corpus_dir = _dirs(workdir, case, size, n_queries, seed)
    bench_evaluate = _load("bench_evaluate")
    run_name = write_legacy_run(root).name if legacy else "run.jsonl"
    m = bench_evaluate.measure(root, corpus_dir, run_name=run_name)
    title = f"{case}: {size:g} MB x {n_queries:,} queries x {CHUNKS_PER_QUERY} results"
    title += " (run as 0.x results JSON)" if legacy else ""
    bench_evaluate._print_measurement(title, m)


def _child(arguments: list[str]) -> tuple[float, float]:
    sys.stdout.flush()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, __file__, *arguments], check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def warm_page_cache(corpus_dir: Path) -> tuple[int, float]:
    """Read every file under ``corpus_dir`` once (not timed in the row): the 100,000 files of
    the tiny rows cost twice the CPU to load when the kernel has to read them from disk again
    (12.2 against 6.1 s at the end of session 7), which says more about the page cache than
    about spanchor. Returns the number of files and the seconds spent."""
    t0 = time.perf_counter()
    files = 0
    pending = [str(corpus_dir)]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    with open(entry.path, "rb") as handle:
                        while handle.read(1 << 20):
                            pass
                    files += 1
    return files, time.perf_counter() - t0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cases", default=",".join(CASES), help="comma-separated: " + ", ".join(CASES)
    )
    parser.add_argument("--size", type=float, default=50.0, help="corpus size in MB")
    parser.add_argument("--queries", type=int, default=10_000, help="queries (x10 results)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", type=Path, help="keep the generated files here")
    parser.add_argument(
        "--legacy", action="store_true", help="score the run written as spanchor 0.x results JSON"
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="do not read the corpus once before measuring (the page cache as it happens to be)",
    )
    parser.add_argument("--generate", help=argparse.SUPPRESS)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.generate or args.measure:
        case = args.generate or args.measure
        if args.generate:
            root = generate_case(args.workdir, case, args.size, args.queries, args.seed)
            if args.legacy:
                write_legacy_run(root)
        else:
            _measure(args.workdir, case, args.size, args.queries, args.seed, args.legacy)
        return 0
    cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(CASES)}")
    with tempfile.TemporaryDirectory(prefix="spanchor-adv-") as temp:
        workdir = args.workdir or Path(temp)
        common = ["--workdir", str(workdir), "--size", str(args.size)]
        common += ["--queries", str(args.queries), "--seed", str(args.seed)]
        common += ["--legacy"] if args.legacy else []
        for case in cases:
            generated, _ = _child(["--generate", case, *common])
            warmed = "page cache not warmed (--cold)"
            if not args.cold:
                corpus_dir = _dirs(workdir, case, args.size, args.queries, args.seed)[1]
                files, warming = warm_page_cache(corpus_dir)
                warmed = f"page cache warmed first ({files:,} files read in {warming:.1f} s)"
            wall, cpu = _child(["--measure", case, *common])
            print(
                f"  measuring process wall {wall:.3f} s, CPU {cpu:.3f} s; "
                f"files generated in {generated:.1f} s; {warmed}; neither counted"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
