"""The pytest plugin costs nothing to a session that does not use it.

Every pytest session of a project with spanchor installed loads the plugin (its ``pytest11``
entry point). Registering its options and fixtures must not import the library: a session whose
tests ask for no spanchor fixture never loads numpy, pydantic or a library module beyond the
plugin's own. Checked on ``sys.modules`` inside the session, never on time.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import sys

HEAVY = ("numpy", "pydantic", "rapidfuzz", "orjson")


def test_nothing_heavy_was_imported_by_the_plugin():
    assert "spanchor_core.testing.plugin" in sys.modules  # the plugin is registered
    loaded = sorted(
        name
        for name in sys.modules
        if name.split(".")[0] in HEAVY
        or (name.startswith("spanchor_core.") and not name.startswith("spanchor_core.testing"))
    )
    light = {"spanchor_core._version", "spanchor_core.errors"}
    assert [name for name in loaded if name not in light] == []


def test_the_fixtures_still_work(spanchor_config):
    assert spanchor_config.docs is None
"""


PYTEST = (
    sys.executable,
    "-m",
    "pytest",
    "-q",
    "-p",
    "no:cacheprovider",
    "-p",
    "spanchor_core.testing",
)
"""pytest with the plugin registered by name (other plugins' autoload off, so it is ours alone)."""


def _session(tmp_path: Path, test: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_probe.py").write_text(test, encoding="utf-8")
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run(
        [*PYTEST, "test_probe.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_session_without_spanchor_fixtures_loads_no_library(tmp_path: Path) -> None:
    done = _session(tmp_path, PROBE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


def test_the_probe_sees_a_heavy_import(tmp_path: Path) -> None:
    """The probe can fail: a test that imports the library is caught by the same check."""
    done = _session(tmp_path, "import spanchor_core.compare\n" + PROBE)
    assert done.returncode == 1
    assert "FAILED test_probe.py::test_nothing_heavy_was_imported_by_the_plugin" in done.stdout
    assert "1 passed" in done.stdout
