import pytest

from dashrag import validate_and_transform
from dashrag.errors import ConfigError, UnknownComponentError


def issues_of(raw, kind=None):
    with pytest.raises(ConfigError) as info:
        validate_and_transform(raw, kind)
    return [str(i) for i in info.value.issues]


def test_defaults_are_filled_in_recursively():
    tree = validate_and_transform({"component": "TFIDFRetriever"})
    assert tree["params"]["top_k"] == 5
    assert tree["params"]["vectorizer"]["params"]["lowercase"] is True


def test_unknown_component_suggests_close_matches():
    with pytest.raises(UnknownComponentError, match="did you mean 'TFIDFRetriever'"):
        validate_and_transform({"component": "TFIDFRetreiver"})


def test_negative_top_k_is_reported_with_its_path():
    assert issues_of({"component": "TFIDFRetriever", "params": {"top_k": -1}}) == [
        "params.top_k: Input should be greater than or equal to 1"
    ]


def test_nested_error_carries_the_full_path():
    raw = {
        "component": "TFIDFRetriever",
        "params": {"vectorizer": {"component": "BagOfWordsConverter", "params": {"lowercase": "often"}}},
    }
    assert issues_of(raw) == [
        "params.vectorizer.params.lowercase: Input should be a valid boolean"
    ]


def test_every_problem_is_reported_at_once():
    raw = {
        "component": "TFIDFRetriever",
        "params": {
            "top_k": 0,
            "bogus": 1,
            "vectorizer": {"component": "BagOfWordsConverter", "params": {"ngram_min": 0}},
        },
    }
    found = issues_of(raw)
    assert [i.split(":")[0] for i in found] == ["params.vectorizer.params.ngram_min", "params.top_k", "params.bogus"]


def test_wrong_kind_in_a_component_field_is_an_error():
    raw = {"component": "TFIDFRetriever", "params": {"vectorizer": {"component": "TokenChunker"}}}
    assert issues_of(raw) == [
        "params.vectorizer.component: 'TokenChunker' is a chunker, but a vectorizer is expected here"
    ]


def test_expected_kind_at_the_root():
    assert issues_of({"component": "TokenChunker"}, "retriever") == [
        "component: 'TokenChunker' is a chunker, but a retriever is expected here"
    ]


def test_cross_field_rule_is_enforced():
    raw = {"component": "BagOfWordsConverter", "params": {"ngram_min": 3, "ngram_max": 2}}
    assert issues_of(raw) == ["params: ngram_min (3) must be <= ngram_max (2)"]


def test_unknown_node_key_is_an_error():
    assert issues_of({"component": "TFIDFRetriever", "parms": {}})[0].startswith("unexpected key(s) 'parms'")


def test_a_node_that_is_not_an_object():
    assert issues_of([1, 2]) == ['expected an object {"component": ..., "params": ...}, got list']


@pytest.fixture()
def optional_component():
    """A component with an optional nested component, registered for one test."""
    from dashrag.chunkers.base import Chunker
    from dashrag.core import registry
    from dashrag.core.params import ComponentParams, ComponentSpec, component_field

    class OptionalParams(ComponentParams):
        fallback: ComponentSpec | None = component_field("chunker", None, optional=True)

    @registry.register(
        kind="chunker",
        icon="X",
        category="test",
        en=("Opt", "Optional child."),
        es=("Opc", "Hijo opcional."),
        representation="opt",
    )
    class OptionalChild(Chunker[OptionalParams]):
        SCHEMA = OptionalParams

    yield OptionalChild
    registry._REGISTRY.pop("OptionalChild", None)


def test_optional_component_left_unset_round_trips(optional_component):
    from dashrag import build_component

    tree = validate_and_transform({"component": "OptionalChild", "params": {"fallback": None}})
    assert tree["params"]["fallback"] is None
    assert build_component(tree).to_config() == tree


def test_optional_component_when_set_is_validated(optional_component):
    tree = validate_and_transform({"component": "OptionalChild", "params": {"fallback": {"component": "TokenChunker"}}})
    assert tree["params"]["fallback"]["params"]["chunk_size"] == 200
    assert issues_of(
        {
            "component": "OptionalChild",
            "params": {"fallback": {"component": "TokenChunker", "params": {"chunk_size": 0}}},
        }
    ) == ["params.fallback.params.chunk_size: Input should be greater than or equal to 1"]


@pytest.mark.parametrize("children", [None, "BM25Retriever", {"component": "BM25Retriever"}])
def test_a_list_of_components_given_as_something_else_is_named(children):
    with pytest.raises(ConfigError, match=r"params\.children: expected a list of retriever components"):
        validate_and_transform({"component": "ParallelRetriever", "params": {"children": children}})
