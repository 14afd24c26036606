"""Evidence in its source context: gold characters shown inside a window of their document,
highlighted as lost, kept or missed, for the HTML report's regressions and missed evidence.

The spans come from the shared rule in :mod:`spanchor_core.render.text`
(:func:`~spanchor_core.render.text.regression_evidence`); this module only lays them out.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from spanchor_core.compare import QueryChange
from spanchor_core.corpus import Corpus
from spanchor_core.evaluate import Evaluation, QueryEvaluation, QueryStatus
from spanchor_core.gold import GoldSet
from spanchor_core.render.text import (
    check_count,
    depth_text,
    gold_spans_for,
    html_escape,
    more_text,
    regression_evidence,
    retrieved_cover,
    spanless_side,
)
from spanchor_core.spans import (
    DocSpan,
    Span,
    group_by_document,
    intersect_spans,
    subtract_spans,
    union_spans,
)

__all__ = [
    "DEFAULT_CONTEXT_CHARS",
    "check_context_chars",
    "context_legend",
    "missed_evidence_html",
    "regression_evidence_html",
]

DEFAULT_CONTEXT_CHARS: Final = 100
"""Characters of the document shown on each side of lost evidence (about 200 around it)."""
_PIECES: Final = 3
"""Pieces of evidence shown in context per query; the rest are listed by offsets."""
_SEGMENT_CAP: Final = 600
"""A highlighted stretch longer than this shows its head and tail around a "…" marker."""


def check_context_chars(context_chars: int) -> None:
    """Raise :class:`InputError` unless ``context_chars`` is a whole number >= 0."""
    check_count(context_chars, "context_chars", minimum=0)


def context_legend(*items: tuple[str, str, str]) -> str:
    """The key to highlighted context: ``(css class, word, meaning)`` per kind of highlight."""
    cells = []
    for cls, word, meaning in items:
        tag = "mark" if cls == "lost" else "span"
        cells.append(f'<span class="item"><{tag} class="{cls}">{word}</{tag}>: {meaning}</span>')
    return '<p class="legend">' + "".join(cells) + "</p>"


def _snap_start(text: str, start: int, limit: int) -> int:
    """Move a window start forward to the next word boundary (at most ``limit`` characters)."""
    if start <= 0:
        return 0
    for i in range(start, min(start + 20, limit)):
        if text[i - 1].isspace():
            return i
    return start


def _snap_end(text: str, end: int, limit: int) -> int:
    if end >= len(text):
        return len(text)
    for i in range(end, max(end - 20, limit), -1):
        if text[i].isspace():
            return i
    return end


@dataclass(frozen=True, slots=True)
class _Marks:
    """The three kinds of highlighted characters of one document."""

    lost: list[Span]
    """Shown in <mark>: what the reader must look at."""
    kept: list[Span]
    """Gold the retriever still finds."""
    gold: list[Span]
    """All gold (what is neither lost nor kept shows as gold not found on either side)."""


def _inside(position: int, spans: Sequence[Span]) -> bool:
    return any(start <= position < end for start, end in spans)


def _segment(text: str, kind: str) -> str:
    if len(text) > _SEGMENT_CAP:
        half = _SEGMENT_CAP // 2
        cut = len(text) - 2 * half
        text_html = (
            html_escape(text[:half])
            + f'<span class="elided"> … {cut} characters … </span>'
            + html_escape(text[-half:])
        )
    else:
        text_html = html_escape(text)
    if kind == "lost":
        return f'<mark class="lost">{text_html}</mark>'
    if kind in ("kept", "gold"):
        return f'<span class="{kind}">{text_html}</span>'
    return text_html


def _window_html(text: str, start: int, end: int, marks: _Marks) -> str:
    cuts = {start, end}
    for spans in (marks.lost, marks.kept, marks.gold):
        for a, b in spans:
            cuts.update(point for point in (a, b) if start < point < end)
    points = sorted(cuts)
    parts = ["…" if start > 0 else ""]
    for a, b in itertools.pairwise(points):
        if _inside(a, marks.lost):
            kind = "lost"
        elif _inside(a, marks.kept):
            kind = "kept"
        elif _inside(a, marks.gold):
            kind = "gold"
        else:
            kind = "plain"
        parts.append(_segment(text[a:b], kind))
    parts.append("…" if end < len(text) else "")
    return "".join(parts)


def _where(spans: Sequence[DocSpan]) -> str:
    return ", ".join(f"<code>{html_escape(s.document_id)}[{s.start}:{s.end}]</code>" for s in spans)


def _context_html(
    corpus: Corpus | None,
    focus: Sequence[DocSpan],
    marks: Mapping[str, _Marks],
    *,
    redact: bool,
    context_chars: int,
) -> str:
    """Each piece of ``focus`` inside a block of its document, ``context_chars`` either side.

    Pieces whose windows overlap share one block; blocks beyond the first few are listed by
    offsets. Without a corpus, or redacted, only offsets are shown.
    """
    if not focus:
        return ""
    if redact or corpus is None:
        reason = "text redacted" if redact else "pass the corpus to see the text"
        cap = 4 * _PIECES
        shown = _where(focus[:cap]) + (f" {more_text(cap, len(focus))}" if len(focus) > cap else "")
        return f'<p class="offsets">{shown} <span class="muted">({reason})</span></p>'
    windows: list[tuple[str, int, int]] = []
    absent: list[DocSpan] = []
    for span in focus:
        if span.document_id not in corpus:
            absent.append(span)
            continue
        text = corpus.text(span.document_id)
        a = _snap_start(text, max(0, span.start - context_chars), span.start)
        b = _snap_end(text, min(len(text), span.end + context_chars), span.end)
        if windows and windows[-1][0] == span.document_id and a <= windows[-1][2]:
            windows[-1] = (span.document_id, windows[-1][1], max(b, windows[-1][2]))
        else:
            windows.append((span.document_id, a, b))
    blocks = []
    for document_id, a, b in windows[:_PIECES]:
        text = corpus.text(document_id)
        blocks.append(
            f'<figure class="context"><figcaption><code>{html_escape(document_id)}</code> '
            f"characters {a}–{b}</figcaption>"
            f"<blockquote>{_window_html(text, a, b, marks[document_id])}</blockquote></figure>"
        )
    rest = [
        span
        for span in focus
        if span not in absent
        and not any(span.document_id == d and a <= span.start < b for d, a, b in windows[:_PIECES])
    ]
    if rest:
        blocks.append(f'<p class="offsets">Also: {_where(rest)}</p>')
    if absent:
        blocks.append(f'<p class="offsets">Not in this corpus: {_where(absent)}</p>')
    return "".join(blocks)


def _highlighted(
    corpus: Corpus | None,
    focus: Sequence[DocSpan],
    gold_docs: Mapping[str, list[Span]],
    cover: Mapping[str, list[Span]],
    redact: bool,
    context_chars: int,
) -> str:
    """``focus`` in context, the rest of the gold marked as kept (inside ``cover``) or not."""
    marks = {
        document_id: _Marks(
            lost=union_spans((s.start, s.end) for s in focus if s.document_id == document_id),
            kept=intersect_spans(spans, cover.get(document_id, [])),
            gold=spans,
        )
        for document_id, spans in gold_docs.items()
    }
    return _context_html(corpus, focus, marks, redact=redact, context_chars=context_chars)


def _retrieved_line(query: QueryEvaluation, k: int | None, who: str) -> str:
    """Where a side's top ``k`` results landed, as offsets: where the retriever went instead."""
    cover = retrieved_cover(query, k)
    if not query.results:
        return f'<p class="muted">The {who} retrieved nothing for this query.</p>'
    spans = [DocSpan(doc, a, b) for doc in sorted(cover) for a, b in cover[doc]]
    unmapped = sum(1 for r in query.results if (k is None or r.rank <= k) and r.span is None)
    text = _where(spans[: 4 * _PIECES]) or "nothing that maps onto the corpus"
    if len(spans) > 4 * _PIECES:
        text += " " + more_text(4 * _PIECES, len(spans))
    extra = f"; {unmapped} unmapped" if unmapped else ""
    return f'<p class="muted">The {who}\'s {depth_text(k)} covers {text}{extra}.</p>'


def regression_evidence_html(
    row: QueryChange,
    baseline: Evaluation,
    candidate: Evaluation,
    gold: GoldSet | None,
    corpus: Corpus | None,
    *,
    redact: bool,
    context_chars: int,
) -> str:
    """What a regressed query lost, highlighted in its documents, and where the candidate's
    results went instead."""
    evidence = None
    if row.query_id in baseline.queries and row.query_id in candidate.queries:
        spanless = spanless_side(baseline, candidate)
        if spanless is not None:
            side, evaluation = spanless
            return (
                f'<p class="muted">The {side} evaluation was read from '
                f"{html_escape(evaluation.settings.source_format)}, which keeps no result "
                "spans.</p>"
            )
        evidence = regression_evidence(row, baseline, candidate, gold)
    if evidence is None:
        return '<p class="muted">Not scored on both sides: no evidence to compare.</p>'
    after = evidence.candidate
    gold_docs = group_by_document(evidence.gold)
    cover = retrieved_cover(after, evidence.k)
    kept = sum(
        b - a
        for doc, spans in gold_docs.items()
        for a, b in intersect_spans(spans, cover.get(doc, []))
    )
    total_gold = sum(b - a for spans in gold_docs.values() for a, b in spans)
    parts = []
    if after.status is not QueryStatus.SCORED:
        parts.append(
            f'<p class="note">Candidate: {html_escape(after.status.value.replace("_", " "))}.</p>'
        )
    if not evidence.lost:
        parts.append(
            f"<p>No gold characters lost in the {evidence.depth}: the score fell for another "
            "reason (rank or precision).</p>"
        )
        return "".join(parts)
    parts.append(
        f"<p><strong>Lost {evidence.lost_chars} of {total_gold} gold characters in the "
        f"{evidence.depth}</strong> (found by the baseline, not by the candidate); the candidate "
        f"still retrieves {kept}.</p>"
    )
    lost = list(evidence.lost)
    parts.append(_highlighted(corpus, lost, gold_docs, cover, redact, context_chars))
    parts.append(_retrieved_line(after, evidence.k, "candidate"))
    return "".join(parts)


def missed_evidence_html(
    query: QueryEvaluation,
    k: int,
    gold: GoldSet | None,
    corpus: Corpus,
    *,
    redact: bool,
    context_chars: int,
) -> str:
    """The query's gold evidence that its top ``k`` does not cover, highlighted in its
    documents, and where its results went instead."""
    gold_docs = group_by_document(gold_spans_for(query.query_id, gold, query))
    cover = retrieved_cover(query, k)
    missed = [
        DocSpan(doc, a, b)
        for doc in sorted(gold_docs)
        for a, b in subtract_spans(gold_docs[doc], cover.get(doc, []))
    ]
    context = _highlighted(corpus, missed, gold_docs, cover, redact, context_chars)
    return context + _retrieved_line(query, k, "retriever")
