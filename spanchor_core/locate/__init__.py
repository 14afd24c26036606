"""Mapping retrieved text back onto canonical source spans: :class:`Locator`.

A retriever hands back chunk text, sometimes with offsets (LangChain ``start_index``,
LlamaIndex ``start_char_idx``) and a document id, sometimes an explicit span with no text.
:class:`Locator` turns each result into a :class:`Location`: a span of one document's
canonical text with a :class:`MatchStatus`, a confidence and the candidate spans.

The order of evidence, for one result:

1. explicit span (no text): validated, never scored — ``SPAN`` or ``INVALID``;
2. given offsets: trusted only if ``canonical[start:end] == text`` — ``VERIFIED``;
   offsets that do not verify are re-anchored below and flagged ``hint_rejected``;
3. exact search over the whole corpus — ``EXACT``;
4. search ignoring whitespace and letter case — ``NORMALISED``;
5. approximate alignment for text a pipeline altered (markup stripped, whitespace
   collapsed, a metadata header prepended) — ``FUZZY`` with a score in [0, 1], or
   ``UNMAPPED`` below ``fuzzy_threshold``.

Text found more than once is ``AMBIGUOUS``: the occurrence in the named document wins,
then the one nearest the offset hint, then the lowest ``(document_id, start)`` — a rule
that does not depend on the order documents were loaded in. ``resolved_by`` says which
rule decided. A match never crosses a document boundary.

Confidence: 1.0 for ``EXACT``, ``VERIFIED`` and ``SPAN``; for ``NORMALISED`` the
similarity of the case-folded texts, capped at 0.99; for ``FUZZY`` the rapidfuzz ratio
between the normalised text and the normalised span; ``AMBIGUOUS`` keeps the score of the
stage that found the occurrences; 0.0 for ``UNMAPPED`` and ``INVALID``. ``hint_rejected``
is true when offsets came with a result and the text was not found exactly there.

Speed. Scanning the corpus once per result costs about 0.3 ms per MB per chunk, so the
corpus is indexed once, lazily, by *minimizers*: for every window of ``window``
consecutive ``kgram``-character substrings the one with the smallest (mixed polynomial)
hash is kept, packed with its position into one sorted ``uint64`` array (about
``2 / (window + 1)`` of all positions: 8 bytes per ~25 characters with the defaults).
Any text of at least ``kgram + window - 1`` characters (67 by default) contains a full
window, and that window's minimizer is indexed at the same relative place in every
occurrence — so one lookup of the text's rarest minimizer yields every occurrence, which
``str.startswith`` confirms. The whitespace-and-case view gets its own index (built only
when some result needs it) plus a map from normalised to canonical offsets that keeps
every 32nd position and walks the rest. Approximate matching votes with all of a text's
minimizers in that view for the region, then aligns with rapidfuzz (``Indel``).

Slow paths, by design: texts shorter than ``kgram + window - 1`` characters, and texts
whose minimizers all occur more than ``max_occurrences`` times, are found by a scan per
document (``str.find``; a whitespace-tolerant regular expression for the normalised
stage) — about 0.3 ms per MB of corpus each. Short texts that need approximate matching
are aligned with ``rapidfuzz.fuzz.partial_ratio_alignment`` per document (about 10 ms
per MB), only while the corpus (or the named document) is under ``fuzzy_scan_limit``
characters; beyond that they are ``UNMAPPED`` with a reason saying so.

The package, from the bottom up: :mod:`.model` (what goes in and out), :mod:`.text` (folding
and the normalised view of a string), :mod:`.hashing` and :mod:`.index` (minimizers),
:mod:`.documents` (the corpus as one virtual text), :mod:`.normalised_view`,
:mod:`.candidates` (query-side lookups), :mod:`.scan` (slow paths), :mod:`.settings`,
:mod:`.context` (what the stages share), :mod:`.resolve` (tie-breaking), then the stages
:mod:`.prepare`, :mod:`.exact`, :mod:`.normalised`, :mod:`.fuzzy` (with :mod:`.align`), and
:mod:`.locator`, which composes them.
"""

from __future__ import annotations

from spanchor_core.locate.locator import Locator
from spanchor_core.locate.model import LocateRequest, Location, MatchStatus
from spanchor_core.locate.near import NearMatch, near_matches
from spanchor_core.locate.settings import LocatorSettings, TieBreak

__all__ = [
    "LocateRequest",
    "Location",
    "Locator",
    "LocatorSettings",
    "MatchStatus",
    "NearMatch",
    "TieBreak",
    "near_matches",
]
