"""The evaluation commands: ``evaluate`` (score one run), ``compare`` (two sides) and ``gate``
(the CI step, configured in ``[tool.spanchor]``).

The library is imported inside each command, not here: typer builds every command of the app
to run one, and ``spanchor evaluate`` should not load the comparison, diagnosis and HTML
modules it never uses.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from spanchor_core.cli.console import (
    AllowMismatchOption,
    GlobOption,
    err_console,
    globs,
    out_console,
    parse_k,
    progress_bars,
    writing_step,
)
from spanchor_core.cli.defaults import DEFAULT_K_TEXT, DEFAULT_MIN_OVERLAP, GoldHashChoice

if TYPE_CHECKING:
    from spanchor_core.compare import Comparison
    from spanchor_core.corpus import Corpus
    from spanchor_core.diagnosis import RegressionDiagnosis
    from spanchor_core.locate import Locator
    from spanchor_core.outputs import OutputPlan
    from spanchor_core.pipeline import GateOutcome
    from spanchor_core.settings import GateConfig

RayOption = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="ADDRESS",
        help="Map the results on a Ray cluster: 'local' starts one here, else its address "
        "(auto, ray://head:10001). Needs the ray extra; same results as without.",
    ),
]
RayWorkersOption = Annotated[
    int, typer.Option("--ray-workers", min=1, help="Ray actors mapping in parallel.")
]
ShardsOption = Annotated[
    int,
    typer.Option(
        "--shards",
        min=1,
        help="With --ray: split the documents over N shard actors; results that name their "
        "document with offsets are decided on its shard, without an index.",
    ),
]

JobsOption = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        "-j",
        min=0,
        metavar="N",
        help="Read, map and score on N processes of this machine sharing one index (0: one "
        "per CPU; default: a large run file in two parts where the machine has two CPUs, two "
        "large run sides in paired halves); a gate given N scores its sides concurrently. "
        "Same results as with 1.",
    ),
]

__all__ = ["compare_command", "evaluate", "gate"]


def _ray_engine(
    address: str, *, workers: int, source: Path | None, shards: int
) -> Callable[[Corpus], Locator]:
    """The Ray engine of ``--ray`` (the distributed module is imported only when asked for)."""
    from spanchor_core.distributed import ray_engine

    return ray_engine(address, workers=workers, source=source, shards=shards)


def _local_jobs(jobs: int | None, ray: str | None) -> int | None:
    """``--jobs`` as given; with ``--ray`` the mapping is Ray's, so ``--jobs`` must be 1."""
    if ray is not None and jobs not in {None, 1}:
        raise typer.BadParameter(
            "--jobs and --ray cannot be combined: choose one", param_hint="--jobs"
        )
    return 1 if ray is not None else jobs


def evaluate(
    docs: Annotated[
        Path, typer.Argument(help="Documents: a directory, or a .jsonl / .parquet corpus.")
    ],
    gold: Annotated[Path, typer.Argument(help="Gold set (JSONL; spanchor 0.x files too).")],
    run: Annotated[Path, typer.Argument(help="Run or results file to score.")],
    k: Annotated[
        str,
        typer.Option(
            "--k",
            metavar="K,...",
            help="Cutoff(s): one K or a comma-separated list, e.g. 1,3,5,10.",
        ),
    ] = DEFAULT_K_TEXT,
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
        GoldHashChoice,
        typer.Option(help="When --gold-set-hash does not match: warn, fail (exit 2) or ignore."),
    ] = GoldHashChoice.WARN,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only problems.")] = False,
    ray: RayOption = None,
    ray_workers: RayWorkersOption = 2,
    shards: ShardsOption = 1,
    jobs: JobsOption = None,
) -> None:
    """Map a run's results onto the documents and score every gold query.

    Example: spanchor evaluate docs/ gold.jsonl runs/candidate.jsonl --k 1,3,5,10 -o eval.json
    """
    from spanchor_core._escape import escape_control
    from spanchor_core.evaluate import write_evaluation
    from spanchor_core.evaluate.model import EVALUATION_KIND
    from spanchor_core.outputs import OutputPlan
    from spanchor_core.pipeline.evaluation import GoldHashPolicy, run_evaluation

    OutputPlan().read_documents(docs, globs(glob)).read(gold, "the gold set").read(
        run, "the run"
    ).write(output, "-o", EVALUATION_KIND).write(report, "-r").check()
    local = _local_jobs(jobs, ray)
    source = None if glob else docs  # with other globs, the corpus is shipped to the workers
    engine = (
        None if ray is None else _ray_engine(ray, workers=ray_workers, source=source, shards=shards)
    )
    with progress_bars(quiet) as progress:
        # on shards reading a corpus file themselves, the driver holds no document text
        corpus: Corpus | Path = docs
        if engine is not None:
            from spanchor_core.pipeline import engine_corpus

            corpus = engine_corpus(docs, globs(glob), engine)
        outcome = run_evaluation(
            corpus,
            gold,
            run,
            k=parse_k(k),
            min_overlap=min_overlap,
            globs=globs(glob),
            max_unmapped_rate=max_unmapped_rate,
            allow_mismatch=allow_mismatch,
            expected_gold_hash=gold_set_hash,
            gold_hash_policy=GoldHashPolicy(corpus_mismatch_policy.value),
            progress=progress(run.name),
            locator=None if engine is None or isinstance(corpus, Path) else engine(corpus),
            jobs=local,
        )
    evaluation = outcome.evaluation
    err = functools.cache(err_console)  # rich imported for a line to print: not on a clean -q
    for warning in outcome.warnings:
        err().print(f"warning: {escape_control(warning)}", markup=False)
    if output is not None:
        write_evaluation(evaluation, output, redact=redact)
    if report is not None:
        from spanchor_core.render.files import write_report
        from spanchor_core.render.markdown import evaluation_markdown

        write_report(evaluation_markdown(evaluation, outcome.gold, redact=redact), report)
    if not quiet:
        from spanchor_core.render.terminal import coverage_line, evaluation_table, mapping_line

        console = out_console()
        console.print(evaluation_table(evaluation))
        console.print(mapping_line(evaluation), markup=False)
        console.print(coverage_line(evaluation), markup=False)
        if output is not None:
            console.print(f"wrote {output}", markup=False)
    for warning in evaluation.warnings:
        err().print(f"warning: {escape_control(warning)}", markup=False)
    if evaluation.divergent:  # averaged here; compare and gate refuse it against one asking
        from spanchor_core.render.text import first_ids

        divergent = evaluation.divergent
        err().print(
            f"warning: {len(divergent)} queries were asked more than once and scored "
            f"differently ({first_ids(divergent)}); each is scored as the mean of its askings (a "
            "run appended to twice? compare and gate refuse it against a run that asked each "
            "question once)",
            markup=False,
        )
    if outcome.unmapped_exceeded:
        err().print(
            f"unmapped rate {evaluation.mapping.unmapped_rate:.1%} exceeds --max-unmapped-rate "
            f"{max_unmapped_rate:.1%}: check that the run was made from these documents"
        )
    if outcome.incomplete:  # exit 3 says why, --quiet or not (as the gate's untrusted line)
        from spanchor_core.render.text import first_ids

        missing = evaluation.missing_in_run
        err().print(
            f"untrusted: the run is incomplete: {len(missing)} of {len(evaluation)} gold queries "
            f"have no record ({first_ids(missing)}); they are scored 0. Was the job "
            "interrupted, or a retrieval made outside the recording scope?",
            markup=False,
        )
    raise typer.Exit(outcome.exit_code)


def _print_comparison(
    comparison: Comparison,
    quiet: bool,
    diagnosis: RegressionDiagnosis | None = None,
    *,
    policy_given: bool = True,
    questions: Mapping[str, str] | None = None,
) -> None:
    from spanchor_core.render.terminal import (
        comparison_findings,
        comparison_tables,
        comparison_verdict,
        default_policy_line,
        diagnosis_lines,
        noise_lines,
        trust_lines,
    )

    console = out_console()
    # A comparison without a policy gates by the default one: say which, before anything else
    # (with --quiet too: a quiet CI log still has to say what its verdict was measured against).
    applied = None if policy_given else default_policy_line(comparison.policy)
    if applied is not None:
        console.print(applied)
    # Whether the comparison can be trusted comes first: a CI log is read from the top.
    for line in trust_lines(comparison):
        console.print(line)
    if not quiet:
        for table in comparison_tables(comparison, questions=questions, width=console.width):
            console.print(table)
    if diagnosis is not None and not quiet:
        for line in diagnosis_lines(diagnosis):
            console.print(line)
    for line in comparison_findings(comparison, untrusted_shown=True):
        console.print(line)
    for line in [] if quiet else noise_lines(comparison):
        console.print(line)
    console.print(comparison_verdict(comparison))


def _print_warnings(outcome: GateOutcome) -> None:
    """What reading each side warned about (a torn last line skipped, ...), on stderr."""
    from spanchor_core._escape import escape_control

    err = err_console()
    for side, evaluation in (("baseline", outcome.baseline), ("candidate", outcome.candidate)):
        for warning in dict.fromkeys(evaluation.warnings):
            err.print(f"warning: {side}: {escape_control(warning)}", markup=False)
    for warning in outcome.warnings:
        err.print(f"warning: {escape_control(warning)}", markup=False)


def _redacted(outcome: GateOutcome, redact: bool) -> GateOutcome:
    """With ``--redact``, the outcome whose diagnosis quotes no retriever error text, so that
    neither the terminal nor the comparison JSON and reports carry one."""
    if not redact or outcome.diagnosis is None:
        return outcome
    from spanchor_core.diagnosis import redact_diagnosis
    from spanchor_core.evaluate.file import REDACTED

    diagnosis = redact_diagnosis(outcome.diagnosis, REDACTED)
    comparison = outcome.comparison
    if comparison.diagnosis is not None:
        comparison = dataclasses.replace(comparison, diagnosis=diagnosis)
    return dataclasses.replace(outcome, comparison=comparison, diagnosis=diagnosis)


def _questions(outcome: GateOutcome) -> dict[str, str] | None:
    """Each gold query's question, to show beside a regressed id (None without a gold set)."""
    if outcome.gold is None:
        return None
    return {query.query_id: query.question for query in reversed(outcome.gold.entries)}


def _write_outputs(
    outcome: GateOutcome,
    *,
    json_path: Path | None,
    report: Path | None,
    junit: Path | None,
    html: Path | None,
    redact: bool,
) -> None:
    from spanchor_core._escape import escape_control
    from spanchor_core.compare import write_comparison
    from spanchor_core.render.files import write_html, write_report
    from spanchor_core.render.html import comparison_html
    from spanchor_core.render.junit import comparison_junit
    from spanchor_core.render.markdown import comparison_markdown

    with writing_step(not any((json_path, report, junit, html))):
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
    err = err_console()
    for path in (json_path, report, junit, html):
        if path is not None:
            err.print(f"wrote {escape_control(str(path))}", markup=False)


def _plan(
    config: GateConfig,
    policy: Path | None,
    json_path: Path | None,
    report: Path | None,
    junit: Path | None,
    html: Path | None,
) -> OutputPlan:
    """What ``compare`` and ``gate`` read and write, for the no-clobber check."""
    from spanchor_core.compare.file import COMPARISON_KIND
    from spanchor_core.outputs import OutputPlan

    plan = OutputPlan().read_documents(config.docs, config.globs).read(config.gold, "the gold set")
    plan.read(config.baseline, "the baseline").read(config.candidate, "the candidate")
    plan.read(policy, "the policy")
    return (
        plan.write(json_path, "-o", COMPARISON_KIND)
        .write(report, "-r")
        .write(junit, "--junit")
        .write(html, "--html")
    )


def compare_command(
    baseline: Annotated[Path, typer.Argument(help="Baseline evaluation or run file.")],
    candidate: Annotated[Path, typer.Argument(help="Candidate evaluation or run file.")],
    also_baseline: Annotated[
        list[Path] | None,
        typer.Option(
            "--baseline",
            metavar="FILE",
            help="Another baseline run of the same configuration (repeatable): their spread "
            "is each query's noise band.",
        ),
    ] = None,
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
        str, typer.Option("--k", metavar="K,...", help="Cutoffs used when evaluating run files.")
    ] = DEFAULT_K_TEXT,
    seed: Annotated[
        int | None, typer.Option(help="Bootstrap seed (default: the policy's).")
    ] = None,
    glob: GlobOption = None,
    allow_mismatch: AllowMismatchOption = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the verdict.")] = False,
    ray: RayOption = None,
    ray_workers: RayWorkersOption = 2,
    shards: ShardsOption = 1,
    jobs: JobsOption = None,
) -> None:
    """Compare a candidate with a baseline; exit 1 on any regression.

    With --baseline FILE (repeatable), BASELINE and those files are repeated runs of one
    configuration: a candidate inside a query's band of baseline values is not a regression.

    Example: spanchor compare base.json cand.json --policy policy.json -o comparison.json
    """
    from spanchor_core.pipeline import policy_with_drops, run_gate
    from spanchor_core.policy import load_policy
    from spanchor_core.settings import GateConfig

    local = _local_jobs(jobs, ray)
    config = GateConfig(
        docs=docs,
        gold=gold,
        baseline=baseline,
        baselines=tuple(also_baseline or ()),
        candidate=candidate,
        k=parse_k(k),
        globs=globs(glob),
        seed=seed,
        allow_mismatch=allow_mismatch,
        # not set without --jobs: the pipeline chooses (paired halves of two large runs)
        **({} if local is None else {"jobs": local}),
    )
    # spanchor 0.x's flags gate recall@5 and precision@5, and win over the policy file
    chosen = policy_with_drops(
        load_policy(policy) if policy is not None else None,
        {"recall@5": max_recall_drop, "precision@5": max_precision_drop},
    )
    _plan(config, policy, output, report, junit, html).check()
    # --ray maps the run sides on Ray; two evaluation files need no mapping (no docs)
    engine = (
        None
        if ray is None or docs is None
        else _ray_engine(ray, workers=ray_workers, source=None if glob else docs, shards=shards)
    )
    with progress_bars(quiet) as progress:
        outcome = run_gate(config, policy=chosen, progress=progress, engine=engine)
        outcome = _redacted(outcome, redact)
    _print_warnings(outcome)
    _write_outputs(outcome, json_path=output, report=report, junit=junit, html=html, redact=redact)
    _print_comparison(
        outcome.comparison,
        quiet,
        outcome.diagnosis,
        policy_given=chosen is not None,
        questions=None if redact else _questions(outcome),
    )
    raise typer.Exit(outcome.exit_code)


def _check_gate_flags(group: str | None, max_unmapped_rate: float | None) -> None:
    """Refuse a bad ``--group`` or ``--max-unmapped-rate`` as the flag's error: merged into the
    settings first, it was blamed on the settings file, or (with none) reported as "no settings
    found" to a command line that named both sides."""
    if max_unmapped_rate is not None and not 0.0 <= max_unmapped_rate <= 1.0:
        raise typer.BadParameter(
            f"must be between 0 and 1, got {max_unmapped_rate}", param_hint="'--max-unmapped-rate'"
        )
    if group is not None:
        from spanchor_core.errors import InputError
        from spanchor_core.grouping import parse_group_rule

        try:
            parse_group_rule(group)
        except InputError as exc:
            raise typer.BadParameter(str(exc), param_hint="'--group'") from None


def gate(
    config_file: Annotated[
        Path | None,
        typer.Option(
            "--config",
            metavar="FILE",
            help="TOML file holding \\[tool.spanchor]. Default: spanchor.toml, else "
            "pyproject.toml with that table, in the working directory or its parents.",
        ),
    ] = None,
    docs: Annotated[Path | None, typer.Option(help="Documents directory.")] = None,
    gold: Annotated[Path | None, typer.Option(help="Gold set.")] = None,
    baseline: Annotated[
        list[Path] | None,
        typer.Option(
            metavar="FILE",
            help="Baseline run or evaluation; repeat it for repeated runs of one configuration "
            "(their spread is each query's noise band).",
        ),
    ] = None,
    candidate: Annotated[Path | None, typer.Option(help="Candidate run or evaluation.")] = None,
    policy: Annotated[Path | None, typer.Option(help="Policy file.")] = None,
    k: Annotated[
        str | None, typer.Option("--k", metavar="K,...", help="Cutoffs, e.g. 1,3,5,10.")
    ] = None,
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
        float | None,
        typer.Option(help="Exit 3 when either side maps more of its results worse than this."),
    ] = None,
    allow_mismatch: Annotated[
        bool | None,
        typer.Option(
            "--allow-mismatch/--no-allow-mismatch",
            help="Score runs recorded against another corpus or gold-set version.",
        ),
    ] = None,
    group: Annotated[
        str | None,
        typer.Option(
            metavar="RULE",
            help="How several records of one question are scored: auto, first, union, "
            "stage:NAME or source:NAME.",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the verdict.")] = False,
    ray: RayOption = None,
    ray_workers: RayWorkersOption = 2,
    shards: ShardsOption = 1,
    jobs: JobsOption = None,
) -> None:
    """Evaluate baseline and candidate, compare them, and exit with the verdict (0 / 1 / 2 / 3).

    Every option can live in \\[tool.spanchor] of pyproject.toml or of spanchor.toml, found in
    the working directory or its parents, so that `spanchor gate` alone is the CI step
    (keys: docs/REFERENCE.md). Example:

    spanchor gate --docs docs --gold gold.jsonl --baseline runs/base.jsonl
    --candidate runs/cand.jsonl
    """
    from spanchor_core.corpus import DEFAULT_GLOBS
    from spanchor_core.pipeline import run_gate
    from spanchor_core.settings import gate_config_from_pyproject, settings_file

    _check_gate_flags(group, max_unmapped_rate)
    config_file = settings_file(config_file)
    config = gate_config_from_pyproject(
        config_file,
        docs=docs,
        gold=gold,
        baseline=baseline[0] if baseline else None,
        baselines=tuple(baseline[1:]) if baseline else None,  # the command line replaces both
        candidate=candidate,
        policy=policy,
        k=None if k is None else parse_k(k),
        json=output,
        report=report,
        junit=junit,
        html=html,
        redact=redact,
        max_unmapped_rate=max_unmapped_rate,
        allow_mismatch=allow_mismatch,
        group=group,
        jobs=_local_jobs(jobs, ray),
    )
    policy_file = config.policy if isinstance(config.policy, Path) else None
    _plan(config, policy_file, config.json_output, config.report, config.junit, config.html).read(
        config_file, "the settings file"
    ).check()
    with progress_bars(quiet) as progress:
        source = config.docs if config.globs == DEFAULT_GLOBS else None
        engine = (
            None
            if ray is None
            else _ray_engine(ray, workers=ray_workers, source=source, shards=shards)
        )
        outcome = run_gate(config, policy_base=config_file, progress=progress, engine=engine)
        outcome = _redacted(outcome, config.redact)
    _print_warnings(outcome)
    _write_outputs(
        outcome,
        json_path=config.json_output,
        report=config.report,
        junit=config.junit,
        html=config.html,
        redact=config.redact,
    )
    _print_comparison(
        outcome.comparison,
        quiet,
        outcome.diagnosis,
        policy_given=config.policy is not None,
        questions=None if config.redact else _questions(outcome),
    )
    raise typer.Exit(outcome.exit_code)
