"""Everything a trainer reads, prepared once: the split, its dev slice, judged pairs, first-stage rankings.

The split is refused when it is ``test`` (unless forced) before anything is read; the corpus is
read once; the first stage (a dashrag tree, BM25 by default) ranks the training and dev queries,
which gives both the hard negatives and the dev pool the model card's figures are measured on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from dashrag.core.validation import validate_and_transform
from dashrag.evaluation.beir import EvaluationSplit, load_split
from dashrag.finetuning.negatives import DEFAULT_DEPTH, WHOLE_DOCUMENTS, Candidates, fit_tree, rank_documents
from dashrag.finetuning.pairs import JudgedPair, carve_dev, document_texts, judged_pairs, refuse_test_split
from dashrag.finetuning.progress import Progress, counter, no_progress


@dataclass
class TrainingData:
    """A split ready to train on: its fit and dev queries, the fit pairs, every query's ranking."""

    dataset: Path
    split: EvaluationSplit
    fit: EvaluationSplit
    dev: EvaluationSplit | None
    documents: dict[str, str]
    pairs: list[JudgedPair]
    candidates: Candidates
    first_stage: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        """The data part of a model card: which dataset, splits, queries and pairs."""
        return {
            "dataset": self.split.dataset,
            "dataset_path": str(self.dataset.resolve()),
            "corpus_documents": len(self.documents),
            "split": self.split.split,
            "splits_read": sorted({self.split.split}),
            "trained_on": {"split": self.fit.split, "queries": len(self.fit), "pairs": len(self.pairs)},
            "dev": None if self.dev is None else {"split": self.dev.split, "queries": len(self.dev)},
            "first_stage": self.first_stage,
        }


def dev_pool(data: TrainingData, depth: int) -> tuple[list[str], Mapping[str, Mapping[str, int]]]:
    """The documents a dev figure ranks: each dev query's documents judged relevant and its first ``depth``
    first-stage candidates: a small, hard pool (embedding the whole corpus would cost minutes; a set judged
    40 deep per query would pool most of it were its grade-0 documents in)."""
    assert data.dev is not None
    pool: dict[str, None] = {}
    for query_id, judged in data.dev.qrels.items():
        pool.update(dict.fromkeys(d for d, grade in judged.items() if grade > 0 and d in data.documents))
        pool.update(dict.fromkeys(data.candidates.ranked.get(query_id, [])[:depth]))
    return list(pool), data.dev.qrels


def prepare_training_data(
    dataset: Path,
    *,
    split: str = "train",
    dev_fraction: float = 0.1,
    seed: int = 42,
    first_stage: Any = "keyword",
    workdir: Path,
    depth: int = DEFAULT_DEPTH,
    force_test: bool = False,
    progress: Progress = no_progress,
) -> TrainingData:
    """Read ``split`` of the BEIR folder ``dataset``, hold out the dev slice, mine the rankings."""
    import dashrag

    refuse_test_split(split, force_test)
    began = time.perf_counter()
    whole = load_split(dataset, split)
    fit, dev = carve_dev(whole, dev_fraction, seed)
    corpus = dashrag.Corpus.from_beir(dataset)
    documents = document_texts(corpus)
    pairs = judged_pairs(fit, documents)
    read_s = time.perf_counter() - began
    return mine(dataset, corpus, Slices(whole, fit, dev), documents, pairs, first_stage=first_stage,
                workdir=workdir, depth=depth, progress=progress, read_s=read_s)


@dataclass(frozen=True)
class Slices:
    """A split and its two parts: the queries trained on and the held-out dev slice (or None)."""

    whole: EvaluationSplit
    fit: EvaluationSplit
    dev: EvaluationSplit | None


def mine(dataset: Path, corpus: Any, slices: Slices, documents: dict[str, str], pairs: list[JudgedPair], *,
         first_stage: Any, workdir: Path, depth: int = DEFAULT_DEPTH, progress: Progress = no_progress,
         read_s: float = 0.0) -> TrainingData:
    """Rank every query of the split with the first-stage tree over ``corpus`` (each document whole): the hard
    negatives and the dev pool, whether the queries were judged by people or made from the documents."""
    from dashrag.api import prepare_corpus
    from dashrag.presets import load_preset

    config = load_preset(first_stage) if isinstance(first_stage, str) else first_stage
    normalised = validate_and_transform(config, "retriever")
    timings: dict[str, float] = {"read_s": read_s}
    began = time.perf_counter()
    infra = prepare_corpus(corpus, workdir, WHOLE_DOCUMENTS)
    timings["first_stage_store_s"] = time.perf_counter() - began
    fitted = time.perf_counter()
    tree = fit_tree(normalised, infra)
    timings["first_stage_fit_s"] = time.perf_counter() - fitted
    timings["first_stage_build_s"] = time.perf_counter() - began
    whole = slices.whole
    try:
        candidates = rank_documents(tree, whole, depth=depth, on_batch=counter(progress, "mine", len(whole)))
    finally:
        tree.close()
    timings["mine_s"] = time.perf_counter() - began
    timings["rank_per_query_ms"] = 1000 * (timings["mine_s"] - timings["first_stage_build_s"]) / max(len(whole), 1)
    return TrainingData(dataset=Path(dataset), split=whole, fit=slices.fit, dev=slices.dev, documents=documents,
                        pairs=pairs, candidates=candidates, first_stage=normalised, timings=timings)
