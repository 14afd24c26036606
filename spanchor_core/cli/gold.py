"""Commands for the candidate workflow: ``gold extract`` proposes evidence, ``gold list``
lists or searches it, ``gold review`` records decisions (one, or a file of them at once) and
``gold promote`` adds the approved ones to a gold set."""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Annotated

import typer

from spanchor_core.cli.console import GlobOption, err_console, globs, load_docs, out_console
from spanchor_core.cli.defaults import CANDIDATE_STATUSES
from spanchor_core.cli.errors import error_exit_code
from spanchor_core.exit_codes import ExitCode

__all__ = ["gold_app"]


gold_app = typer.Typer(
    help="Propose, review and promote candidate evidence into a gold set.", no_args_is_help=True
)


@gold_app.command("extract")
def gold_extract(
    docs: Annotated[Path, typer.Argument(help="Directory of source documents.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Candidates file to write.")],
    min_chars: Annotated[int, typer.Option(help="Shortest candidate.")] = 40,
    max_chars: Annotated[int, typer.Option(help="Longest candidate.")] = 400,
    glob: GlobOption = None,
) -> None:
    """Propose candidate evidence spans (sentences) from the documents, in linear time.

    Example: spanchor gold extract docs/ -o candidates.jsonl
    """
    from spanchor_core.authoring import propose_candidates, write_candidates
    from spanchor_core.authoring.candidates_file import CANDIDATES_KIND
    from spanchor_core.outputs import OutputPlan

    OutputPlan().read_documents(docs, globs(glob)).write(output, "-o", CANDIDATES_KIND).check()
    corpus = load_docs(docs, glob)
    candidates = propose_candidates(corpus, min_chars=min_chars, max_chars=max_chars)
    write_candidates(
        candidates,
        output,
        corpus_fingerprint=corpus.fingerprint,
        parameters={"min_chars": min_chars, "max_chars": max_chars},
    )
    out_console().print(f"wrote {len(candidates)} candidates to {output}", markup=False)


_ONE_DECISION_OPTIONS = (
    "--candidate",
    "--question",
    "--approve",
    "--reject",
    "--reason",
    "--edited-text",
    "--source-start",
    "--source-end",
)


@gold_app.command("review")
def gold_review(
    candidates: Annotated[Path, typer.Argument(help="Candidates file (from gold extract).")],
    candidate: Annotated[
        str | None,
        typer.Option(
            "-c",
            "--candidate",
            metavar="ID",
            help="The candidate to decide on (see spanchor gold list); or give --decisions.",
        ),
    ] = None,
    question: Annotated[
        str | None,
        typer.Option(
            "-q", "--question", metavar="TEXT", help="The question this evidence answers."
        ),
    ] = None,
    approve: Annotated[
        bool, typer.Option("-a", "--approve", help="Approve it (needs a question).")
    ] = False,
    reject: Annotated[bool, typer.Option("-r", "--reject", help="Reject it.")] = False,
    reason: Annotated[
        str | None,
        typer.Option(
            "--rejection-reason", "--reason", metavar="TEXT", help="Why (kept as a note)."
        ),
    ] = None,
    edited_text: Annotated[
        str | None,
        typer.Option(
            "--edited-text",
            metavar="TEXT",
            help="Narrow or move the evidence to this text (puts it back to pending unless "
            "--approve).",
        ),
    ] = None,
    source_start: Annotated[
        int | None,
        typer.Option(
            "-s", "--source-start", metavar="N", help="New start offset (with --source-end)."
        ),
    ] = None,
    source_end: Annotated[
        int | None,
        typer.Option(
            "-e", "--source-end", metavar="N", help="New end offset (with --source-start)."
        ),
    ] = None,
    decisions: Annotated[
        Path | None,
        typer.Option(
            "--decisions",
            metavar="FILE",
            help="Apply many decisions at once, all or none: a .jsonl file of objects "
            '{"candidate_id": ..., "decision": "approve"|"reject"|"edit", "question": ...} or '
            "a .csv file with those columns (also reason, edited_text, start, end); a gold list "
            "--json line with a decision added is one too.",
        ),
    ] = None,
    docs: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Documents, for edits beyond the proposed text."),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            metavar="FILE",
            help="Write the whole reviewed file here instead of appending the decision.",
        ),
    ] = None,
) -> None:
    """Approve, reject or edit candidates; each decision is appended to the candidates file.

    Example, one candidate: spanchor gold review candidates.jsonl -c "manual#3" -q "How hot?"
    --approve. Example, many at once: spanchor gold review candidates.jsonl --decisions
    decisions.csv (every line is checked first; if any is bad, each bad line is named and
    nothing is applied).
    """
    from spanchor_core._escape import escape_control
    from spanchor_core.authoring import review_candidate
    from spanchor_core.outputs import OutputPlan

    if decisions is not None:
        one = [candidate, question, reason, edited_text, source_start, source_end]
        if approve or reject or any(value is not None for value in one):
            raise typer.BadParameter(
                f"--decisions replaces {', '.join(_ONE_DECISION_OPTIONS)}: give one or the other"
            )
        _review_batch(candidates, decisions, docs, output)
        return
    if candidate is None:
        raise typer.BadParameter(
            "give the candidate to decide on with --candidate ID, or a file of decisions with "
            "--decisions FILE"
        )
    OutputPlan().read_documents(docs, globs(None)).edit(
        candidates, "the candidates file", "-o", output=output
    ).check()
    result = review_candidate(
        candidates,
        candidate,
        approve=approve,
        reject=reject,
        question=question,
        reason=reason,
        edited_text=edited_text,
        start=source_start,
        end=source_end,
        corpus=None if docs is None else load_docs(docs, None),
        output=output,
    )
    out_console().print(
        escape_control(
            f"{result.candidate_id}: {result.status.value} [{result.start}, {result.end})"
        ),
        markup=False,
    )


def _review_batch(
    candidates: Path, decisions: Path, docs: Path | None, output: Path | None
) -> None:
    """``gold review --decisions``: every bad line on stderr and exit 2, or one append."""
    from spanchor_core._escape import escape_control
    from spanchor_core.authoring import CandidateStatus
    from spanchor_core.authoring.decisions_file import read_decisions
    from spanchor_core.authoring.review import review_candidates
    from spanchor_core.outputs import OutputPlan

    OutputPlan().read_documents(docs, globs(None)).read(decisions, "the decisions file").edit(
        candidates, "the candidates file", "-o", output=output
    ).check()
    read, unreadable = read_decisions(decisions)
    corpus = None if docs is None else load_docs(docs, None)
    done = review_candidates(
        candidates,
        read,
        corpus=corpus,
        output=output,
        source=decisions,
        read_problems=unreadable,
    )
    if not done.applied:
        for problem in done.problems:
            error_exit_code(problem)
        err_console().print(
            f"nothing applied: {len(done.problems)} bad decision line(s) in {decisions}",
            markup=False,
        )
        raise typer.Exit(ExitCode.BAD_INPUT)
    counts = dict.fromkeys(CandidateStatus, 0)
    for cand in done.candidates:
        counts[cand.status] += 1
    states = ", ".join(f"{n} {status.value}" for status, n in counts.items() if n)
    out_console().print(
        escape_control(
            f"applied {done.decisions} decision(s) to {len(done.candidates)} candidate(s) "
            f"({states}) -> {output or candidates}"
        ),
        markup=False,
    )


_STATUSES = ", ".join(CANDIDATE_STATUSES)


@gold_app.command("list")
def gold_list(
    candidates: Annotated[Path, typer.Argument(help="Candidates file (from gold extract).")],
    status: Annotated[
        str | None,
        typer.Option(metavar="STATUS", help=f"Only candidates in this state: {_STATUSES}."),
    ] = None,
    search: Annotated[
        str | None,
        typer.Option(
            "--search", metavar="TEXT", help="Only candidates whose text holds TEXT (any case)."
        ),
    ] = None,
    question: Annotated[
        str | None,
        typer.Option(
            "--question",
            metavar="TEXT",
            help='Only candidates whose question holds TEXT; "" for those without one.',
        ),
    ] = None,
    document: Annotated[
        str | None, typer.Option("--doc", metavar="ID", help="Only this document's candidates.")
    ] = None,
    limit: Annotated[
        int, typer.Option(metavar="N", help="Show at most N (0: all); the count is of all.")
    ] = 20,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the candidates as JSON lines.")
    ] = False,
) -> None:
    """List or search the candidates of a candidates file, with their review state.

    Example: spanchor gold list candidates.jsonl --status pending --search warranty
    """
    from spanchor_core.authoring import CandidateStatus, read_candidates, select_candidates
    from spanchor_core.render.text import escape_control, one_line

    known = [s.value for s in CandidateStatus]
    if status is not None and status not in known:
        close = difflib.get_close_matches(status, known, n=1)
        guess = f" (did you mean {close[0]!r}?)" if close else ""
        raise typer.BadParameter(f"--status must be one of {_STATUSES}{guess}")
    if limit < 0:
        raise typer.BadParameter("--limit must be 0 (all) or more")
    chosen = select_candidates(
        read_candidates(candidates),
        status=None if status is None else CandidateStatus(status),
        text=search,
        question=question,
        document_id=document,
    )
    shown = chosen if limit == 0 else chosen[:limit]
    if as_json:
        for cand in shown:
            row = {
                "candidate_id": cand.candidate_id,
                "document_id": cand.document_id,
                "start": cand.start,
                "end": cand.end,
                "status": cand.status.value,
                "question": cand.question,
                "text": cand.text,
            }
            typer.echo(json.dumps(row, ensure_ascii=False))
        return
    console = out_console()
    width = max(console.width, 40)
    for cand in shown:
        asked = f" q: {cand.question}" if cand.question else ""
        head = f"{cand.candidate_id} [{cand.status.value}] [{cand.start}, {cand.end}){asked}"
        console.print(escape_control(head), markup=False, soft_wrap=True)
        console.print("    " + one_line(cand.text, width - 4), markup=False)
    more = f", showing {len(shown)}" if len(shown) < len(chosen) else ""
    err_console().print(f"{len(chosen)} candidate(s){more}", markup=False)


@gold_app.command("promote")
def gold_promote(
    candidates: Annotated[Path, typer.Argument(help="Reviewed candidates file.")],
    docs: Annotated[Path, typer.Argument(help="Directory of source documents.")],
    gold: Annotated[Path, typer.Option("--gold", help="Gold file to add to.")] = Path("gold.jsonl"),
    prefix: Annotated[str, typer.Option(help="Prefix of new query ids.")] = "q",
    glob: GlobOption = None,
) -> None:
    """Add every approved candidate to the gold set, re-checking its hash (idempotent).

    Example: spanchor gold promote candidates.jsonl docs/ --gold gold.jsonl
    """
    from spanchor_core._escape import escape_control
    from spanchor_core.authoring import promote_candidates
    from spanchor_core.outputs import OutputPlan

    OutputPlan().read_documents(docs, globs(glob)).read(candidates, "the candidates file").edit(
        gold, "the gold set", "--gold"
    ).check()
    report = promote_candidates(candidates, load_docs(docs, glob), gold, query_id_prefix=prefix)
    console = out_console()
    for cand, why in report.stale:
        console.print(escape_control(f"stale: {cand.candidate_id}: {why}"), markup=False)
    console.print(
        f"promoted {len(report.added)}, already in gold {len(report.already)}, "
        f"stale {len(report.stale)}, approved without question {len(report.missing_question)}, "
        f"pending {report.pending}, rejected {report.rejected}",
        markup=False,
    )
    if report.stale or report.missing_question:
        raise typer.Exit(ExitCode.BAD_INPUT)
