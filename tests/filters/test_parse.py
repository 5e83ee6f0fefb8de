"""Parsing filters: the syntax tree, and one error per malformed filter naming its JSON path."""

import pytest

from dashrag.errors import FilterError
from dashrag.filters import And, Compare, Exists, In, Not, Or, parse_filter


def test_a_bare_value_means_eq():
    node = parse_filter({"lang": "es"})
    assert isinstance(node, Compare) and node.op == "$eq" and node.value.raw == "es" and node.path == "$.lang"


def test_several_keys_must_all_hold():
    node = parse_filter({"lang": "es", "year": {"$gte": 2015, "$lt": 2020}})
    assert isinstance(node, And) and len(node.parts) == 2
    assert isinstance(node.parts[1], And) and [p.op for p in node.parts[1].parts] == ["$gte", "$lt"]


def test_negations_become_not():
    ne, nin, missing = (parse_filter(f) for f in ({"a": {"$ne": 1}}, {"a": {"$nin": [1]}}, {"a": {"$exists": False}}))
    assert isinstance(ne, Not) and isinstance(ne.part, Compare)
    assert isinstance(nin, Not) and isinstance(nin.part, In)
    assert isinstance(missing, Not) and isinstance(missing.part, Exists)


def test_logical_operators_nest():
    node = parse_filter({"$or": [{"a": 1}, {"$not": {"b": {"$in": ["x"]}}}]})
    assert isinstance(node, Or) and isinstance(node.parts[1], Not)
    assert node.parts[1].part.path == "$.$or[1].$not.b.$in"


def test_field_level_not():
    node = parse_filter({"year": {"$not": {"$gt": 2000}}})
    assert isinstance(node, Not) and node.part.op == "$gt"


def test_dates_are_their_own_kind():
    assert parse_filter({"d": {"$gte": "2020-01-31"}}).value.kind == "date"
    assert parse_filter({"d": {"$gte": "2020-01-31T10:00:00+02:00"}}).value.kind == "date"
    assert parse_filter({"d": "2020-13-45"}).value.kind == "string"


def test_the_filter_may_be_json_text():
    assert parse_filter('{"a": 1}') == parse_filter({"a": 1})


@pytest.mark.parametrize("raw, path, message", [
    ([1], "$", "a filter is a JSON object"),
    ('{"a": ', "$", "not valid JSON"),
    ({"year": {"$gt": 1, "$foo": 2}}, "$.year.$foo", "unknown operator '$foo'"),
    ({"$nor": []}, "$.$nor", "unknown operator '$nor'"),
    ({"$or": []}, "$.$or", "non-empty list"),
    ({"$and": {"a": 1}}, "$.$and", "non-empty list"),
    ({"$or": [{"a": 1}, 3]}, "$.$or[1]", "a filter is a JSON object"),
    ({"tags": ["x"]}, "$.tags", "use {\"$in\""),
    ({"a": None}, "$.a", "use {\"$exists\": false}"),
    ({"a": {}}, "$.a", "an empty object"),
    ({"a": {"b": 1}}, "$.a.b", "an object is not a value"),
    ({"a": {"$in": "x"}}, "$.a.$in", "takes a list"),
    ({"a": {"$in": [1, "x"]}}, "$.a.$in", "mixes a number and a string"),
    ({"a": {"$in": [1, None]}}, "$.a.$in[1]", "null is not a value"),
    ({"a": {"$gt": True}}, "$.a.$gt", "a boolean has no order"),
    ({"a": {"$exists": 1}}, "$.a.$exists", "takes true or false"),
    ({"a": {"$not": 3}}, "$.a.$not", "takes an object of operators"),
    ({"a": float("nan")}, "$.a", "not a value to compare"),
    ({"odd key": {"$lt": [1]}}, '$["odd key"].$lt', "a list is not a value to compare"),
])
def test_malformed_filters_name_the_path(raw, path, message):
    with pytest.raises(FilterError) as caught:
        parse_filter(raw)
    assert caught.value.path == path
    assert message in caught.value.reason


def test_deep_nesting_is_refused_not_a_crash():
    deep: dict = {"a": 1}
    for _ in range(100):
        deep = {"$not": deep}
    with pytest.raises(FilterError, match="nested deeper"):
        parse_filter(deep)
