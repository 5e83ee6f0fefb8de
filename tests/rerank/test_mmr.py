"""mmr_rerank and MMRConfig (dashrag/rerank/mmr.py) as the rag-reranker's reference states them: first pick by
relevance, then λ·rel − (1−λ)·max cosine; candidates a set; returned unmodified; top_k capped."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashrag.errors import RetrievalError
from dashrag.rerank import Chunk, mmr_rerank


def brute_force(relevance, vectors, lam, k) -> list[int]:
    """MMR written out from its definition, for comparison."""
    unit = [np.asarray(v) / np.linalg.norm(v) for v in vectors]
    picked = [int(np.argmax(relevance))]
    while len(picked) < min(k, len(relevance)):
        rest = [i for i in range(len(relevance)) if i not in picked]
        value = {i: lam * relevance[i] - (1 - lam) * max(float(unit[i] @ unit[j]) for j in picked) for i in rest}
        picked.append(max(rest, key=lambda i: (value[i], -i)))
    return picked


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(-3, 3, allow_nan=False), min_size=1, max_size=9), st.integers(1, 12),
       st.floats(0, 0.99), st.integers(0, 2**31 - 1))
def test_mmr_rerank_is_the_definition(relevance, k, lam, seed):
    vectors = np.random.default_rng(seed).normal(size=(len(relevance), 3)).tolist()
    names = [f"d{i}" for i in range(len(relevance))]
    assert mmr_rerank(names, relevance, vectors, lam, k) == [names[i] for i in brute_force(relevance, vectors, lam, k)]


def test_top_k_is_capped_at_the_candidates_and_chunks_come_back_unmodified():
    chunks = [Chunk("a", "x", 0.2, {"embedding": [1, 0]}), Chunk("b", "y", 0.9, {"embedding": [0, 1]})]
    out = mmr_rerank(chunks, [0.2, 0.9], [[1, 0], [0, 1]], top_k=10)
    assert out == [chunks[1], chunks[0]] and out[0] is chunks[1] and (out[0].score, out[1].score) == (0.9, 0.2)


def test_lambda_zero_picks_by_relevance_first_then_diversity_only():
    vectors = [[1, 0], [1, 0.01], [0, 1]]
    assert mmr_rerank(["a", "b", "c"], [1.0, 0.9, 0.0], vectors, lambda_=0.0, top_k=2) == ["a", "c"]


def test_mismatched_lengths_are_retrieval_errors():
    with pytest.raises(RetrievalError, match="2 relevance scores for 3 candidates"):
        mmr_rerank(["a", "b", "c"], [1, 2], [[1], [1], [1]])
    with pytest.raises(RetrievalError, match="one dimension"):
        mmr_rerank(["a", "b"], [1, 2], [[1, 0], [1]])
