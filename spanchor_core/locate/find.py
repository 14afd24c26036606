"""Every occurrence of a list of texts: through an index where it can, by scanning where not.

Shared by the exact and the normalised stage, which differ only in the index they consult and
how they confirm a candidate. A text is looked up in this order:

* long enough for a full minimizer window: the stage's own lookup (``lookup``);
* every minimizer of its start too frequent for that lookup (boilerplate, copies): the same
  index through the rarest minimizer of the whole text, however frequent, as long as the
  batch's candidates stay under a budget of a fraction of the corpus size — enumerating
  occurrences costs what they are, a scan costs the whole corpus per batch; in the canonical
  text the candidates are confirmed against the copies of that minimizer
  (:mod:`~spanchor_core.locate.copies`), not one by one;
* shorter than a minimizer window: the scanner's sampled k-gram index
  (:mod:`~spanchor_core.locate.sampled`), once a run has needed a full scan before; its
  candidates, and those of frequent normalised texts, pass a numpy probe of the corpus's low
  bytes (:mod:`~spanchor_core.locate.probe`) before each is confirmed in Python;
* everything else: a scan of the whole corpus (:class:`~spanchor_core.locate.scan.CorpusScanner`).

Each way finds every occurrence, and each candidate is confirmed against the text, so which
one answers never changes the result.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Final, cast

import numpy as np

from spanchor_core.locate.context import SearchContext
from spanchor_core.locate.documents import Occurrence
from spanchor_core.locate.hashing import I64
from spanchor_core.locate.sampled import Sink, place
from spanchor_core.locate.text import normalise

__all__ = ["IndexLookup", "find_occurrences"]

IndexLookup = Callable[[list[str]], list[list[Occurrence] | None]]
"""Confirmed occurrences of each text via an index; ``None``: the index cannot tell."""

_BUDGET_SHARE: Final = 16  # candidates enumerated per call: at most the corpus size / this
_FIND_MAX: Final = 32  # up to this many short normalised texts: str.find rather than a pass
_FIND_SHORTEST: Final = 4  # shorter normalised texts keep the scanner's own path


def find_occurrences(
    ctx: SearchContext, needles: list[str], lookup: IndexLookup, *, normalised: bool
) -> list[list[Occurrence]]:
    """Occurrences of each needle, in order; ``lookup`` gets the needles long enough for it."""
    shortest = ctx.settings.min_indexed_length
    found: dict[int, list[Occurrence]] = {}
    short = [i for i, needle in enumerate(needles) if len(needle) < shortest]
    frequent: list[int] = []
    if not short:  # the common case: every needle goes to the index
        answers = lookup(needles)
        frequent = [i for i, occ in enumerate(answers) if occ is None]
        if not frequent:
            return cast("list[list[Occurrence]]", answers)  # no None among them
        found = {i: occ for i, occ in enumerate(answers) if occ is not None}
    else:
        indexed = [i for i, needle in enumerate(needles) if len(needle) >= shortest]
        for i, occ in zip(indexed, lookup([needles[i] for i in indexed]), strict=True):
            if occ is None:
                frequent.append(i)
            else:
                found[i] = occ
    scan: list[int] = []
    if frequent:
        texts = [needles[i] for i in frequent]
        sink = _confirmer(ctx, frequent, texts, found, normalised=normalised)
        settled = _frequent_candidates(ctx, texts, sink, normalised=normalised)
        for number, occ in settled.items():
            if occ is not None:
                found[frequent[number]] = occ
        scan += _unanswered(frequent, settled, found)
    if short:
        sampled = ctx.scanner.sampled_index(normalised=normalised, wanted=len(short))
        usable = [i for i in short if sampled is not None and len(needles[i]) >= sampled.shortest]
        scan += [i for i in short if sampled is None or len(needles[i]) < sampled.shortest]
        if sampled is not None and usable:
            texts = [needles[i] for i in usable]
            starts, lengths = _coordinates(ctx, normalised=normalised)
            budget = max(1, ctx.documents.total // _BUDGET_SHARE)
            sink = _confirmer(ctx, usable, texts, found, normalised=normalised)
            probes = functools.partial(ctx.scanner.probe, normalised=normalised)
            answered = sampled.candidates(texts, starts, lengths, budget, sink, probes)
            scan += _unanswered(usable, answered, found)
        # a few normalised texts too short for the sampled index: str.find in the normalised
        # stream, not a rolling-hash pass over the corpus
        few = [i for i in scan if len(needles[i]) >= _FIND_SHORTEST]
        if sampled is not None and normalised and 0 < len(few) <= _FIND_MAX:
            scan = [i for i in scan if len(needles[i]) < _FIND_SHORTEST]
            texts = [needles[i] for i in few]
            sink = _confirmer(ctx, few, texts, found, normalised=True)
            _stream_candidates(ctx, texts, sink)
            scan += _unanswered(few, range(len(few)), found)
    scanned = ctx.scanner.find_all([needles[i] for i in scan], normalised=normalised)
    found.update(zip(scan, scanned, strict=True))
    return [found[i] for i in range(len(needles))]


def _coordinates(ctx: SearchContext, *, normalised: bool) -> tuple[I64, I64]:
    """Where each document starts in the indexed text, and its length there."""
    if normalised:
        view = ctx.normalised_view()
        return view.starts, view.lengths
    return ctx.documents.starts, ctx.documents.lengths


def _stream_candidates(ctx: SearchContext, norms: list[str], sink: Sink) -> None:
    """Candidates of each normalised text by ``str.find`` in the normalised stream."""
    starts, lengths = _coordinates(ctx, normalised=True)
    for number, norm in enumerate(norms):
        pos = np.array(ctx.scanner.find_normalised(norm), dtype=np.int64)
        docs = np.maximum(np.searchsorted(starts, pos, side="right") - 1, 0)
        local = pos - starts[docs]
        ok = (local >= 0) & (local + len(norm) <= lengths[docs])
        sink([number] * int(ok.sum()), docs[ok].tolist(), local[ok].tolist())


def _frequent_candidates(
    ctx: SearchContext, texts: list[str], sink: Sink, *, normalised: bool
) -> dict[int, list[Occurrence] | None]:
    """Find each text through its rarest minimizer, however frequent; return the
    texts answered (not those past the budget, most frequent last), by number: with their
    occurrences in the canonical text (through :class:`~.copies.CopyMap`), ``None`` in the
    normalised stream (their candidates handed to ``sink``)."""
    index = ctx.normalised_view().index if normalised else ctx.exact_index()
    starts, lengths = _coordinates(ctx, normalised=normalised)
    exact = not normalised
    n = len(texts)
    best_first = np.zeros(n, dtype=np.int64)
    best_count = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    best_off = np.zeros(n, dtype=np.int64)
    # the minimizers of every full window of the whole text, not only of its start: a text
    # that runs on past boilerplate, or holds a word a near-copy changed, is rare there (any
    # full window's minimizer finds every occurrence)
    for lo_row, rows, offs, keys in ctx.search.batched_minimizers(texts):
        first, count = index.lookup(keys)
        # the rarest minimizer of each text (ties: leftmost)
        order = np.lexsort((offs, count, rows))
        _, head = np.unique(rows[order], return_index=True)
        best = order[head]
        slot = lo_row + rows[best]
        best_first[slot], best_count[slot], best_off[slot] = first[best], count[best], offs[best]
    budget = max(1, ctx.documents.total // _BUDGET_SHARE)
    order = np.argsort(best_count, kind="stable")
    affordable = order[np.cumsum(np.minimum(best_count[order], budget + 1)) <= budget]
    if not len(affordable):
        return {}
    affordable.sort()
    if exact:  # the texts of one minimizer at a time, against its copies
        copies = ctx.scanner.copies(index)
        answered: dict[int, list[Occurrence] | None] = {}
        # by minimizer (its first entry), then text number
        group = np.lexsort((affordable, best_first[affordable]))
        numbers = affordable[group]
        firsts = best_first[numbers]
        heads = np.flatnonzero(np.diff(firsts, prepend=-1)).tolist()
        for a, b in zip(heads, [*heads[1:], len(numbers)], strict=True):
            these = numbers[a:b].tolist()
            found = copies.occurrences(
                int(firsts[a]),
                int(best_count[these[0]]),
                [texts[i] for i in these],
                best_off[these].tolist(),
            )
            answered.update(zip(these, found, strict=True))
        return answered
    need = np.array([len(t) for t in texts], dtype=np.int64)
    probe = ctx.scanner.probe(texts, int(best_count[affordable].sum()), normalised=normalised)
    place(
        index,
        affordable,
        best_first[affordable],
        best_count[affordable],
        best_off[affordable],
        need,
        starts,
        lengths,
        sink,
        probe,
    )
    return dict.fromkeys(affordable.tolist())


def _confirmer(
    ctx: SearchContext,
    slots: list[int],
    texts: list[str],
    found: dict[int, list[Occurrence]],
    *,
    normalised: bool,
) -> Sink:
    """A sink that confirms the candidates of texts against them, into ``found[slots[number]]``
    (a list for every text handed to it, empty when none is confirmed)."""
    sources = ctx.documents.texts
    if not normalised:

        def exact(numbers: list[int], docs: list[int], starts: list[int]) -> None:
            # one C-level pass of str.startswith over the candidates, no Python frame each
            candidates = map(sources.__getitem__, docs)
            same = map(str.startswith, candidates, map(texts.__getitem__, numbers), starts)
            previous = -1
            occ: list[Occurrence] = []
            size = 0
            for number, d, s, ok in zip(numbers, docs, starts, same, strict=True):
                if number != previous:
                    previous, size = number, len(texts[number])
                    occ = found[slots[number]] = []
                if ok:
                    occ.append((d, s, s + size))

        return exact
    view = ctx.normalised_view()

    def normalised_text(numbers: list[int], docs: list[int], starts: list[int]) -> None:
        previous = -1
        occ: list[Occurrence] = []
        text = ""
        for number, d, s in zip(numbers, docs, starts, strict=True):
            if number != previous:
                previous, text = number, texts[number]
                occ = found[slots[number]] = []
            source = sources[d]
            cs = view.to_canonical(source, d, s)
            ce = view.to_canonical(source, d, s + len(text) - 1) + 1
            if normalise(source[cs:ce]) == text:
                occ.append((d, cs, ce))

    return normalised_text


def _unanswered(
    slots: list[int], answered: Iterable[int], found: dict[int, list[Occurrence]]
) -> list[int]:
    """The slots no candidate search answered; answered ones without a candidate found none."""
    done = set(answered)
    for number in done:
        found.setdefault(slots[number], [])
    return [slot for number, slot in enumerate(slots) if number not in done]
