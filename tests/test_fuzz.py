"""Fuzzing configs, corpus lines and manifests: only dashrag's own errors escape, and a failure changes
no byte of a saved folder.

Each example builds (and, when it builds, saves) into the same saved folder, so
"unchanged by any failure" is checked against real saves, not a fresh folder.
The components are the cheap keyword ones and the composites over them: the
point is the input handling, and a fit takes milliseconds on the shipped corpus.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dashrag
from dashrag.errors import DashragError
from tests.conftest import EXAMPLE_CORPUS, folder_digest

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                         HealthCheck.function_scoped_fixture])
LEAVES = ["TFIDFRetriever", "BM25Retriever"]
COMPOSITES = ["ParallelRetriever", "SequentialRetriever"]
PARAM_NAMES = ["top_k", "k1", "b", "delta", "variant", "vectorizer", "smooth_idf", "sublinear_tf", "children",
               "weights", "merge_strategy", "rrf_k", "lowercase", "ngram_max", "min_df", "max_df", "stemmer", "?"]
ODD_STRINGS = ["5", "1e400", "NaN", "", "[/b]", "\x1b]52;c;x\x07", "../../etc/passwd", "x" * 300]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-(10**20), 10**20), st.floats(),
                    st.text(max_size=12), st.sampled_from(ODD_STRINGS))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.text(max_size=6), inner, max_size=3), max_leaves=8)


def nodes(children: st.SearchStrategy) -> st.SearchStrategy:
    names = st.sampled_from(LEAVES + COMPOSITES + ["BagOfWordsConverter", "NoSuchRetriever"]) | scalars
    params = st.dictionaries(st.sampled_from(PARAM_NAMES), json_values | children, max_size=4)
    composite = st.fixed_dictionaries({"component": st.sampled_from(COMPOSITES), "params": st.fixed_dictionaries(
        {"children": st.lists(children, min_size=1, max_size=3)}, optional={"merge_strategy": json_values})})
    return st.fixed_dictionaries({"component": names}, optional={"params": params | json_values}) | composite


leaf = st.fixed_dictionaries({"component": st.sampled_from(LEAVES)}, optional={
    "params": st.dictionaries(st.sampled_from(PARAM_NAMES), json_values, max_size=3)})
configs = st.recursive(leaf, nodes, max_leaves=6) | json_values


@pytest.fixture(scope="module")
def corpus():
    return dashrag.Corpus.from_folder(EXAMPLE_CORPUS)


@pytest.fixture(scope="module")
def saved(tmp_path_factory, corpus) -> Path:
    folder = tmp_path_factory.mktemp("fuzz") / "saved"
    dashrag.build({"component": "TFIDFRetriever"}, corpus, folder.parent / "work").save(folder)
    return folder


def build_and_save(config, corpus, workdir: Path, saved: Path) -> None:
    """Build ``config`` and save it over ``saved``; a failure must be a DashragError that changed nothing."""
    before = folder_digest(saved)
    try:
        tree = dashrag.build(config, corpus, workdir)
    except DashragError:
        assert folder_digest(saved) == before
        return
    try:
        tree.save(saved)
        dashrag.load(saved).close()
    finally:
        tree.close()


@FUZZ
@given(config=configs)
def test_fuzzed_configs_raise_only_dashrag_errors_and_never_touch_the_saved_folder(config, corpus, saved,
                                                                                  tmp_path_factory):
    build_and_save(config, corpus, tmp_path_factory.getbasetemp() / "fuzz-work", saved)


corpus_records = st.fixed_dictionaries({}, optional={
    "_id": json_values, "text": json_values, "title": json_values, "metadata": json_values})
corpus_lines = st.one_of(corpus_records.map(json.dumps), st.text(max_size=40),
                         st.sampled_from(['{"_id": "a", "text": NaN}', "[]", "null", '{"_id": 1e400, "text": "x"}']))


@pytest.mark.slow
@FUZZ
@given(lines=st.lists(corpus_lines, min_size=1, max_size=4))
def test_fuzzed_corpus_lines_raise_only_dashrag_errors_and_never_touch_the_saved_folder(lines, saved,
                                                                                       tmp_path_factory):
    path = tmp_path_factory.getbasetemp() / "fuzz-corpus.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    before = folder_digest(saved)
    try:
        corpus = dashrag.Corpus.from_jsonl(path)
    except DashragError:
        assert folder_digest(saved) == before
        return
    assert all(isinstance(d.text, str) and isinstance(d.id, str) for d in corpus)
    build_and_save({"component": "BM25Retriever"}, corpus, tmp_path_factory.getbasetemp() / "fuzz-work2", saved)


MANIFEST_KEYS = ["format", "format_version", "config", "corpus_fingerprint", "store", "snapshot", "files", "x"]


@pytest.mark.slow
@FUZZ
@given(changes=st.dictionaries(st.sampled_from(MANIFEST_KEYS), json_values | configs, min_size=1, max_size=3))
def test_fuzzed_manifests_raise_only_persistence_errors_and_write_nothing(changes, saved, tmp_path_factory):
    copy = tmp_path_factory.getbasetemp() / "fuzz-manifest"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(saved, copy)
    manifest = json.loads((copy / "dashrag.json").read_text())
    manifest.update(changes)
    text = json.dumps(manifest, allow_nan=True)
    (copy / "dashrag.json").write_text(text)
    before = folder_digest(copy)
    try:
        dashrag.load(copy).close()
    except DashragError:
        pass
    assert folder_digest(copy) == before


def test_the_strategies_reach_both_outcomes(corpus, tmp_path):
    # the fuzz tests mean something only if some inputs build and others are refused
    assert dashrag.build({"component": "BM25Retriever", "params": {"k1": 1.2}}, corpus, tmp_path)
    with pytest.raises(DashragError):
        dashrag.build({"component": "BM25Retriever", "params": {"k1": math.inf}}, corpus, tmp_path)
