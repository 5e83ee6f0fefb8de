"""Why a model learned from SciFact's pseudo-queries loses on its real claims: two diagnoses, no training.

issue 41's measured run (docs/finetuning.md, "Measurements") trained MiniLM on the corpus's own pseudo-queries;
on the held-out pseudo-queries the learned model alone gained (+0.0125 nDCG@10), on SciFact's test claims it
lost (0.6314 against 0.6451). This reads both models' corpus vectors from the embedding cache the pipeline
filled (only queries and a few hundred positives are encoded) and measures:

1. **claims by word overlap**: each test and train claim's nDCG@10 under each model, in thirds by how many
   of the claim's words (4+ letters) its relevant abstract holds: does the learned model lose where matching
   words decide (it was trained against a BM25-mined negative, on positives without the query's own words) or
   where they do not? Also the overlap a pseudo-query has with its training positive and with its indexed
   document, by source.
2. **the held-out slice as training sees it**: for a seeded sample of the pipeline's held-out pseudo-queries,
   each model's nDCG@10 over the corpus as indexed (the query's text still in its document: what the
   keep-the-base rule scores) and with that one document replaced by the query's positive (the document
   without the query's words: what training paired it with). Would a held-out slice scored the second way
   have predicted the loss on claims?

Run from the repository root after the pipeline (the cache under ``.dashrag-work/scifact``), one at a time:

    PYTHONPATH=. nice .venv/bin/python bench/diagnose_pseudo_learning.py \
        --learned ./models/scifact_pseudo-embedding
    PYTHONPATH=. nice .venv/bin/python bench/diagnose_pseudo_learning.py \
        --learned ./models/scifact_pseudo_ict-embedding --sources held_out_sentence

``--sources`` must be the run's: the held-out slice is carved from its pseudo-queries (another slice would hold
queries that model trained on).
"""

from __future__ import annotations

import argparse
import math
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

import dashrag
from dashrag.api import prepare_corpus
from dashrag.core.factory import build_as
from dashrag.embeddings.base import EmbeddingModel
from dashrag.embeddings.cache import document_vectors
from dashrag.evaluation.beir import load_split
from dashrag.finetuning.base_model import resolve_embedding_base
from dashrag.finetuning.corpus_data import HELD_OUT_FRACTION, slices_of
from dashrag.finetuning.negatives import WHOLE_DOCUMENTS
from dashrag.finetuning.pipeline import embedding_config
from dashrag.finetuning.pseudo_queries import SOURCES, PseudoQuery, chosen_sources, pseudo_queries, pseudo_split

WORD = re.compile(r"\w{4,}")
SEED = 42  # the pipeline's default --seed: the same pseudo-queries and held-out slice


def words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


def overlap(query: str, document: str) -> float:
    """The share of the query's words (4+ letters, lower case) the document holds."""
    asked = words(query)
    return len(asked & words(document)) / max(1, len(asked))


def ndcg_at_10(ranked: Sequence[str], relevant: Mapping[str, int]) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if relevant.get(d, 0) > 0)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(10, sum(1 for g in relevant.values() if g > 0))))
    return dcg / ideal if ideal else 0.0


@dataclass
class DenseModel:
    """One embedding model and its corpus vectors (from the embedding cache)."""

    embedding: Any
    vectors: np.ndarray


def load_model(path: str, infra: Any) -> DenseModel:
    embedding = build_as(embedding_config(path), EmbeddingModel, "embedding")
    return DenseModel(embedding, np.asarray(document_vectors(embedding, infra.chunks, infra.env_path)))


def whole_documents(dataset: Path, store: Path, cache: Path) -> tuple[Any, Any, list[str]]:
    """The corpus, its chunks as the pipeline made them (each document whole; vectors from its embedding cache
    ``cache``, the store in the scratch folder ``store``) and each chunk's document id, in chunk order."""
    corpus = dashrag.Corpus.from_path(dataset)
    infra = prepare_corpus(corpus, store, WHOLE_DOCUMENTS, cache_dir=cache)
    return corpus, infra, [c.document_id for c in infra.chunks.chunks_at(range(len(infra.chunks)))]


def claims_by_overlap(dataset: Path, models: dict[str, DenseModel], documents: list[str],
                      texts: dict[str, str]) -> None:
    for split_name in ("test", "train"):
        split = load_split(dataset, split_name)
        ids = list(split.queries)
        scores: dict[str, list[float]] = {}
        for name, model in models.items():
            top = np.argsort(-(model.embedding.embed_queries([split.queries[q] for q in ids]) @ model.vectors.T),
                             axis=1)[:, :10]
            scores[name] = [ndcg_at_10([documents[r] for r in row], split.qrels[q]) for q, row in zip(ids, top)]
        shares = [max(overlap(split.queries[q], texts[d]) for d in split.qrels[q] if d in texts) for q in ids]
        print(f"{split_name}: {len(ids)} claims; nDCG@10 base {np.mean(scores['base']):.4f}, "
              f"learned {np.mean(scores['learned']):.4f}")
        for label, third in zip(("low", "middle", "high"), np.array_split(np.argsort(shares), 3)):
            base = float(np.mean([scores["base"][i] for i in third]))
            learned = float(np.mean([scores["learned"][i] for i in third]))
            print(f"  overlap {label} third ({min(shares[i] for i in third):.2f}-{max(shares[i] for i in third):.2f},"
                  f" {len(third)} claims): base {base:.4f}, learned {learned:.4f} ({learned - base:+.4f})")


def pseudo_query_overlap(made: list[PseudoQuery], texts: dict[str, str]) -> None:
    for source in sorted({q.source for q in made}):
        chosen = [q for q in made if q.source == source]
        print(f"pseudo-queries from {source} ({len(chosen)}): share of their words in the training positive "
              f"{np.mean([overlap(q.query, q.positive) for q in chosen]):.2f}, in the indexed document "
              f"{np.mean([overlap(q.query, texts[q.document_id]) for q in chosen]):.2f}")


def held_out_as_training_sees_it(made: list[PseudoQuery], models: dict[str, DenseModel], documents: list[str],
                                 sample_size: int) -> None:
    whole = pseudo_split(made, dataset="scifact")
    by_id = dict(zip(whole.queries, made))
    held_out, _ = slices_of(whole, HELD_OUT_FRACTION, 0.1, SEED)
    ids = sorted(held_out.queries)
    random.Random(7).shuffle(ids)
    sample = [by_id[i] for i in ids[:sample_size]]
    row_of = {d: i for i, d in enumerate(documents)}
    own = np.array([row_of[q.document_id] for q in sample])
    sources = sorted({q.source for q in sample})
    print(f"held-out slice: {len(held_out)} pseudo-queries; a seeded sample of {len(sample)}: "
          + ", ".join(f"{s} {sum(q.source == s for q in sample)}" for s in sources))

    def rank_score(rank: int) -> float:  # nDCG@10 with one relevant document at 0-based rank
        return 1 / math.log2(rank + 2) if rank < 10 else 0.0

    figures: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, model in models.items():
        queries = model.embedding.embed_queries([q.query for q in sample])
        positives = model.embedding.embed_documents([q.positive for q in sample])
        scores = queries @ model.vectors.T
        as_indexed = [rank_score(int((row > row[own[i]]).sum())) for i, row in enumerate(scores)]
        masked = [rank_score(int((np.delete(row, own[i]) > float(queries[i] @ positives[i])).sum()))
                  for i, row in enumerate(scores)]
        figures[name] = (np.array(as_indexed), np.array(masked))
    for label, k in (("as indexed (its text in its document)", 0), ("masked (its document without it)", 1)):
        base, learned = figures["base"][k], figures["learned"][k]
        print(f"{label}: base {base.mean():.4f}, learned {learned.mean():.4f} ({learned.mean() - base.mean():+.4f})")
        for source in sources:
            mask = np.array([q.source == source for q in sample])
            print(f"    {source} ({mask.sum()}): base {base[mask].mean():.4f}, learned {learned[mask].mean():.4f} "
                  f"({learned[mask].mean() - base[mask].mean():+.4f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", type=Path, default=Path("../shared/data/scifact"))
    parser.add_argument("--cache", type=Path, default=Path(".dashrag-work/scifact"),
                        help="the pipeline's workdir: its embedding cache holds both models' corpus vectors")
    parser.add_argument("--learned", default="./models/scifact_pseudo-embedding")
    parser.add_argument("--sources", default=",".join(SOURCES),
                        help="the run's --sources: its held-out slice is carved from these pseudo-queries only")
    parser.add_argument("--sample", type=int, default=450, help="held-out pseudo-queries scored (diagnosis 2)")
    parser.add_argument("--store", type=Path, default=Path("/tmp/diagnose-pseudo-learning"),
                        help="a scratch folder for the corpus's store (the cache is only read)")
    args = parser.parse_args()
    corpus, infra, documents = whole_documents(args.dataset, args.store, args.cache)
    texts = {d.id: f"{d.title} {d.text}" for d in corpus.documents}
    models = {"base": load_model(str(resolve_embedding_base("MiniLMEmbedding").source.path), infra),
              "learned": load_model(args.learned, infra)}
    made = pseudo_queries(corpus.documents, seed=SEED, sources=chosen_sources(args.sources.split(",")))
    claims_by_overlap(args.dataset, models, documents, texts)
    pseudo_query_overlap(made, texts)
    held_out_as_training_sees_it(made, models, documents, args.sample)


if __name__ == "__main__":
    main()
