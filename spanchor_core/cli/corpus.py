"""Commands about the documents and the gold set as they are: ``info`` and ``validate``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from spanchor_core.cli.console import GlobOption, err_console, load_docs, out_console
from spanchor_core.errors import GoldError
from spanchor_core.exit_codes import ExitCode

__all__ = ["info", "validate"]


def info(
    docs: Annotated[Path, typer.Argument(help="Directory of source documents.")],
    glob: GlobOption = None,
) -> None:
    """Load a corpus and print its documents, size and fingerprint.

    Example: spanchor info examples/quickstart/docs
    """
    from spanchor_core._escape import escape_control

    corpus = load_docs(docs, glob)
    console = out_console()
    for document_id, doc in corpus.items():
        console.print(
            f"{escape_control(document_id)}\t{len(doc.text)} chars\t{doc.sha256[:12]}",
            markup=False,
        )
    console.print(
        f"{len(corpus)} documents, {corpus.total_chars} characters, "
        f"fingerprint {corpus.fingerprint}"
    )


def validate(
    docs: Annotated[Path, typer.Argument(help="Directory of source documents.")],
    gold: Annotated[Path, typer.Argument(help="Gold set (JSONL; spanchor 0.x files too).")],
    glob: GlobOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the problems as JSON.")] = False,
) -> None:
    """Check every anchor of a gold set against the documents; list every problem (exit 2).

    Example: spanchor validate docs/ gold.jsonl
    """
    from spanchor_core._escape import escape_control
    from spanchor_core.gold import validate_gold
    from spanchor_core.gold.validate import read_gold_checked

    corpus = load_docs(docs, glob)
    gold_set, malformed = read_gold_checked(gold)  # a bad line must not hide the others
    if not gold_set.entries and not malformed and not as_json:  # one line, as evaluate says it
        raise GoldError(
            "the gold set has no queries",
            path=gold,
            hint="add queries (`spanchor anchor add`) or point to the right file",
        )
    problems = sorted(
        [*malformed, *validate_gold(gold_set, corpus)],
        key=lambda p: (p.line is None, p.line or 0),
    )
    anchors = sum(len(query.anchors) for query in gold_set.entries)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "documents": len(corpus),
                    "queries": len(gold_set.entries),
                    "anchors": anchors,
                    "problems": [
                        {
                            "line": p.line,
                            "query_id": p.query_id,
                            "anchor": p.anchor,
                            "code": p.code,
                            "message": p.message,
                        }
                        for p in problems
                    ],
                },
                ensure_ascii=False,
                indent=2,
            )
        )
    else:
        err = err_console()
        for problem in problems:
            where = f"{gold}:{problem.line}: " if problem.line is not None else f"{gold}: "
            who = f"{problem.query_id}: " if problem.code != "malformed_line" else ""
            err.print(
                escape_control(f"{where}{who}{problem.message} [{problem.code}]"),
                markup=False,
            )
        for text, ids in gold_set.duplicate_questions().items():
            err.print(
                escape_control(
                    f"{gold}: warning: {len(ids)} queries ask the same question "
                    f"({', '.join(ids)}): {text[:60]!r}; records that carry no query id "
                    "cannot be told apart and stay unresolved [duplicate_question]"
                ),
                markup=False,
            )
        if problems:
            err.print(f"{len(problems)} problem(s) in {gold}", markup=False)
        else:
            out_console().print(
                f"Validated {len(corpus)} document(s), {len(gold_set.entries)} quer"
                f"{'y' if len(gold_set.entries) == 1 else 'ies'}, {anchors} anchor(s)"
            )
    if problems:
        raise typer.Exit(ExitCode.BAD_INPUT)
