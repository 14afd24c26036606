"""The slow paths of :mod:`spanchor_core.locate.find`: each finds every occurrence, as a scan does.

Texts whose minimizers are all frequent go through the index's rarest minimizer, short texts
through the sampled k-gram index or ``str.find`` in the normalised stream; a brute-force
search of every document (overlapping matches included) is the reference, and so is the
full scan they replace.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from spanchor_core.corpus import Corpus
from spanchor_core.locate import Locator
from spanchor_core.locate import find as find_module
from spanchor_core.locate.context import SearchContext
from spanchor_core.locate.copies import CopyMap
from spanchor_core.locate.documents import Occurrence
from spanchor_core.locate.exact import exact_occurrences
from spanchor_core.locate.hashing import KgramHasher
from spanchor_core.locate.normalised import normalised_occurrences
from spanchor_core.locate.probe import LowBytes
from spanchor_core.locate.sampled import SAMPLE_K, STEP, SampledIndex, code_blocks
from spanchor_core.locate.settings import LocatorSettings
from spanchor_core.locate.text import normalise
from spanchor_core.spans import DocSpan

_WORDS = ["ab", "ba", "abc", "the", "of", "stone", "Stone", "river", "a", "b"]


def _documents(seed: int) -> dict[str, str]:
    """Documents from a tiny vocabulary (many repeats) with a shared header, mixed spacing and
    case, and a few empty or one-character documents."""
    rng = random.Random(seed)
    header = " ".join(rng.choice(_WORDS) for _ in range(60))
    docs: dict[str, str] = {}
    for n in range(40):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(0, 120))]
        body = "".join(w + rng.choice([" ", "  ", "\n", " \t"]) for w in words)
        docs[f"d{n:02d}"] = (header + "\n" + body) if n % 3 else body
    docs["empty"] = ""
    docs["one"] = "a"
    return docs


def _exact_reference(texts: list[str], needle: str) -> list[Occurrence]:
    out: list[Occurrence] = []
    for d, text in enumerate(texts):
        pos = text.find(needle)
        while pos != -1:
            out.append((d, pos, pos + len(needle)))
            pos = text.find(needle, pos + 1)
    return out


def _normalised_reference(texts: list[str], norm: str) -> list[Occurrence]:
    out: list[Occurrence] = []
    for d, text in enumerate(texts):
        kept = [i for i, c in enumerate(text) if not c.isspace()]
        stream = normalise(text)
        pos = stream.find(norm)
        while pos != -1:
            out.append((d, kept[pos], kept[pos + len(norm) - 1] + 1))
            pos = stream.find(norm, pos + 1)
    return out


def _needles(texts: list[str], rng: random.Random, low: int, high: int, n: int) -> list[str]:
    whole = "\n".join(texts)
    out = []
    for _ in range(n):
        size = rng.randint(low, high)
        start = rng.randrange(0, max(1, len(whole) - size))
        out.append(whole[start : start + size])
    return [t for t in out if t.strip()]


def _context(docs: dict[str, str], **settings: int) -> SearchContext:
    return SearchContext(Corpus.from_texts(docs), LocatorSettings(**settings))  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_short_texts_through_the_sampled_index_find_every_occurrence(seed: int) -> None:
    ctx = _context(_documents(seed))
    texts = ctx.documents.texts
    rng = random.Random(seed)
    # enough short texts in one batch that the sampled index is built at once
    needles = _needles(texts, rng, 4, 66, 400)
    assert exact_occurrences(ctx, needles) == [_exact_reference(texts, t) for t in needles]
    assert ctx.scanner._sampled[0] is not None, "the sampled exact index was used"
    norms = [normalise(t) for t in needles]
    assert normalised_occurrences(ctx, norms) == [_normalised_reference(texts, n) for n in norms]
    assert ctx.scanner._sampled[1] is not None, "the sampled normalised index was used"


def test_a_few_short_texts_are_scanned_until_a_second_batch_needs_them() -> None:
    ctx = _context(_documents(3))
    texts = ctx.documents.texts
    needles = _needles(texts, random.Random(3), 19, 40, 20)
    norms = [normalise(t) for t in needles]
    for _ in range(2):  # the first batch scans, the second builds the sampled index
        assert exact_occurrences(ctx, needles) == [_exact_reference(texts, t) for t in needles]
        found = normalised_occurrences(ctx, norms)
        assert found == [_normalised_reference(texts, n) for n in norms]
    assert all(index is not None for index in ctx.scanner._sampled)
    # then a few normalised texts under the sampled index's reach go to str.find
    few = [n[:12] for n in norms[:5] if len(n) >= 12]
    assert normalised_occurrences(ctx, few) == [_normalised_reference(texts, n) for n in few]
    assert ctx.scanner._normalised_text is not None


def test_a_run_of_short_texts_indexes_its_few_normalised_ones_without_a_pass() -> None:
    """Once the exact stage has built its sampled index (a run of short chunks), the few short
    texts its normalised stage gets (fewer than a batch's worth) use the normalised sampled
    index at once: no full scan pass first, whatever the size of the run's batches."""
    ctx = _context(_documents(6))
    texts = ctx.documents.texts
    needles = _needles(texts, random.Random(6), 19, 40, 400)
    assert exact_occurrences(ctx, needles) == [_exact_reference(texts, t) for t in needles]
    assert ctx.scanner._sampled[0] is not None
    norms = [normalise(t) for t in needles[:40]]  # under _SAMPLED_AT_ONCE, over _SCAN_BATCH_MIN
    assert normalised_occurrences(ctx, norms) == [_normalised_reference(texts, n) for n in norms]
    assert ctx.scanner._sampled[1] is not None, "the sampled normalised index was built"
    assert ctx.scanner._passes[1] == 0, "no normalised scan pass was run"


def test_the_sampled_exact_index_brings_the_probes_bytes_from_its_own_pass() -> None:
    """The low bytes taken while the sampled index is built are those a pass of their own
    keeps, and the normalised searches after them give the reference's answers."""
    ctx = _context(_documents(8))
    texts = ctx.documents.texts
    needles = _needles(texts, random.Random(8), 19, 40, 400)
    assert exact_occurrences(ctx, needles) == [_exact_reference(texts, t) for t in needles]
    low = ctx.scanner._low_bytes[0]
    assert low is not None
    assert low.complete
    alone = LowBytes(code_blocks(ctx.documents, normalised=False), ctx.documents.total)
    assert low.data == alone.data
    assert np.array_equal(low.words, alone.words)
    norms = [normalise(t) for t in needles[:40]]
    assert normalised_occurrences(ctx, norms) == [_normalised_reference(texts, n) for n in norms]


def test_a_few_short_normalised_texts_alone_are_scanned_first() -> None:
    """Without a sign that the run has many short texts, a batch of a few is scanned (the
    sampled index costs memory), and the next batch that needs a pass builds it."""
    ctx = _context(_documents(7))
    texts = ctx.documents.texts
    norms = [normalise(t) for t in _needles(texts, random.Random(7), 30, 50, 60)]
    norms = [n for n in norms if len(n) >= SampledIndex.shortest][:40]
    assert normalised_occurrences(ctx, norms) == [_normalised_reference(texts, n) for n in norms]
    assert ctx.scanner._passes[1] == 1
    assert ctx.scanner._sampled == [None, None]
    assert normalised_occurrences(ctx, norms) == [_normalised_reference(texts, n) for n in norms]
    assert ctx.scanner._sampled[0] is None
    assert ctx.scanner._sampled[1] is not None


def test_frequent_texts_through_their_rarest_minimizer_however_frequent() -> None:
    docs = _documents(4)
    # every minimizer of the header occurs more often than max_occurrences allows
    ctx = _context(docs, kgram=8, window=6, max_occurrences=2)
    texts = ctx.documents.texts
    needles = _needles(texts, random.Random(4), 13, 200, 300)
    assert exact_occurrences(ctx, needles) == [_exact_reference(texts, t) for t in needles]
    norms = [normalise(t) for t in needles]
    assert normalised_occurrences(ctx, norms) == [_normalised_reference(texts, n) for n in norms]


def test_past_the_budget_the_scan_answers_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    docs = _documents(5)
    needles = _needles(list(docs.values()), random.Random(5), 13, 200, 300)
    norms = [normalise(t) for t in needles]
    ctx = _context(docs, kgram=8, window=6, max_occurrences=2)
    expected = exact_occurrences(ctx, needles), normalised_occurrences(ctx, norms)
    monkeypatch.setattr(find_module, "_BUDGET_SHARE", 10**9)  # a budget of one candidate
    ctx = _context(docs, kgram=8, window=6, max_occurrences=2)
    assert (exact_occurrences(ctx, needles), normalised_occurrences(ctx, norms)) == expected


def test_the_sampled_index_keeps_every_step_th_kgram() -> None:
    ctx = _context({"a": "x" * 5 + "abcdefghijklmnopqrstuvwxyz", "b": "", "c": "0123456789AB"})
    blocks = code_blocks(ctx.documents, normalised=False)
    index = SampledIndex(KgramHasher(12), blocks, ctx.documents.total)
    total = ctx.documents.total  # 31 + 0 + 12 characters
    positions = sorted(int(p) & ((1 << index.pos_bits) - 1) for p in index.index.packed)
    assert positions == list(range(0, total - SAMPLE_K + 1, STEP))


def test_the_tests_above_reach_each_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparisons above are not all answered by the fallback scan."""
    answered = {"frequent": 0, "sampled": 0}
    frequent, sampled = find_module._frequent_candidates, SampledIndex.candidates

    def count(name: str, hits: Any) -> Any:
        answered[name] += len(hits)
        return hits

    monkeypatch.setattr(
        find_module, "_frequent_candidates", lambda *a, **k: count("frequent", frequent(*a, **k))
    )
    monkeypatch.setattr(
        SampledIndex, "candidates", lambda *a, **k: count("sampled", sampled(*a, **k))
    )
    test_short_texts_through_the_sampled_index_find_every_occurrence(0)
    test_frequent_texts_through_their_rarest_minimizer_however_frequent()
    assert answered["sampled"] > 300
    assert answered["frequent"] > 100


# ------------------------------------------------------------ copies, probe, many occurrences


def _boilerplate(seed: int, copies: int = 30) -> dict[str, str]:
    """Documents sharing a header and a footer, some of them with a word of either changed
    (near-copies), the first ones among those — so that a near-copy may be the entry a
    frequent minimizer lists first."""
    rng = random.Random(seed)
    header = " ".join(rng.choice([*_WORDS, "alpha", "gamma"]) for _ in range(80))
    footer = " ".join(rng.choice([*_WORDS, "delta", "omega"]) for _ in range(60))
    docs: dict[str, str] = {}
    for n in range(copies):
        head, foot = header, footer
        if n < 4 or rng.random() < 0.3:  # a near-copy: one word changed in each
            words = head.split(" ")
            words[rng.randrange(len(words))] = "CHANGED"
            head = " ".join(words)
            words = foot.split(" ")
            words[rng.randrange(len(words))] = "altered"
            foot = " ".join(words)
        body = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(0, 90)))
        docs[f"d{n:02d}"] = f"{head}\n{body}\n{foot}"
    return docs


@pytest.mark.parametrize("seed", [0, 1])
def test_frequent_texts_confirmed_against_their_copies_find_every_occurrence(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Texts inside the repeated header or footer, across a changed word, from the header into
    the body: the copy map answers what a one-by-one confirmation does (brute force here),
    batch after batch as it learns more of each minimizer's copies."""
    calls = {"copies": 0}
    occurrences = CopyMap.occurrences

    def counted(self: CopyMap, *args: Any) -> Any:
        calls["copies"] += 1
        return occurrences(self, *args)

    monkeypatch.setattr(CopyMap, "occurrences", counted)
    docs = _boilerplate(seed)
    ctx = _context(docs, kgram=8, window=6, max_occurrences=4)
    texts = ctx.documents.texts
    rng = random.Random(seed)
    for size in ((10, 40), (40, 200), (13, 400)):  # narrow widths first, then wider ones
        needles = _needles(texts, rng, *size, 150)
        assert exact_occurrences(ctx, needles) == [_exact_reference(texts, t) for t in needles]
    assert calls["copies"] > 20


def test_a_near_copy_is_not_taken_as_the_reference() -> None:
    """Of the entries tried, the reference is one most others agree with: the pristine header,
    although the first documents hold near-copies."""
    docs = _boilerplate(2)
    ctx = _context(docs, kgram=8, window=6, max_occurrences=4)
    copies = ctx.scanner.copies(ctx.exact_index())
    header = ctx.documents.texts[-1].split("\n")[0]
    pristine = [n for n, t in enumerate(ctx.documents.texts) if t.startswith(header)]
    start = 50  # a minimizer near the middle of the header
    keys = [h for _, _, _, h in ctx.search.batched_minimizers([header[start : start + 40]])]
    first, count = ctx.exact_index().lookup(keys[0][:1])
    entries = copies._entries(int(first[0]), int(count[0]))
    assert int(entries.docs[entries.ref]) in pristine


def test_the_probe_rejects_only_places_where_a_probed_character_differs() -> None:
    """Different code points can share a low byte (U+0161 and "a" are both 0x61): the probe
    may let such a place through, never reject a true one, and compares exactly the first and
    the last eight characters' low bytes."""
    text = "caf\u00e9 \u0161ala \u0430\u0431\u0432 mix a\u0161a abc " * 20
    docs = {"x": text, "y": text.upper()}
    ctx = _context(docs)
    low = LowBytes(code_blocks(ctx.documents, normalised=False), ctx.documents.total)
    virtual = "".join(ctx.documents.texts)
    rng = random.Random(7)
    needles = [
        virtual[s : s + rng.randint(8, 30)] for s in rng.sample(range(len(virtual) - 40), 40)
    ]
    needles += ["asa abc caf\u00e9 " + "x" * 3, "aaaaaaaaaaaa"]
    probe = low.probe(needles)
    assert probe is not None
    where = np.repeat(np.arange(len(needles), dtype=np.int64), 200)
    pos = np.array(
        [rng.randrange(0, len(virtual) - len(needles[w])) for w in where.tolist()], dtype=np.int64
    )
    agrees = probe.agrees(where, pos)
    for w, p, ok in zip(where.tolist(), pos.tolist(), agrees.tolist(), strict=True):
        needle = needles[w]
        if virtual.startswith(needle, p):
            assert ok
        lows = bytes(ord(c) & 0xFF for c in virtual[p : p + len(needle)])
        want = bytes(ord(c) & 0xFF for c in needle)
        assert ok == (lows[:8] == want[:8] and lows[-8:] == want[-8:])
    assert low.probe(["short"]) is None  # under eight characters: no probe


def test_many_copies_chosen_by_hint_and_by_gold_as_with_few() -> None:
    """A text in every document's header: the nearest-hint and the gold tie-breaks pick, among
    hundreds of occurrences, what they pick by the rule's definition."""
    header = "Shared notice: all rights reserved, see the licence file. "
    docs = {f"d{n:03d}": ("x" * (n % 7)) + header + f"body {n} " * 5 for n in range(120)}
    locator = Locator(Corpus.from_texts(docs))
    found = [(d, d % 7) for d in range(120)]
    for hint in (0, 3, 6, 4, 10**70):  # a hint past int64 too
        loc = locator.locate(header, start=hint)
        ranked = sorted(found, key=lambda f: (abs(f[1] - hint), f[0], f[1]))
        assert (loc.document_id, loc.start) == (f"d{ranked[0][0]:03d}", ranked[0][1])
        assert loc.resolved_by == "nearest_hint"
    gold = (DocSpan("d077", 0, 30), DocSpan("d050", 1, 20), DocSpan("d050", 0, 4))
    loc = locator.locate(header, prefer=gold)
    # the most overlap with the gold spans: d077 at 0 overlaps 30 - 0, d050 at 1 overlaps 19
    assert (loc.document_id, loc.start, loc.resolved_by) == ("d077", 0, "gold")
    tie = (DocSpan("d077", 0, 10), DocSpan("d050", 1, 11))  # equal overlaps: the first wins
    assert locator.locate(header, prefer=tie).document_id == "d050"
    assert loc.reason is not None
    assert "occurs 120 times" in loc.reason
    named = locator.locate(header, document_id="d033")
    assert (named.document_id, named.start, named.resolved_by) == ("d033", 33 % 7, "document_id")
