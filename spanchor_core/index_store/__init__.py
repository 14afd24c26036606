"""The persistent corpus index: built once per corpus and parameters, memory-mapped after.

See :mod:`.store` for the key, the files, the locking and where the cache lives.
"""

from __future__ import annotations

from spanchor_core.index_store.store import (
    CACHE_ENV,
    CACHE_MIN_CHARS,
    IndexEntry,
    cache_dir,
    clear_cache,
    entry_key,
    index_entries,
    load_indexes,
    persistent_locator,
    pipeline_locator,
    release_index_pages,
    store_indexes,
)

__all__ = [
    "CACHE_ENV",
    "CACHE_MIN_CHARS",
    "IndexEntry",
    "cache_dir",
    "clear_cache",
    "entry_key",
    "index_entries",
    "load_indexes",
    "persistent_locator",
    "pipeline_locator",
    "release_index_pages",
    "store_indexes",
]
