"""Valid files of every kind the readers accept, written by the library's own writers (or, for
the spanchor 0.x shapes and SQuAD, in the shapes those tools write): the seeds the fuzz suite
mutates. Small on purpose (a few records each, some non-ASCII text so that a cut can land inside
a multi-byte character), built once per test session in a temporary directory."""

from __future__ import annotations

import functools
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from spanchor_core.authoring import propose_candidates, write_candidates
from spanchor_core.compare import compare, write_comparison
from spanchor_core.corpus import Corpus, sha256_text
from spanchor_core.evaluate import evaluate, write_evaluation
from spanchor_core.gold import GoldQuery, GoldSet, anchor_from_text, write_gold
from spanchor_core.runs import RetrievalRecord, RetrievedResult, Run, RunHeader, write_run

TEXTS = {
    "kettle": (
        "# Kettle\nFill the kettle to the MAX mark (1.7 litres). Boil it twice before use.\n"
        "Le café est prêt — 日本語のテキスト. Keep-warm holds 80 °C for thirty minutes.\n"
    ),
    "faq": "Q: Is it safe? A: Never immerse the base in water. Unplug it before cleaning.\n",
}

CORPUS = Corpus.from_texts(TEXTS)

_EVIDENCE = {
    "q1": ("How much water does the kettle hold?", ["the MAX mark (1.7 litres)"]),
    "q2": ("What about café?", ["Le café est prêt — 日本語のテキスト."]),
    "q3": ("Can I immerse it?", ["Never immerse the base in water.", "Unplug it"]),
}


def gold_set() -> GoldSet:
    return GoldSet(
        [
            GoldQuery(qid, question, tuple(anchor_from_text(CORPUS, text) for text in evidence))
            for qid, (question, evidence) in _EVIDENCE.items()
        ]
    )


def _run(shift: int) -> Run:
    records = []
    for number, (qid, (question, evidence)) in enumerate(_EVIDENCE.items()):
        results = [
            RetrievedResult(1, evidence[0][shift:], 0.75, metadata={"source": "kettle"}),
            RetrievedResult(2, "Boil it twice before use.", 0.5, "kettle", 63, 88),
        ]
        records.append(
            RetrievalRecord(
                qid, question, tuple(results), latency_ms=12.5 + number, stage="retrieval"
            )
        )
    header = RunHeader(corpus_fingerprint=CORPUS.fingerprint, tags={"fuzz": "é"})
    return Run(header=header, records=records)


@dataclass(frozen=True)
class Seeds:
    """Bytes of one valid file per shape."""

    gold: bytes
    gold_0x: bytes
    run: bytes
    run_again: bytes
    """``run`` recorded once more: the same lines, a moment of recording of its own (a copy
    that kept the original's would be the same recording, which the gate refuses)."""
    run_0x_object: bytes
    run_0x_jsonl: bytes
    run_0x_list: bytes
    evaluation: bytes
    evaluation_again: bytes
    """``evaluation`` of ``run_again``."""
    evaluation_0x: bytes
    comparison: bytes
    policy_json: bytes
    policy_0x_json: bytes
    policy_toml: bytes
    pyproject: bytes
    candidates: bytes
    squad: bytes


_OLD_RESULT = {"rank": 1, "score": 0.5, "document_id": "kettle", "text": "Le café", "start": 82}
_OLD_RESULT_END = {**_OLD_RESULT, "end": 89}

POLICY_TOML = """\
# a policy as TOML
[max_drop]
"recall@3" = 0.10
"hit@3" = 0.0

[aggregate."mean_recall@3"]
max_drop = 0.05

[bootstrap]
seed = 7
n_resamples = 200
"""

PYPROJECT = """\
[project]
name = "fuzzed"

[tool.spanchor]
docs = "docs"
gold = "gold.jsonl"
baseline = "runs/baseline.jsonl"
candidate = "runs/candidate.jsonl"
k = [1, 3]
max_unmapped_rate = 0.05
redact = false

[tool.spanchor.policy.max_drop]
"recall@3" = 0.10
"hit@3" = 0.0
"""


def _recorded_again(data: bytes) -> bytes:
    """``data`` (a run, or an evaluation holding its run header) with the run header's
    ``created_at`` moved to another moment: the first one after ``"kind":"spanchor.run"``."""
    at = data.index(b'"created_at"', data.index(b"spanchor.run"))
    start = data.index(b'"', data.index(b":", at)) + 1
    end = data.index(b'"', start)
    return data[:start] + b"2026-01-01T00:00:00.000Z" + data[end:]


def _jsonl(objects: Sequence[object]) -> bytes:
    return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in objects).encode()


@functools.cache
def seeds() -> Seeds:
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        gold = gold_set()
        write_gold(gold, root / "gold.jsonl")
        write_run(_run(0), root / "base.jsonl")
        write_run(_run(4), root / "cand.jsonl")
        base = evaluate(CORPUS, gold, _run(0), k=(1, 3))
        cand = evaluate(CORPUS, gold, _run(4), k=(1, 3))
        write_evaluation(base, root / "base.json")
        write_comparison(compare(base, cand), root / "comparison.json")
        write_candidates(
            propose_candidates(CORPUS, min_chars=10, max_chars=120),
            root / "candidates.jsonl",
            corpus_fingerprint=CORPUS.fingerprint,
            parameters={"min_chars": 10, "max_chars": 120},
        )
        files = {name: (root / name).read_bytes() for name in (
            "gold.jsonl", "base.jsonl", "base.json", "comparison.json", "candidates.jsonl"
        )}  # fmt: skip
    gold_0x = [
        {
            "schema_version": "0.1.0",
            "query_id": qid,
            "question": question,
            "anchors": [
                {
                    "document_id": a.document_id,
                    "start": a.start,
                    "end": a.end,
                    "expected_text_hash": a.hash,
                    "schema_version": "0.1.0",
                }
                for a in gold[qid].anchors
            ],
            "candidate_id": f"cand-{qid}",
        }
        for qid, (question, _) in _EVIDENCE.items()
    ]
    evaluation_0x = {
        "timestamp": "2024-01-15T10:00:00+00:00",
        "queries": gold_0x,
        "per_query_metrics": {
            "q1": {"recall@5": 0.5, "hit@5": 1, "iou": 0.25},
            "q2": {"recall@5": 1.0, "hit@5": 1, "iou": 0.75},
        },
        "aggregate_metrics": {"mean_recall@5": 0.75},
        "config": {"k": 5, "min_overlap": 0.4},
        "mapper_stats": {"MAPPED_EXACT": 7, "UNMAPPED": 1},
        "schema_version": "0.2.0",
        "corpus_hash": "sha256:abc",
        "gold_set_hash": "sha256:def",
    }
    squad = {
        "version": "1.1",
        "data": [
            {
                "title": "Kettle — café",
                "paragraphs": [
                    {
                        "context": TEXTS["kettle"],
                        "qas": [
                            {
                                "id": "s1",
                                "question": "How much?",
                                "answers": [
                                    {
                                        "text": "1.7 litres",
                                        "answer_start": TEXTS["kettle"].index("1.7 litres"),
                                    }
                                ],
                            },
                            {
                                "id": "s2",
                                "question": "Café?",
                                "answers": [
                                    {"text": "café", "answer_start": TEXTS["kettle"].index("café")}
                                ],
                                "is_impossible": False,
                            },
                        ],
                    }
                ],
            }
        ],
    }
    policy_json = {
        "kind": "spanchor.policy",
        "schema_version": 1,
        "max_drop": {"recall@3": 0.1, "hit@3": 0.0},
        "aggregate": {"mean_recall@3": {"max_drop": 0.05}},
        "bootstrap": {"seed": 3},
    }
    return Seeds(
        gold=files["gold.jsonl"],
        gold_0x=_jsonl(gold_0x),
        run=files["base.jsonl"],
        run_again=_recorded_again(files["base.jsonl"]),
        run_0x_object=json.dumps(
            {"q1": [_OLD_RESULT_END, {"text": "Unplug it", "score": 0.1}], "q2": []}, indent=2
        ).encode(),
        run_0x_jsonl=_jsonl(
            [
                {"query_id": "q1", "question": "How much?", "retrieved": [_OLD_RESULT_END]},
                {"query_id": "q2", "question": "Café?", "retrieved": [{"chunk": "x"}]},
            ]
        ),
        run_0x_list=json.dumps(
            [
                {"query_id": "q1", "question": "a", "retrieved": [_OLD_RESULT]},
                {"query_id": "q3", "question": "b", "retrieved": []},
            ]
        ).encode(),
        evaluation=files["base.json"],
        evaluation_again=_recorded_again(files["base.json"]),
        evaluation_0x=json.dumps(evaluation_0x, indent=1).encode(),
        comparison=files["comparison.json"],
        policy_json=json.dumps(policy_json, indent=2).encode(),
        policy_0x_json=json.dumps({"recall@5": 0.1, "hit@5": 0.0}).encode(),
        policy_toml=POLICY_TOML.encode(),
        pyproject=PYPROJECT.encode(),
        candidates=files["candidates.jsonl"],
        squad=json.dumps(squad, ensure_ascii=False).encode(),
    )


def hash_of(text: str) -> str:
    return sha256_text(text)
