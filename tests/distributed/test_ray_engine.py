"""The Ray engine on a real local cluster (2 CPUs, started once for the module): same bytes."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spanchor_core.cli.app import app
from spanchor_core.corpus import load_corpus
from spanchor_core.distributed import RayLocator, partition_bounds
from spanchor_core.evaluate import write_evaluation
from spanchor_core.locate import LocateRequest, Locator
from spanchor_core.pipeline import run_evaluation
from spanchor_core.spans import DocSpan

ray = pytest.importorskip("ray")

QUICKSTART = Path(__file__).parents[2] / "examples" / "quickstart"


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _without_timestamp(path: Path) -> bytes:
    data = json.loads(path.read_bytes())
    data.pop("created_at", None)
    return json.dumps(data, sort_keys=True).encode()


def test_partition_bounds_cover_in_order() -> None:
    assert partition_bounds(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert partition_bounds(2, 5) == [(0, 1), (1, 2)]
    assert partition_bounds(0, 3) == [(0, 0)]


@pytest.mark.usefixtures("cluster")
@pytest.mark.parametrize(
    ("workers", "partitions"),
    [
        (2, 5),
        # three actors asking for one CPU each on a 2-CPU cluster: the third would wait for ever
        # unless the workers share the CPUs
        (3, 6),
    ],
)
def test_quickstart_evaluation_is_byte_identical(
    tmp_path: Path, workers: int, partitions: int
) -> None:
    corpus = load_corpus(QUICKSTART / "docs")
    gold, run = QUICKSTART / "gold.jsonl", QUICKSTART / "runs" / "candidate.jsonl"
    single = run_evaluation(corpus, gold, run).evaluation
    locator = RayLocator(corpus, workers=workers, partitions=partitions, cache=tmp_path / "cache")
    distributed = run_evaluation(corpus, gold, run, locator=locator).evaluation
    assert len(set(locator.worker_pids())) == workers
    locator.shutdown()
    write_evaluation(single, tmp_path / "single.json")
    write_evaluation(distributed, tmp_path / "ray.json")
    assert _without_timestamp(tmp_path / "single.json") == _without_timestamp(tmp_path / "ray.json")


def _synthetic(path: Path, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    words = [f"w{rng.randrange(4000)}" for _ in range(60_000)]
    texts = [" ".join(words[i : i + 600]) for i in range(0, len(words), 600)]
    texts += texts[:5]  # copies in other documents: ambiguous text
    with path.open("w", encoding="utf-8") as out:
        for n, text in enumerate(texts):
            out.write(json.dumps({"_id": f"doc{n:03d}", "title": "", "text": text}) + "\n")
    return texts


@pytest.mark.usefixtures("cluster")
def test_every_kind_of_result_maps_the_same_on_many_partitions(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    _synthetic(path)
    corpus = load_corpus(path)
    rng = random.Random(3)
    ids = list(corpus)
    requests = []
    for _ in range(400):
        doc_id = rng.choice(ids)
        text = corpus.text(doc_id)
        start = rng.randrange(0, len(text) - 300)
        piece = text[start : start + rng.randrange(40, 300)]
        kind = rng.randrange(6)
        if kind == 0:
            requests.append(LocateRequest(piece))
        elif kind == 1:
            requests.append(LocateRequest(piece, document_id=doc_id, start=start + 3))
        elif kind == 2:
            requests.append(LocateRequest(piece.upper().replace(" ", "  ")))
        elif kind == 3:
            requests.append(LocateRequest(piece[:10] + "XYZ" + piece[13:]))
        elif kind == 4:
            requests.append(LocateRequest(piece, prefer=(DocSpan(doc_id, start, start + 50),)))
        else:
            requests.append(LocateRequest("no such text anywhere " + str(rng.random())))
    expected = Locator(corpus).locate_many(requests)
    locator = RayLocator(corpus, source=path, workers=2, partitions=7, cache=tmp_path / "c")
    assert locator.locate_many(requests) == expected
    locator.shutdown()


@pytest.mark.usefixtures("cluster")
def test_cli_evaluate_on_ray(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPANCHOR_INDEX_CACHE", str(tmp_path / "cache"))
    args = [str(QUICKSTART / p) for p in ("docs", "gold.jsonl", "runs/candidate.jsonl")]
    runner = CliRunner()
    plain = runner.invoke(app, ["evaluate", *args, "-o", str(tmp_path / "a.json")])
    assert plain.exit_code == 0, plain.output
    on_ray = runner.invoke(
        app, ["evaluate", *args, "--ray", "local", "-o", str(tmp_path / "b.json")]
    )
    assert on_ray.exit_code == 0, on_ray.output
    assert _without_timestamp(tmp_path / "a.json") == _without_timestamp(tmp_path / "b.json")


@pytest.mark.usefixtures("cluster")
@pytest.mark.parametrize("from_file", [True, False])
def test_sharded_corpus_maps_the_same(tmp_path: Path, from_file: bool) -> None:
    path = tmp_path / "corpus.jsonl"
    _synthetic(path, seed=11)
    corpus = load_corpus(path)
    rng = random.Random(5)
    ids = list(corpus)
    requests = []
    for n in range(300):
        doc_id = rng.choice(ids)
        text = corpus.text(doc_id)
        start = rng.randrange(0, len(text) - 200)
        piece = text[start : start + 150]
        if n % 4 == 0:  # offsets that verify: decided on the shard
            requests.append(LocateRequest(piece, document_id=doc_id, start=start))
        elif n % 4 == 1:  # explicit spans, some out of bounds or in unknown documents
            named = doc_id if n % 3 else "missing-doc"
            requests.append(LocateRequest(None, named, start, start + rng.choice([50, 10**7])))
        elif n % 4 == 2:  # offsets that do not verify: searched on the mapping actors
            requests.append(LocateRequest(piece, document_id=doc_id, start=start + 1))
        else:  # text only
            requests.append(LocateRequest(piece))
    expected = Locator(corpus).locate_many(requests)
    locator = RayLocator(
        corpus, source=path if from_file else None, workers=1, shards=4, cache=tmp_path / "c"
    )
    assert locator.locate_many(requests) == expected
    locator.shutdown()
    offsets_only = requests[::4]
    shard_only = RayLocator(corpus, source=path if from_file else None, shards=4)
    assert shard_only.locate_many(offsets_only) == Locator(corpus).locate_many(offsets_only)
    assert shard_only._actors == []  # no mapping actor, no index was needed
    shard_only.shutdown()
