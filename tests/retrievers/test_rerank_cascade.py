"""The rerank cascade: which path ran and why, the precise stage's order, stage-named failures."""

import pytest

import dashrag
from dashrag.core.factory import build_component
from dashrag.errors import ConfigError, RerankerError, StageError
from dashrag.retrievers.rerank_cascade import should_exit_early, stage

FAST = {"component": "BM25Retriever", "params": {"top_k": 8}}
PRECISE = {
    "component": "TFIDFRetriever",
    "params": {
        "top_k": 8,
        "vectorizer": {
            "component": "BagOfWordsConverter",
            "params": {"analyzer": "char_wb", "ngram_min": 3, "ngram_max": 4},
        },
    },
}


def cascade(**params):
    return {
        "component": "RerankCascadeRetriever",
        "params": {"fast": FAST, "precise": PRECISE, "stage1_top_n": 6, "top_k": 3, **params},
    }


@pytest.fixture(scope="module")
def corpus():
    from tests.conftest import EXAMPLE_CORPUS

    return dashrag.Corpus.from_folder(EXAMPLE_CORPUS)


def test_precise_path_orders_by_the_precise_stage(corpus, tmp_path):
    tree = dashrag.build(cascade(), corpus, tmp_path)
    chunks, trace = tree.retrieve("rank fusion keyword embeddings")
    assert trace["selection"]["path"] == "precise"
    fast_ids = [c.id for c in tree.nested["fast"].retrieve("rank fusion keyword embeddings", top_k=6)[0]]
    expected = tree.nested["precise"].score_chunks(fast_ids, "rank fusion keyword embeddings")[:3]
    assert [(c.id, -c.score) for c in chunks] == [(cid, pytest.approx(d)) for cid, d in expected]
    assert [n["component"] for n in trace["children"]] == ["BM25Retriever", "TFIDFRetriever"]


def test_margin_early_exit_keeps_first_stage_scores(corpus, tmp_path):
    tree = dashrag.build(cascade(early_exit="margin", exit_margin=0.1), corpus, tmp_path)
    chunks, trace = tree.retrieve("vector database payload filters")
    fast, _ = tree.nested["fast"].retrieve("vector database payload filters", top_k=6)
    assert trace["selection"]["path"] == "early_exit"
    assert chunks == fast[:3]
    assert len(trace["children"]) == 1 and "precise" not in trace["selection"]["stage_ms"]


def test_threshold_mode_requires_a_threshold():
    with pytest.raises(ConfigError, match="threshold mode needs exit_threshold|needs exit_threshold"):
        dashrag.validate_and_transform(cascade(early_exit="threshold"))


@pytest.mark.parametrize(
    "scores, mode, expected",
    [
        ([10.0, 4.0], "margin", True),  # leads by 60% >= 50%
        ([10.0, 6.0], "margin", False),  # leads by 40%
        ([3.0], "margin", True),
        ([], "margin", False),
        ([10.0, 9.9], "never", False),
    ],
)
def test_should_exit_early(scores, mode, expected):
    assert should_exit_early(scores, mode, 0.5, None)[0] is expected


def test_threshold_rule():
    assert should_exit_early([7.0, 6.9], "threshold", 0.5, 7.0)[0] is True
    assert should_exit_early([6.9], "threshold", 0.5, 7.0)[0] is False


def test_a_failing_stage_is_named(corpus, tmp_path):
    tree = build_component(cascade())
    infra = dashrag.api.prepare_corpus(corpus, tmp_path)
    tree.inject_infra(infra)
    tree.nested["fast"].init_model()  # the precise stage is never fitted, so it fails when asked
    with pytest.raises(StageError) as info:
        tree.retrieve("rank fusion")
    assert info.value.stage == "precise" and "precise" in str(info.value)


def test_stage_context_times_and_wraps():
    timings = {}
    with pytest.raises(StageError, match="stage 'mmr' failed: ZeroDivisionError"):
        with stage("mmr", timings):
            _ = 1 / 0
    assert "mmr" in timings


# -- the rag-reranker reference's contract -------------------------------------------------------
FAST_MINILM = {"component": "MiniLMEmbedding", "params": {"max_seq_length": 128}}
QUERY = "rank fusion keyword embeddings"


def test_defaults_are_the_references():
    p = build_component({"component": "RerankCascadeRetriever", "params": {}}).params
    assert (p.stage1_top_n, p.stage2_top_n, p.enable_mmr, p.mmr_lambda) == (50, 10, False, None)
    assert build_component({"component": "RerankCascadeRetriever", "params": {"enable_mmr": True}}).mmr_lambda == 0.7


def test_stage2_top_n_is_how_many_candidates_the_precise_stage_scores(corpus, tmp_path):
    tree = dashrag.build(cascade(stage2_top_n=3, top_k=6), corpus, tmp_path)
    chunks, trace = tree.retrieve(QUERY)
    fast, _ = tree.nested["fast"].retrieve(QUERY, top_k=6)
    expected = tree.nested["precise"].score_chunks([c.id for c in fast[:3]], QUERY)
    assert [c.id for c in chunks[:3]] == [cid for cid, _ in expected]  # the precise stage's order
    assert chunks[3:] == [c.rescored(c.score, c.source, precise_scored=False) for c in fast[3:]]  # first-stage order
    assert trace["selection"]["precise_scored"] == 3


def test_stage2_top_n_defaults_to_10(corpus, tmp_path):
    """rag-reranker: stage2_top_n defaults to 10; above what stage 1 passes on, every candidate is scored."""
    assert dashrag.validate_and_transform({"component": "RerankCascadeRetriever"})["params"]["stage2_top_n"] == 10
    tree = dashrag.build(cascade(top_k=6), corpus, tmp_path)  # stage 1 passes on at most 6
    passed_on, _ = tree.nested["fast"].retrieve(QUERY, top_k=6)
    _, trace = tree.retrieve(QUERY)
    assert 0 < trace["selection"]["precise_scored"] == len(passed_on) <= 6


@pytest.mark.slow
def test_mmr_relevance_is_the_precise_score_and_lambda_one_keeps_the_precise_order(corpus, tmp_path):
    plain = dashrag.build(cascade(top_k=5), corpus, tmp_path / "plain")
    relevance_only = dashrag.build(cascade(top_k=5, mmr_lambda=1.0, mmr_embedding=FAST_MINILM), corpus,
                                   tmp_path / "mmr")
    expected, _ = plain.retrieve(QUERY)
    chunks, trace = relevance_only.retrieve(QUERY)
    assert [(c.id, c.score) for c in chunks] == [(c.id, c.score) for c in expected]  # order and scores kept
    assert [o["relevance"] for o in trace["selection"]["mmr"]["order"]] == [c.score for c in expected]
    assert trace["selection"]["path"] == "precise+mmr"


@pytest.mark.slow
def test_mmr_in_the_cascade_reorders_without_overwriting_scores(corpus, tmp_path):
    tree = dashrag.build(cascade(top_k=5, enable_mmr=True, mmr_embedding=FAST_MINILM), corpus, tmp_path)
    chunks, trace = tree.retrieve(QUERY)
    precise = dict(tree.nested["precise"].score_chunks([c.id for c in chunks], QUERY))
    assert [c.score for c in chunks] == [pytest.approx(-precise[c.id]) for c in chunks]
    assert [c.provenance["mmr_score"] for c in chunks] == [o["mmr"] for o in trace["selection"]["mmr"]["order"]]
    assert trace["selection"]["mmr"]["lambda"] == 0.7
    assert chunks[0].score == max(c.score for c in chunks)  # λ > 0 or not, the first pick is the most relevant


def test_mmr_in_the_cascade_runs_only_with_more_than_one_candidate(corpus, tmp_path):
    tree = dashrag.build(cascade(stage1_top_n=1, top_k=1, enable_mmr=True, mmr_embedding=FAST_MINILM), corpus, tmp_path)
    chunks, trace = tree.retrieve(QUERY)
    assert (len(chunks), trace["selection"]["mmr"]["ran"]) == (1, False)
    assert tree.nested["mmr_embedding"].documents_embedded == 0


def test_a_failing_stage_raises_reranker_error_with_the_stage_and_a_context(corpus, tmp_path):
    tree = build_component(cascade())
    tree.inject_infra(dashrag.api.prepare_corpus(corpus, tmp_path))
    tree.nested["fast"].init_model()  # the precise stage is never fitted
    with pytest.raises(RerankerError) as info:
        tree.retrieve(QUERY)
    assert isinstance(info.value, StageError) and info.value.stage == "precise"
    found = len(tree.nested["fast"].retrieve(QUERY, top_k=6)[0])
    assert {k: info.value.context[k] for k in ("stage", "query", "candidates", "retriever", "component")} == {
        "stage": "precise", "query": QUERY, "candidates": found, "retriever": "TFIDFRetriever",
        "component": "RerankCascadeRetriever"}


def test_mmr_picks_among_the_precise_stages_candidates_and_the_others_follow_in_their_order(corpus, tmp_path):
    """The unscored candidates carry the fast stage's scores (BM25's, on another scale than the precise stage's
    −distance): MMR must not rank them by those, so it picks among the precise stage's, the rest follow."""
    onnx = {"component": "MiniLMOnnxEmbedding", "params": {"max_seq_length": 128}}
    tree = dashrag.build(cascade(stage2_top_n=3, top_k=6, mmr_lambda=0.5, mmr_embedding=onnx), corpus, tmp_path)
    chunks, trace = tree.retrieve(QUERY)
    fast, _ = tree.nested["fast"].retrieve(QUERY, top_k=6)
    assert {c.id for c in chunks[:3]} == {c.id for c in fast[:3]} and trace["selection"]["mmr"]["ran"]
    assert [c.id for c in chunks[3:]] == [c.id for c in fast[3:]]
