"""Reading a corpus: a folder of text files, a JSONL file, or a BEIR dataset folder.

A document's indexed text is its title and body joined by a blank line (BEIR
retrievers index both), so the first chunk of a document carries its title.
Categories come from BEIR ``metadata`` values that are strings or lists of
strings, or, for a folder, from a sidecar ``metadata.jsonl`` whose lines are
``{"file": "<name relative to the folder>", "categories": {"NAME": "V" | ["V", ...]}}``.
"""

from __future__ import annotations

import gzip
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from dashrag.documents.model import SourceDocument, normalise_categories
from dashrag.errors import CorpusError

log = logging.getLogger(__name__)

FOLDER_SUFFIXES = (".txt", ".md")
SIDECAR_NAME = "metadata.jsonl"


def full_text(document: SourceDocument) -> str:
    return f"{document.title}\n\n{document.text}" if document.title else document.text


@dataclass(frozen=True)
class Corpus:
    documents: tuple[SourceDocument, ...]
    skipped: tuple[str, ...] = ()  # files or lines left out, each with why

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
    def from_path(cls, path: str | Path) -> Corpus:
        """A folder of text files, a BEIR folder (holding corpus.jsonl[.gz]), or a JSONL file."""
        path = Path(path)
        if not path.exists():
            raise CorpusError(f"{path}: no such file or folder")
        if path.is_dir():
            if any((path / name).is_file() for name in ("corpus.jsonl", "corpus.jsonl.gz")):
                return cls.from_beir(path)
            return cls.from_folder(path)
        return cls.from_jsonl(path)

    @classmethod
    def from_folder(cls, folder: str | Path) -> Corpus:
        """Every .txt/.md file under ``folder``; the id is the path relative to it.

        A file that is not UTF-8 is skipped with a warning that names it; the rest is read.
        """
        folder = Path(folder)
        if not folder.is_dir():
            raise CorpusError(f"{folder}: no such folder")
        categories = _read_sidecar(folder / SIDECAR_NAME)
        documents, skipped = [], []
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in FOLDER_SUFFIXES):
            rel = path.relative_to(folder).as_posix()
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError as exc:
                log.warning("skipped %s: not UTF-8 (%s)", path, exc.reason)
                skipped.append(f"{path}: not UTF-8")
                continue
            if not text.strip():
                log.warning("skipped %s: empty", path)
                skipped.append(f"{path}: empty")
                continue
            documents.append(SourceDocument(id=rel, text=text, metadata=categories.get(rel, {}), source=str(path)))
        if not documents:
            raise CorpusError(f"{folder}: the corpus is empty (no readable .txt or .md file)")
        return cls(tuple(documents), tuple(skipped))

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


def _document_from_line(line: str, where: str) -> SourceDocument:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CorpusError(f"{where}: not valid JSON ({exc.msg})") from None
    if not isinstance(record, dict) or "_id" not in record or "text" not in record:
        raise CorpusError(f"{where}: a corpus line needs '_id' and 'text'")
    metadata = record.get("metadata") or {}
    return SourceDocument(
        id=str(record["_id"]),
        title=str(record.get("title") or ""),
        text=str(record["text"]),
        metadata=normalise_categories(metadata if isinstance(metadata, dict) else {}),
        source=where,
    )


def _read_sidecar(path: Path) -> dict[str, dict[str, tuple[str, ...]]]:
    if not path.is_file():
        return {}
    found = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            found[str(record["file"])] = normalise_categories(record["categories"])
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise CorpusError(f"{path}:{number}: expected {{\"file\": ..., \"categories\": {{...}}}} ({exc})") from None
    return found
