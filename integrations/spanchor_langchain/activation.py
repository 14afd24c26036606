"""Zero-code activation: ``SPANCHOR_RUN_FILE=runs/candidate.jsonl python app.py``.

The way LangSmith tracing is switched on by ``LANGSMITH_TRACING=true``: at import of
``spanchor_langchain`` a configure hook is registered with
``langchain_core.tracers.context.register_configure_hook(..., env_var="SPANCHOR_RUN_FILE")``.
While the variable is set (not empty, ``0`` or ``false``), LangChain creates an
:class:`EnvRunFileHandler` for every top-level run of the process and attaches it
(inheritable) — so every retrieval and every context of every chain, graph and agent is
recorded into that path, without touching the application's code. All those handlers share
one open file (:mod:`spanchor_langchain.shared`) and append (``mode="a"``), so several
processes may record into one file. ``SPANCHOR_STRICT=1`` makes recording failures raise into
the application (CI). A process that ran LangChain under the variable but recorded nothing
says so in a warning at exit.

The hook exists once ``spanchor_langchain`` is imported (LangChain has no plugin entry point
for hooks): import it in the application, a ``conftest.py`` or ``sitecustomize``.
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from typing import Final

from langchain_core.tracers.context import register_configure_hook

from spanchor_langchain.callbacks import SpanchorCallbackHandler

__all__ = ["RUN_FILE_ENV", "STRICT_ENV", "EnvRunFileHandler"]

RUN_FILE_ENV: Final = "SPANCHOR_RUN_FILE"
"""The environment variable holding the run-file path that switches recording on."""
STRICT_ENV: Final = "SPANCHOR_STRICT"
"""Set to ``1`` to make recording failures raise (``strict=True``)."""

_FALSE: Final = frozenset({"", "0", "false", "False"})


class EnvRunFileHandler(SpanchorCallbackHandler):
    """The handler LangChain creates per top-level run while ``SPANCHOR_RUN_FILE`` is set."""

    def __init__(self) -> None:
        path = os.environ.get(RUN_FILE_ENV, "")
        super().__init__(
            path,
            description="langchain:env",
            mode="a",
            strict=os.environ.get(STRICT_ENV, "") not in _FALSE,
        )


_env_handler: ContextVar[SpanchorCallbackHandler | None] = ContextVar(
    "spanchor_langchain_env_handler", default=None
)
register_configure_hook(
    _env_handler, inheritable=True, handle_class=EnvRunFileHandler, env_var=RUN_FILE_ENV
)
