"""TFIDFRetriever: cosine similarity between TF-IDF vectors (scikit-learn's weighting).

The classic vector-space baseline. Terms are counted by the vectorizer
sub-component; scikit-learn's TfidfTransformer weights and L2-normalises them,
so a query's score against every chunk is one sparse product.

DashAI's TF-IDF configs load as they are: its vectorizer (``TFIDFVectorizer``, a
``TFIDFVectorizerModel``) carries the weighting (``norm``, ``use_idf``, ``smooth_idf``,
``sublinear_tf``), which moves up to this node (``FROM_NESTED``), and its other
distances (``similarity_function``: euclidean, l2, cityblock, l1, manhattan) rank by
scikit-learn's ``pairwise_distances``, as DashAI does (score ``1 - distance``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import Field

from dashrag.core.params import ComponentParams, ComponentSpec, compatibility_field, component_field, spec, top_k_field
from dashrag.core.persistence import load_array, load_sparse, save_array, save_sparse
from dashrag.core.registry import register
from dashrag.core.retriever import UnitRetriever
from dashrag.documents.changes import CorpusChange
from dashrag.errors import PersistenceError
from dashrag.scoring.distances import DistanceMetric, distances, scores_from_distances

if TYPE_CHECKING:  # scikit-learn (with scipy.stats and pandas) is imported where a tree weighs, not by every
    # process that lists the components (`dashrag serve`'s start, a build worker, the CLI)
    from sklearn.feature_extraction.text import TfidfTransformer


class TFIDFParams(ComponentParams):
    top_k: int = top_k_field(5)
    sublinear_tf: bool = Field(False, description="Use 1 + log(tf) instead of raw term frequency.")
    smooth_idf: bool = Field(
        True, description="Add one to document frequencies, as if one extra document held every term."
    )
    norm: Literal["l1", "l2"] | None = Field("l2", description="Scale each TF-IDF vector to unit l1 or l2 length.")
    use_idf: bool = Field(True, description="Weight terms by inverse document frequency (off: term frequency only).")
    similarity_function: DistanceMetric = compatibility_field("cosine", description=(
        "How a query's vector is compared with each chunk's: cosine, or DashAI's other distances "
        "(euclidean, l2, cityblock, l1, manhattan)."))
    vectorizer: ComponentSpec = component_field(
        "vectorizer", spec("BagOfWordsConverter"), description="How texts become term counts."
    )

    ALIASES = {"TFIDFVectorizer": "vectorizer"}  # DashAI's name of the field
    VALUE_ALIASES = {"norm": (("None", None),)}
    FROM_NESTED = {"vectorizer": ("norm", "use_idf", "smooth_idf", "sublinear_tf")}  # DashAI's vectorizer has them

    @property
    def by_dot_product(self) -> bool:
        """Cosine of l2-normalised vectors: one sparse product, no distance computation."""
        return self.similarity_function == "cosine" and self.norm == "l2"


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
        from sklearn.feature_extraction.text import TfidfTransformer

        p = self.params
        transformer = TfidfTransformer(norm=p.norm, use_idf=p.use_idf, sublinear_tf=p.sublinear_tf,
                                       smooth_idf=p.smooth_idf)
        if idf is not None and p.use_idf:
            transformer.idf_ = idf
        return transformer

    def _fit(self) -> None:
        self._weigh(self.nested["vectorizer"].fit_transform(self.require_infra().chunks.texts))

    def _update(self, change: CorpusChange) -> None:
        """idf and the chunk vectors from the vectorizer's updated counts (only the new chunks were analysed)."""
        counts = self.nested["vectorizer"].current_counts()
        if counts is None:
            self._fit()
        else:
            self._weigh(counts)

    def _weigh(self, counts) -> None:
        self._tfidf = self._transformer()
        self._matrix = self._tfidf.fit_transform(counts).astype(np.float32).tocsr()

    def _score_block(self, queries: list[str]) -> np.ndarray:
        q = self._tfidf.transform(self.nested["vectorizer"].transform(queries)).astype(np.float32)
        if self.params.by_dot_product:
            return np.asarray((q @ self._matrix.T).todense())
        return scores_from_distances(distances(q, self._matrix, self.params.similarity_function))

    @property
    def hit_floor(self) -> float:  # type: ignore[override]
        """Under cosine a chunk sharing no term is no hit (0); under the other distances every chunk is one."""
        return 0.0 if self.params.similarity_function == "cosine" else -np.inf

    def to_distance(self, scores: np.ndarray) -> np.ndarray:
        return 1.0 - scores

    def _save(self, folder: Path) -> None:
        save_sparse(folder, "matrix", self._matrix)
        save_array(folder / "idf.npy", self._tfidf.idf_ if self.params.use_idf else np.ones(self._matrix.shape[1]))

    def _load(self, folder: Path) -> None:
        self._matrix = load_sparse(folder, "matrix")
        idf = load_array(folder / "idf.npy")
        if self._matrix.shape != (len(self.require_infra().chunks), idf.shape[0]):
            raise PersistenceError(
                f"{folder}: matrix shape {self._matrix.shape} does not fit the corpus and vocabulary"
            )
        self._tfidf = self._transformer(idf)
