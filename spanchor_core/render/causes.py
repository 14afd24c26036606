"""What every report says about why queries regressed: the diagnosis to show, its summary line,
each query's cause clauses and the chunking / ranking split lines, as plain text.

The renderers escape these strings themselves (Markdown, XML, HTML, terminal markup); nothing
here is markup. A comparison read from a file or produced by the gate carries its diagnosis;
for one made by :func:`~spanchor_core.compare.compare` the reports compute it when both
evaluations are given.
"""

from __future__ import annotations

from spanchor_core.compare import Comparison
from spanchor_core.diagnosis import RegressionDiagnosis, diagnose_regressions
from spanchor_core.evaluate import Evaluation

__all__ = ["cause_texts", "diagnosis_of", "split_lines", "why_line"]


def diagnosis_of(
    comparison: Comparison, baseline: Evaluation | None, candidate: Evaluation | None
) -> RegressionDiagnosis | None:
    """The comparison's own diagnosis, else one computed from both evaluations (else None)."""
    if comparison.diagnosis is not None:
        return comparison.diagnosis
    if baseline is None or candidate is None or not comparison.regressions():
        return None
    return diagnose_regressions(comparison, baseline, candidate)


def why_line(diagnosis: RegressionDiagnosis) -> str:
    """``"14 regressed: 12 split, 2 dropped"``."""
    return diagnosis.summary.line()


def cause_texts(diagnosis: RegressionDiagnosis | None, query_id: str) -> list[str]:
    """One clause per cause of ``query_id`` (none when it was not diagnosed)."""
    if diagnosis is None or query_id not in diagnosis:
        return []
    return [cause.describe() for cause in diagnosis[query_id].causes]


def split_lines(diagnosis: RegressionDiagnosis | None) -> list[str]:
    """``"recall@5 -0.12: -0.09 chunking (oracle 0.99 → 0.90), -0.03 ranking"`` per K."""
    if diagnosis is None:
        return []
    return [split.line() for split in diagnosis.splits if split.queries]
