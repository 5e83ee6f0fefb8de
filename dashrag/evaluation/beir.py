"""Read the queries and relevance judgements of a BEIR dataset folder.

A BEIR folder holds ``corpus.jsonl`` (read by the corpus loaders, not here),
``queries.jsonl`` (``{"_id", "text", ...}`` per line) and ``qrels/<split>.tsv``
(``query-id<TAB>corpus-id<TAB>score``, with a header line). ``queries.jsonl``
usually holds the queries of *every* split, so an evaluation must keep only the
queries its split judges: scoring SciFact test on all 1,109 claims would mix the
train queries into the test figure.

Every problem names the file and the 1-based line, because a BEIR folder is
often assembled by hand from several downloads and a bad line is otherwise a
needle in a 1,000-line haystack.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

from dashrag.documents.corpus import refuse_lone_surrogates
from dashrag.errors import CorpusError

Qrels = dict[str, dict[str, int]]

QRELS_HEADER = ("query-id", "corpus-id", "score")


@dataclass(frozen=True)
class EvaluationSplit:
    """The judged queries of one split: what a run is scored against.

    ``queries`` holds exactly the queries that ``qrels`` judges, in the order
    they first appear in the qrels file (so a run over them is reproducible).
    """

    dataset: str
    split: str
    queries: Mapping[str, str]
    qrels: Mapping[str, Mapping[str, int]]

    def __len__(self) -> int:
        return len(self.queries)


def numbered_lines(path: Path, what: str, error: type[Exception]) -> Iterator[tuple[int, str]]:
    """``(line number from 1, line)`` of a UTF-8 text file; ``error`` names it when it is missing."""
    if not path.is_file():
        raise error(f"{path}: {what} file not found")
    with path.open(encoding="utf-8") as handle:
        yield from enumerate(handle, start=1)


def read_qrels(path: str | Path) -> Qrels:
    """``qrels/<split>.tsv`` → ``{query_id: {document_id: relevance}}``.

    The header line is optional (BEIR writes one, TREC-style files do not).
    A pair judged twice with the same grade is accepted; with two grades it is
    an error, since either choice would silently change the figures.
    """
    path = Path(path)
    qrels: Qrels = {}
    for line_number, line in numbered_lines(path, "qrels", CorpusError):
        fields = line.rstrip("\r\n").split("\t")
        if line_number == 1 and tuple(f.strip().lower() for f in fields) == QRELS_HEADER:
            continue
        if not line.strip():
            continue
        if len(fields) != 3:
            raise CorpusError(
                f"{path}:{line_number}: expected 3 tab-separated fields "
                f"(query-id, corpus-id, score), found {len(fields)}"
            )
        query_id, document_id, grade_text = (f.strip() for f in fields)
        if not query_id or not document_id:
            raise CorpusError(f"{path}:{line_number}: empty query-id or corpus-id")
        try:
            grade = int(grade_text)
        except ValueError:
            raise CorpusError(
                f"{path}:{line_number}: relevance score {grade_text!r} is not an integer"
            ) from None
        judged = qrels.setdefault(query_id, {})
        if judged.get(document_id, grade) != grade:
            raise CorpusError(
                f"{path}:{line_number}: ({query_id}, {document_id}) judged "
                f"{judged[document_id]} earlier and {grade} here"
            )
        judged[document_id] = grade
    if not qrels:
        raise CorpusError(f"{path}: no relevance judgements")
    return qrels


def read_queries(path: str | Path, wanted: set[str] | None = None) -> dict[str, str]:
    """``queries.jsonl`` → ``{query_id: text}``, keeping only ``wanted`` ids when given.

    Every line is still parsed, so a broken line is reported even when it holds
    a query of another split: a folder with a bad line is a bad folder.
    """
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"{path}: queries file not found")
    queries: dict[str, str] = {}
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CorpusError(f"{path}:{line_number}: not valid JSON ({exc.msg})") from None
            refuse_lone_surrogates(line, record, f"{path}:{line_number}")
            if not isinstance(record, dict):
                raise CorpusError(f"{path}:{line_number}: expected a JSON object")
            query_id, text = record.get("_id"), record.get("text")
            if query_id is None or not isinstance(text, str):
                raise CorpusError(f"{path}:{line_number}: a query needs \"_id\" and a string \"text\"")
            query_id = str(query_id)
            if query_id in queries:
                raise CorpusError(f"{path}:{line_number}: query id {query_id!r} appears twice")
            if wanted is None or query_id in wanted:
                queries[query_id] = text
    return queries


def qrels_file(folder: str | Path, split: str) -> Path:
    """``folder/qrels/<split>.tsv``, or an error naming the splits the folder has (nothing is read)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CorpusError(f"{folder}: dataset folder not found")
    qrels_path = folder / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        available = sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))
        raise CorpusError(
            f"{qrels_path}: no qrels for split {split!r}; available splits: "
            f"{', '.join(available) if available else 'none'}"
        )
    return qrels_path


def load_split(folder: str | Path, split: str = "test") -> EvaluationSplit:
    """The queries and judgements of ``split`` in the BEIR folder ``folder``."""
    folder = Path(folder)
    qrels_path = qrels_file(folder, split)
    qrels = read_qrels(qrels_path)
    texts = read_queries(folder / "queries.jsonl", wanted=set(qrels))
    missing = [q for q in qrels if q not in texts]
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise CorpusError(
            f"{folder / 'queries.jsonl'}: {len(missing)} queries judged in {qrels_path.name} "
            f"have no text: {shown}"
        )
    queries = {query_id: texts[query_id] for query_id in qrels}
    return EvaluationSplit(dataset=folder.name, split=split, queries=queries, qrels=qrels)
