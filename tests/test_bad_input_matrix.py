"""The bad-input matrix of issue 12: every kind of bad input, for every command and file type,
ends the same way — exit 2, exactly one line on stderr naming the file (and the line where
there is one), no traceback — and leaves every file of the project byte-identical.

The project is the fuzz suite's workspace (documents, gold sets, runs, evaluations, policies,
settings, candidates, a SQuAD file). Each case breaks it in one way and runs one command; the
whole tree (contents, links, FIFOs) is snapshotted before and after. The first group is the
outputs that would clobber an input or a spanchor file (issue 12's "outputs overwrite inputs,
silently"); then outputs that are not regular files; then bad inputs, including every internal
error site the issue lists (:mod:`tests.fuzz.test_regressions`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from spanchor_core.importers import title_slug
from tests.fuzz.seeds import seeds
from tests.fuzz.test_regressions import CASES as ISSUE_SITES
from tests.fuzz.workspace import build, first_candidate_id, run_cli

Breaker = Callable[[Path], object]


def _nothing(root: Path) -> None:
    del root


def _snapshot(root: Path) -> dict[str, object]:
    """Every entry under ``root``: a file's hash, a link's target, a directory, a FIFO."""
    found: dict[str, object] = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            key = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[key] = ("link", os.readlink(path))
            elif path.is_dir():
                found[key] = "dir"
            elif path.is_file():
                found[key] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                found[key] = "special"
    return found


def _write(name: str, data: bytes | str) -> Breaker:
    def breaker(root: Path) -> None:
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)

    return breaker


def _edit_line(name: str, index: int, edit: Callable[[str], str]) -> Breaker:
    def breaker(root: Path) -> None:
        lines = (root / name).read_text(encoding="utf-8").splitlines()
        lines[index] = edit(lines[index])
        (root / name).write_text("\n".join(lines) + "\n", encoding="utf-8")

    return breaker


def _append_bytes(name: str, index: int, data: bytes) -> Breaker:
    def breaker(root: Path) -> None:
        lines = (root / name).read_bytes().split(b"\n")
        lines[index] += data
        (root / name).write_bytes(b"\n".join(lines))

    return breaker


def _replace(name: str, old: str, new: str) -> Breaker:
    def breaker(root: Path) -> None:
        text = (root / name).read_text(encoding="utf-8")
        assert old in text, (name, old)
        (root / name).write_text(text.replace(old, new, 1), encoding="utf-8")

    return breaker


def _symlink(name: str, target: str) -> Breaker:
    def breaker(root: Path) -> None:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, root / name)

    return breaker


def _fifo(name: str) -> Breaker:
    def breaker(root: Path) -> None:
        os.mkfifo(root / name)

    return breaker


def _hardlink(name: str, target: str) -> Breaker:
    def breaker(root: Path) -> None:
        os.link(root / target, root / name)

    return breaker


def _both(*breakers: Breaker) -> Breaker:
    def breaker(root: Path) -> None:
        for each in breakers:
            each(root)

    return breaker


_SQUAD_SLUG = title_slug(json.loads(seeds().squad)["data"][0]["title"])

_EVALUATE = ["evaluate", "docs", "gold.jsonl", "runs/baseline.jsonl", "--k", "1,3"]
_GATE = ["gate", "--config", "pyproject.toml"]
_COMPARE = ["compare", "b.json", "c.json"]
_COMPARE_RUNS = [
    "compare", "runs/baseline.jsonl", "runs/candidate.jsonl", "--docs", "docs", "--gold",
    "gold.jsonl", "--k", "1,3",
]  # fmt: skip
_REVIEW = ["gold", "review", "candidates.jsonl", "-c", "CANDIDATE", "-q", "Why?", "--approve"]
_ANCHOR_ADD = ["anchor", "add", "q9", "Is it safe?", "docs", "Unplug it"]
_SQUAD = ["import", "squad", "squad.json", "--out", "out"]

_OVERWRITES = "output would overwrite an input"

# (id, break the project, the command, fragments the one error line must hold)
MATRIX: list[tuple[str, Breaker, list[str], tuple[str, ...]]] = [
    # --- outputs over inputs ---------------------------------------------------------------
    (
        "evaluate -o the run",
        _nothing,
        [*_EVALUATE, "-o", "runs/baseline.jsonl"],
        ("runs/baseline.jsonl:", _OVERWRITES, "(the run)", "-o"),
    ),
    (
        "evaluate -o the gold set",
        _nothing,
        [*_EVALUATE, "-o", "gold.jsonl"],
        ("gold.jsonl:", _OVERWRITES, "the gold set"),
    ),
    (
        "evaluate -r a document",
        _nothing,
        [*_EVALUATE, "-r", "docs/faq.md"],
        ("docs/faq.md:", _OVERWRITES, "a document of docs", "-r"),
    ),
    (
        "evaluate -o a document",
        _nothing,
        [*_EVALUATE, "-o", "docs/kettle.md"],
        ("docs/kettle.md:", _OVERWRITES, "a document"),
    ),
    (
        "evaluate -r the run",
        _nothing,
        [*_EVALUATE, "-r", "runs/baseline.jsonl"],
        ("runs/baseline.jsonl:", _OVERWRITES, "the run"),
    ),
    (
        "evaluate -o and -r the same new file",
        _nothing,
        [*_EVALUATE, "-o", "e.json", "-r", "e.json"],
        ("e.json:", "given twice as an output (-o and -r)"),
    ),
    (
        "evaluate -o the run by another spelling",
        _nothing,
        [*_EVALUATE, "-o", "./runs/../runs/baseline.jsonl"],
        ("baseline.jsonl:", _OVERWRITES),
    ),
    (
        "evaluate -o a hard link to the run",
        _hardlink("runs/hard.jsonl", "runs/baseline.jsonl"),
        [*_EVALUATE, "-o", "runs/hard.jsonl"],
        ("runs/hard.jsonl:", _OVERWRITES, "the run, runs/baseline.jsonl"),
    ),
    (
        "evaluate -o the run through a linked directory",
        _symlink("r", "runs"),
        [*_EVALUATE, "-o", "r/baseline.jsonl"],
        ("r/baseline.jsonl:", _OVERWRITES, "the run"),
    ),
    (
        "evaluate -r another evaluation",
        _nothing,
        [*_EVALUATE, "-r", "b.json"],
        ("b.json:", "would overwrite a spanchor.evaluation file with a report"),
    ),
    (
        "evaluate -o the candidates file",
        _nothing,
        [*_EVALUATE, "-o", "candidates.jsonl"],
        ("candidates.jsonl:", "spanchor.candidates file with a spanchor.evaluation file"),
    ),
    (
        "gate --report the gold set",
        _nothing,
        [*_GATE, "--report", "gold.jsonl"],
        ("gold.jsonl:", _OVERWRITES, "the gold set", "-r"),
    ),
    (
        "gate -o the candidate run",
        _nothing,
        [*_GATE, "-o", "runs/candidate.jsonl"],
        ("runs/candidate.jsonl:", _OVERWRITES, "the candidate"),
    ),
    (
        "gate --junit the baseline run",
        _nothing,
        [*_GATE, "--junit", "runs/baseline.jsonl"],
        ("runs/baseline.jsonl:", _OVERWRITES, "the baseline", "--junit"),
    ),
    (
        "gate --html the settings file",
        _nothing,
        [*_GATE, "--html", "pyproject.toml"],
        ("pyproject.toml:", _OVERWRITES, "the settings file", "--html"),
    ),
    (
        "gate --report a document",
        _nothing,
        [*_GATE, "--report", "docs/kettle.md"],
        ("docs/kettle.md:", _OVERWRITES, "a document"),
    ),
    (
        "gate --html the policy",
        _nothing,
        [*_GATE, "--policy", "policy.json", "--html", "policy.json"],
        ("policy.json:", _OVERWRITES, "the policy"),
    ),
    (
        "gate outputs from [tool.spanchor] over the gold set",
        _replace("pyproject.toml", "redact = false", 'redact = false\nreport = "gold.jsonl"'),
        _GATE,
        ("gold.jsonl:", _OVERWRITES, "the gold set"),
    ),
    (
        "compare -o the baseline",
        _nothing,
        [*_COMPARE, "-o", "b.json"],
        ("b.json:", _OVERWRITES, "the baseline", "-o"),
    ),
    (
        "compare --html the candidate",
        _nothing,
        [*_COMPARE, "--html", "c.json"],
        ("c.json:", _OVERWRITES, "the candidate", "--html"),
    ),
    (
        "compare -r the policy",
        _nothing,
        [*_COMPARE, "--policy", "policy.toml", "-r", "policy.toml"],
        ("policy.toml:", _OVERWRITES, "the policy"),
    ),
    (
        "compare --junit the baseline",
        _nothing,
        [*_COMPARE, "--junit", "b.json"],
        ("b.json:", _OVERWRITES, "--junit"),
    ),
    (
        "compare runs -o the gold set",
        _nothing,
        [*_COMPARE_RUNS, "-o", "gold.jsonl"],
        ("gold.jsonl:", _OVERWRITES, "the gold set"),
    ),
    (
        "compare runs -r a document",
        _nothing,
        [*_COMPARE_RUNS, "-r", "docs/faq.md"],
        ("docs/faq.md:", _OVERWRITES, "a document"),
    ),
    (
        "compare -r a run that is not an input",
        _nothing,
        [*_COMPARE, "-r", "runs/baseline.jsonl"],
        ("runs/baseline.jsonl:", "spanchor.run file with a report"),
    ),
    (
        "gold extract -o the gold set",
        _nothing,
        ["gold", "extract", "docs", "-o", "gold.jsonl"],
        ("gold.jsonl:", "spanchor.gold file with a spanchor.candidates file"),
    ),
    (
        "gold extract -o a document",
        _nothing,
        ["gold", "extract", "docs", "-o", "docs/faq.md"],
        ("docs/faq.md:", _OVERWRITES, "a document"),
    ),
    (
        "gold extract -o a run",
        _nothing,
        ["gold", "extract", "docs", "-o", "runs/baseline.jsonl"],
        ("runs/baseline.jsonl:", "spanchor.run file"),
    ),
    (
        "import squad --gold the SQuAD file",
        _nothing,
        [*_SQUAD, "--gold", "squad.json"],
        ("squad.json:", _OVERWRITES, "the SQuAD file", "--gold"),
    ),
    (
        "import squad --gold a run",
        _nothing,
        [*_SQUAD, "--gold", "runs/baseline.jsonl"],
        ("runs/baseline.jsonl:", "spanchor.run file with a spanchor.gold file"),
    ),
    (
        "import squad --out over the SQuAD file",
        _write(f"out/{_SQUAD_SLUG}/0.txt", seeds().squad),
        ["import", "squad", f"out/{_SQUAD_SLUG}/0.txt", "--out", "out", "--gold", "g.jsonl"],
        ("0.txt:", _OVERWRITES, "the SQuAD file", "--out"),
    ),
    (
        "import legacy -o its source",
        _nothing,
        ["import", "legacy", "gold-0x.jsonl", "-o", "gold-0x.jsonl"],
        ("gold-0x.jsonl:", _OVERWRITES, "the 0.x gold file"),
    ),
    (
        "import legacy -o an evaluation",
        _nothing,
        ["import", "legacy", "gold-0x.jsonl", "-o", "b.json"],
        ("b.json:", "spanchor.evaluation file with a spanchor.gold file"),
    ),
    (
        "anchor add --gold a document",
        _nothing,
        [*_ANCHOR_ADD, "--gold", "docs/faq.md"],
        ("docs/faq.md:", "would edit an input", "a document"),
    ),
    (
        "gold promote --gold the candidates file",
        _nothing,
        ["gold", "promote", "candidates.jsonl", "docs", "--gold", "candidates.jsonl"],
        ("candidates.jsonl:", "the candidates file"),
    ),
    (
        "gold promote --gold a document",
        _nothing,
        ["gold", "promote", "candidates.jsonl", "docs", "--gold", "docs/kettle.md"],
        ("docs/kettle.md:", "a document"),
    ),
    (
        "gold review -o the gold set",
        _nothing,
        [*_REVIEW, "-o", "gold.jsonl"],
        ("gold.jsonl:", "spanchor.gold file with a spanchor.candidates file"),
    ),
    (
        "gold review -o a document",
        _nothing,
        [*_REVIEW, "--docs", "docs", "-o", "docs/kettle.md"],
        ("docs/kettle.md:", "a document"),
    ),
    (
        "check-corpus --fix a gold set that is a document",
        _write("docs/g.md", seeds().gold),
        ["check-corpus", "docs", "docs/g.md", "--fix", "--glob", "*.md"],
        ("docs/g.md:", "would edit an input", "a document"),
    ),
    # --- outputs that are not regular files -------------------------------------------------
    (
        "evaluate -o a symbolic link",
        _symlink("link.json", "b.json"),
        [*_EVALUATE, "-o", "link.json"],
        ("link.json:", "symbolic link"),
    ),
    (
        "evaluate -o a dangling symbolic link",
        _symlink("link.json", "nowhere.json"),
        [*_EVALUATE, "-o", "link.json"],
        ("link.json:", "symbolic link"),
    ),
    ("evaluate -r a FIFO", _fifo("pipe"), [*_EVALUATE, "-r", "pipe"], ("pipe:", "FIFO")),
    ("compare -r a device", _nothing, [*_COMPARE, "-r", "/dev/null"], ("/dev/null:", "device")),
    ("gate --html a directory", _nothing, [*_GATE, "--html", "runs"], ("runs:", "directory")),
    (
        "gold extract -o a FIFO",
        _fifo("pipe"),
        ["gold", "extract", "docs", "-o", "pipe"],
        ("pipe:", "FIFO"),
    ),
    (
        "anchor add --gold a symbolic link",
        _symlink("g.jsonl", "gold.jsonl"),
        [*_ANCHOR_ADD, "--gold", "g.jsonl"],
        ("g.jsonl:", "symbolic link"),
    ),
    (
        "import squad through a linked directory in --out",
        _both(_write("elsewhere/.keep", ""), _symlink(f"out/{_SQUAD_SLUG}", "../elsewhere")),
        [*_SQUAD, "--gold", "g.jsonl"],
        (f"out/{_SQUAD_SLUG}:", "symbolic link"),
    ),
    (
        "import squad over a linked document in --out",
        _both(
            _write("elsewhere/doc.txt", "x"),
            _symlink(f"out/{_SQUAD_SLUG}/0.txt", "../../elsewhere/doc.txt"),
        ),
        [*_SQUAD, "--gold", "g.jsonl"],
        ("0.txt:", "symbolic link"),
    ),
    # --- bad inputs -------------------------------------------------------------------------
    (
        "run with a key twice",
        _edit_line("runs/baseline.jsonl", 1, lambda s: s[:-1] + ', "query": "x"}'),
        _EVALUATE,
        ("runs/baseline.jsonl:2", "twice"),
    ),
    (
        "run not UTF-8 in the middle",
        _append_bytes("runs/baseline.jsonl", 2, b"\xff"),
        _EVALUATE,
        ("runs/baseline.jsonl:3", "UTF-8"),
    ),
    (
        "run with a 1e400 score",
        _edit_line(
            "runs/baseline.jsonl", 1, lambda s: s.replace('"score":0.75', '"score":1e400', 1)
        ),
        _EVALUATE,
        ("runs/baseline.jsonl:2",),
    ),
    (
        "run with a negative latency",
        _edit_line(
            "runs/baseline.jsonl", 1, lambda s: s.replace('"latency_ms":12.5', '"latency_ms":-1', 1)
        ),
        _EVALUATE,
        ("runs/baseline.jsonl:2",),
    ),
    (
        "run with a malformed middle line",
        _edit_line("runs/baseline.jsonl", 1, lambda s: "{oops"),
        _EVALUATE,
        ("runs/baseline.jsonl:2",),
    ),
    (
        "run for another corpus",
        _edit_line(
            "runs/baseline.jsonl",
            0,
            lambda s: s.replace('"corpus_fingerprint":"', '"corpus_fingerprint":"0', 1),
        ),
        _EVALUATE,
        ("runs/baseline.jsonl:1", "corpus"),
    ),
    (
        "run of an unknown schema version",
        _edit_line(
            "runs/baseline.jsonl",
            0,
            lambda s: s.replace('"schema_version":1', '"schema_version":9', 1),
        ),
        _EVALUATE,
        ("runs/baseline.jsonl:1",),
    ),
    (
        "run file missing",
        _nothing,
        [*_EVALUATE[:3], "runs/none.jsonl"],
        ("runs/none.jsonl", "does not exist"),
    ),
    ("run path is a directory", _nothing, [*_EVALUATE[:3], "runs"], ("runs",)),
    (
        "gold malformed line",
        _edit_line("gold.jsonl", 2, lambda s: '{"query_id": '),
        _EVALUATE,
        ("gold.jsonl:3",),
    ),
    (
        "gold missing field",
        _edit_line("gold.jsonl", 1, lambda s: s.replace('"question"', '"questio"', 1)),
        _EVALUATE,
        ("gold.jsonl:2",),
    ),
    (
        "gold unknown kind",
        _edit_line("gold.jsonl", 0, lambda s: s.replace("spanchor.gold", "spanchor.bogus")),
        _EVALUATE,
        ("gold.jsonl:1", "kind"),
    ),
    (
        "gold not UTF-8",
        _write("gold.jsonl", b'{"kind": "spanchor.gold", "x": "\xff"}\n'),
        _EVALUATE,
        ("gold.jsonl", "UTF-8"),
    ),
    (
        "gold with a key twice",
        _edit_line("gold.jsonl", 1, lambda s: s[:-1] + ', "question": "x"}'),
        _EVALUATE,
        ("gold.jsonl:2", "twice"),
    ),
    (
        "empty gold set: validate",
        _write("gold.jsonl", '{"kind": "spanchor.gold", "schema_version": 1}\n'),
        ["validate", "docs", "gold.jsonl"],
        ("gold.jsonl",),
    ),
    (
        "empty gold set: evaluate",
        _write("gold.jsonl", '{"kind": "spanchor.gold", "schema_version": 1}\n'),
        _EVALUATE,
        ("gold.jsonl",),
    ),
    (
        "evaluation with recall@1 = 7",
        _replace("c.json", '"recall@1": 1.0', '"recall@1": 7'),
        _COMPARE,
        ("c.json",),
    ),
    (
        "evaluation with a 1e400 metric",
        _replace("c.json", '"recall@1": 1.0', '"recall@1": 1e400'),
        _COMPARE,
        ("c.json",),
    ),
    (
        "evaluation cut short",
        lambda root: (root / "c.json").write_bytes((root / "c.json").read_bytes()[:400]),
        _COMPARE,
        ("c.json",),
    ),
    ("evaluation is a JSON list", _write("c.json", "[1, 2]\n"), _COMPARE, ("c.json",)),
    (
        "evaluation with a key twice",
        _replace("c.json", '"schema_version": 1,', '"schema_version": 1, "schema_version": 1,'),
        _COMPARE,
        ("c.json", "twice"),
    ),
    (
        "policy JSON with a key twice",
        _replace(
            "policy.json", '"schema_version": 1,', '"schema_version": 1, "schema_version": 1,'
        ),
        [*_COMPARE, "--policy", "policy.json"],
        ("policy.json:3", "schema_version"),
    ),
    (
        "policy names an unknown metric",
        _replace("policy.toml", '"recall@3" = 0.10', '"recal@3" = 0.10'),
        [*_COMPARE, "--policy", "policy.toml"],
        ("policy.toml", "recal@3"),
    ),
    (
        "policy TOML syntax error",
        _write("policy.toml", "[max_drop\n"),
        [*_COMPARE, "--policy", "policy.toml"],
        ("policy.toml",),
    ),
    ("policy file missing", _nothing, [*_COMPARE, "--policy", "nope.toml"], ("nope.toml",)),
    (
        "settings TOML syntax error",
        _write("pyproject.toml", "[tool.spanchor\n"),
        _GATE,
        ("pyproject.toml",),
    ),
    (
        "settings with an unknown key",
        _replace("pyproject.toml", "redact = false", "redactt = false"),
        _GATE,
        ("pyproject.toml", "redactt"),
    ),
    ("settings file missing", _nothing, ["gate", "--config", "none.toml"], ("none.toml",)),
    (
        "candidates malformed line",
        _edit_line("candidates.jsonl", 1, lambda s: "{nope"),
        _REVIEW,
        ("candidates.jsonl:2",),
    ),
    (
        "SQuAD file not JSON",
        _write("squad.json", "{not json"),
        [*_SQUAD, "--gold", "g.jsonl"],
        ("squad.json",),
    ),
    (
        "SQuAD file without data",
        _write("squad.json", '{"version": "1.1"}'),
        [*_SQUAD, "--gold", "g.jsonl"],
        ("squad.json",),
    ),
    (
        "document not UTF-8",
        _write("docs/broken.md", b"ok \xc3\x28 bad"),
        _EVALUATE,
        ("docs/broken.md",),
    ),
    (
        "documents directory missing",
        _nothing,
        ["evaluate", "nodocs", "gold.jsonl", "runs/baseline.jsonl"],
        ("nodocs", "does not exist"),
    ),
    ("documents path is a file", _nothing, ["info", "gold.jsonl"], ("gold.jsonl",)),
    (
        "no documents match the glob",
        _nothing,
        ["info", "docs", "--glob", "*.pdf"],
        ("docs", "*.pdf"),
    ),
    (
        "glob reaching outside the corpus",
        _nothing,
        ["info", "docs", "--glob", "../*.json"],
        ("../*.json",),
    ),
    ("usage: unknown option", _nothing, [*_EVALUATE, "--bogus"], ("usage error", "--bogus")),
    ("usage: missing argument", _nothing, ["evaluate", "docs"], ("usage error",)),
    ("usage: bad --k", _nothing, [*_EVALUATE[:4], "--k", "0"], ("--k",)),
]

PARAMS = [pytest.param(b, a, f, id=name) for name, b, a, f in MATRIX]
for site in ISSUE_SITES:
    assert isinstance(site, type(PARAMS[0]))
    make, argv, fragment = site.values
    PARAMS.append(
        pytest.param(
            lambda root, make=make: build(root, make()),
            argv,
            (fragment,),
            id=f"issue site: {site.id}",
        )
    )


def test_the_matrix_is_large_enough() -> None:
    assert len(PARAMS) >= 60
    assert len({p.id for p in PARAMS}) == len(PARAMS)


@pytest.mark.parametrize(("breaker", "argv", "fragments"), PARAMS)
def test_bad_input(
    tmp_path: Path, breaker: Breaker, argv: list[str], fragments: tuple[str, ...]
) -> None:
    root = build(tmp_path / "project")
    breaker(root)
    args = [first_candidate_id() if arg == "CANDIDATE" else arg for arg in argv]
    before = _snapshot(root)
    outcome = run_cli(args, root)
    lines = [line for line in outcome.stderr.splitlines() if line.strip()]
    assert outcome.code == 2, outcome
    assert len(lines) == 1, outcome.stderr
    assert "Traceback" not in outcome.stderr
    assert "internal error" not in outcome.stderr, outcome.stderr
    assert lines[0].startswith("spanchor: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert _snapshot(root) == before  # nothing written, nothing replaced


_BOM_CASES = [
    ("b.json", _COMPARE),
    ("policy.json", [*_COMPARE, "--policy", "policy.json"]),
    ("policy.toml", [*_COMPARE, "--policy", "policy.toml"]),
    ("pyproject.toml", _GATE),
    ("candidates.jsonl", _REVIEW),
    ("gold.jsonl", _EVALUATE),
    ("runs/baseline.jsonl", _EVALUATE),
    ("squad.json", [*_SQUAD, "--gold", "g.jsonl"]),
]


@pytest.mark.parametrize(("name", "argv"), _BOM_CASES, ids=[name for name, _ in _BOM_CASES])
def test_a_byte_order_mark_is_accepted_by_every_reader(
    tmp_path: Path, name: str, argv: list[str]
) -> None:
    args = [first_candidate_id() if arg == "CANDIDATE" else arg for arg in argv]
    plain = run_cli(args, build(tmp_path / "plain"))
    root = build(tmp_path / "bom")
    (root / name).write_bytes(b"\xef\xbb\xbf" + (root / name).read_bytes())
    marked = run_cli(args, root)
    assert plain.code in (0, 1), plain
    assert (marked.code, marked.stderr) == (plain.code, plain.stderr)
