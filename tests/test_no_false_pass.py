"""The gate's one promise, through the real CLI: a run that cannot be trusted never passes.

Each damaged run from issue 9 is built from the quickstart and gated; the exit code follows
2 > 3 > 1 > 0, the reason is on the first lines, and PASS is printed only with exit code 0.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from spanchor_core import __version__
from spanchor_core.cli import main

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart"
DOCS, GOLD = QUICKSTART / "docs", QUICKSTART / "gold.jsonl"
BASE, CAND = QUICKSTART / "runs" / "baseline.jsonl", QUICKSTART / "runs" / "candidate.jsonl"


_RECORDED = itertools.count(1)


def _lines(path: Path) -> list[dict[str, Any]]:
    """A quickstart run's lines, to be damaged and written elsewhere. The header's pointer to
    the chunk inventory (``../chunks/...``, relative to the run) is dropped: the copies have no
    ``chunks/`` beside them, and a pointer to nowhere is bad input of its own. Each copy gets a
    moment of recording of its own, as a recording made again would: a copy that kept the
    original's is the same recording, which the gate refuses to compare with itself."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    lines[0]["tags"].pop("spanchor.chunks", None)
    lines[0]["created_at"] = f"2026-01-01T00:00:00.{next(_RECORDED):03d}Z"
    return lines


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _again(path: Path) -> Path:
    """The run of ``path`` as if recorded once more (same results, a moment of its own), beside
    it: what gating a retriever against an unchanged re-run of itself gives."""
    return _write(path.with_name(f"again-{path.name}"), _lines(path))


def _unmapped(source: Path, target: Path) -> Path:
    header, *records = _lines(source)
    for record in records:
        for number, result in enumerate(record["results"]):
            result.update(text=f"zq{number} nothing like this is in any document", start=None)
            result.update(end=None, document_id=None)
    return _write(target, [header, *records])


def _gate(
    capsys: pytest.CaptureFixture[str], baseline: Path, candidate: Path, *extra: str
) -> tuple[int, list[str]]:
    code = main(
        ["gate", "--docs", str(DOCS), "--gold", str(GOLD), "--baseline", str(baseline),
         "--candidate", str(candidate), "--config", str(QUICKSTART / "spanchor.toml"), *extra]
    )  # fmt: skip
    captured = capsys.readouterr()
    lines = [line for line in (captured.out + captured.err).splitlines() if line.strip()]
    if "PASS" in captured.out:
        assert code == 0, "PASS printed with a non-zero exit code"
    return code, lines


def test_runs_with_no_record_are_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty_base = _write(tmp_path / "b.jsonl", _lines(BASE)[:1])
    empty_cand = _write(tmp_path / "c.jsonl", _lines(CAND)[:1])
    code, lines = _gate(capsys, empty_base, empty_cand)
    assert code == 2
    assert len(lines) == 1
    assert "b.jsonl" in lines[0]
    assert "holds no record" in lines[0]
    assert "recording scope" in lines[0]


def test_an_incomplete_candidate_is_untrusted_and_says_so_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header, *records = _lines(CAND)
    partial = _write(tmp_path / "c.jsonl", [header, *records[:10]])
    code, lines = _gate(capsys, BASE, partial)
    assert code == 3
    assert lines[0].startswith("baseline: 57/57 gold queries recorded")
    assert lines[1].startswith("candidate: 10/57 gold queries recorded")
    assert "untrusted" in lines[2]
    assert "incomplete: 47 of 57" in lines[2]
    assert lines[-1].startswith("UNTRUSTED")


def test_an_unmapped_baseline_is_checked_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines = _gate(capsys, _unmapped(BASE, tmp_path / "b.jsonl"), BASE)
    assert code == 3
    assert any("the baseline run cannot be trusted: 100.0%" in line for line in lines[:4])
    assert lines[-1].startswith("UNTRUSTED")


def test_untrusted_outranks_a_regression_and_both_unmapped_never_print_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines = _gate(capsys, BASE, _unmapped(CAND, tmp_path / "c.jsonl"))
    assert code == 3
    assert lines[-1].startswith("UNTRUSTED")
    both = _gate(capsys, _unmapped(BASE, tmp_path / "b.jsonl"), _unmapped(CAND, tmp_path / "c2"))
    assert both[0] == 3
    assert not any(line.startswith("PASS") for line in both[1])


def test_a_sound_gate_still_passes_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert _gate(capsys, BASE, QUICKSTART / "runs" / "candidate-overlap.jsonl")[0] == 0
    code, lines = _gate(capsys, BASE, CAND)
    assert code == 1
    assert lines[-1].startswith("FAIL")
    # the gate says why: every one of the 14 regressed queries has a cause (issue 18)
    assert "why: 14 regressed: 12 split, 2 dropped" in lines


def test_several_retrievals_per_question_without_trace_ids_are_never_a_quiet_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each question recorded twice with no trace id — what a hand-rolled recorder gives for a
    hybrid (two retrievers) — is two askings whose scores are averaged. Against a baseline
    that answered each question once the recording changed shape: untrusted, naming the
    queries. With the same shape on both sides the gate compares means and says so."""
    header, *records = _lines(BASE)
    doubled = [header, *(copy for record in records for copy in (record, dict(record)))]
    for record in doubled[1:]:
        record.pop("trace_id", None)
    candidate = _write(tmp_path / "twice.jsonl", doubled)
    code, lines = _gate(capsys, BASE, candidate)
    assert code == 3
    finding = next(line for line in lines if "without a trace id" in line)
    assert f"for {len(records)} queries that the baseline answered once" in finding
    assert "--group source:NAME" in finding
    assert lines[-1].startswith("UNTRUSTED")
    # the baseline recorded the same way: means against means, with a warning
    code, lines = _gate(capsys, candidate, _again(candidate))
    assert code == 0
    warning = next(line for line in lines if "more than one trace" in line)
    assert warning.startswith("warning: the baseline run")
    assert f"asked {len(records)} of {len(records)} gold queries in more than one trace" in warning
    assert "--group" in warning
    # half the askings bad: the mean halves the loss, and the gate still does not pass
    damaged = _unmapped(BASE, tmp_path / "bad.jsonl")
    bad_records = _lines(damaged)[1:]
    mixed = [header, *(copy for pair in zip(records, bad_records, strict=True) for copy in pair)]
    for record in mixed[1:]:
        record.pop("trace_id", None)
    code, lines = _gate(capsys, candidate, _write(tmp_path / "mixed.jsonl", mixed))
    assert code != 0
    assert any("more than one trace" in line for line in lines)
    assert not any(line.startswith("PASS") for line in lines)


def test_repeats_of_a_query_the_other_side_never_recorded_are_not_called_answered_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The candidate repeats q01 and q02 without trace ids; the baseline has no record of q01
    at all. Only q02 was answered once by the baseline: q01 is reported as missing from the
    baseline, not as a query the baseline answered once."""
    header, *records = _lines(BASE)
    baseline = _write(tmp_path / "base.jsonl", [header, *records[1:]])
    assert [record["query_id"] for record in records[:2]] == ["q01", "q02"]
    doubled = [header, *records[:2], *records]
    for record in doubled[1:]:
        record.pop("trace_id", None)
    code, lines = _gate(capsys, baseline, _write(tmp_path / "cand.jsonl", doubled))
    assert code == 3
    finding = next(line for line in lines if "without a trace id" in line)
    assert "for 1 query that the baseline answered once (q02)" in finding
    assert any("no record (q01)" in line for line in lines)
    assert lines[-1].startswith("UNTRUSTED")


def test_askings_with_trace_ids_that_only_one_side_repeats_are_untrusted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run file a second recording appended to (the LangChain handler appends by default):
    yesterday's askings of the good configuration, each in a trace of its own, then today's of
    one that loses 18 and 12 points of recall@5 on q17 and q31. Alone today's run fails the
    10-point rule; averaged with yesterday's each loss is halved under it, and the gate passed
    it. Askings that scored differently on one side where the other asked once are untrusted,
    naming the cause; askings that all agree (a deterministic retriever asked again) hide
    nothing and only warn."""
    header, *records = _lines(BASE)
    regressed = {record["query_id"]: record for record in _lines(CAND)[1:]}
    today = [regressed[r["query_id"]] if r["query_id"] in ("q17", "q31") else r for r in records]
    alone = _write(tmp_path / "today.jsonl", [header, *today])
    code, lines = _gate(capsys, BASE, alone)
    assert code == 1
    assert "FAIL: 57 queries compared — 2 regressed, 0 improved, 55 unchanged" in lines
    appended = [
        header,
        *({**record, "trace_id": f"yesterday-{record['query_id']}"} for record in records),
        *({**record, "trace_id": f"today-{record['query_id']}"} for record in today),
    ]
    stale = _write(tmp_path / "appended.jsonl", appended)
    code, lines = _gate(capsys, BASE, stale)
    assert code == 3
    finding = next(line for line in lines if "where the baseline asked once" in line)
    assert "the candidate run asked 2 queries in several traces that scored differently" in finding
    assert "(q17, q31)" in finding
    assert "appended to" in finding
    assert "mode='w'" in finding
    assert lines[-1].startswith("UNTRUSTED")
    # either way round: a baseline file appended to is refused as well
    assert _gate(capsys, stale, BASE)[0] == 3
    # repeats on both sides (a harness that asks every question twice): means against
    # means, with a warning
    code, lines = _gate(capsys, _again(stale), stale)
    assert code == 0
    assert any(line.startswith("warning: the candidate run asked 57 of 57") for line in lines)
    assert not any("the baseline asked once" in line for line in lines)
    # the same recording appended twice (a re-run of the tests): every asking agrees
    again = [
        header,
        *({**record, "trace_id": f"first-{record['query_id']}"} for record in records),
        *({**record, "trace_id": f"rerun-{record['query_id']}"} for record in records),
    ]
    code, lines = _gate(capsys, BASE, _write(tmp_path / "rerun.jsonl", again))
    assert code == 0
    warning = next(line for line in lines if line.startswith("warning: the candidate run asked"))
    assert "57 of 57" in warning
    assert "record each into a fresh file (mode='w')" in warning


def test_evaluation_files_keep_which_askings_disagreed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``spanchor evaluate`` writes the repeated queries whose askings scored differently
    (``divergent``), so ``compare`` of evaluation files refuses the appended run as ``gate``
    does and passes the re-run; a file without the list (written before it existed) cannot
    say, and its one-sided repeats are untrusted."""
    header, *records = _lines(BASE)
    regressed = {record["query_id"]: record for record in _lines(CAND)[1:]}
    today = [regressed[r["query_id"]] if r["query_id"] == "q17" else r for r in records]

    def appended(name: str, second: list[dict[str, Any]]) -> Path:
        run = [
            _lines(BASE)[0],  # a recording of its own
            *({**record, "trace_id": f"a-{record['query_id']}"} for record in records),
            *({**record, "trace_id": f"b-{record['query_id']}"} for record in second),
        ]
        return _write(tmp_path / f"{name}.jsonl", run)

    def evaluated(run: Path) -> Path:
        out = run.with_suffix(".json")
        assert main(["evaluate", str(DOCS), str(GOLD), str(run), "-o", str(out), "-q"]) == 0
        return out

    base = evaluated(_write(tmp_path / "base.jsonl", [header, *records]))
    stale = evaluated(appended("stale", today))
    rerun = evaluated(appended("rerun", records))
    assert json.loads(stale.read_text(encoding="utf-8"))["divergent"] == ["q17"]
    assert json.loads(rerun.read_text(encoding="utf-8"))["divergent"] == []
    assert "divergent" not in json.loads(base.read_text(encoding="utf-8"))
    capsys.readouterr()
    assert main(["compare", str(base), str(stale), "-q"]) == 3
    assert "in several traces that scored differently" in capsys.readouterr().out
    assert main(["compare", str(base), str(rerun), "-q"]) == 0
    older = json.loads(rerun.read_text(encoding="utf-8"))
    del older["divergent"]
    old_file = tmp_path / "older.json"
    old_file.write_text(json.dumps(older), encoding="utf-8")
    capsys.readouterr()
    assert main(["compare", str(base), str(old_file), "-q"]) == 3
    assert "(q01, q02, q03, q04, q05 and 52 more)" in capsys.readouterr().out


def _staged(source: Path, target: Path, stages: tuple[str, ...]) -> Path:
    """``source``'s records, each written once per stage in ``stages`` (same results, one
    trace per question): what an app recorded before and after a reranker looks like."""
    header, *records = _lines(source)
    staged = [
        {**record, "stage": stage, "trace_id": f"t-{record['query_id']}", "sequence": n}
        for record in records
        for n, stage in enumerate(stages)
    ]
    return _write(target, [header, *staged])


def test_sides_recorded_at_different_stages_are_untrusted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same results recorded as ``context`` in the baseline and as raw ``retrieval`` in
    the candidate: the candidate's recording missed the step the model sees, so its deltas
    compare different steps of the app: not a PASS, whatever they say."""
    context = _staged(BASE, tmp_path / "ctx.jsonl", ("context",))
    raw = _staged(BASE, tmp_path / "raw.jsonl", ("retrieval",))
    code, lines = _gate(capsys, context, raw)
    assert code == 3
    finding = next(line for line in lines if "scored at stage" in line)
    assert "baseline was scored at stage context (57 askings)" in finding
    assert "candidate at retrieval (57 askings)" in finding
    assert "did it miss them?" in finding
    assert "--group stage:NAME" in finding
    assert lines[-1].startswith("UNTRUSTED")
    # an app that records both stages, against one that recorded the retrieval only
    both = _staged(BASE, tmp_path / "both.jsonl", ("retrieval", "context"))
    assert _gate(capsys, both, raw)[0] == 3
    # the other way round the app gained a step (a reranker added): compared, with a warning
    code, lines = _gate(capsys, raw, context)
    assert code == 0
    assert any(line.startswith("warning: the baseline was scored at stage retr") for line in lines)
    # the same stage on both sides is an ordinary comparison
    assert _gate(capsys, context, _again(context))[0] == 0
    regressed = _staged(CAND, tmp_path / "c.jsonl", ("retrieval", "context"))
    assert _gate(capsys, both, regressed)[0] == 1


def test_one_stage_picked_on_both_sides_compares_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    both = _staged(BASE, tmp_path / "both.jsonl", ("retrieval", "context"))
    raw = _staged(BASE, tmp_path / "raw.jsonl", ("retrieval",))
    code = main(
        ["gate", "--docs", str(DOCS), "--gold", str(GOLD), "--baseline", str(both),
         "--candidate", str(raw), "--config", str(QUICKSTART / "spanchor.toml"),
         "--group", "stage:retrieval"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "PASS" in out


def test_a_few_queries_at_another_stage_are_caught_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Mixed sides: the candidate lost the context record of 3 questions, so those are scored
    on their raw retrieval; the stage counts differ and the gate says so."""
    both = _staged(BASE, tmp_path / "both.jsonl", ("retrieval", "context"))
    header, *records = _lines(both)
    lost = {r["query_id"] for r in records[:6:2]}
    kept = [r for r in records if not (r["query_id"] in lost and r["stage"] == "context")]
    code, lines = _gate(capsys, both, _write(tmp_path / "lost.jsonl", [header, *kept]))
    assert code == 3
    finding = next(line for line in lines if "scored at stage" in line)
    assert "candidate at retrieval (3 askings), context (54 askings)" in finding


def _failed(source: Path, target: Path, every: int, *, error: bool = True) -> Path:
    """``source`` with the results of every ``every``-th record dropped, as a failed retrieval
    (``error``) or as a retriever that returned nothing."""
    header, *records = _lines(source)
    for number, record in enumerate(records):
        if number % every == 0:
            record["results"] = []
            if error:
                record["error"] = "TimeoutError: the vector store did not answer"
    return _write(target, [header, *records])


def test_runs_that_returned_nothing_never_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CI job whose index came up empty, or whose retriever was down, for both runs: every
    score is 0 on both sides, so nothing regressed, and still it is no PASS."""
    empty = _failed(BASE, tmp_path / "empty.jsonl", 1, error=False)
    code, lines = _gate(capsys, empty, _again(empty))
    assert code == 3
    assert lines[-1].startswith("UNTRUSTED")
    assert any(
        line.startswith(
            "untrusted: the baseline run cannot be trusted: it returned no result for any of "
            "its 57 recorded queries; was the index empty"
        )
        for line in lines
    )
    down = _failed(BASE, tmp_path / "down.jsonl", 1)
    code, lines = _gate(capsys, down, _again(down))
    assert code == 3
    assert any(
        "it returned no result for any of its 57 recorded queries (57 of them failed: q01, q02, "
        "q03, q04, q05 and 52 more)" in line
        for line in lines
    )


def test_failed_retrievals_above_the_limit_are_untrusted_on_either_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Failures where both sides failed hide any regression there: above the unmapped limit
    (5 % in the quickstart's config) the side is untrusted; one failure in 57 is not."""
    half = _failed(BASE, tmp_path / "half.jsonl", 2)
    code, lines = _gate(capsys, half, _again(half))
    assert code == 3
    finding = next(line for line in lines if "the retrieval failed for" in line)
    assert "failed for 29 of its 57 recorded queries (50.9%, limit 5.0%: q01, q03, " in finding
    one = _failed(BASE, tmp_path / "one.jsonl", 100)
    code, lines = _gate(capsys, one, _again(one))
    assert code == 0
    assert not any("the retrieval failed" in line for line in lines)
    code, _ = _gate(capsys, BASE, one)
    assert code == 1  # the candidate's one failure is a regression, as before


def test_evaluations_scored_under_different_grouping_rules_are_not_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two evaluation files of one run with several records per question, written with
    different ``--group`` rules, score different lists: a settings mismatch (exit 2). The rule
    changes nothing for one record per question, so such files still compare."""
    both = _staged(BASE, tmp_path / "both.jsonl", ("retrieval", "context"))
    from spanchor_core import evaluate, load_corpus, read_gold, read_run, write_evaluation

    corpus, gold = load_corpus(DOCS), read_gold(GOLD)
    written = {}
    for run, rule in ((both, "auto"), (both, "stage:retrieval"), (BASE, "auto"), (BASE, "first")):
        out = tmp_path / f"{run.stem}-{rule.replace(':', '-')}.json"
        write_evaluation(evaluate(corpus, gold, read_run(run), group=rule), out)
        written[run.stem, rule] = out
    code = main(
        ["compare", str(written["both", "auto"]), str(written["both", "stage:retrieval"]), "-q"]
    )
    err = capsys.readouterr()
    assert code == 2
    assert "differ in grouping rule: baseline 'auto', candidate 'stage:retrieval'" in (
        err.out + err.err
    )
    code = main(["compare", str(written["baseline", "auto"]), str(written["baseline", "first"])])
    assert code == 0


def _merged(source: Path, second: Path, target: Path) -> Path:
    """Each question of ``source`` answered in one trace by two retrievals at the same stage:
    ``source``'s results (as ``vector``) and ``second``'s (as ``bm25``) — a hybrid, or a
    hand-rolled recorder that wrote the lists before and after its reranker as retrievals."""
    header, *records = _lines(source)
    others = {record["query_id"]: record for record in _lines(second)[1:]}
    merged = [
        {**record, "source": name, "trace_id": f"t-{record['query_id']}", "sequence": n}
        for first in records
        for n, (name, record) in enumerate((("vector", first), ("bm25", others[first["query_id"]])))
    ]
    return _write(target, [header, *merged])


def test_a_side_that_merges_several_retrievals_per_asking_is_named_not_quiet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The baseline scored one retrieval per question, the candidate two merged into one list:
    the interleave may not be what the app showed the model, so the gate warns, naming the
    queries and the sources, in either direction and for evaluation files as for runs; the
    same shape on both sides is one warning, not two."""
    merged = _merged(BASE, CAND, tmp_path / "hybrid.jsonl")
    code, lines = _gate(capsys, BASE, merged)
    warning = next(line for line in lines if "merged into one list" in line)
    assert warning.startswith("warning: the candidate run scores 57 queries from several")
    assert "(from bm25, vector), where the baseline scored one retrieval (q01, q02," in warning
    assert "--group source:NAME" in warning
    assert code == 1  # windows-200's lists interleaved into the baseline's push evidence out
    # a pass is never quiet about it: the same list twice merges into itself and passes
    code, lines = _gate(capsys, BASE, _merged(BASE, BASE, tmp_path / "twice.jsonl"))
    assert code == 0
    assert lines[-1].startswith("PASS")
    assert any(line.startswith("warning: the candidate run scores 57 queries") for line in lines)
    code, lines = _gate(capsys, merged, BASE)
    assert any(line.startswith("warning: the baseline run scores 57 queries") for line in lines)
    # the same shape on both sides: compared, with one warning that it is an interleave
    code, lines = _gate(capsys, merged, _again(merged))
    assert code == 0
    both = [line for line in lines if "merged into one list" in line]
    assert len(both) == 1
    assert both[0].startswith("warning: both runs score 57 queries from several retrievals")
    # one retriever on both sides: nothing merged, nothing to say
    header, *records = _lines(BASE)
    vector = [header, *({**record, "source": "vector"} for record in records)]
    named = _write(tmp_path / "vector.jsonl", vector)
    code, lines = _gate(capsys, named, merged, "--group", "source:vector")
    assert code == 0
    assert lines[-1].startswith("PASS: 57 queries compared — 0 regressed, 0 improved")
    assert not any("merged into one list" in line for line in lines)
    # the same finding from evaluation files (the columnar reader keeps the merged queries)
    from spanchor_core import evaluate, load_corpus, read_gold, read_run, write_evaluation

    corpus, gold = load_corpus(DOCS), read_gold(GOLD)
    files = []
    for run in (BASE, merged):
        out = tmp_path / f"{run.stem}.json"
        write_evaluation(evaluate(corpus, gold, read_run(run)), out)
        files.append(str(out))
    main(["compare", *files])
    captured = capsys.readouterr()
    assert "the candidate run scores 57 queries from several retrievals" in (
        captured.out + captured.err
    )


def test_merging_only_some_questions_names_only_those(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two questions merged on the candidate side, the rest one retrieval each: one finding
    naming exactly those two."""
    header, *records = _lines(BASE)
    hybrid = _lines(_merged(BASE, CAND, tmp_path / "all.jsonl"))[1:]
    two = [r for r in hybrid if r["query_id"] in ("q03", "q07")]
    rest = [r for r in records if r["query_id"] not in ("q03", "q07")]
    _, lines = _gate(capsys, BASE, _write(tmp_path / "two.jsonl", [header, *rest, *two]))
    warning = next(line for line in lines if "merged into one list" in line)
    assert "scores 2 queries from several" in warning
    assert "one retrieval (q03, q07):" in warning


def test_a_grouping_rule_that_keeps_none_of_a_sides_records_is_untrusted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--group source:vector`` against a baseline whose records name no source keeps none of
    them: every baseline query is scored as an empty retrieval and any candidate "improves".
    That was a PASS (55 improved on a LlamaIndex sub-question candidate); it is untrusted."""
    merged = _merged(BASE, CAND, tmp_path / "hybrid.jsonl")
    code, lines = _gate(capsys, BASE, merged, "--group", "source:vector")
    assert code == 3
    finding = next(line for line in lines if "kept none of its records" in line)
    assert finding.startswith(
        "untrusted: the baseline run cannot be trusted: the grouping rule 'source:vector' "
        "kept none of its records, so its 57 recorded queries were scored as if nothing was "
        "retrieved"
    )
    assert lines[-1].startswith("UNTRUSTED")
    # a rule that the baseline matches and the candidate does not: the candidate's turn
    code, lines = _gate(capsys, merged, BASE, "--group", "source:bm25")
    assert code == 3
    assert any("the candidate run cannot be trusted: the grouping rule" in line for line in lines)


def _sourced(source: Path, target: Path, name_of: Any) -> Path:
    """``source`` with each record in a trace of its own, from the source ``name_of(n)`` for the
    n-th record: an agent that picks a retriever per question."""
    header, *records = _lines(source)
    for number, record in enumerate(records):
        record.update(trace_id=f"t{number}", source=name_of(number))
    return _write(target, [header, *records])


def test_a_grouping_rule_that_empties_some_questions_is_untrusted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--group source:bm25`` over a baseline whose agent used ``bm25`` for half the questions
    and ``vector`` for the others scores the other half as empty retrievals: nothing can
    regress from them, and the gate passed with "26 improved". Like missing queries, they are
    untrusted (a warning with ``on_missing = "warn"``); and so on the candidate's side."""
    half = _sourced(BASE, tmp_path / "half.jsonl", lambda n: "bm25" if n % 2 == 0 else "vector")
    overlap = QUICKSTART / "runs" / "candidate-overlap.jsonl"
    every = _sourced(overlap, tmp_path / "every.jsonl", lambda n: "bm25")
    code, lines = _gate(capsys, half, every, "--group", "source:bm25")
    assert code == 3
    finding = next(line for line in lines if "kept none of the records of" in line)
    assert finding.startswith(
        "untrusted: the baseline run's grouping rule 'source:bm25' kept none of the records of "
        "28 of its 57 recorded queries (q02, q04, q06, q08, q10 and 23 more)"
    )
    code, lines = _gate(capsys, every, half, "--group", "source:bm25")
    assert code == 3
    assert any(line.startswith("untrusted: the candidate run's grouping rule") for line in lines)
    # the rule every record matches is an ordinary comparison; so is the default rule
    assert _gate(capsys, every, _again(every), "--group", "source:bm25")[0] == 0
    assert _gate(capsys, half, every)[0] == 0
    # in Python: the evaluation names the emptied queries
    from spanchor_core import evaluate, load_corpus, read_gold, read_run

    scored = evaluate(load_corpus(DOCS), read_gold(GOLD), read_run(half), group="source:bm25")
    assert scored.emptied == tuple(f"q{n:02d}" for n in range(2, 58, 2))
    assert all(scored[qid]["recall@5"] == 0.0 for qid in scored.emptied)
    assert not scored.missing_in_run


def test_emptied_questions_follow_the_missing_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    half = _sourced(BASE, tmp_path / "half.jsonl", lambda n: "bm25" if n % 2 == 0 else "vector")
    overlap = QUICKSTART / "runs" / "candidate-overlap.jsonl"
    every = _sourced(overlap, tmp_path / "every.jsonl", lambda n: "bm25")
    config = tmp_path / "spanchor.toml"
    config.write_text(
        (QUICKSTART / "spanchor.toml").read_text(encoding="utf-8")
        + '\n[tool.spanchor.policy]\non_missing = "warn"\n',
        encoding="utf-8",
    )
    code = main(
        ["gate", "--docs", str(DOCS), "--gold", str(GOLD), "--baseline", str(half),
         "--candidate", str(every), "--config", str(config), "--group", "source:bm25", "-q"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert any(
        line.startswith("warning: the baseline run's grouping rule 'source:bm25'")
        for line in out.splitlines()
    )


def test_a_candidate_that_is_the_baselines_own_recording_is_untrusted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The baseline's path in the candidate's place, or a copy of the baseline where the
    candidate's recording should be (a CI step that recorded nothing and fell back to a
    committed file): every delta is zero by construction, so no PASS."""
    copy = tmp_path / "candidate.jsonl"
    copy.write_bytes(BASE.read_bytes())
    for candidate in (BASE, copy):
        code, lines = _gate(capsys, BASE, candidate)
        assert code == 3
        said = [line for line in lines if "own recording" in line]
        assert said[0].startswith("untrusted: the candidate cannot be trusted: it is the baseline")
        assert "recorded at 2026-12-01T14:27:56.484Z" in said[0]
        assert len(said) == 2  # the first lines and the verdict, not a third time in between
        assert any(line.startswith("UNTRUSTED: 57 queries compared") for line in lines)
    # the same results recorded again (a moment of their own) are a real, passing re-run
    assert _gate(capsys, BASE, _again(copy))[0] == 0


def test_one_recording_scored_two_ways_is_compared_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Comparing the evaluations of one run under different settings measures the settings:
    allowed, and said. Under the same settings it is the same evaluation: untrusted."""
    evaluations = []
    for name in "ab":
        out = tmp_path / f"{name}.json"
        assert main(["evaluate", str(DOCS), str(GOLD), str(BASE), "-o", str(out), "-q"]) == 0
        evaluations.append(out)
    capsys.readouterr()
    same, twin = evaluations
    assert main(["compare", str(same), str(twin), "-q"]) == 3
    assert "own recording" in capsys.readouterr().out
    # the same run scored by another spanchor version: what the upgrade changes, measured
    text = same.read_text(encoding="utf-8")
    ours = f'"spanchor_version": "{__version__}"'
    assert ours in text
    other = tmp_path / "other-version.json"
    other.write_text(text.replace(ours, '"spanchor_version": "0.4.9"', 1), encoding="utf-8")
    code = main(["compare", str(other), str(same), "-q"])
    said = capsys.readouterr().out
    warning = next(line for line in said.splitlines() if "scored from one recording" in line)
    assert warning.startswith("warning: the baseline and the candidate")
    assert "with different spanchor_version: the comparison measures that change" in warning
    assert code == 0  # the same scores, compared: a pass that says what it measured


def test_repeated_baselines_that_are_one_recording_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "baseline-2.jsonl"
    copy.write_bytes(BASE.read_bytes())
    overlap = QUICKSTART / "runs" / "candidate-overlap.jsonl"
    code = main(
        ["gate", "--docs", str(DOCS), "--gold", str(GOLD), "--baseline", str(BASE),
         "--baseline", str(copy), "--candidate", str(overlap), "-q"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    warning = next(line for line in out.splitlines() if "are one recording" in line)
    assert f"(baseline {BASE} and baseline {copy})" in warning or "baseline-2.jsonl" in warning
    # baselines recorded separately (each its own moment) are not named
    main(
        ["gate", "--docs", str(DOCS), "--gold", str(GOLD), "--baseline", str(BASE),
         "--baseline", str(_again(copy)), "--candidate", str(overlap), "-q"]
    )  # fmt: skip
    assert "are one recording" not in capsys.readouterr().out


def test_the_same_evaluation_twice_in_python_is_untrusted_but_a_plain_table_is_not() -> None:
    from spanchor_core import (
        Corpus,
        Run,
        RunHeader,
        compare,
        evaluate,
        load_corpus,
        read_gold,
        read_run,
    )
    from spanchor_core.compare import MappingMetricTable

    corpus: Corpus = load_corpus(DOCS)
    gold, run = read_gold(GOLD), read_run(BASE)
    # read from its file: scored twice, it is one recording on both sides
    again = compare(evaluate(corpus, gold, run), evaluate(corpus, gold, run))
    assert [f.code for f in again.untrusted] == ["same_recording"]
    assert "recorded at 2026-12-01T14:27:56.484Z" in again.untrusted[0].message
    # built in memory: only the same evaluation object twice is known to be one recording
    built = Run(RunHeader(), run.records)
    evaluation = evaluate(corpus, gold, built)
    twice = compare(evaluation, evaluation)
    assert twice.exit_code == 3
    assert "(the same evaluation on both sides)" in twice.untrusted[0].message
    assert compare(evaluation, evaluate(corpus, gold, built)).exit_code == 0
    table = MappingMetricTable.from_mapping({"a": {"recall@5": 1.0}})
    assert compare(table, table).exit_code == 0
