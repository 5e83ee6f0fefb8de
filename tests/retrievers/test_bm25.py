"""BM25Retriever as a component: ranking, restriction, batches, score_chunks, save/load, SciFact quality."""

import json
import subprocess
import sys

import numpy as np
import pytest

import dashrag
from dashrag import Restriction
from dashrag.errors import UnknownChunkError
from tests.conftest import REPO

KEYWORD = json.loads((REPO / "components" / "keyword.json").read_text())
QUERIES = [
    "cerebral white matter diffusion in newborns",
    "vitamin D deficiency and fractures",
    "tumour suppressor p53 mutation",
]


@pytest.fixture(scope="module")
def bm25(tmp_path_factory, scifact_subset_file):
    return dashrag.build(KEYWORD, scifact_subset_file, tmp_path_factory.mktemp("bm25"))


def test_batch_equals_one_query_at_a_time(bm25):
    batched = bm25.retrieve_batch(QUERIES)
    for query, (chunks, _) in zip(QUERIES, batched):
        assert chunks == bm25.retrieve(query)[0]


def test_only_chunks_sharing_a_query_term_are_returned(bm25):
    chunks, _ = bm25.retrieve("zzzzqqq white")
    assert chunks and all("white" in c.chunk.text.lower() for c in chunks)
    assert bm25.retrieve("zzzzqqq")[0] == []


@pytest.mark.parametrize("variant", ["okapi", "bm25plus"])
def test_a_rare_term_returns_only_its_chunks_one_query_or_a_batch(tmp_path, scifact_subset_file, variant):
    # BM25+ gives every chunk a constant for the terms it lacks: a chunk with none of the
    # query's terms scores exactly that floor and is no hit, in a batch as on its own
    config = {"component": "BM25Retriever", "params": {"variant": variant, "delta": 1.0, "top_k": 50}}
    tree = dashrag.build(config, scifact_subset_file, tmp_path)
    single, _ = tree.retrieve("zzzzqqq malignancies")
    batched = tree.retrieve_batch(["zzzzqqq malignancies", "white matter"])[0][0]
    assert single == batched and 0 < len(single) < 50
    assert all("malignancies" in c.chunk.text.lower() for c in single)


def test_restriction_applies_before_top_k(bm25):
    full, _ = bm25.retrieve(QUERIES[0], top_k=50)
    allowed = {c.document_id for c in full[10:]}
    restricted, _ = bm25.retrieve(QUERIES[0], top_k=5, restriction=Restriction.to_documents(allowed))
    assert len(restricted) == 5 and {c.document_id for c in restricted} <= allowed
    assert [c.id for c in restricted] == [c.id for c in full if c.document_id in allowed][:5]


def test_score_chunks_is_ascending_distance_matching_retrieve(bm25):
    chunks, _ = bm25.retrieve(QUERIES[1])
    ids = [c.id for c in reversed(chunks)]
    ranked = bm25.score_chunks(ids, QUERIES[1])
    assert [cid for cid, _ in ranked] == [c.id for c in chunks]
    np.testing.assert_allclose([-d for _, d in ranked], [c.score for c in chunks], rtol=1e-6)


def test_score_chunks_rejects_unknown_ids(bm25):
    with pytest.raises(UnknownChunkError):
        bm25.score_chunks([10**9], QUERIES[0])


def test_save_load_answers_identically(bm25, tmp_path):
    loaded = dashrag.load(bm25.save(tmp_path / "saved"))
    for query in QUERIES:
        assert loaded.retrieve(query)[0] == bm25.retrieve(query)[0]


@pytest.mark.parametrize("mode", ["cosine", "dot"])
def test_reference_similarity_functions_still_load_and_rank(mode, scifact_subset_file, tmp_path):
    config = {"component": "BM25Retriever", "params": {"similarity_function": mode, "top_k": 5}}
    retriever = dashrag.build(config, scifact_subset_file, tmp_path)
    chunks, _ = retriever.retrieve(QUERIES[0])
    assert len(chunks) == 5 and all(a.score >= b.score for a, b in zip(chunks, chunks[1:]))


@pytest.mark.slow
def test_keyword_preset_on_scifact_through_the_cli(tmp_path, scifact_dir):
    """The issue's figure: `dashrag index keyword` + `dashrag query --queries --format trec`, nDCG@10 >= 0.686."""
    import pytrec_eval

    qrels: dict[str, dict[str, int]] = {}
    for line in (scifact_dir / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc, score = line.split("\t")
        qrels.setdefault(qid, {})[doc] = int(score)
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        "".join(
            line + "\n"
            for line in (scifact_dir / "queries.jsonl").read_text().splitlines()
            if json.loads(line)["_id"] in qrels
        )
    )
    cli = [sys.executable, "-m", "dashrag.cli.main"]
    subprocess.run(
        cli
        + [
            "index",
            "keyword",
            "--corpus",
            str(scifact_dir),
            "--out",
            str(tmp_path / "kw"),
            "--chunker",
            "WholeDocumentChunker",
        ],
        check=True,
        capture_output=True,
    )
    trec = subprocess.run(
        cli + ["query", str(tmp_path / "kw"), "--queries", str(queries), "--format", "trec", "--top-k", "100"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    run: dict[str, dict[str, float]] = {}
    for line in trec.splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"}).evaluate(run)
    ndcg = sum(per_query.get(q, {}).get("ndcg_cut_10", 0.0) for q in qrels) / len(qrels)
    assert ndcg >= 0.686, ndcg
