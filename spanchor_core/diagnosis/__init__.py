"""Why a query regressed, and how good a chunking could ever be.

::

    lost.py            gold the baseline's top K covered and the candidate's does not
    causes.py          a cause per lost piece (missing > unmapped > split > rank > dropped)
    model.py           the diagnosis as data (causes per query, counts, splits) and its JSON
    regressions.py     causes for every regressed query of a Comparison, judged at its regressed K
    inventory.py       chunk inventories: every chunk of an index, mapped once onto the corpus
    inventory_file.py  the ``spanchor.chunks`` JSONL file (header line, one chunk a line)
    oracle.py          oracle recall@K (exact) and the chunking / ranking split of a metric change
    chunk_report.py    a chunking report without a retriever (rendered by render/chunks.py)

Layer: beside compare (imports spans, corpus, runs, locate, metrics, evaluate and compare
models; never render or cli). Only ``inventory_file`` reads or writes files.
"""

from __future__ import annotations

from spanchor_core.diagnosis.causes import (
    CAUSE_KINDS,
    Cause,
    CauseKind,
    CauseSummary,
    DroppedCause,
    MissingCause,
    RankCause,
    SplitCause,
    UnmappedCause,
    primary_cause,
    regression_causes,
    summarise,
)
from spanchor_core.diagnosis.chunk_report import (
    AnchorCut,
    ChunkReport,
    ChunkSizeStats,
    QueryChunking,
    chunk_report,
)
from spanchor_core.diagnosis.inventory import (
    Chunk,
    ChunkInventory,
    ChunkInventoryError,
    DocumentIdRule,
    LocatedChunk,
    MissingChunkInventory,
    chunks_from_dicts,
    chunks_from_documents,
    chunks_from_nodes,
    chunks_from_results,
    chunks_from_texts,
    map_inventory,
)
from spanchor_core.diagnosis.inventory_file import (
    CHUNKS_KIND,
    CHUNKS_SCHEMA_VERSION,
    INVENTORY_TAG,
    ChunkFile,
    ChunkLine,
    ChunksHeader,
    chunk_file_schemas,
    inventory_path,
    load_inventory,
    read_chunks,
    write_chunks,
)
from spanchor_core.diagnosis.lost import gold_pieces, lost_evidence
from spanchor_core.diagnosis.model import cause_from_json, diagnosis_from_json, redact_diagnosis
from spanchor_core.diagnosis.oracle import (
    MetricSplit,
    OracleRecall,
    QuerySplit,
    chunking_split,
    oracle_recall,
    oracle_recalls,
    split_change,
)
from spanchor_core.diagnosis.regressions import (
    QueryDiagnosis,
    RegressionDiagnosis,
    diagnose_regressions,
    diagnosis_cutoffs,
    with_diagnosis,
)

__all__ = [
    "CAUSE_KINDS",
    "CHUNKS_KIND",
    "CHUNKS_SCHEMA_VERSION",
    "INVENTORY_TAG",
    "AnchorCut",
    "Cause",
    "CauseKind",
    "CauseSummary",
    "Chunk",
    "ChunkFile",
    "ChunkInventory",
    "ChunkInventoryError",
    "ChunkLine",
    "ChunkReport",
    "ChunkSizeStats",
    "ChunksHeader",
    "DocumentIdRule",
    "DroppedCause",
    "LocatedChunk",
    "MetricSplit",
    "MissingCause",
    "MissingChunkInventory",
    "OracleRecall",
    "QueryChunking",
    "QueryDiagnosis",
    "QuerySplit",
    "RankCause",
    "RegressionDiagnosis",
    "SplitCause",
    "UnmappedCause",
    "cause_from_json",
    "chunk_file_schemas",
    "chunk_report",
    "chunking_split",
    "chunks_from_dicts",
    "chunks_from_documents",
    "chunks_from_nodes",
    "chunks_from_results",
    "chunks_from_texts",
    "diagnose_regressions",
    "diagnosis_cutoffs",
    "diagnosis_from_json",
    "gold_pieces",
    "inventory_path",
    "load_inventory",
    "lost_evidence",
    "map_inventory",
    "oracle_recall",
    "oracle_recalls",
    "primary_cause",
    "read_chunks",
    "redact_diagnosis",
    "regression_causes",
    "split_change",
    "summarise",
    "with_diagnosis",
    "write_chunks",
]
