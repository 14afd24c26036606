"""Anchoring evidence text: the one anchor of a piece of text in a corpus.

:func:`anchor_from_text` is how scripts and the CLI turn copied evidence into an anchor;
occurrences are counted from 1, as everywhere in spanchor (``--occurrence``, ``add_anchor``).
"""

from __future__ import annotations

from spanchor_core.corpus import Corpus, canonicalize
from spanchor_core.errors import AnchorError
from spanchor_core.gold.model import Anchor
from spanchor_core.gold.validate import preview

__all__ = ["anchor_from_text"]


def anchor_from_text(
    corpus: Corpus,
    text: str,
    *,
    document_id: str | None = None,
    occurrence: int | None = None,
) -> Anchor:
    """The anchor of ``text`` (canonicalised first) in ``corpus``.

    Text that occurs more than once is ambiguous: name the ``document_id``, or pick the
    ``occurrence`` (counted from 1, in document id then offset order, within ``document_id``
    when given). Raises :class:`AnchorError` when the text is absent or
    ambiguous, listing where it occurs.
    """
    if document_id is not None and document_id not in corpus:
        raise AnchorError(
            f"document {document_id!r} is not in the corpus",
            hint="use a document id the corpus has (its path without suffix)",
        )
    if not canonicalize(text):
        raise AnchorError("cannot anchor empty text", hint="give the evidence text to anchor")
    matches = corpus.find_all(text, document_id)
    scope = "the corpus" if document_id is None else f"document {document_id!r}"
    if not matches:
        raise AnchorError(
            f"text {preview(canonicalize(text))} does not occur in {scope}",
            hint="copy the evidence exactly from the document; whitespace and case matter",
        )
    if occurrence is not None:
        if not 1 <= occurrence <= len(matches):
            raise AnchorError(
                f"occurrence {occurrence} asked for, but the text occurs {len(matches)} "
                f"time{'s' if len(matches) > 1 else ''} in {scope}",
                hint=f"occurrences are numbered from 1 to {len(matches)}",
            )
        chosen = matches[occurrence - 1]
    elif len(matches) > 1:
        shown = ", ".join(f"{m.document_id}[{m.start}:{m.end}]" for m in matches[:5])
        more = f" and {len(matches) - 5} more" if len(matches) > 5 else ""
        raise AnchorError(
            f"text occurs {len(matches)} times in {scope}: {shown}{more}",
            hint="name a document_id or an occurrence (numbered from 1) to choose one",
        )
    else:
        chosen = matches[0]
    return Anchor.from_span(corpus, chosen.document_id, chosen.start, chosen.end)
