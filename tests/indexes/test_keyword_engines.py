"""BM25 on the engines: Qdrant sparse vectors (embedded, Qdrant Edge) and a PostgreSQL sparse table hold the
chunks' BM25 weights, and their sparse dot product with the query's term counts is the in-process score."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import dashrag
from dashrag.core.persistence import read_manifest
from dashrag.errors import ConfigError, EngineError
from tests.fixtures.qdrant import foreign_edge_collection
from tests.indexes.conftest import assert_answers_like_in_process, bm25_tree, ndcg_at_10, ranked_ids

ON_QDRANT = {"component": "QdrantKeywordIndex", "params": {}}


@pytest.fixture(scope="module")
def qdrant_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("qdrant-bm25")


@pytest.fixture(scope="module")
def on_qdrant(engine_subset, qdrant_folder):
    tree = dashrag.build(bm25_tree(ON_QDRANT), engine_subset.corpus, qdrant_folder)
    tree.save(qdrant_folder)
    yield tree
    tree.close()


@pytest.fixture(scope="module")
def pg_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("pg-bm25")


@pytest.fixture(scope="module")
def on_postgres(engine_subset, pg_url, pg_folder):
    tree = dashrag.build(bm25_tree({"component": "PgKeywordIndex", "params": {"url": pg_url}}),
                         engine_subset.corpus, pg_folder)
    tree.save(pg_folder)
    yield tree
    tree.close()


@pytest.fixture(params=["qdrant", "postgresql"])
def on_engine(request):
    return request.getfixturevalue({"qdrant": "on_qdrant", "postgresql": "on_postgres"}[request.param])


def test_an_engine_returns_the_in_process_bm25_ranking_and_scores(on_engine, bm25_in_process, engine_subset):
    assert_answers_like_in_process(on_engine, bm25_in_process, engine_subset)


def test_an_engine_gives_the_in_process_ndcg_to_four_decimals(on_engine, bm25_in_process, engine_subset):
    assert round(ndcg_at_10(on_engine, engine_subset), 4) == round(ndcg_at_10(bm25_in_process, engine_subset), 4)


def test_bm25_plus_adds_its_absent_term_constant_back(engine_subset, pg_url, tmp_path):
    """BM25+ scores every chunk for the query terms it lacks; the engines store only the rest of the weight."""
    params = {"variant": "bm25plus", "delta": 1.0}
    in_process = dashrag.build(bm25_tree(**params), engine_subset.corpus, tmp_path / "in-process")
    engines = [dashrag.build(bm25_tree(index, **params), engine_subset.corpus, tmp_path / name)
               for name, index in (("qdrant", ON_QDRANT),
                                   ("pg", {"component": "PgKeywordIndex", "params": {"url": pg_url}}))]
    try:
        for engine in engines:
            assert_answers_like_in_process(engine, in_process, engine_subset)
    finally:
        for tree in (in_process, *engines):
            tree.close()


def test_score_chunks_on_an_engine_gives_the_in_process_distances(on_engine, bm25_in_process, engine_subset):
    query = next(iter(engine_subset.queries.values()))
    ids = [c.id for c in bm25_in_process.retrieve(query)[0]][:5] + [int(bm25_in_process.infra.chunks.ids[0])]
    ours, theirs = on_engine.score_chunks(ids, query), bm25_in_process.score_chunks(ids, query)
    assert [i for i, _ in ours] == [i for i, _ in theirs]
    np.testing.assert_allclose([d for _, d in ours], [d for _, d in theirs], atol=1e-4)


def test_a_saved_keyword_tree_holds_a_reference_not_the_weights(on_engine, qdrant_folder, pg_folder):
    folder = qdrant_folder if on_engine.index.engine_name == "Qdrant" else pg_folder
    manifest = read_manifest(folder)
    assert not any(name.endswith(("data.npy", "doc_ids.npy")) for name in manifest["files"])
    reference = json.loads((folder / manifest["snapshot"] / "nodes/root/index.json").read_text())
    assert reference["engine"] == on_engine.index.engine_name
    assert reference["record"]["metric"] == "bm25-weights"
    assert reference["record"]["count"] == len(on_engine.infra.chunks)


def test_a_loaded_keyword_tree_answers_like_the_built_one(on_engine, qdrant_folder, pg_folder, engine_subset):
    folder = qdrant_folder if on_engine.index.engine_name == "Qdrant" else pg_folder
    queries = list(engine_subset.queries.values())[:8]
    expected = [[(c.id, c.score) for c in chunks] for chunks, _ in on_engine.retrieve_batch(queries)]
    if on_engine.index.engine_name == "Qdrant":
        on_engine.index.close()  # one process opens an embedded folder once; the loaded tree opens it again
    loaded = dashrag.load(folder)
    try:
        assert [[(c.id, c.score) for c in chunks] for chunks, _ in loaded.retrieve_batch(queries)] == expected
    finally:
        loaded.close()


def test_cosine_on_an_engine_is_a_config_error(engine_subset, tmp_path):
    with pytest.raises(ConfigError, match="cosine.*needs the in-process index"):
        dashrag.build(bm25_tree(ON_QDRANT, similarity_function="cosine"), engine_subset.corpus, tmp_path)


def test_a_keyword_index_over_a_foreign_collection_is_refused(engine_subset, tmp_path):
    foreign_edge_collection(tmp_path / "qdrant", "theirs")
    config = bm25_tree({"component": "QdrantKeywordIndex", "params": {"collection": "theirs"}})
    with pytest.raises(EngineError, match=r"Qdrant collection 'theirs' .* not written by dashrag.*--overwrite"):
        dashrag.build(config, engine_subset.corpus, tmp_path)


def test_loading_refuses_a_collection_replaced_by_dense_vectors(engine_subset, tmp_path):
    config = bm25_tree({"component": "QdrantKeywordIndex", "params": {"collection": "words"}})
    tree = dashrag.build(config, engine_subset.corpus, tmp_path)
    tree.save(tmp_path)
    ids = tree.infra.chunks.ids
    tree.close()
    shutil.rmtree(tmp_path / "qdrant" / "edge" / "words" / "shard")  # the same points, dense vectors instead
    foreign_edge_collection(tmp_path / "qdrant", "words", ids=ids)
    with pytest.raises(EngineError, match=r"Qdrant collection 'words' .* no sparse vector 'bm25'"):
        dashrag.load(tmp_path)


def test_loading_refuses_a_term_table_edited_behind_the_trees_back(engine_subset, pg_url, tmp_path):
    from sqlalchemy import create_engine, text

    config = bm25_tree({"component": "PgKeywordIndex", "params": {"url": pg_url, "table": "edited_words"}})
    tree = dashrag.build(config, engine_subset.corpus, tmp_path, overwrite=True)
    tree.save(tmp_path)
    tree.close()
    engine = create_engine(pg_url)
    with engine.begin() as connection:  # the chunk count stays right: only the weights change
        connection.execute(text("UPDATE edited_words_terms SET weight = weight * 2 WHERE term_id = 0"))
    engine.dispose()
    with pytest.raises(EngineError, match=r"PostgreSQL table 'edited_words' .* was modified 1 time"):
        dashrag.load(tmp_path)


def test_rebuilding_over_its_own_tables_writes_nothing(engine_subset, pg_url, on_postgres, tmp_path):
    """The same node over the same corpus finds its own tables and reuses them (the trigger counts no change)."""
    again = dashrag.build(bm25_tree({"component": "PgKeywordIndex", "params": {"url": pg_url}}),
                          engine_subset.corpus, tmp_path)
    try:
        assert again.index.name == on_postgres.index.name and again.index.modifications() == 0
    finally:
        again.close()


def test_a_hybrid_tree_with_both_children_on_engines_answers_like_in_process(engine_subset, engine_cache, pg_url,
                                                                             tmp_path):
    from tests.indexes.conftest import dense_tree

    def hybrid(dense_index: dict | None, keyword_index: dict | None) -> dict:
        return {"component": "ParallelRetriever", "params": {"top_k": 10, "merge_strategy": "rrf", "children": [
            dense_tree(dense_index), bm25_tree(keyword_index, top_k=20)]}}

    in_process = dashrag.build(hybrid(None, None), engine_subset.corpus, tmp_path / "in-process",
                               cache_dir=engine_cache)
    engines = dashrag.build(hybrid({"component": "QdrantVectorIndex", "params": {"exact": True}},
                                   {"component": "PgKeywordIndex", "params": {"url": pg_url}}),
                            engine_subset.corpus, tmp_path / "engines", cache_dir=engine_cache)
    try:
        queries = list(engine_subset.queries.values())
        assert ranked_ids(engines, queries) == ranked_ids(in_process, queries)
    finally:
        in_process.close()
        engines.close()
