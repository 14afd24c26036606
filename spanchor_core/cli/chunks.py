"""``spanchor chunks report``: how well a chunking can serve a gold set, before any retriever.

One inventory, or two (``--against``) side by side to compare chunkers; the terminal gets the
summary, ``--markdown`` / ``--html`` / ``--json`` get the whole report (written atomically).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from spanchor_core.cli.console import GlobOption, load_docs, out_console, parse_k

__all__ = ["chunks_app", "report"]

chunks_app = typer.Typer(
    help="Chunk inventories: what a chunking could ever reach, whatever the ranking.",
    no_args_is_help=True,
)

_DEFAULT_K = "1,3,5,10,20"


def report(
    gold: Annotated[Path, typer.Argument(help="Gold set (JSONL).")],
    inventory: Annotated[Path, typer.Argument(help="Chunk inventory (spanchor.chunks JSONL).")],
    docs: Annotated[Path, typer.Argument(help="Directory of source documents.")],
    against: Annotated[
        list[Path] | None,
        typer.Option(
            "--against",
            metavar="INVENTORY",
            help="Another chunker's inventory, shown side by side (repeatable).",
        ),
    ] = None,
    k: Annotated[
        str, typer.Option("--k", metavar="K,...", help="Cutoffs for oracle recall@K.")
    ] = _DEFAULT_K,
    markdown: Annotated[Path | None, typer.Option("--markdown", help="Write Markdown.")] = None,
    html: Annotated[Path | None, typer.Option("--html", help="Write an HTML page.")] = None,
    as_json: Annotated[
        Path | None, typer.Option("--json", help="Write the report as JSON.")
    ] = None,
    glob: GlobOption = None,
) -> None:
    """Per query, how many chunks each gold anchor is cut into and the best recall@K any
    ranking could reach (oracle); chunk sizes; the queries no K can serve.

    Example: spanchor chunks report gold.jsonl chunks/windows-200.jsonl docs/ --against
    chunks/paragraphs.jsonl --html chunks.html
    """
    from spanchor_core.diagnosis import chunk_report, load_inventory
    from spanchor_core.gold import read_gold
    from spanchor_core.locate import Locator
    from spanchor_core.render.chunks import (
        chunk_report_html,
        chunk_report_json,
        chunk_report_lines,
        chunk_report_markdown,
    )
    from spanchor_core.render.files import write_html, write_report

    ks = parse_k(k)
    corpus = load_docs(docs, glob)
    gold_set = read_gold(gold)
    locator = Locator(corpus)
    paths = [inventory, *(against or [])]
    reports = []
    for path in paths:
        chunks = load_inventory(path, corpus, locator=locator)
        described = chunks.description or path.stem
        reports.append(chunk_report(corpus, gold_set, chunks, k=ks, description=described))
    names = [r.description for r in reports]
    if len(set(names)) < len(names):  # two inventories with one description: name by file
        names = [str(path) for path in paths]
    console = out_console()
    for line in chunk_report_lines(reports, names=names):
        console.print(line, markup=False)
    shown = reports[0] if len(reports) == 1 else reports
    if markdown is not None:
        write_report(chunk_report_markdown(shown, names=names), markdown)
        console.print(f"wrote {markdown}", markup=False)
    if html is not None:
        write_html(chunk_report_html(shown, names=names), html)
        console.print(f"wrote {html}", markup=False)
    if as_json is not None:
        write_report(chunk_report_json(shown, names=names), as_json, what="the JSON report")
        console.print(f"wrote {as_json}", markup=False)


chunks_app.command("report")(report)
