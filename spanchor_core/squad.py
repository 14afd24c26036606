"""Old import path of :mod:`spanchor_core.importers` (SQuAD and spanchor 0.x gold import)."""

# transitional: used by spanchor_core.cli (`from spanchor_core.squad import ...`);
# delete this module once the CLI imports from spanchor_core.importers.

from spanchor_core.importers import (
    SQUAD_PROBLEM_CODES,
    SquadImport,
    SquadProblem,
    import_legacy_gold,
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
