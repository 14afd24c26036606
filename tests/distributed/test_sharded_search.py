"""Text-only results on a sharded corpus (real local Ray): searched on every shard, the best
candidate chosen on the driver by the single-process rules — the same locations, the same bytes."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from spanchor_core.corpus import Corpus, load_corpus, shard_of
from spanchor_core.corpus.lazy import LazyCorpus, open_corpus_file
from spanchor_core.distributed import RayLocator
from spanchor_core.evaluate import write_evaluation
from spanchor_core.gold import Anchor, GoldQuery, GoldSet, write_gold
from spanchor_core.locate import LocateRequest, Locator, MatchStatus, TieBreak
from spanchor_core.pipeline import run_evaluation
from spanchor_core.spans import DocSpan

ray = pytest.importorskip("ray")

SHARDS = 4


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _write_corpus(path: Path, seed: int) -> list[str]:
    """Documents of random words; passages copied into documents of other shards (some
    verbatim, some with case and spacing changed, some slightly edited)."""
    rng = random.Random(seed)
    vocab = [f"w{rng.randrange(3000)}" for _ in range(40_000)]
    texts = [" ".join(vocab[i : i + 400]) for i in range(0, len(vocab), 400)]
    copied: list[str] = []
    for n in range(30):  # copies: ambiguous across shards
        src = texts[rng.randrange(len(texts))]
        at = rng.randrange(0, len(src) - 400)
        piece = src[at : at + rng.choice([40, 120, 300])]
        if n % 3 == 1:
            piece = piece.upper().replace(" ", "  ")
        elif n % 3 == 2:
            piece = piece[:20] + "QQ" + piece[22:]
        target = rng.randrange(len(texts))
        texts[target] = texts[target][:200] + " " + piece + " " + texts[target][200:]
        copied.append(src[at : at + len(piece)])
    with path.open("w", encoding="utf-8") as out:
        for n, text in enumerate(texts):
            out.write(json.dumps({"_id": f"d{n:03d}", "title": "", "text": text}) + "\n")
    return copied


def _requests(corpus: Corpus, copied: list[str], seed: int) -> list[LocateRequest]:
    rng = random.Random(seed)
    ids = list(corpus)
    out: list[LocateRequest] = []
    for piece in copied:  # text in two places, usually two shards
        out.append(LocateRequest(piece))
        out.append(LocateRequest(piece.lower().replace(" ", "\n")))
        out.append(LocateRequest(piece[:15] + "KK" + piece[17:], document_id=rng.choice(ids)))
        holders = [d for d in ids if piece in corpus.text(d)]
        out.append(LocateRequest(piece, document_id=holders[-1]))
        out.append(LocateRequest(piece, start=corpus.text(holders[0]).find(piece) + 5))
    for n in range(360):
        doc_id = rng.choice(ids)
        text = corpus.text(doc_id)
        start = rng.randrange(0, len(text) - 400)
        piece = text[start : start + rng.choice([20, 45, 90, 200, 350])]
        gold = (DocSpan(doc_id, start, start + 30),)
        kind = n % 9
        if kind == 0:
            out.append(LocateRequest(piece))
        elif kind == 1:
            out.append(LocateRequest(piece, prefer=gold))
        elif kind == 2:
            out.append(LocateRequest(piece.upper().replace(" ", "   ")))
        elif kind == 3:
            out.append(LocateRequest(piece[:12] + "ZZZ" + piece[15:], prefer=gold))
        elif kind == 4:
            out.append(LocateRequest(piece, document_id=doc_id, start=start + 2))
        elif kind == 5:
            out.append(LocateRequest(piece, document_id=rng.choice(ids)))
        elif kind == 6:
            out.append(LocateRequest(piece, document_id="no-such-doc", start=start))
        elif kind == 7:
            out.append(LocateRequest(f"nowhere {rng.random()} " * rng.choice([1, 6])))
        else:
            out.append(LocateRequest(piece, document_id=doc_id, start=start))
    return out


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Corpus, list[str]]:
    path = tmp_path_factory.mktemp("sharded") / "corpus.jsonl"
    copied = _write_corpus(path, seed=23)
    return path, load_corpus(path), copied


def test_the_corpus_spreads_copies_over_shards(sharded: tuple[Path, Corpus, list[str]]) -> None:
    # the premise of the other tests: texts found in several shards, ambiguous ones among them
    _, corpus, copied = sharded
    assert len({shard_of(d, SHARDS) for d in corpus}) == SHARDS
    expected = Locator(corpus).locate_many(_requests(corpus, copied, seed=1))
    multi = [
        loc
        for loc in expected
        if len({shard_of(c.document_id, SHARDS) for c in loc.candidates}) > 1
    ]
    assert len(multi) >= 5
    statuses = {loc.status for loc in expected}
    assert {MatchStatus.EXACT, MatchStatus.AMBIGUOUS, MatchStatus.NORMALISED} <= statuses
    assert {MatchStatus.FUZZY, MatchStatus.UNMAPPED, MatchStatus.VERIFIED} <= statuses
    assert {loc.resolved_by for loc in expected} >= {"gold", "first", "document_id", "nearest_hint"}


@pytest.mark.usefixtures("cluster")
@pytest.mark.parametrize("from_file", [True, False])
def test_text_only_results_are_located_as_in_one_process(
    sharded: tuple[Path, Corpus, list[str]], tmp_path: Path, from_file: bool
) -> None:
    path, corpus, copied = sharded
    requests = _requests(corpus, copied, seed=2)
    expected = Locator(corpus).locate_many(requests)
    locator = RayLocator(
        corpus, source=path if from_file else None, shards=SHARDS, cache=tmp_path / "c"
    )
    try:
        got = locator.locate_many(requests)
        assert locator._actors == []  # no actor holds the whole corpus
    finally:
        locator.shutdown()
    for want, have, request in zip(expected, got, requests, strict=True):
        assert have == want, request


@pytest.mark.usefixtures("cluster")
def test_short_fuzzy_texts_past_the_scan_limit(
    sharded: tuple[Path, Corpus, list[str]], tmp_path: Path
) -> None:
    # the corpus is over fuzzy_scan_limit as a whole, under it per shard: the whole counts
    path, corpus, _ = sharded
    limit = sum(len(corpus.text(d)) for d in corpus) // 2
    rng = random.Random(4)
    requests = []
    for doc_id in list(corpus)[:40]:
        text = corpus.text(doc_id)
        piece = text[100:150]
        requests.append(LocateRequest(piece[:10] + "##" + piece[12:]))
        requests.append(LocateRequest(piece[:10] + "##" + piece[12:], document_id=doc_id))
        requests.append(
            LocateRequest(piece[:5] + "%%" + piece[7:], document_id=rng.choice(list(corpus)))
        )
    expected = Locator(corpus, fuzzy_scan_limit=limit).locate_many(requests)
    assert {loc.status for loc in expected} >= {MatchStatus.UNMAPPED, MatchStatus.FUZZY}
    locator = RayLocator(
        corpus, source=path, shards=SHARDS, cache=tmp_path / "c", fuzzy_scan_limit=limit
    )
    try:
        assert locator.locate_many(requests) == expected
    finally:
        locator.shutdown()


@pytest.mark.usefixtures("cluster")
@pytest.mark.parametrize(("tie_break", "lazy"), [("gold", False), ("position", True)])
def test_evaluation_is_byte_identical(
    sharded: tuple[Path, Corpus, list[str]], tmp_path: Path, tie_break: TieBreak, lazy: bool
) -> None:
    path, corpus, copied = sharded
    requests = _requests(corpus, copied, seed=3)
    queries, run_lines = [], []
    for q in range(0, len(requests), 6):
        batch = requests[q : q + 6]
        gold = [p for r in batch for p in r.prefer] or [DocSpan(list(corpus)[q % 50], 0, 40)]
        qid = f"q{q}"
        anchors = [Anchor.from_span(corpus, g.document_id, g.start, g.end) for g in gold]
        queries.append(GoldQuery(qid, f"query {q}", tuple(anchors)))
        results = [
            {
                k: v
                for k, v in {"text": r.text, "document_id": r.document_id, "start": r.start}.items()
                if v is not None
            }
            for r in batch
        ]
        run_lines.append(json.dumps({"query_id": qid, "results": results}))
    gold_path, run_path = tmp_path / "gold.jsonl", tmp_path / "run.jsonl"
    write_gold(GoldSet(tuple(queries)), gold_path)
    run_path.write_text("\n".join(run_lines) + "\n", encoding="utf-8")
    single = run_evaluation(
        corpus, gold_path, run_path, locator=Locator(corpus, tie_break=tie_break)
    )
    # the driver's corpus: in memory, or its texts left in the file (read back per gold document)
    driver = open_corpus_file(path) if lazy else corpus
    locator = RayLocator(
        driver, source=path, shards=SHARDS, cache=tmp_path / "c", tie_break=tie_break
    )
    try:
        distributed = run_evaluation(driver, gold_path, run_path, locator=locator)
    finally:
        locator.shutdown()
    if isinstance(driver, LazyCorpus):
        gold_documents = {a.document_id for q in queries for a in q.anchors}
        # the driver read back only the gold anchors' documents, and only to check them
        assert driver.read_ids
        assert driver.read_ids <= gold_documents
    write_evaluation(single.evaluation, tmp_path / "single.json")
    write_evaluation(distributed.evaluation, tmp_path / "ray.json")

    def strip(p: Path) -> bytes:
        data = json.loads(p.read_bytes())
        data.pop("created_at", None)
        return json.dumps(data, sort_keys=True).encode()

    assert strip(tmp_path / "single.json") == strip(tmp_path / "ray.json")


@pytest.mark.usefixtures("cluster")
def test_cli_evaluate_sharded_jsonl(
    sharded: tuple[Path, Corpus, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from spanchor_core.cli.app import app

    quickstart = Path(__file__).parents[2] / "examples" / "quickstart"
    docs = load_corpus(quickstart / "docs")
    corpus_file = tmp_path / "corpus.jsonl"
    corpus_file.write_text(
        "".join(json.dumps({"_id": d, "text": docs.text(d)}) + "\n" for d in docs),
        encoding="utf-8",
    )
    monkeypatch.setenv("SPANCHOR_INDEX_CACHE", str(tmp_path / "cache"))
    inputs = ("gold.jsonl", "runs/candidate.jsonl")
    args = [str(corpus_file), *(str(quickstart / p) for p in inputs)]
    runner = CliRunner()
    plain = runner.invoke(app, ["evaluate", *args, "-o", str(tmp_path / "a.json")])
    assert plain.exit_code == 0, plain.output
    on_shards = runner.invoke(
        app, ["evaluate", *args, "--ray", "local", "--shards", "3", "-o", str(tmp_path / "b.json")]
    )
    assert on_shards.exit_code == 0, on_shards.output
    a, b = (json.loads((tmp_path / n).read_bytes()) for n in ("a.json", "b.json"))
    a.pop("created_at")
    b.pop("created_at")
    assert a == b


def _quickstart_jsonl(tmp_path: Path) -> tuple[Path, Path]:
    quickstart = Path(__file__).parents[2] / "examples" / "quickstart"
    docs = load_corpus(quickstart / "docs")
    corpus_file = tmp_path / "corpus.jsonl"
    corpus_file.write_text(
        "".join(json.dumps({"_id": d, "text": docs.text(d)}) + "\n" for d in docs),
        encoding="utf-8",
    )
    return quickstart, corpus_file


def test_a_sharded_gate_keeps_no_document_text_on_the_driver(tmp_path: Path) -> None:
    from spanchor_core.distributed import ray_engine
    from spanchor_core.pipeline.gate import _gate_corpus
    from spanchor_core.settings import GateConfig

    quickstart, corpus_file = _quickstart_jsonl(tmp_path)
    runs = quickstart / "runs"
    config = GateConfig(
        docs=corpus_file,
        gold=quickstart / "gold.jsonl",
        baseline=runs / "baseline.jsonl",
        candidate=runs / "candidate.jsonl",
    )
    sharded = ray_engine("local", source=corpus_file, shards=3)  # no cluster until called
    lazy = _gate_corpus(config, sharded)
    assert isinstance(lazy, LazyCorpus)
    assert lazy.read_ids == frozenset()
    whole = _gate_corpus(config, ray_engine("local", source=corpus_file, shards=1))
    assert not isinstance(whole, LazyCorpus)
    assert lazy.fingerprint == whole.fingerprint
    assert not isinstance(_gate_corpus(config, None), LazyCorpus)


@pytest.mark.usefixtures("cluster")
@pytest.mark.parametrize("command", ["gate", "compare"])
def test_cli_gate_and_compare_sharded_jsonl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    from typer.testing import CliRunner

    from spanchor_core.cli.app import app

    quickstart, corpus_file = _quickstart_jsonl(tmp_path)
    monkeypatch.setenv("SPANCHOR_INDEX_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    base, cand = (str(quickstart / "runs" / f"{n}.jsonl") for n in ("baseline", "candidate"))
    gold = str(quickstart / "gold.jsonl")
    if command == "gate":
        args = ["gate", "--docs", str(corpus_file), "--gold", gold]
        args += ["--baseline", base, "--candidate", cand]
        out = "--json"
    else:
        args = ["compare", base, cand, "--docs", str(corpus_file), "--gold", gold]
        out = "-o"
    runner = CliRunner()
    plain = runner.invoke(app, [*args, out, str(tmp_path / "a.json")])
    assert plain.exit_code == 1, plain.output  # the quickstart candidate regresses
    cache = tmp_path / "cache"
    assert not cache.exists() or not any(cache.iterdir())  # a small corpus: indexed in memory
    on_shards = runner.invoke(
        app, [*args, "--ray", "local", "--shards", "3", out, str(tmp_path / "b.json")]
    )
    assert on_shards.exit_code == 1, on_shards.output
    assert any(cache.iterdir())  # the shard actors indexed their documents: it ran on Ray
    a, b = (json.loads((tmp_path / n).read_bytes()) for n in ("a.json", "b.json"))
    a.pop("created_at", None)
    b.pop("created_at", None)
    assert a == b
