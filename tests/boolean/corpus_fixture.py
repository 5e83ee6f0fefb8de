"""The small categorised corpus in tests/data/boolean_corpus and a real leaf evaluator over it.

The evaluator answers each clause the way the retrieval components will, with
real scoring and real data, only simpler:

* semantic clause: TF-IDF cosine between the phrase and each chunk (a lexical
  stand-in for the dense retriever), scores below 0.10 dropped, top 10 *within the
  scope* (the restriction applies before top-k);
* text clause: the chunks that contain the phrase (``PhraseMatcher``), scored by
  BM25 of the phrase's words;
* category clause: every chunk of the documents whose category has one of the
  values, score 1.0, source ``category``.

Chunks are the paragraphs of each file (blank-line separated).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi
from sklearn.feature_extraction.text import TfidfVectorizer

from dashrag.boolean import Category, Clause, PhraseMatcher, Scope, Semantic, Text, normalise_words
from dashrag.documents.model import Chunk, ScoredChunk, SourceDocument, normalise_categories

CORPUS_DIR = Path(__file__).resolve().parents[1] / "data" / "boolean_corpus"
SEMANTIC_MIN_SCORE = 0.10
SEMANTIC_TOP_K = 10


def load_documents(folder: Path = CORPUS_DIR) -> list[SourceDocument]:
    """Each .txt file is a document (id = file stem); categories come from metadata.jsonl."""
    categories: dict[str, dict] = {}
    for line in (folder / "metadata.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            categories[record["file"]] = record["categories"]
    return [
        SourceDocument(
            id=path.stem,
            text=path.read_text(encoding="utf-8"),
            metadata=normalise_categories(categories.get(path.name, {})),
            source=str(path),
        )
        for path in sorted(folder.glob("*.txt"))
    ]


def chunk_documents(documents: list[SourceDocument]) -> list[Chunk]:
    chunks: list[Chunk] = []
    for document in documents:
        paragraphs = [p.strip() for p in document.text.split("\n\n") if p.strip()]
        for position, paragraph in enumerate(paragraphs):
            start = document.text.index(paragraph)
            chunks.append(
                Chunk(len(chunks), document.id, position, paragraph, start, start + len(paragraph), document.metadata)
            )
    return chunks


def category_fragments(clause: Category, scope: Scope, chunks: list[Chunk]) -> list[ScoredChunk]:
    """Every in-scope chunk whose document has one of the clause's values (chunks carry their document's categories)."""
    wanted = set(clause.values)
    return [
        ScoredChunk(c, 1.0, "category")
        for c in chunks
        if c.document_id in scope.document_ids and wanted & set(c.metadata.get(clause.name, ()))
    ]


@dataclass
class CorpusLeafEvaluator:
    """A callable ``(clause, scope) -> fragments`` over a list of chunks and their documents."""

    documents: list[SourceDocument]
    chunks: list[Chunk]
    semantic_top_k: int = SEMANTIC_TOP_K

    def __post_init__(self) -> None:
        self.vectorizer = TfidfVectorizer(sublinear_tf=True)
        self.matrix = self.vectorizer.fit_transform([c.text for c in self.chunks])
        self.bm25 = BM25Okapi([list(normalise_words(c.text)) for c in self.chunks])
        self.calls: list[tuple[Clause, frozenset[str]]] = []

    def __call__(self, clause: Clause, scope: Scope) -> list[ScoredChunk]:
        self.calls.append((clause, scope.document_ids))
        allowed = np.array([c.document_id in scope.document_ids for c in self.chunks])
        if isinstance(clause, Category):
            return category_fragments(clause, scope, self.chunks)
        if isinstance(clause, Text):
            matcher = PhraseMatcher(clause.text, clause.case_sensitive)
            scores = self.bm25.get_scores(list(normalise_words(clause.text)))
            return [
                ScoredChunk(c, float(scores[i]), "text")
                for i, (c, ok) in enumerate(zip(self.chunks, allowed))
                if ok and matcher.matches(c.text)
            ]
        if isinstance(clause, Semantic):
            query = self.vectorizer.transform([clause.phrase])
            scores = (self.matrix @ query.T).toarray().ravel()
            scores = np.where(allowed & (scores >= SEMANTIC_MIN_SCORE), scores, -np.inf)
            order = [i for i in np.argsort(-scores, kind="stable")[: self.semantic_top_k] if np.isfinite(scores[i])]
            return [ScoredChunk(self.chunks[i], float(scores[i]), "semantic") for i in order]
        raise TypeError(f"not a clause: {clause!r}")


def build_corpus() -> tuple[list[SourceDocument], list[Chunk], Scope, CorpusLeafEvaluator]:
    documents = load_documents()
    chunks = chunk_documents(documents)
    return documents, chunks, Scope.from_chunks(chunks), CorpusLeafEvaluator(documents, chunks)
