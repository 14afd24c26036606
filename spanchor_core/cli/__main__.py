"""``python -m spanchor_core.cli``: the same as the ``spanchor`` command."""

from __future__ import annotations

import sys

from spanchor_core.cli.app import main

sys.exit(main())
