"""The select_best_chunks contract: its JSON Schema and the strict check of an answer."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashrag.errors import ConfigError
from dashrag.llm.selection import (
    SELECT_FUNCTION_NAME,
    follow_up_messages,
    retry_message,
    selection_tool_schema,
    validate_selection,
)


def call(arguments, name: str = SELECT_FUNCTION_NAME, call_id: str = "call_1") -> dict:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}


def verdict_of(arguments, n: int = 10, top_k: int = 3, name: str = SELECT_FUNCTION_NAME):
    return validate_selection([call(arguments, name)], n, top_k)


# -- the schema ----------------------------------------------------------------------


def test_tool_schema_is_valid_draft_2020_12():
    jsonschema.Draft202012Validator.check_schema(selection_tool_schema(10, 3)["function"]["parameters"])


def test_tool_schema_bounds_follow_candidates_and_top_k():
    indices = selection_tool_schema(10, 3)["function"]["parameters"]["properties"]["indices"]
    assert (indices["items"], indices["minItems"], indices["maxItems"], indices["uniqueItems"]) == (
        {"type": "integer", "minimum": 1, "maximum": 10},
        1,
        3,
        True,
    )


def test_tool_schema_caps_max_items_at_the_number_of_candidates():
    indices = selection_tool_schema(2, 5)["function"]["parameters"]["properties"]["indices"]
    assert indices["maxItems"] == 2


def test_no_candidates_is_a_config_error():
    with pytest.raises(ConfigError):
        selection_tool_schema(0, 3)


index_values = st.one_of(
    st.integers(-3, 14),
    st.booleans(),
    st.text(max_size=3),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer()),
    st.none(),
)


@settings(max_examples=300)
@given(
    st.integers(1, 10),
    st.integers(1, 6),
    st.one_of(
        st.fixed_dictionaries({"indices": st.lists(index_values, max_size=8)}),
        st.dictionaries(st.sampled_from(["indices", "reason", "idx"]), st.lists(index_values, max_size=3)),
        st.lists(st.integers(1, 5), max_size=3),
    ),
)
def test_validator_agrees_with_the_tool_schema(n, top_k, arguments):
    # integral floats (3.0) are left out: JSON Schema counts them as integers, the validator does not
    schema = selection_tool_schema(n, top_k)["function"]["parameters"]
    schema_accepts = jsonschema.Draft202012Validator(schema).is_valid(arguments)
    assert verdict_of(arguments, n, top_k).accepted == schema_accepts


# -- accepted answers ------------------------------------------------------------------


def test_accepted_indices_are_zero_based_in_the_named_order():
    assert verdict_of({"indices": [7, 2, 10]}).indices == (6, 1, 9)


@settings(max_examples=300)
@given(
    st.integers(1, 12),
    st.integers(1, 12),
    st.one_of(st.just(SELECT_FUNCTION_NAME), st.text(max_size=20)),
    st.one_of(
        st.lists(st.one_of(st.integers(-2, 14), st.booleans(), st.text(max_size=2)), max_size=14).map(
            lambda xs: json.dumps({"indices": xs})
        ),
        st.text(max_size=30),
    ),
)
def test_an_accepted_selection_names_only_what_the_answer_named_in_its_order(n, top_k, name, raw):
    verdict = validate_selection([call(raw, name)], n, top_k)
    if verdict.accepted:
        named = json.loads(raw)["indices"]
        assert [i + 1 for i in verdict.indices] == named
        assert all(0 <= i < n for i in verdict.indices) and 1 <= len(named) <= top_k


# -- refused answers, one reason each ------------------------------------------------


@pytest.mark.parametrize(
    "arguments, problem",
    [
        ('{"indices": [1, 2', "the arguments are not valid JSON (Expecting ',' delimiter at character 17)"),
        ([1, 2], "the arguments must be a JSON object, got a list"),
        ({"indices": [1], "reason": "x"}, "unexpected argument \"reason\"; the only argument is 'indices'"),
        ({}, "the arguments lack 'indices'"),
        ({"indices": "1,2"}, "'indices' must be a list of integers, got a string"),
        ({"indices": []}, "'indices' is empty; select at least one candidate"),
        ({"indices": [12]}, "index 12 is out of range 1..10"),
        ({"indices": [0]}, "index 0 is out of range 1..10"),
        ({"indices": [4, 4]}, "index 4 appears more than once"),
        ({"indices": [1, 2, 3, 4]}, "4 indices given, at most 3 allowed"),
        ({"indices": [True]}, "index true is not an integer"),
        ({"indices": ["3"]}, 'index "3" is not an integer'),
        ({"indices": [3.0]}, "index 3.0 is not an integer"),
    ],
)
def test_refusal_names_what_was_wrong(arguments, problem):
    assert verdict_of(arguments).problem == problem


def test_refusal_names_every_problem_of_the_indices():
    assert verdict_of({"indices": [12, 2, 2]}, top_k=5).problem == (
        "index 12 is out of range 1..10; index 2 appears more than once"
    )


def test_answer_without_tool_call_is_refused():
    assert validate_selection([], 10, 3).problem == "the answer called no function; call select_best_chunks"


def test_answer_with_two_tool_calls_is_refused():
    verdict = validate_selection([call({"indices": [1]}), call({"indices": [2]})], 10, 3)
    assert verdict.problem == "the answer made 2 function calls; make exactly one"


def test_wrong_function_is_refused_even_with_valid_arguments():
    verdict = verdict_of({"indices": [1]}, name="delete_all_documents")
    assert verdict.problem == "called function \"delete_all_documents\", expected 'select_best_chunks'"


def test_arguments_that_are_not_a_string_are_refused():
    tool_call = {"function": {"name": SELECT_FUNCTION_NAME, "arguments": {"indices": [1]}}}
    assert validate_selection([tool_call], 10, 3).problem == "the function arguments are not a JSON string"


def test_verdict_to_json_is_one_based_for_the_trace():
    assert verdict_of({"indices": [3, 1]}).to_json() == {"accepted": True, "indices": [3, 1]}


# -- retry messages -------------------------------------------------------------------


def test_retry_message_says_what_was_wrong_and_what_is_expected():
    assert retry_message("index 12 is out of range 1..10", 10, 3) == (
        "Your previous answer was invalid: index 12 is out of range 1..10. Call select_best_chunks "
        "again with 1 to 3 distinct integers between 1 and 10, best first."
    )


def test_follow_up_after_a_tool_call_answers_each_call_id():
    calls = [call({"indices": [12]}, call_id="call_a")]
    messages = follow_up_messages(calls, None, "index 12 is out of range 1..10", 10, 3)
    assert [(m["role"], m.get("tool_call_id")) for m in messages] == [("assistant", None), ("tool", "call_a")]
    assert messages[0]["tool_calls"] == calls
    assert messages[1]["content"] == retry_message("index 12 is out of range 1..10", 10, 3)


def test_follow_up_in_user_message_mode_keeps_the_call_and_sends_the_reason_as_one_user_message():
    calls = [call({"indices": [12]}, call_id="call_a")]
    messages = follow_up_messages(calls, None, "index 12 is out of range 1..10", 10, 3, feedback="user_message")
    assert messages == [{"role": "assistant", "content": "", "tool_calls": calls},
                        {"role": "user", "content": retry_message("index 12 is out of range 1..10", 10, 3)}]


@pytest.mark.parametrize("feedback", ["tool_message", "user_message"])
@pytest.mark.parametrize("calls", [[], [call({"indices": [12]})]], ids=["text", "tool-call"])
def test_follow_up_never_sends_a_null_content(feedback, calls):
    # litellm drops a None content, and a strict chat template then fails on the missing key (HTTP 500)
    messages = follow_up_messages(calls, None, "index 12 is out of range 1..10", 10, 3, feedback=feedback)
    assert all(isinstance(m["content"], str) for m in messages)


def test_follow_up_with_an_unknown_feedback_mode_is_a_config_error():
    with pytest.raises(ConfigError, match="feedback must be one of tool_message, user_message"):
        follow_up_messages([], "x", "p", 10, 3, feedback="system_message")


def test_follow_up_after_plain_text_is_a_user_message():
    messages = follow_up_messages([], "I pick 2", "the answer called no function", 10, 3)
    assert [(m["role"], m["content"]) for m in messages] == [
        ("assistant", "I pick 2"),
        ("user", retry_message("the answer called no function", 10, 3)),
    ]
