"""Writing safely: the no-clobber plan (:mod:`spanchor_core.outputs`), targets that are not
regular files, temporary files of killed writers, ``--redact`` in every output, and the SQuAD
importer's documents (atomic, never through a link)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from spanchor_core._io import atomic_write, check_output_target, remove_stale_temp_files
from spanchor_core.errors import CorpusError, InputError
from spanchor_core.importers import import_squad, write_squad_documents
from spanchor_core.outputs import OutputPlan
from tests.fuzz.seeds import seeds
from tests.fuzz.workspace import build, run_cli

ROOT = Path(__file__).resolve().parents[1]


# --- the plan --------------------------------------------------------------------------------


def _project(tmp_path: Path) -> Path:
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    for name in ("docs/a.md", "docs/sub/b.md", "docs/notes.txt", "docs/.hidden.md", "gold.jsonl"):
        (tmp_path / name).write_text("x\n", encoding="utf-8")
    return tmp_path


def test_an_output_over_an_input_is_refused_naming_both(tmp_path: Path) -> None:
    root = _project(tmp_path)
    plan = OutputPlan().read(root / "gold.jsonl", "the gold set").write(root / "gold.jsonl", "-o")
    with pytest.raises(InputError) as caught:
        plan.check()
    assert str(caught.value) == (
        f"{root / 'gold.jsonl'}: output would overwrite an input (the gold set); "
        "choose another -o path"
    )


def test_documents_are_those_the_globs_pick(tmp_path: Path) -> None:
    root = _project(tmp_path)
    docs = root / "docs"
    for name in ("a.md", "sub/b.md"):
        with pytest.raises(InputError, match="a document of"):
            OutputPlan().read_documents(docs, ("*.md",)).write(docs / name, "-r").check()
    # not documents: another extension, a hidden file, a new name, a file outside
    for name in ("docs/notes.txt", "docs/.hidden.md", "docs/new.md", "gold.jsonl"):
        OutputPlan().read_documents(docs, ("*.md",)).write(root / name, "-r").check()


def test_a_new_output_and_an_edit_in_place_are_fine(tmp_path: Path) -> None:
    root = _project(tmp_path)
    OutputPlan().read(root / "gold.jsonl", "the gold set").write(root / "new.json", "-o").check()
    OutputPlan().edit(root / "gold.jsonl", "the gold set", "--gold").check()
    # an edit written back to the same file under another spelling is still an edit
    OutputPlan().edit(
        root / "gold.jsonl", "the candidates", "-o", output=root / "docs" / ".." / "gold.jsonl"
    ).check()
    with pytest.raises(InputError, match="would edit an input"):
        OutputPlan().read_documents(root / "docs", ("*.md",)).edit(
            root / "docs" / "a.md", "the gold set", "--gold"
        ).check()


def test_the_same_output_twice_is_refused(tmp_path: Path) -> None:
    plan = OutputPlan().write(tmp_path / "r.md", "-r").write(tmp_path / "r.md", "--html")
    with pytest.raises(InputError, match=r"given twice as an output \(-r and --html\)"):
        plan.check()


def test_a_spanchor_file_is_only_replaced_by_one_of_its_kind(tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_bytes(seeds().gold)
    OutputPlan().write(gold, "--gold", "spanchor.gold").check()
    with pytest.raises(InputError, match=r"spanchor\.gold file with a spanchor\.candidates file"):
        OutputPlan().write(gold, "-o", "spanchor.candidates").check()
    with pytest.raises(InputError, match=r"spanchor\.gold file with a report"):
        OutputPlan().write(gold, "-r").check()
    other = tmp_path / "notes.md"
    other.write_text("# notes\n", encoding="utf-8")
    OutputPlan().write(other, "-r").check()  # any other file may be replaced by a report


# --- targets that are not regular files ------------------------------------------------------


def test_atomic_write_refuses_a_symlink_and_keeps_it(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with pytest.raises(InputError, match="symbolic link"):
        atomic_write(link, "new")
    assert link.is_symlink()
    assert real.read_text(encoding="utf-8") == "old"


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_atomic_write_refuses_what_is_not_a_file(tmp_path: Path, kind: str) -> None:
    target = Path("/dev/null") if kind == "device" else tmp_path / "target"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        target.mkdir()
    with pytest.raises(
        InputError, match={"fifo": "FIFO", "directory": "directory"}.get(kind, kind)
    ):
        atomic_write(target, "x")
    check_output_target(tmp_path / "absent")  # a new name is fine


# --- temporary files of interrupted writes ---------------------------------------------------


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _temp_name(target: str, host: str, pid: int) -> str:
    return f".{target}.{host}-{pid}-abcd1234.spanchor.tmp"


def test_stale_temp_files_are_removed_on_the_next_write(tmp_path: Path) -> None:
    from spanchor_core._io import _host_tag

    host = _host_tag()
    other = "0" * 8 if host != "0" * 8 else "1" * 8
    dead = tmp_path / _temp_name("a.json", host, _dead_pid())
    alive = tmp_path / _temp_name("b.json", host, os.getpid())
    foreign_new = tmp_path / _temp_name("c.json", other, 1)
    foreign_old = tmp_path / _temp_name("d.json", other, 1)
    unrelated = tmp_path / ".e.json.x.tmp"
    for path in (dead, alive, foreign_new, foreign_old, unrelated):
        path.write_text("partial", encoding="utf-8")
    two_days_ago = time.time() - 2 * 24 * 3600
    os.utime(foreign_old, (two_days_ago, two_days_ago))
    atomic_write(tmp_path / "out.json", "{}")
    left = {path.name for path in tmp_path.iterdir()}
    assert left == {alive.name, foreign_new.name, unrelated.name, "out.json"}
    assert remove_stale_temp_files(tmp_path / "absent") == []


_SLOW_WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from spanchor_core._io import atomic_write
    from spanchor_core.cli.app import _terminate_cleanly

    def pieces():
        yield "{"
        Path(sys.argv[2]).write_text("ready")
        while True:
            time.sleep(0.05)
            yield " "

    with _terminate_cleanly():
        atomic_write(sys.argv[1], pieces())
    """
)


def _start_slow_writer(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path]:
    out = tmp_path / "out" / "report.md"
    ready = tmp_path / "ready"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "integrations")])}
    child = subprocess.Popen([sys.executable, "-c", _SLOW_WRITER, str(out), str(ready)], env=env)
    for _ in range(600):
        if ready.exists():
            break
        time.sleep(0.05)
    assert ready.exists(), "the writer never started"
    return child, out


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_a_terminated_writer_leaves_no_temp_file(tmp_path: Path, how: signal.Signals) -> None:
    child, out = _start_slow_writer(tmp_path)
    assert [p.name for p in out.parent.iterdir()] != []  # its temporary file exists
    child.send_signal(how)
    assert child.wait(timeout=60) != 0
    assert list(out.parent.iterdir()) == []  # neither the report nor a temporary file


def test_a_killed_writers_temp_file_goes_on_the_next_write(tmp_path: Path) -> None:
    child, out = _start_slow_writer(tmp_path)
    child.kill()
    child.wait(timeout=60)
    (leftover,) = out.parent.iterdir()
    assert leftover.name.startswith(".report.md.")
    assert leftover.name.endswith(".spanchor.tmp")
    atomic_write(out, "# report\n")
    assert [p.name for p in out.parent.iterdir()] == ["report.md"]


# --- --redact --------------------------------------------------------------------------------

_SECRETS = ("SECRET-ERROR-TEXT", "SECRET-UNRESOLVED-QUERY")


def _project_with_secrets(tmp_path: Path) -> Path:
    root = build(tmp_path / "project")
    run = root / "runs" / "candidate.jsonl"
    lines = run.read_text(encoding="utf-8").splitlines()
    failed = json.loads(lines[1])
    failed["error"], failed["results"] = f"{_SECRETS[0]}: upstream timeout", []
    unknown = json.loads(lines[2])
    unknown["query_id"], unknown["query"] = None, f"{_SECRETS[1]} what is this?"
    lines[1:3] = [json.dumps(failed), json.dumps(unknown)]
    run.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def _leaked(root: Path, names: list[str], printed: str) -> list[str]:
    texts = {name: (root / name).read_text(encoding="utf-8") for name in names}
    texts["terminal"] = printed
    return [f"{name}: {s}" for name, text in texts.items() for s in _SECRETS if s in text]


def test_evaluate_redact_keeps_the_texts_out_of_every_output(tmp_path: Path) -> None:
    root = _project_with_secrets(tmp_path)
    argv = ["evaluate", "docs", "gold.jsonl", "runs/candidate.jsonl", "--k", "1,3"]
    plain = run_cli([*argv, "-o", "plain.json"], root)
    assert _leaked(root, ["plain.json"], "") != []  # the test can see a leak
    done = run_cli([*argv, "--redact", "-o", "e.json", "-r", "e.md"], root)
    assert done.code == plain.code
    assert _leaked(root, ["e.json", "e.md"], done.stdout + done.stderr) == []
    evaluation = json.loads((root / "e.json").read_text(encoding="utf-8"))
    assert evaluation["unresolved"] == ["[redacted]"]  # counted, not shown
    assert "[redacted]" in {q["error"] for q in evaluation["queries"]}


@pytest.mark.parametrize("command", ["gate", "compare"])
def test_gate_and_compare_redact_every_output(tmp_path: Path, command: str) -> None:
    root = _project_with_secrets(tmp_path)
    outputs = ["-o", "o.json", "-r", "o.md", "--junit", "o.xml", "--html", "o.html"]
    if command == "gate":
        argv = ["gate", "--config", "pyproject.toml", "--redact", *outputs]
    else:
        argv = [
            "compare", "runs/baseline.jsonl", "runs/candidate.jsonl", "--docs", "docs",
            "--gold", "gold.jsonl", "--k", "1,3", "--redact", *outputs,
        ]  # fmt: skip
    done = run_cli(argv, root)
    assert done.code in (1, 3), done
    names = ["o.json", "o.md", "o.xml", "o.html"]
    assert _leaked(root, names, done.stdout + done.stderr) == []
    shown = run_cli([a for a in argv if a != "--redact"], root)
    assert any(_SECRETS[0] in line for line in shown.stdout.splitlines())  # shown unredacted


# --- import squad ----------------------------------------------------------------------------


def test_squad_documents_replace_files_instead_of_writing_through_hard_links(
    tmp_path: Path,
) -> None:
    source = tmp_path / "squad.json"
    source.write_bytes(seeds().squad)
    imported = import_squad(source)
    out = tmp_path / "out"
    (first,) = write_squad_documents(imported, out)[:1]
    keep = tmp_path / "elsewhere.txt"
    first.write_text("edited by hand", encoding="utf-8")
    os.link(first, keep)
    write_squad_documents(imported, out, overwrite=True)
    assert keep.read_text(encoding="utf-8") == "edited by hand"  # the other name is untouched
    assert first.read_text(encoding="utf-8") == imported.corpus.text(next(iter(imported.corpus)))
    assert [p.name for p in first.parent.iterdir() if p.name.startswith(".")] == []


def test_squad_documents_never_follow_a_directory_link_out_of_out(tmp_path: Path) -> None:
    source = tmp_path / "squad.json"
    source.write_bytes(seeds().squad)
    imported = import_squad(source)
    outside = tmp_path / "outside"
    outside.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    slug = next(iter(imported.corpus)).split("/")[0]
    (out / slug).symlink_to(outside, target_is_directory=True)
    with pytest.raises(CorpusError, match="symbolic link"):
        write_squad_documents(imported, out)
    assert list(outside.iterdir()) == []
