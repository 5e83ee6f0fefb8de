"""From retrieved chunks to a document-level run, and TREC run files.

Relevance is judged per *document* while retrievers return *chunks*, so a
run must be pooled first. The rule is max-pool: a document scores the best
score of any of its chunks. It is the rule BEIR-style chunked evaluation uses,
it needs no calibration between chunks, and it leaves rankings of unchunked
corpora untouched (one chunk per document → the chunk's own score).

Ranking order is the one trec_eval itself applies when it reads a run: score
descending, ties broken by document id in *descending* string order. Using the
evaluator's own rule everywhere means the rank column we write is exactly the
rank trec_eval (and pytrec_eval) scores, and a cut at ``k`` (for ``mrr@k``)
keeps the same documents the evaluator's own ``@k`` measures keep.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable, Mapping

from dashrag.core.persistence import atomic_write_text
from dashrag.documents.model import ScoredChunk
from dashrag.errors import PersistenceError, RetrievalError
from dashrag.evaluation.beir import numbered_lines

DocumentScores = dict[str, float]
Run = dict[str, DocumentScores]


def max_pool(pairs: Iterable[tuple[str, float]]) -> DocumentScores:
    """``(document_id, score)`` pairs → ``{document_id: best score}``.

    A NaN score is refused: it compares false with everything, so it would
    land at an arbitrary rank and silently change the figures.
    """
    pooled: DocumentScores = {}
    for document_id, score in pairs:
        score = float(score)
        if math.isnan(score):
            raise RetrievalError(f"document {document_id!r} has a NaN score")
        best = pooled.get(document_id)
        if best is None or score > best:
            pooled[document_id] = score
    return pooled


def pool_chunks(chunks: Iterable[ScoredChunk]) -> DocumentScores:
    """The documents of one retrieval result, each scored by its best chunk."""
    return max_pool((c.document_id, c.score) for c in chunks)


def pool_output(output: Iterable[Mapping[str, Any]]) -> DocumentScores:
    """The same pooling over a trace node's JSON ``output`` list."""
    return max_pool((str(item["document_id"]), item["score"]) for item in output)


def run_from_results(results: Mapping[str, Iterable[ScoredChunk]]) -> Run:
    """``{query_id: chunks}`` → ``{query_id: {document_id: score}}``."""
    return {query_id: pool_chunks(chunks) for query_id, chunks in results.items()}


def ranked(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """Documents in trec_eval's order: score descending, then document id descending."""
    return sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)


def cut(run: Mapping[str, Mapping[str, float]], depth: int) -> Run:
    """Keep each query's ``depth`` best documents (in :func:`ranked` order)."""
    return {query_id: dict(ranked(scores)[:depth]) for query_id, scores in run.items()}


def _check_token(value: str, what: str) -> str:
    if not value or any(ch.isspace() for ch in value):
        raise PersistenceError(f"{what} {value!r} cannot be written to a TREC run (empty or has whitespace)")
    return value


def format_trec_run(run: Mapping[str, Mapping[str, float]], tag: str = "dashrag", depth: int | None = None) -> str:
    """The run as TREC text: ``qid Q0 docid rank score tag``, rank 1-based.

    Queries are written in sorted order and scores with ``repr`` (the shortest
    text that reads back to the same float), so a file is byte-for-byte
    reproducible and reading it back gives the identical run.
    """
    _check_token(tag, "run tag")
    lines = []
    for query_id in sorted(run):
        _check_token(query_id, "query id")
        documents = ranked(run[query_id])
        for rank, (document_id, score) in enumerate(documents[:depth], start=1):
            _check_token(document_id, "document id")
            lines.append(f"{query_id} Q0 {document_id} {rank} {float(score)!r} {tag}\n")
    return "".join(lines)


def write_trec_run(
    run: Mapping[str, Mapping[str, float]], path: str | Path, tag: str = "dashrag", depth: int | None = None
) -> Path:
    """Write :func:`format_trec_run` to ``path`` atomically (temporary file, then rename)."""
    path = Path(path)
    atomic_write_text(path, format_trec_run(run, tag=tag, depth=depth))
    return path


def read_trec_run(path: str | Path) -> Run:
    """A TREC run file → ``{query_id: {document_id: score}}``.

    The rank column is checked to be an integer but otherwise ignored, as
    trec_eval ignores it: order comes from the scores.
    """
    path = Path(path)
    run: Run = {}
    for line_number, line in numbered_lines(path, "run", PersistenceError):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 6:
            raise PersistenceError(
                f"{path}:{line_number}: expected 6 fields (qid Q0 docid rank score tag), found {len(fields)}"
            )
        query_id, _, document_id, rank_text, score_text, _ = fields
        try:
            int(rank_text)
            score = float(score_text)
        except ValueError:
            raise PersistenceError(
                f"{path}:{line_number}: rank {rank_text!r} or score {score_text!r} is not a number"
            ) from None
        if math.isnan(score):
            raise PersistenceError(f"{path}:{line_number}: score is NaN")
        documents = run.setdefault(query_id, {})
        if document_id in documents:
            raise PersistenceError(
                f"{path}:{line_number}: document {document_id!r} listed twice for query {query_id!r}"
            )
        documents[document_id] = score
    return run
