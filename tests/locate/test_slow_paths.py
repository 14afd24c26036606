"""The slow paths of :mod:`spanchor_core.locate.find`: each finds every occurrence, as a scan does.

Texts whose minimizers are all frequent go through the index's rarest minimizer, short texts
through the sampled k-gram index or ``str.find`` in the normalised stream; a brute-force
search of every document (overlapping matches included) is the reference, and so is the
full scan they replace.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from spanchor_core.corpus import Corpus
from spanchor_core.locate import find as find_module
from spanchor_core.locate.context import SearchContext
from spanchor_core.locate.documents import Occurrence
from spanchor_core.locate.exact import exact_occurrences
from spanchor_core.locate.hashing import KgramHasher
from spanchor_core.locate.normalised import normalised_occurrences
from spanchor_core.locate.sampled import SAMPLE_K, STEP, SampledIndex, code_blocks
from spanchor_core.locate.settings import LocatorSettings
from spanchor_core.locate.text import normalise

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
