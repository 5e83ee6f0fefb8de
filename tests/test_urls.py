"""Secrets inside URLs (dashrag/urls.py): found in the userinfo and the query, hidden, never a crash."""

from __future__ import annotations

import pytest

from dashrag.urls import hide_url_secrets, url_secret_problem


@pytest.mark.parametrize("url", ["http://user:hunter2@host/x", "postgresql+psycopg://app@db/x?password=hunter2",
                                 "https://h/v1?api_key=hunter2", "https://h/?Access_Token=hunter2",
                                 "postgresql://app@db/x?sslpassword=hunter2"])
def test_a_url_with_a_secret_is_named_a_problem_and_hidden(url):
    assert url_secret_problem(url) is not None
    assert "hunter2" not in hide_url_secrets(url) and "***" in hide_url_secrets(url)


@pytest.mark.parametrize("url", ["http://localhost:8080", "postgresql+psycopg://app@127.0.0.1:5432/db?sslmode=require",
                                 "sqlite:////tmp/store.sqlite", "https://h/v1?model=x"])
def test_a_url_without_a_secret_is_kept_as_given(url):
    assert url_secret_problem(url) is None and hide_url_secrets(url) == url


def test_a_malformed_url_is_hidden_without_raising():
    shown = hide_url_secrets("postgresql://app:hunter2@[::1/db?password=hunter2")
    assert "hunter2" not in shown and url_secret_problem("http://[::1/x") is None
