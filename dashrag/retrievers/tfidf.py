"""TFIDFRetriever: cosine similarity between TF-IDF vectors (scikit-learn's weighting).

The classic vector-space baseline. Terms are counted by the vectorizer
sub-component; scikit-learn's TfidfTransformer weights and L2-normalises them,
so a query's score against every chunk is one sparse product.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import Field
from sklearn.feature_extraction.text import TfidfTransformer

from dashrag.core.params import ComponentParams, ComponentSpec, component_field, spec
from dashrag.core.persistence import load_array, load_sparse, save_array, save_sparse
from dashrag.core.registry import register
from dashrag.core.retriever import UnitRetriever
from dashrag.errors import PersistenceError


class TFIDFParams(ComponentParams):
    top_k: int = Field(5, ge=1, description="How many chunks to return.")
    sublinear_tf: bool = Field(False, description="Use 1 + log(tf) instead of raw term frequency.")
    smooth_idf: bool = Field(
        True, description="Add one to document frequencies, as if one extra document held every term."
    )
    vectorizer: ComponentSpec = component_field(
        "vectorizer", spec("BagOfWordsConverter"), description="How texts become term counts."
    )


@register(
    kind="retriever",
    icon="Search",
    category="keyword",
    en=("TF-IDF", "Ranks chunks by cosine similarity of TF-IDF vectors."),
    es=("TF-IDF", "Ordena fragmentos por similitud coseno de vectores TF-IDF."),
    representation={"en": "TF-IDF top {top_k}", "es": "TF-IDF, los {top_k} mejores"},
)
class TFIDFRetriever(UnitRetriever[TFIDFParams]):
    def _transformer(self, idf: np.ndarray | None = None) -> TfidfTransformer:
        transformer = TfidfTransformer(sublinear_tf=self.params.sublinear_tf, smooth_idf=self.params.smooth_idf)
        if idf is not None:
            transformer.idf_ = idf
        return transformer

    def _fit(self) -> None:
        counts = self.nested["vectorizer"].fit_transform(self.require_infra().chunks.texts)
        self._tfidf = self._transformer()
        self._matrix = self._tfidf.fit_transform(counts).astype(np.float32).tocsr()

    def _score_block(self, queries: list[str]) -> np.ndarray:
        q = self._tfidf.transform(self.nested["vectorizer"].transform(queries)).astype(np.float32)
        return np.asarray((q @ self._matrix.T).todense())

    hit_floor = 0.0  # no shared term: not a hit

    def to_distance(self, scores: np.ndarray) -> np.ndarray:
        return 1.0 - scores

    def _save(self, folder: Path) -> None:
        save_sparse(folder, "matrix", self._matrix)
        save_array(folder / "idf.npy", self._tfidf.idf_)

    def _load(self, folder: Path) -> None:
        self._matrix = load_sparse(folder, "matrix")
        idf = load_array(folder / "idf.npy")
        if self._matrix.shape != (len(self.require_infra().chunks), idf.shape[0]):
            raise PersistenceError(
                f"{folder}: matrix shape {self._matrix.shape} does not fit the corpus and vocabulary"
            )
        self._tfidf = self._transformer(idf)
