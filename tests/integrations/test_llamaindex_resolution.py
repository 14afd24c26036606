"""Node ids resolve to documents and offsets; raw offsets; pickling; imports without the extra."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
import unicodedata
from pathlib import Path

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("llama_index.retrievers.bm25")

from llama_index.core import Document, SimpleDirectoryReader, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.evaluation import RetrieverEvaluator
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import BaseNode, TextNode

from spanchor_core import (
    Anchor,
    Corpus,
    GoldQuery,
    GoldSet,
    LocateRequest,
    Locator,
    MatchStatus,
    canonicalize,
    load_corpus,
)
from spanchor_llamaindex import (
    NodeConverter,
    SpanContext,
    SpanRecall,
    record_retrievals,
    register_span_metrics,
    span_metrics,
    tag_query,
)
from tests.integrations.test_llamaindex import clean_registry, llamaindex_sync_api  # noqa: F401  # fixtures

bm25 = pytest.importorskip("llama_index.retrievers.bm25")

ROOT = Path(__file__).resolve().parents[2]

# A filing that repeats itself (a common shape: a report quoting its own summary), and a
# second document that shares a paragraph with it: most node texts occur more than once.
SECTIONS = [
    "Revenue grew by twelve percent to four million euros in the fiscal year.",
    "Operating costs rose because the company hired forty new engineers.",
    "The board proposes a dividend of thirty cents per share for shareholders.",
    "Risks include currency movements and the supply of rare earth magnets.",
    "The auditors found no material weakness in internal controls this year.",
]
FILING = "\n\n".join(SECTIONS) + "\n\n" + "\n\n".join(SECTIONS)
PRESS = SECTIONS[2] + "\n\n" + "A new plant opens in the spring near the harbour."


def filing() -> tuple[Corpus, list[BaseNode]]:
    corpus = Corpus.from_texts({"filing": FILING, "press": PRESS})
    documents = [Document(text=corpus.text(d), id_=d, metadata={"document_id": d}) for d in corpus]
    splitter = SentenceSplitter(chunk_size=24, chunk_overlap=0, paragraph_separator="\n\n")
    return corpus, splitter.get_nodes_from_documents(documents)


QUESTIONS = {
    "q1": ("What dividend per share does the board propose?", 2),
    "q2": ("Which risks about currency and magnets are named?", 3),
    "q3": ("Did the auditors find a material weakness?", 4),
    "q4": ("How much did revenue grow in the fiscal year?", 0),
}


def second_occurrence_gold(corpus: Corpus) -> GoldSet:
    """Each query's evidence is its section's *second* occurrence in the filing."""
    queries = []
    for qid, (question, section) in QUESTIONS.items():
        text = SECTIONS[section]
        start = FILING.index(text, FILING.index(text) + 1)
        anchor = Anchor.from_span(corpus, "filing", start, start + len(text))
        queries.append(GoldQuery(qid, question, (anchor,)))
    return GoldSet(queries)


def _start(node: BaseNode) -> int:
    return int(getattr(node, "start_char_idx", None) or 0)


def _end(node: BaseNode) -> int:
    return int(getattr(node, "end_char_idx", None) or 0)


def independent_recall(gold: GoldQuery, nodes: list[BaseNode], k: int) -> float:
    """Recall computed here from the nodes' own document ids and offsets, nothing shared."""
    covered = {(node.ref_doc_id, i) for node in nodes[:k] for i in range(_start(node), _end(node))}
    wanted = {(a.document_id, i) for a in gold.anchors for i in range(a.start, a.end)}
    return len(wanted & covered) / len(wanted)


@pytest.mark.filterwarnings("ignore:There is no current event loop:DeprecationWarning")
@pytest.mark.usefixtures("clean_registry", "llamaindex_sync_api")
def test_node_ids_resolve_where_text_is_ambiguous() -> None:
    corpus, nodes = filing()
    texts = [n.get_content() for n in nodes]
    assert sum(len(corpus.find_all(t)) > 1 for t in texts) >= 5, "ambiguous by text"
    gold = second_occurrence_gold(corpus)
    by_id = {n.node_id: n for n in nodes}
    retriever = bm25.BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=4)
    names = ["span_recall@1", "span_recall@2", "span_recall@4"]
    register_span_metrics(corpus, gold, k=(1, 2, 4), nodes=nodes)
    evaluator = RetrieverEvaluator.from_metric_names(names, retriever=retriever)
    text_only = span_metrics(corpus, gold, k=(1, 2, 4), metrics=["recall"])
    disagreements = 0
    for qid, (question, _) in QUESTIONS.items():
        result = evaluator.evaluate(query=question, expected_ids=[])
        retrieved = [by_id[i] for i in result.retrieved_ids]
        for k in (1, 2, 4):
            value = result.metric_dict[f"span_recall@{k}"]
            assert value.score == pytest.approx(independent_recall(gold[qid], retrieved, k)), (
                qid,
                k,
            )
            assert value.metadata["located_by"] == "node_ids"
            assert value.metadata["gold_source"] == "gold_set"
        # Text alone puts every repeated chunk on its first occurrence: it disagrees.
        by_text = {
            m.metric_name: m.compute(question, [], None, None, result.retrieved_texts)
            for m in text_only
        }
        assert by_text["span_recall@4"].metadata["located_by"] == "texts"
        disagreements += by_text["span_recall@4"].score != result.metric_vals_dict["span_recall@4"]
    assert disagreements >= 3


class _HashEmbedding(BaseEmbedding):
    """A tiny deterministic bag-of-words embedding (offline, meaningful rankings)."""

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * 64
        for word in text.lower().split():
            vector[sum(map(ord, word)) % 64] += 1.0
        return vector

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)


def test_expected_ids_are_gold_when_the_context_knows_the_nodes() -> None:
    corpus, nodes = filing()
    index = VectorStoreIndex(nodes=nodes, embed_model=_HashEmbedding())
    context = SpanContext(corpus, nodes=index)  # the index's docstore
    second = [n for n in nodes if n.get_content() == SECTIONS[2]][1]  # the filing's 2nd copy
    assert second.ref_doc_id == "filing"
    evidence = context.gold_evidence("dividend?", [second.node_id])
    assert evidence.source == "expected_ids"
    start = FILING.index(SECTIONS[2], FILING.index(SECTIONS[2]) + 1)
    assert [tuple(s) for s in evidence.spans] == [("filing", start, start + len(SECTIONS[2]))]
    metric = SpanRecall(k=1, context=context)
    hit = metric.compute("dividend?", [second.node_id], [second.node_id], None, [SECTIONS[2]])
    assert hit.score == 1.0
    assert hit.metadata["located_by"] == "node_ids"
    first = next(n for n in nodes if n.get_content() == SECTIONS[2])
    miss = metric.compute("dividend?", [second.node_id], [first.node_id], None, [SECTIONS[2]])
    assert miss.score == 0.0, "the same text at the other occurrence is not the evidence"


# -- raw-file offsets ----------------------------------------------------------------------------

RAW = (
    "Cafe\u0301 au lait is served hot.\r\nThe kettle holds 1.7 litres.\r\n\r\n"
    "Descale it monthly with citric acid.\r\n"
) * 3


def test_raw_offsets_on_crlf_and_nfd_files_are_translated(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "menu.txt").write_bytes(RAW.encode("utf-8"))
    corpus = load_corpus(docs)
    assert corpus.text("menu") == canonicalize(RAW) != RAW
    documents = SimpleDirectoryReader(str(docs)).load_data()
    splitter = SentenceSplitter(chunk_size=36, chunk_overlap=0)
    nodes = splitter.get_nodes_from_documents(documents)
    assert len(nodes) > 6
    assert all(RAW[_start(n) : _end(n)] == n.get_content() for n in nodes)
    locator = Locator(corpus)

    def located(converter: NodeConverter) -> list[tuple[MatchStatus, bool]]:
        results = converter.results(nodes)
        requests = [LocateRequest(r.text, r.document_id, r.start, r.end) for r in results]
        return [(loc.status, loc.hint_rejected) for loc in locator.locate_many(requests)]

    translated = located(NodeConverter(corpus))
    assert translated == [(MatchStatus.VERIFIED, False)] * len(nodes)
    # Without the translation most raw offsets would be rejected against canonical text.
    untranslated = NodeConverter(corpus)
    untranslated._raw_map = lambda document_id: None  # type: ignore[method-assign]
    assert sum(rejected for _, rejected in located(untranslated)) > len(nodes) // 2
    for node, result in zip(nodes, NodeConverter(corpus).results(nodes), strict=True):
        canonical = corpus.text("menu")[int(result.start or 0) : int(result.end or 0)]
        assert canonical == unicodedata.normalize("NFC", node.get_content().replace("\r\n", "\n"))
    # Live recording translates too.
    retriever = bm25.BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=3)
    path = tmp_path / "run.jsonl"
    with record_retrievals(path, corpus=corpus), tag_query("q1"):
        retriever.retrieve("How much does the kettle hold?")
    from spanchor_core import read_run

    (record,) = read_run(path).records
    assert all(r.metadata.get("offsets") == "raw" for r in record.results)
    requests = [LocateRequest(r.text, r.document_id, r.start, r.end) for r in record.results]
    assert {loc.status for loc in locator.locate_many(requests)} == {MatchStatus.VERIFIED}


def test_offsets_that_are_not_raw_offsets_are_left_to_the_core(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "menu.txt").write_bytes(RAW.encode("utf-8"))
    corpus = load_corpus(docs)
    node = TextNode(
        text="The kettle holds 1.7 litres.",
        start_char_idx=3,
        end_char_idx=31,
        metadata={"document_id": "menu"},
    )
    result = NodeConverter(corpus).result(node, 1)
    assert (result.start, result.end) == (3, 31), "wrong either way: the core re-anchors"
    assert "offsets" not in result.metadata


# -- pickling ------------------------------------------------------------------------------------


@pytest.mark.usefixtures("clean_registry")
def test_span_metrics_survive_a_pickle_round_trip() -> None:
    corpus, nodes = filing()
    gold = second_occurrence_gold(corpus)
    second = [n for n in nodes if n.get_content() == SECTIONS[2]][1]
    args: tuple[str, list[str], list[str]] = (
        "What dividend per share does the board propose?",
        [],
        [second.node_id],
    )
    for metric in span_metrics(corpus, gold, k=(1, 3), nodes=nodes):
        copy = pickle.loads(pickle.dumps(metric))
        assert copy.metric_name == metric.metric_name
        before = metric.compute(*args, None, [SECTIONS[2]])
        after = copy.compute(*args, None, [SECTIONS[2]])
        assert (after.score, after.metadata) == (before.score, before.metadata)
    register_span_metrics(corpus, gold, k=(1,), nodes=nodes)
    from llama_index.core.evaluation.retrieval.metrics import METRIC_REGISTRY

    registered = METRIC_REGISTRY["span_recall@1"]()
    assert pickle.loads(pickle.dumps(registered)).compute(*args, None, [SECTIONS[2]]).score == 1.0


# -- packaging -----------------------------------------------------------------------------------


def test_importing_without_llama_index_names_the_extra() -> None:
    program = textwrap.dedent(
        """
        import sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "llama_index" or name.startswith("llama_index."):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None

        sys.meta_path.insert(0, Block())
        try:
            import spanchor_llamaindex
        except ImportError as err:
            print(type(err).__name__, err)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    )
    assert 'pip install "spanchor[llamaindex]"' in done.stdout
    assert done.stdout.startswith("ImportError spanchor_llamaindex needs llama-index-core")


def test_the_package_is_typed_and_every_module_is_small() -> None:
    package = ROOT / "integrations" / "spanchor_llamaindex"
    assert (package / "py.typed").is_file()
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in package.glob("*.py")}
    assert max(sizes.values()) <= 500, sizes
