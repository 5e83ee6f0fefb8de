"""Training data from a corpus nobody judged: pseudo-queries as the judgements, the judged recipe unchanged.

The documents' own pseudo-queries (``pseudo_queries``) become a judged split (each query relevant to
its own document), which is cut in three seeded slices: a *held-out* slice that nothing trains or
tunes on (the keep-the-base rule scores the base and the learned tree on it), a dev slice (the model
card's figures and the tree's tuning, as in the judged pipeline) and the queries trained on. From
there the judged path runs as is: hard negatives mined with the user's first-stage tree, the same
trainer, the same time budget. A pair's positive is the document without the query's own words
(see ``pseudo_queries``), so the model learns to find a title's document, not to copy the title.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from dashrag.documents.model import SourceDocument
from dashrag.errors import CorpusError
from dashrag.evaluation.beir import EvaluationSplit
from dashrag.finetuning.doc2query import Doc2QueryResult
from dashrag.finetuning.negatives import DEFAULT_DEPTH
from dashrag.finetuning.pairs import JudgedPair, carve_dev, document_texts
from dashrag.finetuning.progress import Progress, no_progress
from dashrag.finetuning.pseudo_queries import SOURCES, PseudoQuery, pseudo_queries, pseudo_split
from dashrag.finetuning.training_data import Slices, TrainingData, mine

HELD_OUT_FRACTION = 0.1


@dataclass(frozen=True)
class CorpusTrainingData:
    """The judged recipe's data made from pseudo-queries, and the held-out slice the keep-the-base rule reads."""

    data: TrainingData
    held_out: EvaluationSplit
    sources: tuple[str, ...]
    written: list[dict[str, Any]]  # each query writer's account (an LLM's: asked, failed, stopped at the deadline)


def pseudo_pairs(split: EvaluationSplit, queries: dict[str, PseudoQuery]) -> list[JudgedPair]:
    """One pair per query of ``split``: the query and its document's text without the query's own words."""
    return [JudgedPair(query_id, query.query, query.document_id, query.positive, 1)
            for query_id in split.queries for query in [queries[query_id]]]


def slices_of(whole: EvaluationSplit, held_out_fraction: float, dev_fraction: float,
              seed: int) -> tuple[EvaluationSplit, Slices]:
    """(the held-out slice, the rest cut into fit and dev): seeded, disjoint, together the whole split."""
    rest, held_out = carve_dev(whole, held_out_fraction, seed, "--held-out-fraction")
    if held_out is None:
        raise CorpusError("learning without judgements needs a held-out slice of pseudo-queries "
                          "(--held-out-fraction above 0): without it the base could not be kept")
    fit, dev = carve_dev(rest, dev_fraction, seed + 1)
    return dataclasses.replace(held_out, split=f"{whole.split}-held-out"), Slices(whole, fit, dev)


def prepare_corpus_training_data(
    corpus_path: Path,
    *,
    workdir: Path,
    sources: Iterable[str] = SOURCES,
    held_out_fraction: float = HELD_OUT_FRACTION,
    dev_fraction: float = 0.1,
    seed: int = 42,
    first_stage: Any = "keyword",
    depth: int = DEFAULT_DEPTH,
    progress: Progress = no_progress,
    writers: Sequence[Callable[[Sequence[SourceDocument]], Doc2QueryResult]] = (),
) -> CorpusTrainingData:
    """Read the corpus (a folder, JSONL or BEIR folder), make its pseudo-queries, slice them, mine the rankings."""
    import dashrag

    began = time.perf_counter()
    corpus = dashrag.Corpus.from_path(corpus_path)
    chosen = tuple(sources)
    made = pseudo_queries(corpus.documents, seed=seed, sources=chosen)
    results = [writer(corpus.documents) for writer in writers]
    made += [query for result in results for query in result.queries]
    if not made:
        raise CorpusError(f"{corpus_path}: its {len(corpus.documents)} document(s) give no pseudo-query "
                          f"(sources: {', '.join(chosen)}); a document needs a title, a heading or two sentences")
    whole = pseudo_split(made, dataset=Path(corpus_path).name)
    held_out, slices = slices_of(whole, held_out_fraction, dev_fraction, seed)
    pairs = pseudo_pairs(slices.fit, dict(zip(whole.queries, made)))
    read_s = time.perf_counter() - began
    data = mine(Path(corpus_path), corpus, slices, document_texts(corpus), pairs, first_stage=first_stage,
                workdir=workdir, depth=depth, progress=progress, read_s=read_s)
    return CorpusTrainingData(data, held_out, chosen, [result.account() for result in results])


__all__ = ["CorpusTrainingData", "HELD_OUT_FRACTION", "prepare_corpus_training_data", "pseudo_pairs", "slices_of"]
