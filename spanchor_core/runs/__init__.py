"""Run files: what a retriever returned for each query, and the recorder that writes them.

A run file is the contract between whoever ran the retriever (the LangChain and LlamaIndex
recorders, a user's script, a spanchor 0.x results file) and the gate. It is JSONL so that a
crashed process leaves every complete line readable and runs diff and stream well (spanchor
writes it compactly, without spaces; shown here with them)::

    {"kind": "spanchor.run", "schema_version": 1, "spanchor_version": "0.5.0", "created_at": ...,
     "retriever": {"description": ..., "parameters": {...}}, "corpus_fingerprint": ...,
     "gold_sha256": ..., "tags": {...}}
    {"query_id": "q1", "query": "...", "results": [{"rank": 1, "text": "...", "score": 0.8,
     "document_id": null, "start": null, "end": null, "metadata": {}}], "latency_ms": 3.1,
     "error": null}

Guarantees: a crash loses at most the line being written, and readers skip such a torn last
line (even one cut inside a multi-byte character) with one ``path:line`` warning; any number
of processes may append to one file; every other defect (bad JSON, duplicate keys, non-finite
numbers, negative latency, a line over 64 MiB) is a :class:`~spanchor_core.errors.RunError`
at ``path:line``.

The package follows the flow of a run, one concept a module:

* :mod:`~spanchor_core.runs.model`: the values (:class:`RetrievedResult`,
  :class:`RetrievalRecord`, :class:`Run`, :data:`Stage`);
* :mod:`~spanchor_core.runs.results`: plain result mappings, their field aliases and offset hints;
* :mod:`~spanchor_core.runs.file_models`: the pydantic models of the two line types and their
  JSON Schemas;
* :mod:`~spanchor_core.runs.encoding`: deterministic line encoding (keys in a fixed order,
  ``ensure_ascii=False``, no NaN, odd metadata converted, lone surrogates escaped);
* :mod:`~spanchor_core.runs.lines`, :mod:`~spanchor_core.runs.legacy` and
  :mod:`~spanchor_core.runs.read`: reading our lines, spanchor 0.x shapes, and the one format
  dispatch behind :func:`read_run` and :class:`RunStream`;
* :mod:`~spanchor_core.runs.write`: record lines and :func:`write_run`;
* :mod:`~spanchor_core.runs.query_ids`: :func:`resolve_query_ids` against a gold set;
* :mod:`~spanchor_core.runs.recorder`: :class:`RunRecorder`.

Results are sorted by ``rank`` (stably); a missing rank means list position, 1-based.
"""

from __future__ import annotations

from spanchor_core.runs.file_models import (
    RUN_KIND,
    RUN_SCHEMA_VERSION,
    RetrievalRecordModel,
    RetrievedResultModel,
    RetrieverInfo,
    RunHeader,
    run_file_schemas,
)
from spanchor_core.runs.model import STAGES, RetrievalRecord, RetrievedResult, Run, Stage
from spanchor_core.runs.query_ids import GoldLookup, resolve_query_ids, resolve_record
from spanchor_core.runs.read import RunStream, iter_run, read_run
from spanchor_core.runs.recorder import RunRecorder
from spanchor_core.runs.results import result_from_mapping
from spanchor_core.runs.write import write_run

__all__ = [
    "RUN_KIND",
    "RUN_SCHEMA_VERSION",
    "STAGES",
    "GoldLookup",
    "RetrievalRecord",
    "RetrievalRecordModel",
    "RetrievedResult",
    "RetrievedResultModel",
    "RetrieverInfo",
    "Run",
    "RunHeader",
    "RunRecorder",
    "RunStream",
    "Stage",
    "iter_run",
    "read_run",
    "resolve_query_ids",
    "resolve_record",
    "result_from_mapping",
    "run_file_schemas",
    "write_run",
]
