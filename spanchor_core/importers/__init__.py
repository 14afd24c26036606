"""Importing gold sets made elsewhere: SQuAD-format files (:mod:`.squad`) and spanchor 0.x
gold files (:mod:`.legacy`).
"""

from spanchor_core.importers.legacy import import_legacy_gold
from spanchor_core.importers.squad import (
    SQUAD_PROBLEM_CODES,
    SquadImport,
    SquadProblem,
    import_squad,
    title_slug,
    write_squad_documents,
)

__all__ = [
    "SQUAD_PROBLEM_CODES",
    "SquadImport",
    "SquadProblem",
    "import_legacy_gold",
    "import_squad",
    "title_slug",
    "write_squad_documents",
]
