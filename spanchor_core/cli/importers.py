"""``spanchor import``: gold sets from other formats (SQuAD, spanchor 0.x)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from spanchor_core.cli.console import out_console

__all__ = ["import_app"]

import_app = typer.Typer(help="Import gold sets from other formats.", no_args_is_help=True)


@import_app.command("squad")
def import_squad_command(
    source: Annotated[Path, typer.Argument(help="SQuAD-format JSON (v1.1 or v2).")],
    out: Annotated[Path, typer.Option("--out", help="Directory to write the documents to.")],
    gold: Annotated[Path, typer.Option("--gold", help="Gold file to write.")] = Path("gold.jsonl"),
    overwrite: Annotated[bool, typer.Option(help="Replace existing documents.")] = False,
) -> None:
    """Turn a SQuAD file into documents + a span gold set (answer offsets made canonical).

    Example: spanchor import squad xquad.hi.json --out docs/ --gold gold.jsonl
    """
    from spanchor_core._escape import escape_control
    from spanchor_core.gold import write_gold
    from spanchor_core.gold.model import GOLD_KIND
    from spanchor_core.importers import import_squad, write_squad_documents
    from spanchor_core.importers.squad import squad_document_paths
    from spanchor_core.outputs import OutputPlan

    imported = import_squad(source)
    plan = OutputPlan().read(source, "the SQuAD file").write(gold, "--gold", GOLD_KIND)
    for path in squad_document_paths(imported, out):
        plan.write(path, "--out")
    plan.check()
    write_squad_documents(imported, out, overwrite=overwrite)
    write_gold(imported.gold, gold)
    console = out_console()
    for problem in imported.problems:
        console.print(escape_control(f"{source}: {problem}"), markup=False)
    console.print(
        f"{imported.paragraphs} documents, {len(imported.gold)} queries, {imported.anchors} "
        f"anchors ({imported.shifted} with offsets translated to canonical text), "
        f"{len(imported.problems)} problem(s)",
        markup=False,
    )


@import_app.command("legacy")
def import_legacy_command(
    source: Annotated[Path, typer.Argument(help="spanchor 0.x gold file.")],
    gold: Annotated[Path, typer.Option("-o", "--output", help="Gold file to write.")],
) -> None:
    """Rewrite a spanchor 0.x gold file in the current format (0.x files are read as is too).

    Example: spanchor import legacy old-gold.jsonl -o gold.jsonl
    """
    from spanchor_core.gold import write_gold
    from spanchor_core.gold.model import GOLD_KIND
    from spanchor_core.importers import import_legacy_gold
    from spanchor_core.outputs import OutputPlan

    OutputPlan().read(source, "the 0.x gold file").write(gold, "-o", GOLD_KIND).check()
    converted = import_legacy_gold(source)
    write_gold(converted, gold)
    out_console().print(f"wrote {len(converted)} queries to {gold}", markup=False)
