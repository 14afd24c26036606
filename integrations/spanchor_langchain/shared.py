"""One open run file per path per process, shared by every recorder that names the same path.

LangChain users build handlers per call (``config={"callbacks": [SpanchorCallbackHandler(p)]}``)
and LangChain's configure hooks create a handler per top-level run. If each of them opened the
file itself, each would start it afresh (or, appending, write its own header). Instead every
recorder given a *path* asks :func:`open_shared` for the process's recorder of that path:

* the first one opens it — ``mode="a"`` (the default of the handlers, as LangChain's own
  ``FileCallbackHandler``) appends to an existing run file and keeps its header, so several
  processes (pytest-xdist workers) append to one file safely through the core's ``O_APPEND``
  writes; ``mode="w"`` starts the file afresh when it is not already open in this process;
* later ones share it, whatever their mode, and their header arguments are unused (the header
  is written once, by the first);
* each user holds a reference; the file is closed when the last one is released
  (:meth:`SharedFile.release`) — handlers never closed hold theirs until the process exits,
  when the operating system closes the file (every line is already written).

The process-wide counters (:attr:`SharedFile.roots`, lines written) let a file that saw
chains but received no line say so at exit (see :mod:`spanchor_langchain.callbacks`).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from spanchor_core import RunRecorder

__all__ = ["SharedFile", "open_shared", "shared_files"]

_log = logging.getLogger("spanchor_langchain")
_lock = threading.Lock()
_files: dict[Path, SharedFile] = {}


@dataclass(slots=True, eq=False)
class SharedFile:
    """A run file open in this process, and who uses it."""

    recorder: RunRecorder
    users: int = 0
    roots: int = 0  # top-level chain/graph/tool runs seen by handlers writing here
    warned: bool = False

    def saw_root(self) -> None:
        self.roots += 1  # a benign race: it only decides whether to warn

    def release(self) -> None:
        """Drop one reference; close the file with the last one."""
        with _lock:
            self.users -= 1
            if self.users > 0:
                return
            key = self.recorder.path
            if _files.get(key) is self:
                del _files[key]
        self.recorder.close()


def _key(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.abspath(os.fspath(path)))


def open_shared(
    path: str | os.PathLike[str],
    *,
    mode: Literal["w", "a"],
    header: Mapping[str, Any],
) -> SharedFile:
    """The shared file for ``path``, opened with ``mode`` and ``header`` if not open yet.

    ``header`` holds :class:`~spanchor_core.RunRecorder`'s keyword arguments (``retriever``,
    ``parameters``, ``corpus_fingerprint``, ``gold``, ``tags``). Raises what the recorder raises
    when the file cannot be opened (:class:`~spanchor_core.RecorderError`).
    """
    key = _key(path)
    with _lock:
        shared = _files.get(key)
        if shared is None or shared.recorder.closed:
            shared = SharedFile(RunRecorder(key, mode=mode, **header))
            _files[key] = shared
        shared.users += 1
        return shared


def shared_files() -> list[SharedFile]:
    """The run files open in this process (a snapshot)."""
    with _lock:
        return list(_files.values())


def _warn_silent_files() -> None:
    for shared in shared_files():
        if shared.roots and not shared.recorder.records and not shared.warned:
            shared.warned = True
            _log.warning(
                "spanchor: %s saw %d LangChain runs in this process but recorded nothing: no "
                "retriever ran and no step returned Documents (see spanchor_langchain.record)",
                shared.recorder.path,
                shared.roots,
            )


atexit.register(_warn_silent_files)
