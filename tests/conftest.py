"""Test-wide settings: hypothesis without per-example deadlines (CI machines are shared and
slow at times; a deadline would turn load into flaky failures), derandomised under CI so that
a run there is reproducible."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("spanchor", deadline=None, print_blob=True)
settings.register_profile("spanchor-ci", deadline=None, print_blob=True, derandomize=True)
settings.load_profile("spanchor-ci" if os.environ.get("CI") else "spanchor")

# The persistent index cache (spanchor_core.index_store) goes to a folder of this test session,
# never to the user's ~/.cache: tests must not leave files behind or reuse a developer's cache.
# Subprocesses (CLI tests, Ray workers) inherit the variable. Tests of the cache set their own.
if "SPANCHOR_INDEX_CACHE" not in os.environ:
    import atexit
    import shutil
    import tempfile

    _cache = tempfile.mkdtemp(prefix="spanchor-test-index-")
    os.environ["SPANCHOR_INDEX_CACHE"] = _cache
    atexit.register(shutil.rmtree, _cache, True)
