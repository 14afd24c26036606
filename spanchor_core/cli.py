"""The ``spanchor`` command line: a thin typer layer over the library.

Each command parses its arguments, calls one library function and renders the result.
Errors the user can fix (:class:`~spanchor_core.errors.InputError`) become one line on
stderr and exit code 2; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from spanchor_core._version import __version__
from spanchor_core.authoring import (
    add_anchor,
    check_corpus,
    fix_gold,
    locate_text,
    promote_candidates,
    propose_candidates,
    review_candidate,
    write_candidates,
)
from spanchor_core.compare import ChangeStatus, Comparison, write_comparison
from spanchor_core.corpus import DEFAULT_GLOBS, Corpus, load_corpus
from spanchor_core.errors import InputError, SpanchorError
from spanchor_core.evaluate import (
    Evaluation,
    ProgressCallback,
    check_gold,
    check_run_provenance,
    evaluate_file,
    write_evaluation,
)
from spanchor_core.gate import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_UNMAPPED,
    GateConfig,
    GateOutcome,
    gate_config_from_pyproject,
    run_gate,
)
from spanchor_core.gold import read_gold, validate_gold, write_gold
from spanchor_core.html_report import comparison_html, write_html
from spanchor_core.metrics import DEFAULT_K, DEFAULT_METRICS, DEFAULT_MIN_OVERLAP, split_metric_name
from spanchor_core.policy import Policy, load_policy, policy_from_mapping
from spanchor_core.reports import (
    comparison_junit,
    comparison_markdown,
    evaluation_markdown,
    write_report,
)
from spanchor_core.runs import iter_run
from spanchor_core.squad import import_legacy_gold, import_squad, write_squad_documents

__all__ = ["EXIT_BAD_INPUT", "EXIT_OK", "EXIT_REGRESSION", "EXIT_UNMAPPED", "app", "main"]


app = typer.Typer(
    name="spanchor",
    help="Regression-test RAG retrieval against source-document anchors.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
_state = {"debug": False}


def _console() -> Console:
    return Console(highlight=False, soft_wrap=True, emoji=False)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"spanchor {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    _state["debug"] = debug


GlobOption = Annotated[
    list[str] | None,
    typer.Option("--glob", help="File pattern under DOCS (repeatable). Default: *.txt and *.md."),
]


@app.command()
def info(
    docs: Annotated[Path, typer.Argument(help="Directory of source documents.")],
    glob: GlobOption = None,
) -> None:
    """Load a corpus and print its documents, size and fingerprint.

    Example: spanchor info examples/quickstart/docs
    """
    corpus = load_corpus(docs, globs=tuple(glob) if glob else DEFAULT_GLOBS)
    console = _console()
    for document_id, doc in corpus.items():
        console.print(f"{document_id}\t{len(doc.text)} chars\t{doc.sha256[:12]}", markup=False)
    console.print(
        f"{len(corpus)} documents, {corpus.total_chars} characters, "
        f"fingerprint {corpus.fingerprint}"
    )


@contextmanager
def _progress(quiet: bool) -> Iterator[Callable[[str], ProgressCallback | None]]:
    """Progress bars on stderr for long evaluations; nothing unless stderr is a terminal."""
    err = _err_console()
    if quiet or not err.is_terminal:
        yield lambda label: None
        return
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bars:

        def for_side(label: str) -> ProgressCallback:
            tasks: dict[str, TaskID] = {}

            def update(phase: str, done: int, total: int) -> None:
                if phase not in tasks:
                    verb = "mapping results" if phase == "map" else "scoring queries"
                    tasks[phase] = bars.add_task(f"{label}: {verb}", total=total or None)
                bars.update(tasks[phase], completed=done, total=total or None)

            return update

        yield for_side


def _err_console() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)


@app.command()
def validate(
    docs: Annotated[Path, typer.Argument(help="Directory of source documents.")],
    gold: Annotated[Path, typer.Argument(help="Gold set (JSONL; spanchor 0.x files too).")],
    glob: GlobOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the problems as JSON.")] = False,
) -> None:
    """Check every anchor of a gold set against the documents; list every problem (exit 2).

    Example: spanchor validate docs/ gold.jsonl
    """
    corpus = load_corpus(docs, globs=tuple(glob) if glob else DEFAULT_GLOBS)
    gold_set = read_gold(gold)
    problems = validate_gold(gold_set, corpus)
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
        err = _err_console()
        for problem in problems:
            where = f"{gold}:{problem.line}: " if problem.line is not None else f"{gold}: "
            err.print(
                f"{where}{problem.query_id}: {problem.message} [{problem.code}]", markup=False
            )
        if problems:
            err.print(f"{len(problems)} problem(s) in {gold}", markup=False)
        else:
            _console().print(
                f"Validated {len(corpus)} document(s), {len(gold_set.entries)} quer"
                f"{'y' if len(gold_set.entries) == 1 else 'ies'}, {anchors} anchor(s)"
            )
    if problems:
        raise typer.Exit(EXIT_BAD_INPUT)


def _parse_k(value: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(part) for part in value.replace(" ", "").split(",") if part)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a K or a comma-separated list of K") from None
    if not ks or any(k < 1 for k in ks):
        raise typer.BadParameter("K values must be positive integers, e.g. --k 5 or --k 1,3,5,10")
    return tuple(sorted(set(ks)))


def _evaluation_table(evaluation: Evaluation) -> Table:
    """Aggregate means as a metric × K grid, plus the whole-list metrics."""
    ks = evaluation.settings.k
    table = Table(title=f"{len(evaluation)} queries", title_justify="left")
    table.add_column("metric")
    for k in ks:
        table.add_column(f"@{k}", justify="right")
    families: dict[str, dict[int, float]] = {}
    whole: dict[str, float] = {}
    for name in evaluation.metric_names:
        family, cutoff = split_metric_name(name)
        metric = DEFAULT_METRICS.get(family)
        if metric is not None and not metric.score:
            continue
        if cutoff is None:
            whole[family] = evaluation.mean(name)
        else:
            families.setdefault(family, {})[cutoff] = evaluation.mean(name)
    for family, by_k in families.items():
        table.add_row(family, *(f"{by_k[k]:.3f}" if k in by_k else "" for k in ks))
    for family, value in whole.items():
        table.add_row(f"{family} (all ranks)", f"{value:.3f}", *([""] * (len(ks) - 1)))
    return table


def _mapping_line(evaluation: Evaluation) -> str:
    stats = evaluation.mapping
    parts = [f"{status} {count}" for status, count in stats.counts.items() if count]
    if stats.hint_rejected:
        parts.append(f"wrong offsets re-anchored {stats.hint_rejected}")
    return (
        f"mapping: {stats.total} results — {', '.join(parts) or 'none'}; "
        f"unmapped rate {stats.unmapped_rate:.1%}"
    )


def _coverage_line(evaluation: Evaluation) -> str:
    parts = [f"queries: {len(evaluation)} scored"]
    for label, items in (
        ("missing from the run (scored 0)", evaluation.missing_in_run),
        ("run records not in the gold set", evaluation.not_in_gold),
        ("unresolved query texts", evaluation.unresolved),
        ("duplicate records (last kept)", evaluation.duplicates),
        ("failed retrievals (scored 0)", evaluation.errors),
        ("skipped gold queries", tuple(evaluation.skipped)),
    ):
        if items:
            parts.append(f"{len(items)} {label}")
    return ", ".join(parts)


@app.command()
def evaluate(
    docs: Annotated[Path, typer.Argument(help="Directory of source documents.")],
    gold: Annotated[Path, typer.Argument(help="Gold set (JSONL; spanchor 0.x files too).")],
    run: Annotated[Path, typer.Argument(help="Run or results file to score.")],
    k: Annotated[
        str, typer.Option("--k", help="Cutoff(s): one K or a comma-separated list, e.g. 1,3,5,10.")
    ] = ",".join(str(value) for value in DEFAULT_K),
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write the evaluation JSON here.")
    ] = None,
    report: Annotated[
        Path | None, typer.Option("-r", "--report", help="Write a Markdown report here.")
    ] = None,
    redact: Annotated[
        bool, typer.Option("--redact", help="Leave questions and evidence text out of reports.")
    ] = False,
    min_overlap: Annotated[
        float,
        typer.Option(help="Fraction of an anchor that must be covered for hit / full evidence."),
    ] = DEFAULT_MIN_OVERLAP,
    max_unmapped_rate: Annotated[
        float,
        typer.Option(help="Exit 3 when more than this fraction of results cannot be mapped."),
    ] = 0.1,
    glob: GlobOption = None,
    allow_mismatch: Annotated[
        bool,
        typer.Option(help="Score a run recorded against another corpus or gold-set version."),
    ] = False,
    gold_set_hash: Annotated[
        str | None,
        typer.Option(
            help="Expected gold-set hash (ours, or spanchor 0.x's 'sha256:...' form).",
        ),
    ] = None,
    corpus_mismatch_policy: Annotated[
        str,
        typer.Option(help="When --gold-set-hash does not match: warn, fail (exit 2) or ignore."),
    ] = "warn",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only problems.")] = False,
) -> None:
    """Map a run's results onto the documents and score every gold query.

    Example: spanchor evaluate docs/ gold.jsonl runs/candidate.jsonl --k 1,3,5,10 -o eval.json
    """
    ks = _parse_k(k)
    if not 0.0 <= max_unmapped_rate <= 1.0:
        raise typer.BadParameter("--max-unmapped-rate must be between 0 and 1")
    corpus = load_corpus(docs, globs=tuple(glob) if glob else DEFAULT_GLOBS)
    gold_set = read_gold(gold)
    if corpus_mismatch_policy not in ("warn", "fail", "ignore"):
        raise typer.BadParameter("--corpus-mismatch-policy must be warn, fail or ignore")
    if gold_set_hash is not None and corpus_mismatch_policy != "ignore":
        known = {gold_set.sha256, gold_set.legacy_sha256, f"sha256:{gold_set.sha256}"}
        if gold_set_hash not in known:
            message = (
                f"the gold set's hash is {gold_set.sha256} (0.x form {gold_set.legacy_sha256}),"
                f" not {gold_set_hash}"
            )
            if corpus_mismatch_policy == "fail":
                raise InputError(message, path=gold, hint="evaluate against the expected gold set")
            _err_console().print(f"warning: {message}", markup=False)
    check_gold(gold_set, corpus)
    run_data = iter_run(run)  # the header now, the records while evaluating
    if not allow_mismatch:
        check_run_provenance(run_data, corpus, gold_set)
    with _progress(quiet) as progress:
        evaluation = evaluate_file(
            corpus,
            gold_set,
            run_data,
            k=ks,
            min_overlap=min_overlap,
            progress=progress(run.name),
        )
    if run_data.records_read and len(evaluation.missing_in_run) == len(evaluation):
        raise InputError(
            f"none of the run's {run_data.records_read} records matches a query of {gold}",
            path=run,
            hint="check that the run was recorded for this gold set",
        )
    if output is not None:
        write_evaluation(evaluation, output)
    if report is not None:
        write_report(evaluation_markdown(evaluation, gold_set, redact=redact), report)
    console = _console()
    err = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)
    if not quiet:
        console.print(_evaluation_table(evaluation))
        console.print(_mapping_line(evaluation), markup=False)
        console.print(_coverage_line(evaluation), markup=False)
        if output is not None:
            console.print(f"wrote {output}", markup=False)
    for warning in evaluation.warnings:
        err.print(f"warning: {escape(warning)}")
    rate = evaluation.mapping.unmapped_rate
    if rate > max_unmapped_rate:
        err.print(
            f"unmapped rate {rate:.1%} exceeds --max-unmapped-rate {max_unmapped_rate:.1%}: "
            "check that the run was made from these documents"
        )
        raise typer.Exit(EXIT_UNMAPPED)


def _comparison_tables(comparison: Comparison, limit: int = 20) -> list[Table]:
    """The regressions (worst first) and the aggregate deltas with their intervals."""
    tables: list[Table] = []
    regressions = sorted(
        (row for row in comparison.queries if row.status is ChangeStatus.REGRESSION),
        key=lambda row: (-row.severity, row.query_id),
    )
    if regressions:
        table = Table(title="regressions (worst first)", title_justify="left")
        for column in ("query", "metric", "baseline", "candidate", "delta"):
            table.add_column(column, justify="left" if column in ("query", "metric") else "right")
        for row in regressions[:limit]:
            for metric in row.regressed:
                change = row.change(metric)
                flaky = " (flaky)" if row.flaky else ""
                table.add_row(
                    escape(row.query_id + flaky),
                    escape(metric),
                    f"{change.baseline:.3f}",
                    f"{change.candidate:.3f}",
                    f"{change.delta:+.3f}",
                )
        if len(regressions) > limit:
            table.caption = f"… and {len(regressions) - limit} more"
        tables.append(table)
    aggregates = Table(title="aggregates", title_justify="left")
    for column in ("metric", "baseline", "candidate", "delta", "95% CI", "p"):
        aggregates.add_column(column, justify="left" if column == "metric" else "right")
    for agg in comparison.aggregates:
        interval = (
            f"[{agg.ci_low:+.3f}, {agg.ci_high:+.3f}]"
            if agg.ci_low is not None and agg.ci_high is not None
            else ""
        )
        aggregates.add_row(
            escape(agg.metric),
            "" if agg.baseline_mean is None else f"{agg.baseline_mean:.3f}",
            "" if agg.candidate_mean is None else f"{agg.candidate_mean:.3f}",
            "" if agg.delta is None else f"{agg.delta:+.3f}",
            interval,
            "" if agg.p_value is None else f"{agg.p_value:.3g}",
        )
    tables.append(aggregates)
    return tables


def _print_comparison(comparison: Comparison, quiet: bool) -> None:
    console = _console()
    counts = comparison.counts
    verdict = "[bold green]PASS[/]" if comparison.passed else "[bold red]FAIL[/]"
    if not quiet:
        for table in _comparison_tables(comparison):
            console.print(table)
    for finding in comparison.findings:
        colour = "red" if finding.severity == "error" else "yellow"
        console.print(f"[{colour}]{finding.severity}[/]: {escape(finding.message)}")
    console.print(
        f"{verdict}: {counts['compared']} queries compared — {counts['regressed']} regressed, "
        f"{counts['improved']} improved, {counts['unchanged']} unchanged"
    )


def _policy_with_overrides(
    policy_path: Path | None, max_recall_drop: float | None, max_precision_drop: float | None
) -> Policy | None:
    """The policy file, with spanchor 0.x's --max-recall-drop/--max-precision-drop on top.

    As in 0.x the two flags gate ``recall@5`` and ``precision@5`` and win over the file.
    """
    policy = load_policy(policy_path) if policy_path is not None else None
    extra = {
        name: value
        for name, value in (("recall@5", max_recall_drop), ("precision@5", max_precision_drop))
        if value is not None
    }
    if not extra:
        return policy
    if policy is None:
        return policy_from_mapping({"max_drop": extra})
    data = policy.model_dump()
    data["max_drop"] = {**data["max_drop"], **extra}
    return policy_from_mapping(data)


def _write_outputs(
    outcome: GateOutcome,
    *,
    json_path: Path | None,
    report: Path | None,
    junit: Path | None,
    html: Path | None,
    redact: bool,
) -> None:
    if json_path is not None:
        write_comparison(outcome.comparison, json_path)
    if report is not None:
        text = comparison_markdown(
            outcome.comparison,
            baseline=outcome.baseline,
            candidate=outcome.candidate,
            gold=outcome.gold,
            corpus=outcome.corpus,
            redact=redact,
        )
        write_report(text, report)
    if junit is not None:
        write_report(comparison_junit(outcome.comparison, redact=redact), junit)
    if html is not None:
        page = comparison_html(
            outcome.comparison,
            baseline=outcome.baseline,
            candidate=outcome.candidate,
            gold=outcome.gold,
            corpus=outcome.corpus,
            redact=redact,
        )
        write_html(page, html)


@app.command("compare")
def compare_command(
    baseline: Annotated[Path, typer.Argument(help="Baseline evaluation or run file.")],
    candidate: Annotated[Path, typer.Argument(help="Candidate evaluation or run file.")],
    policy: Annotated[
        Path | None, typer.Option("--policy", help="Policy file: JSON, TOML or pyproject.toml.")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write the comparison JSON here.")
    ] = None,
    report: Annotated[
        Path | None, typer.Option("-r", "--report", help="Write a Markdown report here.")
    ] = None,
    junit: Annotated[
        Path | None, typer.Option("--junit", help="Write JUnit XML (one test case per query).")
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option("--html", help="Write a self-contained HTML report with plots."),
    ] = None,
    redact: Annotated[
        bool, typer.Option("--redact", help="Leave questions and evidence text out of reports.")
    ] = False,
    max_recall_drop: Annotated[
        float | None, typer.Option(help="Largest allowed per-query drop of recall@5.")
    ] = None,
    max_precision_drop: Annotated[
        float | None, typer.Option(help="Largest allowed per-query drop of precision@5.")
    ] = None,
    docs: Annotated[
        Path | None, typer.Option(help="Documents, when BASELINE/CANDIDATE are run files.")
    ] = None,
    gold: Annotated[
        Path | None, typer.Option(help="Gold set, when BASELINE/CANDIDATE are run files.")
    ] = None,
    k: Annotated[
        str, typer.Option("--k", help="Cutoffs used when evaluating run files.")
    ] = ",".join(str(value) for value in DEFAULT_K),
    seed: Annotated[
        int | None, typer.Option(help="Bootstrap seed (default: the policy's).")
    ] = None,
    glob: GlobOption = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the verdict.")] = False,
) -> None:
    """Compare a candidate with a baseline; exit 1 on any regression.

    Example: spanchor compare base.json cand.json --policy policy.json -o comparison.json
    """
    config = GateConfig(
        docs=docs,
        gold=gold,
        baseline=baseline,
        candidate=candidate,
        k=_parse_k(k),
        globs=tuple(glob) if glob else DEFAULT_GLOBS,
        seed=seed,
    )
    chosen = _policy_with_overrides(policy, max_recall_drop, max_precision_drop)
    with _progress(quiet) as progress:
        outcome = run_gate(config, policy=chosen, progress=progress)
    _write_outputs(outcome, json_path=output, report=report, junit=junit, html=html, redact=redact)
    _print_comparison(outcome.comparison, quiet)
    raise typer.Exit(outcome.exit_code)


@app.command()
def gate(
    config_file: Annotated[
        Path, typer.Option("--config", help="pyproject.toml holding \\[tool.spanchor].")
    ] = Path("pyproject.toml"),
    docs: Annotated[Path | None, typer.Option(help="Documents directory.")] = None,
    gold: Annotated[Path | None, typer.Option(help="Gold set.")] = None,
    baseline: Annotated[Path | None, typer.Option(help="Baseline run or evaluation.")] = None,
    candidate: Annotated[Path | None, typer.Option(help="Candidate run or evaluation.")] = None,
    policy: Annotated[Path | None, typer.Option(help="Policy file.")] = None,
    k: Annotated[str | None, typer.Option("--k", help="Cutoffs, e.g. 1,3,5,10.")] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", "--json", help="Comparison JSON.")
    ] = None,
    report: Annotated[
        Path | None,
        typer.Option("-r", "--report", help="Markdown report (e.g. $GITHUB_STEP_SUMMARY)."),
    ] = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="JUnit XML report.")] = None,
    html: Annotated[Path | None, typer.Option("--html", help="HTML report with plots.")] = None,
    redact: Annotated[
        bool | None,
        typer.Option("--redact/--no-redact", help="Leave questions and evidence out of reports."),
    ] = None,
    max_unmapped_rate: Annotated[
        float | None, typer.Option(help="Exit 3 when the candidate maps worse than this.")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the verdict.")] = False,
) -> None:
    """Evaluate baseline and candidate, compare them, and exit with the verdict (0 / 1 / 3).

    Every option can live in \\[tool.spanchor] of pyproject.toml, so that `spanchor gate`
    alone is the CI step. Example:

    spanchor gate --docs docs --gold gold.jsonl --baseline runs/base.jsonl
    --candidate runs/cand.jsonl
    """
    config = gate_config_from_pyproject(
        config_file,
        docs=docs,
        gold=gold,
        baseline=baseline,
        candidate=candidate,
        policy=policy,
        k=None if k is None else _parse_k(k),
        json=output,
        report=report,
        junit=junit,
        html=html,
        redact=redact,
        max_unmapped_rate=max_unmapped_rate,
    )
    with _progress(quiet) as progress:
        outcome = run_gate(config, policy_base=config_file, progress=progress)
    _write_outputs(
        outcome,
        json_path=config.json_output,
        report=config.report,
        junit=config.junit,
        html=config.html,
        redact=config.redact,
    )
    _print_comparison(outcome.comparison, quiet)
    if outcome.unmapped_exceeded:
        rate = outcome.candidate.mapping.unmapped_rate
        _console().print(f"unmapped rate {rate:.1%} exceeds {config.max_unmapped_rate:.1%}")
    raise typer.Exit(outcome.exit_code)


def _load(docs: Path, glob: list[str] | None) -> Corpus:
    return load_corpus(docs, globs=tuple(glob) if glob else DEFAULT_GLOBS)


def _one_line(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")


@app.command()
def locate(
    text: Annotated[str, typer.Argument(help="The text to find (canonicalised like the corpus).")],
    docs: Annotated[Path, typer.Argument(help="Directory of source documents.")],
    document: Annotated[
        str | None, typer.Option("--doc", help="Only look in this document id.")
    ] = None,
    context: Annotated[int, typer.Option(help="Characters of context either side.")] = 80,
    glob: GlobOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the occurrences as JSON.")] = False,
) -> None:
    """Every occurrence of TEXT in the documents, with offsets and the anchor hash.

    Exits 1 when the text occurs nowhere (like grep). Example:
    spanchor locate "two-year warranty" docs/
    """
    found = locate_text(_load(docs, glob), text, context=context, document_id=document)
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
        console = _console()
        for index, occ in enumerate(found, start=1):
            counter = f"[{index}/{len(found)}] " if len(found) > 1 else ""
            note = " (whitespace-insensitive)" if occ.whitespace_insensitive else ""
            console.print(
                f"{counter}{occ.document_id} [{occ.start}, {occ.end}) sha256 {occ.sha256}{note}",
                markup=False,
            )
            console.print(
                f"    {_one_line(occ.left)}»{_one_line(occ.text)}«{_one_line(occ.right)}",
                markup=False,
            )
        if not found:
            _err_console().print("No matches found.")
    if not found:
        raise typer.Exit(1)


anchor_app = typer.Typer(help="Author anchors in a gold set.", no_args_is_help=True)
app.add_typer(anchor_app, name="anchor")


@anchor_app.command("add")
def anchor_add(
    query_id: Annotated[str, typer.Argument(help="Query id (new, or existing to add evidence).")],
    question: Annotated[str, typer.Argument(help="The question (must match an existing one).")],
    docs: Annotated[Path, typer.Argument(help="Directory of source documents.")],
    text: Annotated[str, typer.Argument(help="The evidence text, exactly as in the document.")],
    gold: Annotated[Path, typer.Option("--gold", help="Gold file to append to.")] = Path(
        "gold.jsonl"
    ),
    occurrence: Annotated[
        int | None,
        typer.Option(help="Which occurrence (1-based, document id then offset order)."),
    ] = None,
    document: Annotated[
        str | None, typer.Option("--doc", help="Only look in this document id.")
    ] = None,
    glob: GlobOption = None,
) -> None:
    """Append a validated anchor to a gold file (atomically), for a new or an existing query.

    Example: spanchor anchor add q9 "How long is the warranty?" docs/ "two-year warranty"
    """
    query = add_anchor(
        gold,
        _load(docs, glob),
        query_id=query_id,
        question=question,
        text=text,
        document_id=document,
        occurrence=occurrence,
    )
    new = query.anchors[-1]
    _console().print(
        f"{query.query_id}: anchor {new.document_id} [{new.start}, {new.end}) sha256 "
        f"{new.hash} -> {gold} ({len(query.anchors)} anchor(s))",
        markup=False,
    )


@app.command("check-corpus")
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
    if search not in ("corpus", "document", "none"):
        raise typer.BadParameter("--search must be corpus, document or none")
    corpus = _load(docs, glob)
    gold_set = read_gold(gold)
    old = _load(previous, glob) if previous is not None else None
    check = check_corpus(gold_set, corpus, previous=old, search=search)  # type: ignore[arg-type]
    console = _console()
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
            f"{where}{item.query_id}: {item.message} [{item.fate.value}]{target}", markup=False
        )
    for problem in check.problems:
        if problem.anchor is None:  # query-level problems; anchor ones are listed above
            console.print(
                f"{gold}:{problem.line}: {problem.query_id}: {problem.message}", markup=False
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
        raise typer.Exit(EXIT_BAD_INPUT)


gold_app = typer.Typer(
    help="Propose, review and promote candidate evidence into a gold set.", no_args_is_help=True
)
app.add_typer(gold_app, name="gold")


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
    corpus = _load(docs, glob)
    candidates = propose_candidates(corpus, min_chars=min_chars, max_chars=max_chars)
    write_candidates(
        candidates,
        output,
        corpus_fingerprint=corpus.fingerprint,
        parameters={"min_chars": min_chars, "max_chars": max_chars},
    )
    _console().print(f"wrote {len(candidates)} candidates to {output}", markup=False)


@gold_app.command("review")
def gold_review(
    candidates: Annotated[Path, typer.Argument(help="Candidates file (from gold extract).")],
    candidate: Annotated[str, typer.Option("-c", "--candidate", help="Candidate id.")],
    question: Annotated[str | None, typer.Option("-q", "--question")] = None,
    approve: Annotated[bool, typer.Option("-a", "--approve")] = False,
    reject: Annotated[bool, typer.Option("-r", "--reject")] = False,
    reason: Annotated[str | None, typer.Option("--rejection-reason", "--reason")] = None,
    edited_text: Annotated[str | None, typer.Option("--edited-text")] = None,
    source_start: Annotated[int | None, typer.Option("-s", "--source-start")] = None,
    source_end: Annotated[int | None, typer.Option("-e", "--source-end")] = None,
    docs: Annotated[Path | None, typer.Option(help="Documents, for edits beyond the text.")] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output")] = None,
) -> None:
    """Approve, reject or edit one candidate; the decision is saved in the candidates file.

    Example: spanchor gold review candidates.jsonl -c "manual#3" -q "How hot?" --approve
    """
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
        corpus=None if docs is None else _load(docs, None),
        output=output,
    )
    _console().print(
        f"{result.candidate_id}: {result.status.value} [{result.start}, {result.end})",
        markup=False,
    )


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
    report = promote_candidates(candidates, _load(docs, glob), gold, query_id_prefix=prefix)
    console = _console()
    for cand, why in report.stale:
        console.print(f"stale: {cand.candidate_id}: {why}", markup=False)
    console.print(
        f"promoted {len(report.added)}, already in gold {len(report.already)}, "
        f"stale {len(report.stale)}, approved without question {len(report.missing_question)}, "
        f"pending {report.pending}, rejected {report.rejected}",
        markup=False,
    )
    if report.stale or report.missing_question:
        raise typer.Exit(EXIT_BAD_INPUT)


import_app = typer.Typer(help="Import gold sets from other formats.", no_args_is_help=True)
app.add_typer(import_app, name="import")


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
    imported = import_squad(source)
    write_squad_documents(imported, out, overwrite=overwrite)
    write_gold(imported.gold, gold)
    console = _console()
    for problem in imported.problems:
        console.print(f"{source}: {problem}", markup=False)
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
    converted = import_legacy_gold(source)
    write_gold(converted, gold)
    _console().print(f"wrote {len(converted)} queries to {gold}", markup=False)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app and turn spanchor errors into one line and an exit code.

    Usage errors are click's own (exit 2 with the usage line); input errors raised by the
    library are printed as ``spanchor: error: path:line: message`` and also exit 2.
    """
    try:
        app(args=argv, standalone_mode=True)
    except SystemExit as done:
        code = done.code
        return code if isinstance(code, int) else (0 if code is None else EXIT_BAD_INPUT)
    except SpanchorError as err:
        if _state["debug"]:
            raise
        print(f"spanchor: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as err:  # a bug of ours: still one line, and never mistaken for a pass
        if _state["debug"]:
            raise
        print(
            f"spanchor: internal error: {type(err).__name__}: {err} "
            "(run again with --debug for the traceback, and please report it)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
