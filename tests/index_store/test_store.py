"""The persistent index: same answers as a fresh build, built once, memory-mapped, invalidated."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from spanchor_core.cli.app import app
from spanchor_core.corpus import Corpus, load_corpus
from spanchor_core.index_store import (
    clear_cache,
    entry_key,
    index_entries,
    load_indexes,
    persistent_locator,
    release_index_pages,
)
from spanchor_core.index_store.store import STORE_FORMAT
from spanchor_core.locate import LocateRequest, Locator

QUICKSTART = Path(__file__).parents[2] / "examples" / "quickstart"


def _requests(corpus: Corpus) -> list[LocateRequest]:
    requests = []
    for doc_id in corpus:
        text = corpus.text(doc_id)
        for start in range(0, max(1, len(text) - 200), 97):
            piece = text[start : start + 150]
            requests.append(LocateRequest(piece))
            requests.append(LocateRequest(" ".join(piece.upper().split())))  # normalised stage
    return requests


def test_cached_locator_answers_like_a_fresh_one(tmp_path: Path) -> None:
    corpus = load_corpus(QUICKSTART / "docs")
    requests = _requests(corpus)
    expected = Locator(corpus).locate_many(requests)
    built = persistent_locator(corpus, tmp_path)
    assert built.locate_many(requests) == expected
    reused = persistent_locator(corpus, tmp_path)
    exact, normalised = reused.built_indexes()
    assert exact is not None
    assert isinstance(exact.packed, np.memmap)
    assert normalised is not None
    assert isinstance(normalised.checkpoints, np.memmap)
    assert reused.locate_many(requests) == expected
    [entry] = index_entries(tmp_path)
    assert entry.fingerprint == corpus.fingerprint
    assert entry.documents == len(corpus)


def test_changed_corpus_gets_a_new_entry(tmp_path: Path) -> None:
    first = Corpus.from_texts({"a": "alpha beta gamma " * 20})
    second = Corpus.from_texts({"a": "alpha beta delta " * 20})
    persistent_locator(first, tmp_path)
    assert load_indexes(second, tmp_path, kgram=20, window=48) is None
    persistent_locator(second, tmp_path)
    assert {e.fingerprint for e in index_entries(tmp_path)} == {
        first.fingerprint,
        second.fingerprint,
    }
    assert entry_key(first.fingerprint, 20, 48) != entry_key(first.fingerprint, 20, 32)
    assert len(clear_cache(tmp_path)) == 2
    assert index_entries(tmp_path) == []


def test_a_damaged_entry_is_rebuilt(tmp_path: Path) -> None:
    corpus = Corpus.from_texts({"a": "some text to index " * 30})
    persistent_locator(corpus, tmp_path)
    [entry] = index_entries(tmp_path)
    (entry.path / "exact.npy").write_bytes(b"garbage")
    assert load_indexes(corpus, tmp_path, kgram=20, window=48) is None
    located = persistent_locator(corpus, tmp_path).locate("to index some text")
    assert located.document_id == "a"
    assert load_indexes(corpus, tmp_path, kgram=20, window=48) is not None


def test_an_entry_of_another_format_is_not_read(tmp_path: Path) -> None:
    # format 1 indexed windows across document edges: such an entry must be rebuilt, not used
    corpus = Corpus.from_texts({"a": "some text to index " * 30, "b": "other words here " * 30})
    persistent_locator(corpus, tmp_path)
    [entry] = index_entries(tmp_path)
    meta = json.loads((entry.path / "meta.json").read_text(encoding="utf-8"))
    assert meta["schema_version"] == STORE_FORMAT == 2
    (entry.path / "meta.json").write_text(json.dumps({**meta, "schema_version": 1}))
    assert load_indexes(corpus, tmp_path, kgram=20, window=48) is None
    assert entry_key(corpus.fingerprint, 20, 48) == entry.key  # the format is part of the key


def test_concurrent_builders_publish_one_whole_entry(tmp_path: Path) -> None:
    corpus = Corpus.from_texts({f"d{i}": f"document {i} says something " * 40 for i in range(20)})
    errors: list[BaseException] = []

    def build() -> None:
        try:
            persistent_locator(corpus, tmp_path)
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=build) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(index_entries(tmp_path)) == 1
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_cli_build_info_clear(tmp_path: Path) -> None:
    runner = CliRunner()
    docs = str(QUICKSTART / "docs")
    cache = ["--cache", str(tmp_path)]
    first = runner.invoke(app, ["index", "build", docs, *cache])
    assert first.exit_code == 0, first.output
    assert "built in" in first.output
    second = runner.invoke(app, ["index", "build", docs, *cache])
    assert "already built" in second.output
    listed = runner.invoke(app, ["index", "info", *cache])
    assert "1 entries" in listed.output
    assert load_corpus(docs).fingerprint[:12] in listed.output
    meta = json.loads(next(tmp_path.glob("*/meta.json")).read_text())
    assert meta["kind"] == "spanchor.index"
    cleared = runner.invoke(app, ["index", "clear", *cache])
    assert "removed 1 entries" in cleared.output
    assert index_entries(tmp_path) == []


@pytest.mark.parametrize("suffix", [".jsonl"])
def test_evaluate_reads_a_jsonl_corpus(tmp_path: Path, suffix: str) -> None:
    corpus = load_corpus(QUICKSTART / "docs")
    path = tmp_path / f"corpus{suffix}"
    path.write_text(
        "".join(json.dumps({"_id": i, "text": corpus.text(i)}) + "\n" for i in corpus),
        encoding="utf-8",
    )
    runner = CliRunner()
    outputs: list[dict[str, object]] = []
    for docs in (str(QUICKSTART / "docs"), str(path)):
        out = tmp_path / f"eval{len(outputs)}.json"
        args = [docs, str(QUICKSTART / "gold.jsonl"), str(QUICKSTART / "runs/candidate.jsonl")]
        result = runner.invoke(app, ["evaluate", *args, "-o", str(out)])
        assert result.exit_code == 0, result.output
        data = json.loads(out.read_text())
        data.pop("created_at", None)
        outputs.append(data)
    assert outputs[0] == outputs[1]


def _resident_kib(path: Path) -> int | None:
    """Resident KiB of this process's mappings of ``path`` (None: not mapped at all)."""
    total, found, inside = 0, False, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and len(fields) >= 5:  # a mapping's header line
            inside = fields[-1] == str(path)
            found = found or inside
        elif inside and fields[:1] == ["Rss:"]:
            total += int(fields[1])
    return total if found else None


def _big_corpus() -> Corpus:
    # a few hundred kB, so that the index files span many pages
    words = [f"w{(i * 7919) % 5003}" for i in range(60_000)]
    return Corpus.from_texts({f"d{d}": " ".join(words[d::4]) for d in range(4)})


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="needs Linux's smaps")
def test_released_index_pages_leave_the_process_not_the_answers(tmp_path: Path) -> None:
    corpus = _big_corpus()
    requests = _requests(corpus)
    expected = Locator(corpus).locate_many(requests)
    persistent_locator(corpus, tmp_path)
    cached = persistent_locator(corpus, tmp_path)
    [entry] = index_entries(tmp_path)
    exact_file = (entry.path / "exact.npy").resolve()
    assert cached.locate_many(requests) == expected
    before = _resident_kib(exact_file)
    assert before is not None
    assert before > 0
    assert release_index_pages(cached) == 1 + 1 + 4  # exact, normalised and its four arrays
    assert _resident_kib(exact_file) == 0
    assert cached.locate_many(requests) == expected  # faulted in again from the file
    assert (_resident_kib(exact_file) or 0) > 0


def test_an_index_built_in_memory_is_left_alone() -> None:
    corpus = _big_corpus()
    locator = Locator(corpus)
    assert release_index_pages(locator) == 0  # nothing built yet
    locator.build_index(normalised=True)
    assert release_index_pages(locator) == 0


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="needs Linux's smaps")
def test_evaluate_file_gives_the_index_pages_back_after_mapping(tmp_path: Path) -> None:
    from spanchor_core.evaluate import evaluate_file
    from spanchor_core.gold import Anchor, GoldQuery, GoldSet
    from spanchor_core.runs import RetrievedResult, RunRecorder

    corpus = _big_corpus()
    text = corpus.text("d1")
    gold = GoldSet([GoldQuery("q1", "what", (Anchor.from_span(corpus, "d1", 100, 400),))])
    run = tmp_path / "run.jsonl"
    with RunRecorder(run) as recorder:
        pieces = [text[90 + 50 * i : 500 + 50 * i] for i in range(8)]
        results = [RetrievedResult(text=piece, rank=i + 1) for i, piece in enumerate(pieces)]
        recorder.record("what", results, query_id="q1")
    persistent_locator(corpus, tmp_path / "cache")
    cached = persistent_locator(corpus, tmp_path / "cache")
    [entry] = index_entries(tmp_path / "cache")
    exact_file = (entry.path / "exact.npy").resolve()
    plain = evaluate_file(corpus, gold, run, jobs=1)
    evaluation = evaluate_file(corpus, gold, run, locator=cached, jobs=1)
    assert evaluation.queries == plain.queries
    assert _resident_kib(exact_file) == 0
