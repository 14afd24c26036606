"""The ``noise`` command: N repeated baselines of one configuration -> flaky queries and a noise
floor, printed, and written into a policy file when asked.

The measuring is :func:`spanchor_core.pipeline.run_noise`; folding it into a policy and writing
it is :mod:`spanchor_core.policy.write`. Nothing is written without ``-o``, and ``-o`` never
replaces a file the command read, except the ``--policy`` file when it is named again on purpose.
"""

from __future__ import annotations

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
)

if TYPE_CHECKING:
    from rich.table import Table

    from spanchor_core.pipeline import NoiseOutcome

__all__ = ["noise_command"]

_SHOWN = 10


def _table(outcome: NoiseOutcome) -> Table:
    from rich.table import Table

    from spanchor_core._escape import escape_control

    table = Table(title="noise between the baselines", title_justify="left")
    for name in ("metric", "flaky", "widest band", "mean spread"):
        table.add_column(name, justify="left" if name == "metric" else "right")
    gated = set(outcome.gated)
    for row in outcome.report.metrics:
        table.add_row(
            escape_control(row.metric) + (" (gated)" if row.metric in gated else ""),
            str(len(row.flaky)),
            f"{row.max_spread:.3f}",
            f"{row.mean_spread:.4f}",
        )
    return table


def _summary(outcome: NoiseOutcome, floor: bool) -> list[str]:
    from spanchor_core.render.text import first_ids

    report = outcome.report
    ids = outcome.flaky_queries
    listed = first_ids(ids, _SHOWN, escape=str)
    gated = ", ".join(outcome.gated) or "none"
    return [
        f"{len(report.baselines)} baselines, {report.queries} queries held by all of them",
        f"flaky on a gated metric ({gated}): {len(ids)}" + (f" ({listed})" if ids else ""),
        f"noise floor (largest spread of a gated metric's mean): {outcome.noise_floor:.6g}"
        + ("" if floor else " (written only with --floor: it widens every tolerance)"),
    ]


def noise_command(
    baselines: Annotated[
        list[Path],
        typer.Argument(help="Two or more baseline runs or evaluations of one configuration."),
    ],
    docs: Annotated[
        Path | None, typer.Option(help="Documents, when the baselines are runs.")
    ] = None,
    gold: Annotated[
        Path | None, typer.Option(help="Gold set, when the baselines are runs.")
    ] = None,
    k: Annotated[
        str | None, typer.Option("--k", metavar="K,...", help="Cutoffs used to score run files.")
    ] = None,
    glob: GlobOption = None,
    policy: Annotated[
        Path | None,
        typer.Option(
            "--policy", help="The policy whose gated metrics count (and that -o may update)."
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="Write the policy with the flaky queries and the noise floor here (JSON). "
            "An existing file is replaced only when it is the --policy file.",
        ),
    ] = None,
    flaky: Annotated[
        bool, typer.Option("--flaky/--no-flaky", help="Add the flaky queries to the policy.")
    ] = True,
    floor: Annotated[
        bool,
        typer.Option(
            "--floor/--no-floor",
            help="Also raise the policy's noise floor to the measured spread of the means. "
            "Off by default: the floor widens every per-query tolerance too.",
        ),
    ] = False,
    allow_mismatch: AllowMismatchOption = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the summary.")] = False,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs",
            "-j",
            min=0,
            metavar="N",
            help="Score the runs on N processes of this machine (0: one per CPU); same results.",
        ),
    ] = 1,
) -> None:
    """Measure how much repeated baselines of one configuration disagree.

    A query whose gated metric differs between the repeats is flaky; the noise floor is the
    largest spread of a gated metric's mean between them. With -o, the policy (--policy, or
    the default one) is written with those flaky queries added (and, with --floor, its noise
    floor raised to the measured one).

    Example: spanchor noise runs/base-1.jsonl runs/base-2.jsonl runs/base-3.jsonl
    --docs docs --gold gold.jsonl --policy policy.json -o policy.json
    """
    from spanchor_core._escape import escape_control
    from spanchor_core.pipeline import run_noise
    from spanchor_core.policy import check_policy_target, load_policy, with_noise, write_policy

    inputs = [*baselines, *(p for p in (gold,) if p is not None)]
    target = None
    if output is not None:  # refuse a bad target before any scoring
        target = check_policy_target(output, inputs=inputs, updates=policy)
    chosen = load_policy(policy) if policy is not None else None
    outcome = run_noise(
        baselines,
        docs=docs,
        gold=gold,
        k=None if k is None else parse_k(k),
        globs=globs(glob),
        allow_mismatch=allow_mismatch,
        policy=chosen,
        jobs=jobs,
    )
    from spanchor_core.compare.same_recording import one_recording_pairs

    console = out_console()
    named = [(str(e.settings.run_path or at), e) for at, e in enumerate(outcome.baselines)]
    for pair in one_recording_pairs(named):  # two copies of one recording agree by construction
        err_console().print(
            f"warning: {escape_control(pair)} are one recording (the same run header and "
            "scores): their agreement says nothing about flakiness; record each baseline "
            "separately",
            markup=False,
        )
    if not quiet:
        console.print(_table(outcome))
    for line in _summary(outcome, floor):
        console.print(line, markup=False)
    if target is not None:
        updated = with_noise(
            outcome.policy,
            flaky_queries=outcome.flaky_queries if flaky else (),
            noise_floor=outcome.noise_floor if floor else None,
        )
        write_policy(updated, target)
        err_console().print(f"wrote {escape_control(str(target))}", markup=False)
    elif not quiet:
        console.print("give -o FILE.json to write a policy with these", markup=False)
    raise typer.Exit(0)
