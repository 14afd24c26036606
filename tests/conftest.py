"""Test-wide settings: hypothesis without per-example deadlines (CI machines are shared and
slow at times; a deadline would turn load into flaky failures), derandomised under CI so that
a run there is reproducible."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("spanchor", deadline=None, print_blob=True)
settings.register_profile("spanchor-ci", deadline=None, print_blob=True, derandomize=True)
settings.load_profile("spanchor-ci" if os.environ.get("CI") else "spanchor")
