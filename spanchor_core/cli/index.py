"""``spanchor index build|info|clear``: the persistent corpus index (:mod:`..index_store`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from spanchor_core.cli.console import GlobOption, load_docs, out_console

__all__ = ["index_app"]

index_app = typer.Typer(
    help="The persistent corpus index: build it once, reuse it on every run.",
    no_args_is_help=True,
)

CacheOption = Annotated[
    Path | None,
    typer.Option(
        "--cache",
        help="Cache directory (default: $SPANCHOR_INDEX_CACHE, else ~/.cache/spanchor/index).",
    ),
]


@index_app.command("build")
def build(
    docs: Annotated[Path, typer.Argument(help="Documents: a directory, or a .jsonl / .parquet.")],
    glob: GlobOption = None,
    cache: CacheOption = None,
) -> None:
    """Index a corpus into the cache (nothing to do when its entry is there already).

    Example: spanchor index build docs/
    """
    from spanchor_core._escape import escape_control
    from spanchor_core.index_store import cache_dir, entry_key, load_indexes, persistent_locator
    from spanchor_core.locate import Locator

    corpus = load_docs(docs, glob)
    root = cache_dir(cache)
    console = out_console()
    began = time.perf_counter()
    probe = Locator(corpus)  # the default parameters, as evaluate uses them
    found = load_indexes(corpus, root, kgram=probe.kgram, window=probe.window) is not None
    locator = persistent_locator(corpus, root)
    key = entry_key(corpus.fingerprint, locator.kgram, locator.window)
    what = "already built" if found else f"built in {time.perf_counter() - began:.2f} s"
    console.print(
        f"index {key} for {len(corpus)} documents ({corpus.total_chars} characters): {what}; "
        f"{locator.index_nbytes / 1e6:.1f} MB in {escape_control(str(root / key))}",
        markup=False,
    )


@index_app.command("info")
def info(cache: CacheOption = None) -> None:
    """List the cache's entries: key, corpus fingerprint, version, parameters, size.

    Example: spanchor index info
    """
    from spanchor_core._escape import escape_control
    from spanchor_core.index_store import cache_dir, index_entries

    root = cache_dir(cache)
    console = out_console()
    entries = index_entries(root)
    for entry in entries:
        console.print(
            f"{entry.key}\tcorpus {entry.fingerprint[:12]}\tspanchor {entry.version}\t"
            f"k={entry.kgram} w={entry.window}\t{entry.documents} documents\t"
            f"{entry.chars} chars\t{entry.nbytes / 1e6:.1f} MB\tbuilt in {entry.build_seconds} s",
            markup=False,
        )
    console.print(f"{len(entries)} entries in {escape_control(str(root))}", markup=False)


@index_app.command("clear")
def clear(cache: CacheOption = None) -> None:
    """Remove every entry of the cache.

    Example: spanchor index clear
    """
    from spanchor_core._escape import escape_control
    from spanchor_core.index_store import cache_dir, clear_cache

    root = cache_dir(cache)
    removed = clear_cache(root)
    out_console().print(
        f"removed {len(removed)} entries from {escape_control(str(root))}", markup=False
    )
