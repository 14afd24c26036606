"""The text helpers every renderer shares: escaping, number formatting, truncation, capped
lists, the metric × K grid and the one lost-evidence rule.

Each rule lives here once, so a Markdown report, a JUnit file, an HTML page, a terminal line
and a pytest failure message can never disagree about how deep to look for lost evidence or
let a control character through one of them. Nothing here does file I/O.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, NamedTuple

from spanchor_core._escape import escape_control
from spanchor_core.errors import InputError
from spanchor_core.evaluate import Evaluation, QueryEvaluation
from spanchor_core.gold import GoldSet
from spanchor_core.metrics import metric_parts
from spanchor_core.spans import DocSpan, Span, group_by_document, intersect_spans, subtract_spans

if TYPE_CHECKING:
    from spanchor_core.compare import QueryChange

__all__ = [
    "DASH",
    "Escape",
    "Excerpt",
    "InSentence",
    "MetricGrid",
    "RegressionEvidence",
    "capped_list",
    "check_count",
    "deepest_k",
    "depth_text",
    "escape_control",
    "evidence_depth",
    "excerpt",
    "format_delta",
    "format_interval",
    "format_number",
    "format_percent",
    "gold_spans_for",
    "html_escape",
    "in_sentence",
    "lost_evidence",
    "markdown_escape",
    "metric_grid",
    "more_text",
    "one_line",
    "regression_evidence",
    "retrieved_cover",
    "spanless_side",
    "truncate",
    "xml_text",
]

DASH: Final = "–"
"""Shown for a value that does not exist (NaN, a metric a side does not report)."""

Escape = Callable[[str], str]
"""One of the escapers below: how user text is made inert for one output format."""


# -- escaping -----------------------------------------------------------------------------------


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` with its whitespace runs folded to one space, then :func:`escape_control`,
    then cut to ``limit`` characters with "…" (see :func:`truncate`)."""
    flat = escape_control(" ".join(text.split()))
    return flat if limit is None else truncate(flat, limit)


# Characters that Markdown (CommonMark + GitHub extensions) gives a meaning inside a line:
# emphasis, code spans, links, table cells, strikethrough, math. Any ASCII punctuation may be
# backslash-escaped in CommonMark, and GFM honours ``\|`` inside table cells, so escaping is
# always safe even where the character would have been harmless.
_MD_PUNCTUATION: Final = "\\`*_[]|~$"
# Every character Python's str.splitlines() treats as a line break. Markdown itself only
# breaks on \n and \r, but other renderers (and terminals) are less strict.
_LINE_BREAKS: Final = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_MD_TABLE: Final[dict[int, str]] = {
    **{ord(c): "\\" + c for c in _MD_PUNCTUATION},
    ord("&"): "&amp;",
    ord("<"): "&lt;",
    ord(">"): "&gt;",
    **{ord(c): "<br>" for c in _LINE_BREAKS},
    ord("\t"): " ",
    **{
        code: "\ufffd"
        for code in (*range(0x20), *range(0x7F, 0xA0))
        if chr(code) not in _LINE_BREAKS and chr(code) != "\t"
    },
}


def markdown_escape(text: str) -> str:
    """``text`` as inert Markdown: it renders as itself and cannot end a table cell or a line.

    Markdown punctuation is backslash-escaped, ``& < >`` become entities (so no HTML can be
    injected), every line break becomes ``<br>`` (a table row stays one line), a tab becomes a
    space and other control characters become U+FFFD. Letters, digits and spaces pass
    unchanged. Never wrap the result in a code span: backslashes are literal there.
    """
    return text.replace("\r\n", "\n").translate(_MD_TABLE)


# Characters XML 1.0 cannot hold at all, not even as character references.
_XML_INVALID: Final = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """``text`` with every character XML 1.0 forbids replaced by U+FFFD.

    ElementTree escapes ``< & "`` but writes a NUL or ESC as it is, which makes the file
    unreadable to every XML parser: one odd query id would hide the whole test report.
    """
    return _XML_INVALID.sub("\ufffd", text)


# C0/C1 control characters other than tab and newline are not allowed in HTML text; a browser
# would show them as boxes or drop them, a strict parser would complain.
_HTML_CONTROL: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def html_escape(text: str) -> str:
    """``text`` as inert HTML text or attribute value (quotes included); control characters
    other than tab and newline become U+FFFD."""
    return html.escape(_HTML_CONTROL.sub("\ufffd", text), quote=True)


# -- numbers, truncation, lists -------------------------------------------------------------------


def format_number(value: float | None, spec: str = ".3f") -> str:
    """``value`` formatted with ``spec``; :data:`DASH` for ``None``, NaN and infinities."""
    if value is None or not math.isfinite(value):
        return DASH
    return format(value, spec)


def format_delta(value: float | None) -> str:
    """A signed change with three decimals (``+0.250``), or :data:`DASH`."""
    return format_number(value, "+.3f")


def format_percent(rate: float) -> str:
    """A rate in [0, 1] as a percentage with one decimal (``12.5%``)."""
    return f"{100.0 * rate:.1f}%"


def format_interval(low: float | None, high: float | None) -> str:
    """A confidence interval of a change, ``[-0.100, +0.050]``, or :data:`DASH` if unknown."""
    if low is None or high is None:
        return DASH
    return f"[{format_delta(low)}, {format_delta(high)}]"


def truncate(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its first ``limit - 1`` and "…"."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Excerpt(NamedTuple):
    """Evidence text folded to one line and cut at a limit (see :func:`excerpt`)."""

    text: str
    """The shown characters, without any "…" mark."""
    total: int
    """Characters of the folded text before the cut."""

    @property
    def cut(self) -> bool:
        """Whether characters were left out (the renderer adds "…" and says how many)."""
        return len(self.text) < self.total


def excerpt(text: str, limit: int) -> Excerpt:
    """``text`` with whitespace folded to single spaces, cut after ``limit`` characters
    (trailing space of the cut dropped)."""
    flat = " ".join(text.split())
    shown = flat if len(flat) <= limit else flat[:limit].rstrip()
    return Excerpt(shown, len(flat))


# A sentence ends at . ! ? (or their full-width forms) before whitespace, or at a blank line.
_SENTENCE_END: Final = re.compile(r"[.!?\u3002\uff01\uff1f](?=\s)|\n[ \t]*\n")


def _fold(text: str) -> str:
    return re.sub(r"\s+", " ", text)


class InSentence(NamedTuple):
    """A piece of text shown inside its sentence (see :func:`in_sentence`); whitespace folded."""

    before: str
    """The sentence up to the piece, "…" first when cut at the context limit."""
    piece: str
    """The piece itself, its spaces at either end moved to ``before`` and ``after``."""
    after: str
    """The sentence after the piece, "…" last when cut at the context limit or the piece was."""


def in_sentence(text: str, start: int, end: int, *, limit: int, context: int = 160) -> InSentence:
    """``text[start:end]`` with the rest of the sentence around it, so that a piece of lost
    evidence that begins mid-word is read where it stands.

    The context reaches back to the end of the previous sentence and on to the end of this
    one, at most ``context`` characters either side (cut at a space, marked "…"). The piece
    is cut after ``limit`` characters like :func:`excerpt`, and then nothing follows it but
    "…". The caller escapes each part and marks the piece (bold in Markdown).
    """
    reach = max(0, start - context)
    left = text[reach:start]
    ends = [m.end() for m in _SENTENCE_END.finditer(left)]
    if ends:
        before = left[ends[-1] :].lstrip()
    elif reach > 0:
        space = left.find(" ")
        before = "…" + (left[space + 1 :] if space != -1 else left)
    else:
        before = left.lstrip()
    shown = excerpt(text[start:end], limit)
    raw = text[start:end]
    lead = " " if raw[:1].isspace() else ""
    trail = " " if raw[-1:].isspace() else ""
    if shown.cut:
        return InSentence(_fold(before) + lead, shown.text, "…")
    if _SENTENCE_END.match(raw.rstrip()[-1:] + " ") or not raw.strip():
        return InSentence(_fold(before) + lead, shown.text, "")  # the piece ends its sentence
    right = text[end : end + context]
    found = _SENTENCE_END.search(right)
    if found is not None:
        after = right[: found.end()].rstrip() if found.group().strip() else right[: found.start()]
    elif end + context < len(text):
        space = right.rfind(" ")
        after = (right[:space] if space != -1 else right) + "…"
    else:
        after = right.rstrip()
    return InSentence(_fold(before) + lead, shown.text, trail + _fold(after).rstrip())


def first_ids(
    ids: Sequence[str], shown: int = 5, escape: Callable[[str], str] = escape_control
) -> str:
    """``"q1, q2, q3, q4, q5 and 12 more"``: the first ``shown`` ids (each through ``escape``)
    and how many are left, for a line that names enough ids to look one up however many."""
    text = ", ".join(escape(qid) for qid in ids[:shown])
    return text + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def more_text(shown: int, total: int, what: str = "") -> str:
    """``"… and N more"`` (``N = total - shown``), followed by ``what`` if given."""
    return f"… and {total - shown} more{' ' + what if what else ''}"


def capped_list(items: Sequence[str], limit: int, escape: Escape) -> str:
    """The first ``limit`` items, each through ``escape``, joined by commas; then
    ``"… and N more"`` if any were left out."""
    shown = ", ".join(escape(item) for item in items[:limit])
    return shown if len(items) <= limit else f"{shown} {more_text(limit, len(items))}"


def check_count(value: int, name: str, *, minimum: int = 1) -> None:
    """Raise :class:`InputError` unless ``value`` is a whole number (not a bool) >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(f"{name} must be a whole number of at least {minimum}, not {value!r}")


def deepest_k(evaluation: Evaluation) -> int:
    """The deepest K the metrics report (the settings' deepest K if no metric has one)."""
    cutoffs = [c for name in evaluation.metric_names if (c := metric_parts(name)[1]) is not None]
    return max(cutoffs) if cutoffs else max(evaluation.settings.k)


@dataclass(frozen=True, slots=True)
class MetricGrid:
    """Mean of each metric as a table: one row per base metric, one column per K (ascending),
    then a "whole list" column if any metric has no K."""

    columns: tuple[int | None, ...]
    """The K of each column; ``None`` for the whole-list column (always last)."""
    rows: tuple[tuple[str, tuple[float | None, ...]], ...]
    """``(base metric, means by column)``, in the evaluation's metric order; ``None`` where the
    evaluation has no such metric (a NaN mean is a metric with no scored query)."""

    @property
    def labels(self) -> list[str]:
        """Column headings: ``@K`` or ``whole list``."""
        return ["whole list" if k is None else f"@{k}" for k in self.columns]


def metric_grid(evaluation: Evaluation, bases: Iterable[str] | None = None) -> MetricGrid:
    """The evaluation's means as a :class:`MetricGrid`, over ``bases`` only if given."""
    wanted = None if bases is None else set(bases)
    names: dict[str, dict[int | None, str]] = {}
    for name in evaluation.metric_names:
        base, cutoff = metric_parts(name)
        if wanted is None or base in wanted:
            names.setdefault(base, {})[cutoff] = name
    ks = sorted({c for by_k in names.values() for c in by_k if c is not None})
    columns: list[int | None] = [*ks]
    if any(None in by_k for by_k in names.values()):
        columns.append(None)
    summaries = evaluation.aggregates() if names else {}
    rows = tuple(
        (base, tuple(summaries[by_k[c]].mean if c in by_k else None for c in columns))
        for base, by_k in names.items()
    )
    return MetricGrid(tuple(columns), rows)


# -- lost evidence: the one rule ------------------------------------------------------------------


def retrieved_cover(query: QueryEvaluation, k: int | None) -> Mapping[str, list[Span]]:
    """What the query's results ranked at most ``k`` (all if ``None``) cover, by document."""
    return group_by_document(
        span
        for result in query.results
        if (k is None or result.rank <= k) and (span := result.span) is not None
    )


def lost_evidence(
    baseline: QueryEvaluation,
    candidate: QueryEvaluation,
    *,
    k: int | None = None,
    gold: Sequence[DocSpan] | None = None,
) -> list[DocSpan]:
    """Gold characters the baseline's top ``k`` covered and the candidate's top ``k`` does not.

    This is what a reviewer needs to see for a regression: not "recall fell by 0.4" but the
    sentence the retriever stopped finding. ``gold`` defaults to the candidate's gold spans
    (the baseline's if the candidate has none); ``k=None`` means the whole ranked list. Spans
    come back merged, in document-id then offset order.
    """
    gold_spans = gold if gold is not None else (candidate.gold or baseline.gold)
    gold_docs = group_by_document(gold_spans)
    before = retrieved_cover(baseline, k)
    after = retrieved_cover(candidate, k)
    lost: list[DocSpan] = []
    for document_id in sorted(gold_docs):
        covered = intersect_spans(gold_docs[document_id], before.get(document_id, []))
        for start, end in subtract_spans(covered, after.get(document_id, [])):
            lost.append(DocSpan(document_id, start, end))
    return lost


def depth_text(k: int | None) -> str:
    """How a depth reads in a sentence: ``"top 5"``, or ``"whole list"`` for ``None``."""
    return "whole list" if k is None else f"top {k}"


def evidence_depth(regressed: Iterable[str], evaluation: Evaluation) -> int | None:
    """The one rule for how deep to look for lost evidence: the deepest K among the
    ``regressed`` metrics; failing that (whole-list metrics such as ``mrr``), the deepest K the
    evaluation reports or was asked for (:func:`deepest_k`, the depth the user asked to be
    scored); ``None`` (the whole ranked list) only if the evaluation has no K at all."""
    cutoffs = [cutoff for name in regressed if (cutoff := metric_parts(name)[1]) is not None]
    if cutoffs:
        return max(cutoffs)
    if evaluation.settings.k or any(
        metric_parts(n)[1] is not None for n in evaluation.metric_names
    ):
        return deepest_k(evaluation)
    return None


def gold_spans_for(query_id: str, gold: GoldSet | None, *queries: QueryEvaluation) -> list[DocSpan]:
    """The gold evidence of a query: its anchors in ``gold`` if that has the query, else the
    gold spans the first of ``queries`` that has any was scored against."""
    if gold is not None and query_id in gold:
        return [anchor.span for anchor in gold[query_id].anchors]
    for query in queries:
        if query.gold:
            return list(query.gold)
    return []


def spanless_side(baseline: Evaluation, candidate: Evaluation) -> tuple[str, Evaluation] | None:
    """The first side (``"baseline"``, then ``"candidate"``) whose evaluation keeps no result
    spans (read from a spanchor 0.x file), so no lost evidence can be computed; else ``None``."""
    for side, evaluation in (("baseline", baseline), ("candidate", candidate)):
        if not evaluation.has_result_spans:
            return side, evaluation
    return None


@dataclass(frozen=True, slots=True)
class RegressionEvidence:
    """What one regressed query lost, judged at one depth: the data every renderer shows."""

    query_id: str
    k: int | None
    """The depth judged (:func:`evidence_depth`); ``None`` is the whole ranked list."""
    gold: tuple[DocSpan, ...]
    """The gold evidence judged (:func:`gold_spans_for`)."""
    lost: tuple[DocSpan, ...]
    """Gold the baseline's top ``k`` covered and the candidate's does not, merged, in order."""
    baseline: QueryEvaluation
    candidate: QueryEvaluation

    @property
    def depth(self) -> str:
        """``"top 5"``, or ``"whole list"`` when ``k`` is ``None``."""
        return depth_text(self.k)

    @property
    def lost_chars(self) -> int:
        return sum(span.length for span in self.lost)


def regression_evidence(
    row: QueryChange, baseline: Evaluation, candidate: Evaluation, gold: GoldSet | None = None
) -> RegressionEvidence | None:
    """The lost evidence of a regressed query, or ``None`` if it was not scored on both sides.

    Check :func:`spanless_side` first: a side without result spans yields no lost evidence.
    """
    qid = row.query_id
    if qid not in baseline.queries or qid not in candidate.queries:
        return None
    before, after = baseline[qid], candidate[qid]
    anchors = gold_spans_for(qid, gold, after, before)
    k = evidence_depth(row.regressed, candidate)
    lost = lost_evidence(before, after, k=k, gold=anchors)
    return RegressionEvidence(qid, k, tuple(anchors), tuple(lost), before, after)
