"""retrieval_score: one meaning in every collection, a number in [0, 1] where higher is better.

One floor (``RAG_RETRIEVAL_SCORE_FLOOR``) applies to every collection, so a tree's
native scores are mapped to [0, 1] by a monotone function whose constant is fixed
*per tree* (computed once when the tree is loaded), never per query: a per-query
min-max would put every query's best chunk at 1.0 and make the floor meaningless.

* ``cosine``: a tree whose root scores by cosine (a dense retriever with the cosine
  metric, TF-IDF) already gives a cosine; the score is the cosine, negatives clipped to 0.
* ``saturating``: every other tree (BM25, fusion, cascades) gets ``s / (s + c)``
  (negative ``s`` clipped to 0), monotone, 0 at 0, 1/2 at ``s = c``, approaching 1.
  ``c`` is the median best score of *known-item probes*: the first
  :data:`PROBE_WORDS` words of :data:`PROBE_COUNT` chunks spread evenly over the
  tree's own corpus, each sent to the tree as a query. So a chunk scores 0.5 when it
  matches the query as well as a chunk typically matches a few of its own words, in
  this tree's own units (BM25's scale grows with the corpus's IDFs and the tree's k1;
  RRF's with its k): the default floor 0.3 keeps scores above 0.43 c.
  The probes run through the whole tree once per save of it: the calibration is cached beside
  the tree's manifest (:func:`calibrate_saved`), so a tree with an LLM or HTTP stage (an agentic
  reranker: one LLM call per probe) makes those calls the first time a service or a ``dashrag mcp``
  loads that save, and never again at later starts (docs/agentic.md).
"""

from __future__ import annotations

import json
import logging
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

from dashrag.core.digest import digest
from dashrag.core.persistence import atomic_write_json
from dashrag.core.retriever import Retriever
from dashrag.documents.chunk_set import ChunkSet

PROBE_COUNT = 16
PROBE_WORDS = 4
CACHE_FILE = "calibration.json"  # beside the manifest of a saved tree
CACHE_FORMAT = 1
logger = logging.getLogger(__name__)
COSINE_ROOTS = {"DenseEmbeddingRetriever": "cosine", "TFIDFRetriever": None}  # component -> required metric


def clip_cosine(score: float) -> float:
    return min(1.0, max(0.0, score))


def saturate(score: float, constant: float) -> float:
    positive = max(0.0, score)
    return positive / (positive + constant)


@dataclass(frozen=True)
class Calibration:
    kind: Literal["cosine", "saturating"]
    constant: float | None = None  # c of the saturating form

    def __call__(self, score: float) -> float:
        if self.kind == "cosine":
            return clip_cosine(score)
        assert self.constant is not None
        return saturate(score, self.constant)

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "constant": self.constant}


def is_cosine_tree(config: dict) -> bool:
    name = config.get("component")
    if name not in COSINE_ROOTS:
        return False
    metric = COSINE_ROOTS[name]
    return metric is None or config.get("params", {}).get("similarity_metric", metric) == metric


def probe_queries(chunks: ChunkSet, count: int = PROBE_COUNT, words: int = PROBE_WORDS) -> list[str]:
    """The first ``words`` words of ``count`` chunks spread evenly over the corpus (deterministic)."""
    step = max(1, len(chunks) // count)
    probes = [" ".join(text.split()[:words]) for text in chunks.texts_at(range(0, len(chunks), step)[:count])]
    return [p for p in probes if p.strip()]


def median_best(best_scores: Sequence[float]) -> float:
    """The median of the positive best scores; 1.0 when no probe found anything (a tree scoring nothing)."""
    positive = [s for s in best_scores if s > 0]
    return float(statistics.median(positive)) if positive else 1.0


def calibrate(config: dict, search: Callable[[list[str]], list[float]], chunks: ChunkSet) -> Calibration:
    """The tree's calibration; ``search(queries)`` gives each query's best native score (0 when none)."""
    if is_cosine_tree(config):
        return Calibration("cosine")
    return Calibration("saturating", median_best(search(probe_queries(chunks))))


def calibrate_retriever(retriever: Retriever) -> Calibration:
    def best_scores(queries: list[str]) -> list[float]:
        answers = retriever.retrieve_batch(queries) if queries else []
        return [chunks[0].score if chunks else 0.0 for chunks, _ in answers]

    return calibrate(retriever.to_config(), best_scores, retriever.require_infra().chunks)


def calibrate_saved(folder: Path, manifest: dict[str, Any], retriever: Retriever) -> Calibration:
    """The calibration of the save that ``manifest`` describes: read from the tree's cache when it was made for
    that very save (same manifest, same probes), else computed and cached (atomically; a folder that cannot be
    written is calibrated each time, and says so on the log). A cache that does not read back as a calibration
    is computed again, never trusted."""
    key = digest({"manifest": manifest, "format": CACHE_FORMAT, "probes": [PROBE_COUNT, PROBE_WORDS]})
    path = Path(folder) / CACHE_FILE
    cached = _read_cache(path, key)
    if cached is not None:
        return cached
    calibration = calibrate_retriever(retriever)
    try:
        atomic_write_json(path, {"key": key, "calibration": calibration.describe()})
    except OSError as exc:
        logger.info("%s: the calibration is not cached (%s); it is computed again at each load", folder, exc)
    return calibration


def _read_cache(path: Path, key: str) -> Calibration | None:
    try:
        cached = json.loads(path.read_text())
        if cached["key"] != key:
            return None
        kind, constant = cached["calibration"]["kind"], cached["calibration"]["constant"]
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if kind == "cosine" and constant is None:
        return Calibration("cosine")
    if kind == "saturating" and isinstance(constant, (int, float)) and math.isfinite(constant) and constant > 0:
        return Calibration("saturating", float(constant))
    return None
