"""The first stage: what can be decided without searching — explicit spans, empty text, offsets.

An explicit span (no text) is checked against the document's bounds (``SPAN`` or
``INVALID``); offsets given with text are trusted only when the canonical text at them is the
text (``VERIFIED``). Everything else becomes a :class:`~spanchor_core.locate.resolve.Pending`
for the search stages.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral

from spanchor_core.corpus import canonicalize
from spanchor_core.errors import InputError
from spanchor_core.locate.documents import CorpusTexts, Occurrence
from spanchor_core.locate.model import LocateRequest, Location, MatchStatus
from spanchor_core.locate.resolve import Pending, unmapped
from spanchor_core.spans import DocSpan

__all__ = ["prepare", "prepare_batch"]


PreferCache = dict[int, tuple[tuple[DocSpan, ...], tuple[Occurrence, ...]]]
"""``id(prefer)`` -> ``(prefer, its occurrences)``: the results of one query share one gold
tuple, so a batch checks and converts it once, not once per result."""


def prepare(
    documents: CorpusTexts,
    slot: int,
    request: LocateRequest,
    prefer_cache: PreferCache | None = None,
) -> Location | Pending:
    """The final location of ``request`` when no search is needed, else its search state.

    A request of the wrong shape (not a :class:`LocateRequest`, text that is not a string,
    offsets that are not whole numbers) is an :class:`~spanchor_core.errors.InputError`.
    ``prefer_cache`` (one per batch, whose requests keep their ``prefer`` tuples alive)
    remembers the gold tuples already checked and converted.
    """
    cached = None
    if prefer_cache is not None and type(request) is LocateRequest and request.prefer:
        entry = prefer_cache.get(id(request.prefer))
        if entry is not None and entry[0] is request.prefer:
            cached = entry[1]
    _check_request(slot, request, check_prefer=cached is None)
    if request.text is None:
        return _explicit_span(documents, request)
    raw = request.text
    # ASCII text without a carriage return is canonical already (no BOM, NFC, ``\n`` only)
    text = raw if raw.isascii() and "\r" not in raw else canonicalize(raw)
    hint_start, hint_end = request.start, request.end
    named = request.document_id
    doc = documents.number.get(named) if named is not None else None
    if request.prefer and cached is None:
        cached = _preferred(documents, request)
        if prefer_cache is not None:
            prefer_cache[id(request.prefer)] = (request.prefer, cached)
    job = Pending(slot, text, doc, named, hint_start, hint_end, cached or ())
    if not text.strip():
        return unmapped(job, "empty or whitespace-only text")
    if named is not None and doc is None:
        job.notes = (f"document {named!r} is not in the corpus",)
    if doc is not None and hint_start is not None:
        verified = _verify_hint(documents, job, doc, hint_start, hint_end)
        if verified is not None:
            return verified
    return job


def prepare_batch(
    documents: CorpusTexts, requests: Sequence[LocateRequest]
) -> tuple[list[Location | None], list[Pending]]:
    """:func:`prepare` of every request, in order: the locations decided without search (None
    where a search is needed) and the search state of the others.

    The same checks and outcomes as calling :func:`prepare` on each; requests of the common
    shape (a plain :class:`LocateRequest` with ``str`` text and id and ``int`` offsets, its
    gold tuple seen before) are taken apart here without the per-request checks and calls.
    """
    results: list[Location | None] = [None] * len(requests)
    pending: list[Pending] = []
    prefer_cache: PreferCache = {}
    number = documents.number
    texts = documents.texts
    ids = documents.ids
    verified = MatchStatus.VERIFIED
    new_span = tuple.__new__  # DocSpan(a, b, c) without its Python-level __new__
    for slot, request in enumerate(requests):
        if type(request) is not LocateRequest:
            outcome = prepare(documents, slot, request, prefer_cache)
        else:
            raw, named = request.text, request.document_id
            hint_start, hint_end, prefer = request.start, request.end, request.prefer
            cached: tuple[Occurrence, ...] | None = ()
            if prefer:
                entry = prefer_cache.get(id(prefer))
                if entry is not None and entry[0] is prefer:
                    cached = entry[1]
                elif type(prefer) is tuple and all(type(p) is DocSpan for p in prefer):
                    # a query's first result: its gold tuple is well formed, converted here
                    cached = _preferred(documents, request)
                    prefer_cache[id(prefer)] = (prefer, cached)
                else:
                    cached = None  # prepare() checks it, and says what is wrong
            if (
                type(raw) is not str
                or cached is None
                or (named is not None and type(named) is not str)
                or (hint_start is not None and type(hint_start) is not int)
                or (hint_end is not None and type(hint_end) is not int)
            ):
                outcome = prepare(documents, slot, request, prefer_cache)
            else:
                # what prepare() does for a request of this shape, inline
                text = raw if raw.isascii() and "\r" not in raw else canonicalize(raw)
                doc = number.get(named) if named is not None else None
                if doc is not None and hint_start is not None:
                    source = texts[doc]
                    stop = hint_start + len(text)
                    if (
                        hint_start >= 0
                        and (hint_end is None or hint_end == stop)
                        and stop <= len(source)
                        and source.startswith(text, hint_start)
                        and text.strip()
                    ):
                        doc_id = ids[doc]
                        span = new_span(DocSpan, (doc_id, hint_start, stop))
                        results[slot] = Location(verified, doc_id, hint_start, stop, 1.0, (span,))
                        continue
                job = Pending(slot, text, doc, named, hint_start, hint_end, cached)
                if not text.strip():
                    results[slot] = unmapped(job, "empty or whitespace-only text")
                    continue
                if named is not None and doc is None:
                    job.notes = (f"document {named!r} is not in the corpus",)
                pending.append(job)
                continue
        if isinstance(outcome, Location):
            results[slot] = outcome
        else:
            pending.append(outcome)
    return results, pending


def _preferred(documents: CorpusTexts, request: LocateRequest) -> tuple[Occurrence, ...]:
    """The request's gold spans as ``(document number, start, end)``, unknown documents left out."""
    number = documents.number
    return tuple(
        (number[p.document_id], p.start, p.end) for p in request.prefer if p.document_id in number
    )


def _check_request(slot: int, request: object, *, check_prefer: bool = True) -> None:
    if not isinstance(request, LocateRequest):
        raise InputError(
            f"request {slot} is a {type(request).__name__}, not a LocateRequest",
            hint="wrap each result as LocateRequest(text, document_id, start, end)",
        )
    if request.text is not None and not isinstance(request.text, str):
        kind = type(request.text).__name__
        raise InputError(f"request {slot}: text must be a string, got {kind}")
    if request.document_id is not None and not isinstance(request.document_id, str):
        raise InputError(f"request {slot}: document_id must be a string")
    for name, value in (("start", request.start), ("end", request.end)):
        # ``type(...) is int`` first: the ABC check is slow, and nearly every offset is an int
        if value is not None and type(value) is not int and not isinstance(value, Integral):
            raise InputError(f"request {slot}: {name} must be a whole number, got {value!r}")
    prefer = request.prefer
    if (
        check_prefer
        and prefer
        and (not isinstance(prefer, tuple) or not all(isinstance(p, DocSpan) for p in prefer))
    ):
        raise InputError(
            f"request {slot}: prefer must be a tuple of DocSpan", hint="pass the gold spans"
        )


def _verify_hint(
    documents: CorpusTexts, job: Pending, doc: int, start: int, end: int | None
) -> Location | None:
    source = documents.texts[doc]
    stop = start + len(job.text)
    if start < 0 or (end is not None and end != stop) or stop > len(source):
        return None
    if not source.startswith(job.text, start):
        return None
    span = DocSpan(documents.ids[doc], start, stop)
    return Location(MatchStatus.VERIFIED, span.document_id, start, stop, 1.0, (span,))


def _explicit_span(documents: CorpusTexts, request: LocateRequest) -> Location:
    doc_id, start, end = request.document_id, request.start, request.end

    def invalid(reason: str) -> Location:
        return Location(MatchStatus.INVALID, doc_id, start, end, 0.0, reason=reason)

    if doc_id is None:
        return invalid("no text and no document id: nothing to locate")
    if doc_id not in documents.number:
        return invalid(f"unknown document {doc_id!r}")
    if start is None or end is None:
        return invalid("an explicit span needs both start and end")
    if start < 0 or end < 0:
        return invalid(f"negative offset in [{start}, {end})")
    if start > end:
        return invalid(f"inverted span [{start}, {end})")
    if start == end:
        return invalid(f"empty span [{start}, {end})")
    length = len(documents.texts[documents.number[doc_id]])
    if end > length:
        return invalid(f"span [{start}, {end}) ends past the document's {length} characters")
    span = DocSpan(doc_id, start, end)
    return Location(MatchStatus.SPAN, doc_id, start, end, 1.0, (span,))
