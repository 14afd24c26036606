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

Text found more than once — or, in the fuzzy stage, aligned about as well (within
``fuzzy_tie`` of the best score) in several places — is ``AMBIGUOUS``, and every stage
resolves it by one rule (:func:`.resolve.choose`): the occurrence in the named document
wins, then the one nearest the offset hint, then (``tie_break="gold"``, the default) the one
that overlaps the query's gold spans passed in ``LocateRequest.prefer``, then the lowest
``(document_id, start)`` — a rule that does not depend on the order documents were loaded
in. ``resolved_by`` says which rule decided (``document_id``, ``nearest_hint``, ``gold``,
``first``) and ``reason`` how many places there were. A match never crosses a document
boundary. In the fuzzy stage the best-scoring region wins; a worse one never wins by coming
first.

Why the gold decides between copies. Identical (or equally good) text in several places,
with no document id or offset to tell them apart, is the same evidence: the retriever
returned the text, and cannot know which copy the gold annotator picked (the ``finance``
corpus repeats 73 % of its 200-character windows; under the positional rule perfectly
retrieved chunks there scored recall@1 0.81). Crediting the copy that overlaps the gold
scores what was retrieved, not which copy the index happened to hold. It never moves a
unique match, nor one that a document id or a nearby hint decides; the result stays
``AMBIGUOUS`` (so it is counted) with ``resolved_by="gold"``. ``tie_break="position"``
keeps the positional rule for users who want mapping independent of the gold.

Confidence: 1.0 for ``EXACT``, ``VERIFIED`` and ``SPAN``; for ``NORMALISED`` the
similarity of the case-folded texts, capped at 0.99; for ``FUZZY`` the rapidfuzz ratio
between the normalised text and the normalised span; ``AMBIGUOUS`` keeps the score of the
stage that found the occurrences when a document id or a hint within the text's length
of one copy decided, and divides it by the number of equally good places otherwise (gold
or first: each place is as likely to be the source); 0.0 for ``UNMAPPED`` and
``INVALID``. ``hint_rejected`` is true when the result claimed a location — offsets, or a
document id — and the text was not found exactly there (a wrong or unknown document id
counts, whatever the offsets).

Short texts. Texts under ``fuzzy_min_chars`` (32) non-space characters are matched exactly
or normalised only, never approximately: a random 12–30-character text finds a 0.8 match
somewhere in a megabyte of prose often (8–24 % did), so such a match is no evidence.
Fuzzy spans cover the whole aligned text: unaligned edges of the text (words dropped or
markup stripped near an edge) that match the source next to the span extend it
(:func:`.align.extend_edges`); a prepended header, which matches nothing there, does not.

Speed. Scanning the corpus once per result costs 2–20 ms per MB per chunk (:mod:`.scan`),
so the corpus is indexed once, lazily, by *minimizers*: for every window of ``window``
consecutive ``kgram``-character substrings the one with the smallest (mixed polynomial)
hash is kept, packed with its position into one sorted ``uint64`` array (about
``2 / (window + 1)`` of all positions: 8 bytes per ~25 characters with the defaults).
Any text of at least ``kgram + window - 1`` characters (67 by default) contains a full
window, and that window's minimizer is indexed at the same relative place in every
occurrence — so one lookup of its first window's minimizer (the rarest one of its first
``3 * window + kgram - 1`` characters when that one is frequent) yields every occurrence,
which ``str.startswith`` confirms. The whitespace-and-case view gets its own index (built only
when some result needs it) plus a map from normalised to canonical offsets that keeps
every 32nd position and walks the rest. Approximate matching votes with all of a text's
minimizers in that view for regions (runs of nearby diagonals), aligns every region with
at least half the best one's votes — plus those the document id, hint or gold point at —
with rapidfuzz (``Indel``), and lets the scores compete.

Slow paths, by design: texts shorter than ``kgram + window - 1`` characters, and texts
whose minimizers all occur more than ``max_occurrences`` times, are found by a scan per
document (``str.find``; a whitespace-tolerant regular expression for the normalised
stage) — about 2 and 17 ms per MB of corpus each. Short texts that need approximate matching
are aligned with ``rapidfuzz.fuzz.partial_ratio_alignment`` per document (about 10 ms
per MB), only while the corpus (or the named document) is under ``fuzzy_scan_limit``
characters; beyond that they are ``UNMAPPED`` with a reason saying so.

The package, from the bottom up: :mod:`.model` (what goes in and out), :mod:`.text` (folding
and the normalised view of a string), :mod:`.hashing` and :mod:`.index` (minimizers),
:mod:`.documents` (the corpus as one virtual text), :mod:`.normalised_view`,
:mod:`.candidates` (query-side lookups), :mod:`.scan` (slow paths), :mod:`.settings`,
:mod:`.context` (what the stages share), :mod:`.resolve` (tie-breaking), then the stages
:mod:`.prepare`, :mod:`.exact`, :mod:`.normalised`, :mod:`.fuzzy` (with :mod:`.align`), and
:mod:`.locator`, which composes them. :mod:`.near` offers near matches for authoring
(:meth:`Locator.near_matches`): quotes, dashes, case, spacing and small edits.
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
