"""Scoring a run file: :func:`evaluate_file` opens the file and hands its records, as they are
read, to the streaming scorer (:func:`spanchor_core.evaluate.scoring.evaluate_stream`).

The one place of the evaluation step that opens a file; the scoring itself reads nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from spanchor_core.corpus import Corpus
from spanchor_core.evaluate.model import Evaluation, ProgressCallback
from spanchor_core.evaluate.scoring import evaluate_stream
from spanchor_core.gold import GoldSet
from spanchor_core.grouping import GroupRule
from spanchor_core.locate import Locator
from spanchor_core.metrics import DEFAULT_K, DEFAULT_MIN_OVERLAP
from spanchor_core.runs import RunStream, iter_run

__all__ = ["evaluate_file"]


def evaluate_file(
    corpus: Corpus,
    gold: GoldSet,
    run: str | os.PathLike[str] | RunStream,
    *,
    k: Sequence[int] = DEFAULT_K,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    locator: Locator | None = None,
    progress: ProgressCallback | None = None,
    batch_results: int = 5_000,
    group: GroupRule | str = "auto",
    jobs: int | None = None,
) -> Evaluation:
    """:func:`~spanchor_core.evaluate.evaluate` for a run file, read record by record.

    ``run`` is a path, or a stream already opened (the pipeline opens one to check the
    header's provenance first; its ``records_read`` then tells how many records there were).
    Everything else is :func:`~spanchor_core.evaluate.scoring.evaluate_stream`: the same
    answers as ``evaluate(corpus, gold, read_run(path))``, with far less memory, read and
    mapped on ``jobs`` processes (``None``: two for a large run where that is safe).
    """
    stream = run if isinstance(run, RunStream) else iter_run(run)
    return evaluate_stream(
        corpus,
        gold,
        stream,
        k=k,
        min_overlap=min_overlap,
        locator=locator,
        progress=progress,
        batch_results=batch_results,
        group=group,
        jobs=jobs,
    )
