"""Reading a corpus: a folder of a user's files (text, Markdown, PDF, DOCX, HTML: ``folder.py``), a JSONL file,
or a BEIR dataset folder.

A document's indexed text is its title and body joined by a blank line (BEIR
retrievers index both), so the first chunk of a document carries its title.
A document's metadata is the ``metadata`` object of its BEIR/JSONL line (any JSON
values), or, for a folder, its line of a sidecar ``metadata.jsonl``:
``{"file": "<name relative to the folder>", "metadata": {...any JSON...}}``; the older
``"categories": {"NAME": "V" | ["V", ...]}`` form is still read (both may be given; a
name in both is an error). Categories (string and list-of-string fields) are derived
from the metadata where the boolean language needs them.

A sidecar line naming a file that is not a document of the folder (misspelt, moved, not a .txt/.md
file) is a warning that names the line and the file, listed in ``skipped``; with ``strict=True``
(``dashrag index --strict``) it is an error and nothing is read.

A folder corpus does not follow symbolic links unless asked (``follow_symlinks=True``,
``dashrag index --follow-symlinks``): a link ``secret.txt -> /etc/passwd`` dropped
into a shared folder must not put that file into an index. Skipped links are
listed in ``skipped``. A corpus line must hold a string ``text`` and an ``_id``
that is a string or an integer: ``null`` or a list is an error naming the line,
never the text ``"None"`` or a Python repr.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from dashrag.documents.model import SourceDocument, json_metadata
from dashrag.errors import CorpusError, excerpt

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # the converters (pydantic-settings) load when a folder is read, not with every query
    from dashrag.documents.converters.result import ReadLimits

SIDECAR_NAME = "metadata.jsonl"


def is_folder_of_files(path: str | Path) -> bool:
    """Whether :meth:`Corpus.from_path` reads ``path`` as a user's folder of files (a folder without a BEIR
    ``corpus.jsonl[.gz]``): the corpora a sync can follow, whose folder a build records (docs/documents.md)."""
    path = Path(path)
    return path.is_dir() and not any((path / name).is_file() for name in ("corpus.jsonl", "corpus.jsonl.gz"))


def full_text(document: SourceDocument) -> str:
    return f"{document.title}\n\n{document.text}" if document.title else document.text


@dataclass(frozen=True)
class Corpus:
    documents: tuple[SourceDocument, ...]
    skipped: tuple[str, ...] = ()  # files left out on purpose (unknown type, empty, a link), each with why
    failed: tuple[str, ...] = ()  # files of a known type that could not be read, each with why

    def __post_init__(self) -> None:
        if not self.documents:
            raise CorpusError("the corpus is empty: no document was read")
        seen: set[str] = set()
        for doc in self.documents:
            if doc.id in seen:
                raise CorpusError(f"document id {doc.id!r} appears twice ({doc.source})")
            seen.add(doc.id)

    def __len__(self) -> int:
        return len(self.documents)

    def __iter__(self) -> Iterator[SourceDocument]:
        return iter(self.documents)

    @classmethod
    def from_path(cls, path: str | Path, follow_symlinks: bool = False, limits: ReadLimits | None = None,
                  strict: bool = False) -> Corpus:
        """A folder of files, a BEIR folder (holding corpus.jsonl[.gz]), or a JSONL file (``strict``: as
        :meth:`from_folder`)."""
        path = Path(path)
        if not path.exists():
            raise CorpusError(f"{path}: no such file or folder")
        if is_folder_of_files(path):
            return cls.from_folder(path, follow_symlinks=follow_symlinks, limits=limits, strict=strict)
        if path.is_dir():
            return cls.from_beir(path)
        return cls.from_jsonl(path)

    @classmethod
    def from_folder(cls, folder: str | Path, follow_symlinks: bool = False, limits: ReadLimits | None = None,
                    strict: bool = False) -> Corpus:
        """Every file under ``folder`` that dashrag reads (.txt, .md, .pdf, .docx, .html: docs/documents.md);
        the id is the path relative to it.

        A file that cannot be read (or of an unknown type) is left out with a warning naming it and why;
        the rest is read. ``strict``: any failed file is a CorpusError (nothing is read). ``limits``: the
        per-file bounds (default: ``ReadLimits()``, from the environment). Symbolic links (to files or
        folders) are skipped unless ``follow_symlinks``.
        """
        from dashrag.documents.converters.result import ReadLimits
        from dashrag.documents.folder import read_folder

        folder = Path(folder)
        if not folder.is_dir():
            raise CorpusError(f"{folder}: no such folder")
        metadata, lines = _read_sidecar(folder / SIDECAR_NAME)
        outcome = read_folder(folder, follow_symlinks, limits or ReadLimits(), metadata, SIDECAR_NAME)
        if strict:
            outcome.refuse_failures()
        unknown = _unknown_sidecar_files(folder, lines, {document.id for document in outcome.documents}, strict)
        if not outcome.documents:
            raise CorpusError(f"{folder}: the corpus is empty (no readable file; {len(outcome.skipped)} skipped, "
                              f"{len(outcome.failed)} failed)")
        return cls(tuple(outcome.documents), tuple(outcome.skipped) + tuple(unknown), tuple(outcome.failed))

    def file_outcomes(self, folder: str | Path) -> dict[str, Any]:
        """What became of each file of ``folder`` (the folder this corpus was read from): ``read`` (the ids of the
        documents read), ``skipped`` and ``failed`` (each ``{"file", "why"}``), the file relative to the folder and
        the folder's own path written nowhere (a service shows these to clients that must not learn it)."""
        prefix = f"{Path(folder)}{os.sep}"

        def outcome(line: str) -> dict[str, str]:
            shown = line.replace(prefix, "")
            file, _, why = shown.partition(": ")
            return {"file": file, "why": why}

        return {"read": [d.id for d in self.documents], "skipped": [outcome(line) for line in self.skipped],
                "failed": [outcome(line) for line in self.failed]}

    def summary(self) -> str:
        """One line: how many documents were read, and files skipped and failed (what every face prints)."""
        return f"read {len(self.documents)} documents, skipped {len(self.skipped)}, failed {len(self.failed)}"

    @classmethod
    def from_jsonl(cls, path: str | Path) -> Corpus:
        """BEIR-style lines ``{"_id", "title", "text", "metadata"}``; ``.gz`` is read transparently."""
        path = Path(path)
        if not path.is_file():
            raise CorpusError(f"{path}: no such file")
        documents = []
        opener = gzip.open if path.suffix == ".gz" else open
        try:
            with opener(path, "rt", encoding="utf-8") as handle:
                for number, line in enumerate(handle, 1):
                    if line.strip():
                        documents.append(_document_from_line(line, f"{path}:{number}"))
        except (UnicodeDecodeError, OSError, EOFError) as exc:
            raise CorpusError(f"{path}: cannot be read ({exc})") from None
        if not documents:
            raise CorpusError(f"{path}: the corpus is empty")
        return cls(tuple(documents))

    @classmethod
    def from_beir(cls, folder: str | Path) -> Corpus:
        folder = Path(folder)
        for name in ("corpus.jsonl", "corpus.jsonl.gz"):
            if (folder / name).is_file():
                return cls.from_jsonl(folder / name)
        raise CorpusError(f"{folder}: no corpus.jsonl or corpus.jsonl.gz (not a BEIR dataset folder)")


ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def refuse_lone_surrogates(line: str, record: Any, where: str) -> None:
    """JSON may escape half of a UTF-16 pair (``"\\ud800"``), which is no character: no file, store or
    answer can hold it, so a line with one is refused here, naming the line, instead of failing later."""
    if not ESCAPED_SURROGATE.search(line):
        return  # the cheap test: a line without an escaped surrogate cannot hold a lone one
    try:
        json.dumps(record, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start:exc.end].encode("unicode_escape", "backslashreplace").decode("ascii")
        raise CorpusError(f"{where}: holds a lone surrogate ({bad}), which is not a character; "
                          "fix the file's encoding") from None


def _document_from_line(line: str, where: str) -> SourceDocument:
    try:
        record = json.loads(line, parse_constant=_not_a_number)
    except (json.JSONDecodeError, ValueError, RecursionError) as exc:
        raise CorpusError(f"{where}: not valid JSON ({getattr(exc, 'msg', exc)})") from None
    refuse_lone_surrogates(line, record, where)
    if not isinstance(record, dict) or "_id" not in record or "text" not in record:
        raise CorpusError(f"{where}: a corpus line needs '_id' and 'text'")
    doc_id, text, title = record["_id"], record["text"], record.get("title")
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)) or str(doc_id) == "":
        raise CorpusError(f"{where}: '_id' must be a non-empty string or an integer, not {excerpt(doc_id, 40)}")
    if not isinstance(text, str):
        got = "null" if text is None else type(text).__name__
        raise CorpusError(f"{where}: 'text' must be a string, not {got}")
    if title is not None and not isinstance(title, str):
        raise CorpusError(f"{where}: 'title' must be a string, not {type(title).__name__}")
    try:
        metadata = json_metadata(record.get("metadata"), "metadata")
    except ValueError as exc:
        raise CorpusError(f"{where}: {exc}") from None
    return SourceDocument(id=str(doc_id), title=title or "", text=text, metadata=metadata, source=where)


def _not_a_number(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _unknown_sidecar_files(folder: Path, lines: dict[str, int], documents: set[str], strict: bool) -> list[str]:
    """The sidecar lines that name no file of the folder, each with its line: a warning each (their metadata
    would otherwise vanish without a word), or, with ``strict``, one error naming them all. A line naming a
    file that is there but failed to read is not unknown: that file has its own line."""
    sidecar = folder / SIDECAR_NAME
    unknown = [f"{sidecar}:{number}: names {name!r}, which is not a document of {folder}"
               for name, number in lines.items() if name not in documents and not (folder / name).is_file()]
    if unknown and strict:
        raise CorpusError(f"{len(unknown)} metadata line(s) name no document (--strict): " + "; ".join(unknown))
    for problem in unknown:
        log.warning("%s; its metadata is not used", problem)
    return unknown


def read_sidecar(path: Path) -> dict[str, dict[str, Any]]:
    """Each file's metadata as the folder's sidecar gives it (what a sync compares)."""
    return _read_sidecar(path)[0]


def _read_sidecar(path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
    """Each named file's metadata, and the line that named it."""
    if not path.is_file():
        return {}, {}
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    found, lines = {}, {}
    expected = 'expected {"file": "<name>", "metadata": {...}} (or "categories": {"NAME": "V" or ["V", ...]})'
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line, parse_constant=_not_a_number)
        except (json.JSONDecodeError, ValueError, RecursionError):
            raise CorpusError(f"{path}:{number}: not valid JSON; {expected}") from None
        if not isinstance(record, dict) or not isinstance(record.get("file"), str):
            raise CorpusError(f"{path}:{number}: {expected}")
        found[record["file"]] = _sidecar_metadata(record, f"{path}:{number}", expected)
        lines[record["file"]] = number
    return found, lines


def _sidecar_metadata(record: dict[str, Any], where: str, expected: str) -> dict[str, Any]:
    """A sidecar line's ``metadata`` and its older ``categories`` (string or list-of-string values) together."""
    if "metadata" not in record and "categories" not in record:
        raise CorpusError(f"{where}: neither 'metadata' nor 'categories'; {expected}")
    merged: dict[str, Any] = {}
    for key in ("metadata", "categories"):
        value = record.get(key, {})
        if not isinstance(value, dict):
            raise CorpusError(f"{where}: '{key}' must be an object, not {type(value).__name__}; {expected}")
        if key == "categories":
            bad = [n for n, v in value.items() if not (isinstance(v, str) or (
                isinstance(v, list) and all(isinstance(x, str) for x in v)))]
            if bad:
                raise CorpusError(f"{where}: category {bad[0]!r} must be a string or a list of strings; {expected}")
        try:
            fields = json_metadata(value, key)
        except ValueError as exc:
            raise CorpusError(f"{where}: {exc}") from None
        twice = sorted(set(fields) & set(merged))
        if twice:
            raise CorpusError(f"{where}: {twice[0]!r} is given in both 'metadata' and 'categories'")
        merged.update(fields)
    return merged
