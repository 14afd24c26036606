"""Importing SQuAD-format question answering data as documents and a gold set.

SQuAD v1.1 / v2.0 JSON (also XQuAD, MLQA and other files in that shape)::

    {"version": "1.1", "data": [{"title": "Super_Bowl_50", "paragraphs": [
        {"context": "...", "qas": [{"id": "56be...", "question": "...",
          "answers": [{"text": "Denver Broncos", "answer_start": 177}],
          "is_impossible": false}]}]}]}

becomes one document per paragraph and one gold query per question with one anchor per
distinct answer. **Document ids** are ``"<title-slug>/<paragraph index>"``: the title
lower-cased, every run of characters other than letters, digits, ``_`` and ``-`` replaced
by ``-`` (``"Super_Bowl_50"`` -> ``super_bowl_50``; an empty title -> ``untitled``; a slug
already used by an earlier article gets ``-2``, ``-3``, ...), the index counting that
article's paragraphs from 0. :func:`write_squad_documents` writes them as
``<out>/<slug>/<index>.txt``, which :func:`spanchor_core.load_corpus` reads back with the
same ids.

``answer_start`` counts code points of the *raw* context. Each answer is checked first
(``context[answer_start:answer_start + len(text)] == text``; anything else is reported,
never guessed), then translated to canonical offsets with
:class:`spanchor_core.OffsetMap` — raw offsets are wrong as soon as a context is not NFC or
has ``\\r\\n``. An answer boundary inside a character sequence that NFC fuses (``e`` +
combining accent) widens to cover the fused character; such anchors are counted in
``widened``. A context starting with a byte-order mark loses it (as
:func:`spanchor_core.load_corpus` drops it from files), shifting its offsets by one.
Questions marked ``is_impossible`` (SQuAD 2.0) are reported and skipped.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from spanchor_core._io import atomic_write, check_output_target, loads_strict
from spanchor_core.authoring.storable import unstorable
from spanchor_core.corpus import Corpus, Document, canonicalize
from spanchor_core.errors import CorpusError, InputError
from spanchor_core.gold import Anchor, GoldQuery, GoldSet
from spanchor_core.offsets import OffsetMap

__all__ = [
    "SQUAD_PROBLEM_CODES",
    "SquadImport",
    "SquadProblem",
    "import_squad",
    "squad_document_paths",
    "title_slug",
    "write_squad_documents",
]

SQUAD_PROBLEM_CODES: Final[Mapping[str, str]] = {
    "unanswerable": "the question is marked is_impossible (SQuAD 2.0): no evidence to anchor",
    "no_answers": "the question has no answers and is not marked unanswerable",
    "duplicate_question_id": "a question id used earlier in the file: the later one is skipped",
    "empty_answer": "an answer with empty text",
    "answer_out_of_range": "answer_start + len(text) is outside the context",
    "answer_mismatch": "the context at answer_start does not hold the answer text",
}
"""Every :attr:`SquadProblem.code` with what it means."""

_SLUG_DROP: Final = re.compile(r"[^\w-]+")


@dataclass(frozen=True, slots=True)
class SquadProblem:
    """Something in the file that did not become an anchor (or a query)."""

    code: str
    question_id: str
    document_id: str
    message: str
    answer_index: int | None = None
    answers: int = 1
    """How many of the file's answers this problem kept from becoming anchors."""

    def __str__(self) -> str:
        answer = f" answer {self.answer_index}" if self.answer_index is not None else ""
        return f"{self.question_id}{answer} ({self.document_id}): {self.message} [{self.code}]"


@dataclass(frozen=True, slots=True)
class SquadImport:
    """Documents, gold set and everything reported while importing a SQuAD-format file.

    ``answers`` counts every answer object in the file; anchors made =
    ``answers - duplicate_answers - sum(problem.answers for problem in problems)``.
    ``shifted`` anchors have canonical offsets other than the raw ones (the translation
    mattered); ``widened`` ones were widened to whole canonical characters (module docs).
    """

    corpus: Corpus
    gold: GoldSet
    problems: tuple[SquadProblem, ...]
    titles: Mapping[str, str]
    """Title slug -> the article's title as in the file."""
    paragraphs: int
    questions: int
    answers: int
    duplicate_answers: int
    shifted: int
    widened: int

    @property
    def anchors(self) -> int:
        return sum(len(query.anchors) for query in self.gold.entries)


def title_slug(title: str) -> str:
    """The directory-safe slug of an article title (see the module docs)."""
    slug = _SLUG_DROP.sub("-", unicodedata.normalize("NFC", title).lower()).strip("-_")
    return slug or "untitled"


def _field(obj: Any, key: str, kind: type | tuple[type, ...], where: str, path: Path) -> Any:
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected a JSON object", path=path, hint="is this SQuAD JSON?")
    if key not in obj:
        raise InputError(f"{where}.{key}: missing", path=path, hint="is this SQuAD JSON?")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InputError(
            f"{where}.{key}: expected {getattr(kind, '__name__', kind)}, "
            f"got {type(value).__name__}",
            path=path,
            hint="is this SQuAD JSON?",
        )
    return value


def _load_json(path: Path) -> Any:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError("file does not exist", path=path, hint="check the path") from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", path=path) from None
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"not valid UTF-8 at byte {err.start}", path=path) from None
    data = loads_strict(text, path=path)
    problem = unstorable(data)  # e.g. "\ud800": the documents and gold set could not be written
    if problem is not None:
        raise InputError(problem, path=path, hint="save the file with text UTF-8 can store")
    return data


def import_squad(path: str | os.PathLike[str]) -> SquadImport:
    """Read a SQuAD v1.1 / v2.0-format file into documents and a gold set.

    See the module docs for document ids, offset translation and what is reported.
    Raises :class:`InputError` for a file that is not SQuAD-shaped (naming the JSON path
    of the bad field, e.g. ``data[3].paragraphs[0].qas[2].answers[0].answer_start``);
    problems with individual answers are collected in ``problems`` instead.
    """
    source = Path(path)
    data = _load_json(source)
    articles = _field(data, "data", list, "top level", source)
    version = data.get("version") if isinstance(data, dict) else None
    documents: list[Document] = []
    queries: list[GoldQuery] = []
    problems: list[SquadProblem] = []
    titles: dict[str, str] = {}
    seen_ids: set[str] = set()
    questions = answers = duplicates = shifted = widened = 0
    for a, article in enumerate(articles):
        where_a = f"data[{a}]"
        title = article.get("title", "") if isinstance(article, dict) else ""
        title = title if isinstance(title, str) else str(title)
        slug = title_slug(title)
        base, n = slug, 1
        while slug in titles:
            n += 1
            slug = f"{base}-{n}"
        titles[slug] = title
        for p, paragraph in enumerate(_field(article, "paragraphs", list, where_a, source)):
            where_p = f"{where_a}.paragraphs[{p}]"
            raw = _field(paragraph, "context", str, where_p, source)
            document_id = f"{slug}/{p}"
            offsets = OffsetMap(raw)
            # a leading byte-order mark is dropped, as load_corpus drops it when the
            # written document is read back: offsets shift by one
            lead = 1 if offsets.canonical.startswith("\ufeff") else 0
            canonical = offsets.canonical[lead:]
            document = Document.from_text(document_id, canonical)
            documents.append(document)
            corpus_one = Corpus({document_id: document})
            for q, qa in enumerate(_field(paragraph, "qas", list, where_p, source)):
                where_q = f"{where_p}.qas[{q}]"
                qid = str(_field(qa, "id", (str, int), where_q, source))
                question = _field(qa, "question", str, where_q, source)
                questions += 1

                answer_list = qa.get("answers", [])
                if not isinstance(answer_list, list):
                    raise InputError(f"{where_q}.answers: expected list", path=source)
                answers += len(answer_list)

                def report(code: str, message: str, index: int | None = None) -> None:
                    lost = 1 if index is not None else len(answer_list)  # noqa: B023
                    problems.append(SquadProblem(code, qid, document_id, message, index, lost))  # noqa: B023

                if qid in seen_ids:
                    report("duplicate_question_id", f"question id {qid!r} already used")
                    continue
                seen_ids.add(qid)
                if qa.get("is_impossible") is True:
                    report("unanswerable", "marked is_impossible; skipped")
                    continue
                if not answer_list:
                    report("no_answers", "no answers; skipped")
                    continue
                anchors: list[Anchor] = []
                for i, answer in enumerate(answer_list):
                    where_x = f"{where_q}.answers[{i}]"
                    text = _field(answer, "text", str, where_x, source)
                    start = _field(answer, "answer_start", int, where_x, source)
                    end = start + len(text)
                    if not text:
                        report("empty_answer", "empty answer text", i)
                        continue
                    if start < 0 or end > len(raw):
                        report(
                            "answer_out_of_range",
                            f"[{start}, {end}) is outside the context ({len(raw)} chars)",
                            i,
                        )
                        continue
                    if raw[start:end] != text:
                        report(
                            "answer_mismatch",
                            f"context at [{start}, {end}) is {raw[start:end]!r}, "
                            f"not the answer {text!r}",
                            i,
                        )
                        continue
                    c_start, c_end = offsets.raw_span_to_canonical(start, end)
                    c_start, c_end = max(c_start - lead, 0), c_end - lead
                    if c_end <= c_start:
                        report("empty_answer", "the answer is only a byte-order mark", i)
                        continue
                    anchor = Anchor.from_span(corpus_one, document_id, c_start, c_end)
                    if any(existing.span == anchor.span for existing in anchors):
                        duplicates += 1
                        continue
                    shifted += (c_start, c_end) != (start, end)
                    widened += canonical[c_start:c_end] != canonicalize(text)
                    anchors.append(anchor)
                if anchors:
                    queries.append(
                        GoldQuery(qid, question, tuple(anchors), metadata={"title": title})
                    )
    description = f"imported from {source.name}"
    if isinstance(version, str):
        description += f" (SQuAD version {version})"
    return SquadImport(
        Corpus.from_documents(documents),
        GoldSet(queries, description=description),
        tuple(problems),
        titles,
        len(documents),
        questions,
        answers,
        duplicates,
        shifted,
        widened,
    )


def squad_document_paths(imported: SquadImport, out_dir: str | os.PathLike[str]) -> list[Path]:
    """Where :func:`write_squad_documents` writes each document: ``<out_dir>/<id>.txt``."""
    root = Path(out_dir)
    return [
        root.joinpath(*document_id.split("/")).with_name(document_id.rsplit("/", 1)[-1] + ".txt")
        for document_id in imported.corpus
    ]


def _inside_out_dir(root: Path, target: Path) -> None:
    """Refuse a target reached through a symbolic link below ``root`` (``root`` itself, given
    by the user, may be one): a link planted in ``--out`` must not send documents elsewhere."""
    current = root
    for part in target.relative_to(root).parts:
        current = current / part
        if current.is_symlink():
            raise CorpusError(
                "is a symbolic link; documents are never written through links in the output "
                "directory",
                path=current,
                hint="remove the link or write into another directory",
            )


def write_squad_documents(
    imported: SquadImport, out_dir: str | os.PathLike[str], *, overwrite: bool = False
) -> list[Path]:
    """Write each imported document as ``<out_dir>/<document id>.txt`` (canonical UTF-8).

    :func:`spanchor_core.load_corpus` on ``out_dir`` then yields the same ids and texts, so
    the imported gold set validates against it. An existing file with other content is an
    error unless ``overwrite``; one with the same content is left alone. Each file is written
    atomically, and never through a symbolic link below ``out_dir`` (a file or a directory).
    Returns the paths.
    """
    root = Path(out_dir)
    written: list[Path] = []
    paths = squad_document_paths(imported, root)
    for document_id, target in zip(imported.corpus, paths, strict=True):
        _inside_out_dir(root, target)
        check_output_target(target, error=CorpusError, what="document")
        data = imported.corpus.text(document_id).encode("utf-8")
        try:
            if target.exists():
                if target.read_bytes() == data:
                    written.append(target)
                    continue
                if not overwrite:
                    raise CorpusError(
                        "file exists with other content",
                        path=target,
                        hint="write into an empty directory, or pass --overwrite "
                        "(overwrite=True in Python)",
                    )
        except OSError as err:
            raise CorpusError(f"cannot read: {err.strerror or err}", path=target) from None
        # all or nothing, without an fsync per document (an import can be run again)
        atomic_write(target, data, error=CorpusError, what="document", durable=False)
        written.append(target)
    return written
