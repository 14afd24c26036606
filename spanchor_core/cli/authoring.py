"""Commands for authoring gold sets: ``locate``, ``anchor add / replace / remove``,
``query remove`` and ``check-corpus``; the candidate workflow (``gold extract / list / review /
promote``) is in :mod:`.gold`, re-exported here as ``gold_app``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from spanchor_core.cli.console import GlobOption, err_console, globs, load_docs, out_console
from spanchor_core.cli.gold import gold_app
from spanchor_core.exit_codes import ExitCode

__all__ = ["anchor_app", "check_corpus_command", "gold_app", "locate", "query_app"]


def locate(
    text: Annotated[str, typer.Argument(help="The text to find (canonicalised like the corpus).")],
    docs: Annotated[Path, typer.Argument(help="Directory of source documents.")],
    document: Annotated[
        str | None, typer.Option("--doc", metavar="ID", help="Only look in this document id.")
    ] = None,
    context: Annotated[int, typer.Option(help="Characters of context either side.")] = 80,
    glob: GlobOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the occurrences as JSON.")] = False,
) -> None:
    """Every occurrence of TEXT in the documents, with offsets and the anchor hash.

    Exits 1 when the text occurs nowhere (like grep). Example:
    spanchor locate "two-year warranty" docs/
    """
    from spanchor_core._escape import escape_control
    from spanchor_core.authoring import locate_text

    found = locate_text(load_docs(docs, glob), text, context=context, document_id=document)
    if as_json:
        rows = [
            {
                "document_id": o.document_id,
                "start": o.start,
                "end": o.end,
                "hash": o.sha256,
                "text": o.text,
                "whitespace_insensitive": o.whitespace_insensitive,
            }
            for o in found
        ]
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=2))
    else:
        console = out_console()
        for index, occ in enumerate(found, start=1):
            counter = f"[{index}/{len(found)}] " if len(found) > 1 else ""
            note = " (whitespace-insensitive)" if occ.whitespace_insensitive else ""
            console.print(
                f"{counter}{escape_control(occ.document_id)} [{occ.start}, {occ.end}) "
                f"sha256 {occ.sha256}{note}",
                markup=False,
            )
            console.print(
                "    " + escape_control(f"{occ.left}»{occ.text}«{occ.right}"),
                markup=False,
            )
        if not found:
            err_console().print("No matches found.")
    if not found:
        raise typer.Exit(1)  # like grep: not found (not a verdict of the gate)


anchor_app = typer.Typer(help="Author anchors in a gold set.", no_args_is_help=True)


_GoldOption = Annotated[Path, typer.Option("--gold", metavar="FILE", help="The gold file.")]


@anchor_app.command("add")
def anchor_add(
    query_id: Annotated[str, typer.Argument(help="Query id (new, or existing to add evidence).")],
    rest: Annotated[
        list[str],
        typer.Argument(
            metavar="[QUESTION] DOCS TEXT",
            help="The question (needed for a new query id; for an existing one it may be left "
            "out, or must match), the directory of source documents, and the evidence text "
            "exactly as in the document.",
            show_default=False,
        ),
    ],
    gold: Annotated[
        Path, typer.Option("--gold", metavar="FILE", help="Gold file to append to.")
    ] = Path("gold.jsonl"),
    occurrence: Annotated[
        int | None,
        typer.Option(help="Which occurrence (1-based, document id then offset order)."),
    ] = None,
    document: Annotated[
        str | None, typer.Option("--doc", metavar="ID", help="Only look in this document id.")
    ] = None,
    glob: GlobOption = None,
) -> None:
    """Append a validated anchor to a gold file (atomically), for a new or an existing query.

    Examples: spanchor anchor add q9 "How long is the warranty?" docs/ "two-year warranty"
    (a new query), spanchor anchor add q9 docs/ "parts and labour" (more evidence for q9).
    """
    from spanchor_core._escape import escape_control
    from spanchor_core.authoring import add_anchor
    from spanchor_core.outputs import OutputPlan

    if len(rest) not in (2, 3):
        raise typer.BadParameter(
            f"expected [QUESTION] DOCS TEXT after the query id, got {len(rest)} argument(s)",
            param_hint="'[QUESTION] DOCS TEXT'",
        )
    question = rest[0] if len(rest) == 3 else None
    docs, text = Path(rest[-2]), rest[-1]
    OutputPlan().read_documents(docs, globs(glob)).edit(gold, "the gold set", "--gold").check()
    query = add_anchor(
        gold,
        load_docs(docs, glob),
        query_id=query_id,
        question=question,
        text=text,
        document_id=document,
        occurrence=occurrence,
    )
    new = query.anchors[-1]
    out_console().print(
        escape_control(
            f"{query.query_id}: anchor {new.document_id} [{new.start}, {new.end}) sha256 "
            f"{new.hash} -> {gold} ({len(query.anchors)} anchor(s))"
        ),
        markup=False,
    )
    for number, other in enumerate(query.anchors[:-1], 1):
        if other.document_id == new.document_id and other.start < new.end and new.start < other.end:
            # Not an error (two pieces of evidence may share words), but usually a slip: recall
            # counts the shared characters once, yet full_evidence wants each anchor met.
            err_console().print(
                escape_control(
                    f"note: it overlaps anchor {number} {other.document_id} "
                    f"[{other.start}, {other.end}) (full_evidence needs each anchor met); if "
                    f"both are the same evidence, remove one with spanchor anchor remove "
                    f"{query.query_id} --index N"
                ),
                markup=False,
            )


@anchor_app.command("remove")
def anchor_remove(
    query_id: Annotated[str, typer.Argument(help="The query whose anchor to remove.")],
    gold: _GoldOption = Path("gold.jsonl"),
    index: Annotated[
        int | None,
        typer.Option(
            "--index", metavar="N", help="The query's N-th anchor (numbered from 1, file order)."
        ),
    ] = None,
    text: Annotated[
        str | None,
        typer.Option("--text", metavar="TEXT", help="The anchor whose text this is."),
    ] = None,
) -> None:
    """Remove one anchor of a query from the gold file (atomically).

    Name the anchor with --index N or --text TEXT. A query keeps at least one anchor: to drop
    its last one, remove the query (spanchor query remove). Example:
    spanchor anchor remove q9 --gold gold.jsonl --index 2
    """
    from spanchor_core._escape import escape_control
    from spanchor_core.authoring import remove_anchor

    done = remove_anchor(gold, query_id, index=index, text=text)
    gone = done.anchor
    out_console().print(
        escape_control(
            f"{query_id}: removed anchor {gone.document_id} [{gone.start}, {gone.end}) "
            f"-> {gold} ({len(done.query.anchors)} anchor(s) left)"
        ),
        markup=False,
    )


@anchor_app.command("replace")
def anchor_replace(
    query_id: Annotated[str, typer.Argument(help="The query whose anchor to replace.")],
    docs: Annotated[Path, typer.Argument(help="Directory of source documents.")],
    new_text: Annotated[
        str,
        typer.Argument(metavar="NEW_TEXT", help="The new evidence, exactly as in the document."),
    ],
    gold: _GoldOption = Path("gold.jsonl"),
    index: Annotated[
        int | None,
        typer.Option(
            "--index", metavar="N", help="Replace the query's N-th anchor (from 1, file order)."
        ),
    ] = None,
    old_text: Annotated[
        str | None,
        typer.Option("--text", metavar="TEXT", help="Replace the anchor whose text this is."),
    ] = None,
    occurrence: Annotated[
        int | None,
        typer.Option(metavar="N", help="Which occurrence of NEW_TEXT (from 1)."),
    ] = None,
    document: Annotated[
        str | None, typer.Option("--doc", metavar="ID", help="Only look in this document id.")
    ] = None,
    glob: GlobOption = None,
) -> None:
    """Replace one anchor of a query with new evidence, keeping the question (atomically).

    Name the old anchor with --index N or --text TEXT (not needed when the query has one).
    Example: spanchor anchor replace q9 docs/ "two-year warranty on parts" --index 1
    """
    from spanchor_core._escape import escape_control
    from spanchor_core.authoring import replace_anchor

    done = replace_anchor(
        gold,
        load_docs(docs, glob),
        query_id,
        text=new_text,
        index=index,
        old_text=old_text,
        document_id=document,
        occurrence=occurrence,
    )
    old, new = done.old, done.new
    out_console().print(
        escape_control(
            f"{query_id}: anchor {old.document_id} [{old.start}, {old.end}) -> "
            f"{new.document_id} [{new.start}, {new.end}) sha256 {new.hash} -> {gold}"
        ),
        markup=False,
    )


query_app = typer.Typer(help="Edit the queries of a gold set.", no_args_is_help=True)


@query_app.command("remove")
def query_remove(
    query_id: Annotated[str, typer.Argument(help="The query to remove.")],
    gold: _GoldOption = Path("gold.jsonl"),
) -> None:
    """Remove a query and all its anchors from the gold file (atomically).

    Example: spanchor query remove q9 --gold gold.jsonl
    """
    from spanchor_core._escape import escape_control
    from spanchor_core.authoring import remove_query

    query = remove_query(gold, query_id)
    out_console().print(
        escape_control(f"{query.query_id}: removed with {len(query.anchors)} anchor(s) -> {gold}"),
        markup=False,
    )


def check_corpus_command(
    docs: Annotated[Path, typer.Argument(help="Directory of (changed) source documents.")],
    gold: Annotated[Path, typer.Argument(help="Gold set written against an older version.")],
    fix: Annotated[
        bool, typer.Option("--fix", help="Rewrite anchors whose text moved (atomically).")
    ] = False,
    previous: Annotated[
        Path | None, typer.Option(help="The documents as they were, if you still have them.")
    ] = None,
    search: Annotated[
        str, typer.Option(help="Where to look for moved text: corpus, document or none.")
    ] = "corpus",
    glob: GlobOption = None,
) -> None:
    """Which anchors a changed corpus broke, and where their text moved (exit 2 if broken).

    With --fix, moved anchors are rewritten and the exit code is 0 when nothing is left
    broken. Example: spanchor check-corpus docs/ gold.jsonl --fix
    """
    from spanchor_core._escape import escape_control
    from spanchor_core.authoring import check_corpus, fix_gold
    from spanchor_core.gold import read_gold, write_gold
    from spanchor_core.outputs import OutputPlan

    if search not in ("corpus", "document", "none"):
        raise typer.BadParameter("--search must be corpus, document or none")
    plan = (
        OutputPlan()
        .read_documents(docs, globs(glob))
        .read_documents(previous, globs(glob), "a previous document")
    )
    if fix:
        plan.edit(gold, "the gold set", "GOLD").check()
    corpus = load_docs(docs, glob)
    gold_set = read_gold(gold)
    old = load_docs(previous, glob) if previous is not None else None
    check = check_corpus(gold_set, corpus, previous=old, search=search)  # type: ignore[arg-type]
    console = out_console()
    if check.healthy:
        console.print(
            f"Corpus healthy: {check.queries} queries, {check.anchors} anchors all match.",
            markup=False,
        )
        return
    for item in check.broken:
        where = f"{gold}:{item.line}: " if item.line is not None else f"{gold}: "
        target = ""
        if item.moved_to is not None:
            span = item.moved_to
            target = f" -> moved to {span.document_id} [{span.start}, {span.end})"
        console.print(
            escape_control(f"{where}{item.query_id}: {item.message} [{item.fate.value}]{target}"),
            markup=False,
        )
    for problem in check.problems:
        if problem.anchor is None:  # query-level problems; anchor ones are listed above
            console.print(
                escape_control(f"{gold}:{problem.line}: {problem.query_id}: {problem.message}"),
                markup=False,
            )
    console.print(
        f"{len(check.broken)} broken anchor(s): {len(check.moved)} moved, "
        f"{len(check.unresolved)} not recoverable",
        markup=False,
    )
    if fix and check.moved:
        write_gold(fix_gold(gold_set, check), gold)
        console.print(f"rewrote {len(check.moved)} anchor(s) in {gold}", markup=False)
    if not fix or check.unresolved:
        raise typer.Exit(ExitCode.BAD_INPUT)
