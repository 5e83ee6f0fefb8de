"""A planted API key never shows in an exception message, a traceback, a log or the console."""

from __future__ import annotations

import logging
import traceback

import pytest

from dashrag.llm.redaction import MASK, redact, scrub_exception
from dashrag.llm.selection import selection_tool_schema
from dashrag.llm.tool_call import call_tool, load_litellm

from .openai_server import http_error, malformed_json, plain_text, select, slow

PLANTED = "sk-planted-7f3a9c1e5b"
FRAGMENT = PLANTED[-8:]  # a masked form such as "sk-p****9c1e5b" would still leak this much


def leaks(text: str) -> bool:
    return PLANTED in text or FRAGMENT in text


def test_redact_masks_inside_nested_containers():
    value = {"a": [f"key {PLANTED}", (PLANTED, 3)], PLANTED: None}
    assert redact(value, PLANTED) == {"a": [f"key {MASK}", (MASK, 3)], MASK: None}


def test_scrub_exception_masks_the_whole_chain():
    try:
        try:
            raise ValueError(f"bad key {PLANTED}")
        except ValueError as inner:
            raise RuntimeError(f"wrapped: {PLANTED}") from inner
    except RuntimeError as outer:
        scrubbed = scrub_exception(outer, PLANTED)
    assert PLANTED not in "".join(traceback.format_exception(scrubbed))


def test_scrub_exception_keeps_the_exception_class():
    exc = TimeoutError(f"slow {PLANTED}")
    assert type(scrub_exception(exc, PLANTED)) is TimeoutError and str(exc) == f"slow {MASK}"


def call_with_planted_key(server, timeout: float = 5.0):
    return call_tool(
        "openai/test-model",
        [{"role": "user", "content": "Query: fever?\n[1] \"Aspirin.\""}],
        selection_tool_schema(1, 1),
        api_base=server.api_base,
        api_key=PLANTED,
        timeout=timeout,
    )


@pytest.fixture
def all_logs(caplog):
    """Every logger at DEBUG, litellm's and the openai SDK's included."""
    caplog.set_level(logging.DEBUG)
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "openai", "httpx", "httpcore", "dashrag"):
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog


# A server that echoes the rejected key, as real providers do ("Incorrect API key provided: sk-...").
ECHOING_FAILURES = [
    http_error(401, f"Incorrect API key provided: {PLANTED}"),
    http_error(429, f"Rate limit reached for key {PLANTED}"),
    http_error(500, f"Internal error while serving {PLANTED}"),
    http_error(400, f"Bad request from {PLANTED}"),
    slow(5.0),
]


@pytest.mark.parametrize("reply", ECHOING_FAILURES, ids=["401", "429", "500", "400", "timeout"])
def test_planted_key_is_in_no_error_trace_log_or_console_output(openai_server, all_logs, capfd, reply):
    load_litellm()  # import noise (if any) happens before the capture below starts
    capfd.readouterr()
    openai_server.script(reply)
    with pytest.raises(Exception) as caught:
        call_with_planted_key(openai_server, timeout=0.3)
    out, err = capfd.readouterr()
    written = [
        str(caught.value),
        repr(caught.value),
        "".join(traceback.format_exception(caught.value)),
        all_logs.text,
        out,
        err,
    ]
    assert [leaks(text) for text in written] == [False] * len(written)
    assert len(all_logs.records) > 0  # the debug logs were really captured, so their silence means something


@pytest.mark.parametrize("reply", [select(1), malformed_json(), plain_text()], ids=["valid", "malformed", "text"])
def test_planted_key_is_in_no_log_or_result_of_an_answered_call(openai_server, all_logs, capfd, reply):
    openai_server.script(reply)
    result = call_with_planted_key(openai_server)
    out, err = capfd.readouterr()
    assert [leaks(text) for text in (repr(result), all_logs.text, out, err)] == [False] * 4


def test_the_key_was_really_planted(openai_server):
    # the checks above mean something only if the key did travel: the server saw it
    openai_server.script(select(1))
    call_with_planted_key(openai_server)
    assert PLANTED in str(openai_server.requests[0].headers)


def test_every_form_of_the_key_is_masked():
    import base64
    import json as json_module
    from urllib.parse import quote

    secret = 'sk-"odd\\key/+=7f3a9c1e5b'
    basic = base64.b64encode(f"user:{secret}".encode()).decode()
    forms = [secret, json_module.dumps(secret), repr(secret), quote(secret, safe=""), repr(secret.encode()),
             f"Authorization: Basic {basic}", base64.b64encode(f"ab:{secret}".encode()).decode(),
             base64.b64encode(f":{secret}".encode()).decode()]
    for text in forms:
        masked = redact(f"error: {text} end", secret)
        assert MASK in masked, text
        assert "7f3a9c1e5b" not in masked and "odd" not in masked, masked


def test_the_base64_of_user_and_key_cannot_be_decoded_back_to_the_key():
    import base64

    masked = redact(base64.b64encode(f"someone:{PLANTED}".encode()).decode(), PLANTED)
    before, _, after = masked.partition(MASK)
    shown = base64.b64decode(before[:len(before) // 4 * 4])
    assert shown.startswith(b"someone:") and len(shown) - len(b"someone:") <= 2  # the user, at most 2 key bytes
    assert len(after) <= 4  # and at most the last group, which mixes the key's end with the padding


def test_a_log_record_written_during_a_call_is_masked(openai_server, capfd):
    from dashrag.llm.redaction import redacting_logs

    handler = logging.StreamHandler()
    logging.getLogger().addHandler(handler)
    try:
        with redacting_logs(PLANTED):
            logging.getLogger("dashrag.test").warning("sending key %s", PLANTED)
    finally:
        logging.getLogger().removeHandler(handler)
    _, err = capfd.readouterr()
    assert "sending key" in err and not leaks(err)
