"""``dashrag.service.endpoints``: a URL's destinations are where its client library really connects.

PostgreSQL URLs are handed to the real driver (SQLAlchemy + psycopg, the calls ``PgEngine`` makes)
pointed at a loopback stand-in that asks for the password: the port the driver reaches is the one
:func:`destinations` read. HTTP URLs: whatever is accepted, the three client libraries that send
requests (urllib, httpx, urllib3) read with the same host and port.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from urllib3.util import parse_url

from dashrag.service.endpoints import Endpoint, UnreadableEndpoint, destinations, normalised_path


def connect(url: str) -> None:
    from sqlalchemy import create_engine

    engine = create_engine(url, connect_args={"connect_timeout": 5})
    try:
        with engine.connect():
            pass
    except Exception:  # the stand-in hangs up after the password: only where the driver went matters
        pass
    finally:
        engine.dispose()


@pytest.mark.parametrize("spelling", [
    "postgresql+psycopg://u@127.0.0.1:1/db?port={port}",
    "postgresql+psycopg://u@10.255.255.1:{port}/db?host=127.0.0.1",
    "postgresql+psycopg://u@example.invalid:1/db?host=example.invalid&hostaddr=127.0.0.1&port={port}",
    "postgresql+psycopg2://u@127.0.0.1:1/db?port={port}",
])
def test_the_driver_connects_where_the_destinations_say(password_collector, spelling):
    url = spelling.format(port=password_collector.port)
    reached = destinations(url)
    connect(url.replace("+psycopg2", "+psycopg"))  # psycopg2 is not installed: the same libpq parameters
    assert password_collector.connections >= 1
    assert Endpoint("postgresql", "127.0.0.1", password_collector.port, "/db") in reached


def test_a_connection_string_reading_several_hosts_yields_each():
    reached = destinations("postgresql+psycopg://u@127.0.0.1:5432/db?host=a:1&host=b:2")
    assert [(e.host, e.port) for e in reached] == [("a", 1), ("b", 2)]


@pytest.mark.parametrize("query", ["service=x", "servicefile=/etc/x", "passfile=/root/.pgpass", "sslkey=/etc/k",
                                   "sslrootcert=/etc/c", "sslkeylogfile=/tmp/k", "host=/tmp", "host=%40sock"])
def test_a_parameter_whose_destination_is_a_file_or_socket_on_the_server_cannot_be_read(query):
    # (servicefile: psycopg's libpq predates it and refuses it as an unknown option)
    with pytest.raises(UnreadableEndpoint, match=query.split("=")[0] + "=|Unix socket|invalid connection option"):
        destinations(f"postgresql+psycopg://u@127.0.0.1:5432/db?{query}")


@pytest.mark.parametrize("url", ["postgresql+asyncpg://u@127.0.0.1/db", "postgresql+psycopg://u@/db",
                                 "postgresql+psycopg://u@127.0.0.1/db?plugin=x", "ftp://h/x", "h:80"])
def test_a_url_whose_destination_the_service_cannot_tell_is_unreadable(url):
    with pytest.raises(UnreadableEndpoint):
        destinations(url)


@pytest.mark.parametrize("path, normal", [
    ("/team/../admin", "/admin"), ("/team/%2e%2E/admin", "/admin"), ("/team/./v1/", "/team/v1"),
    ("/team/..;x/admin", "/admin"), ("/../../x", "/x"), ("/team/%7Eme", "/team/~me"), ("", ""),
])
def test_a_path_is_compared_as_a_normalising_server_reads_it(path, normal):
    assert normalised_path(path) == normal


@pytest.mark.parametrize("path", ["/team%2f..%2fadmin", "/team%5c..", "/team/%252e%252e/admin"])
def test_an_encoded_separator_or_percent_in_a_path_is_refused(path):
    with pytest.raises(UnreadableEndpoint, match="decode differently"):
        normalised_path(path)


def test_a_url_without_a_port_goes_to_its_clients_default_port():
    assert destinations("http://q.internal")[0].port == 80
    assert destinations("http://q.internal", default_port=6333)[0].port == 6333
    assert destinations("https://q.internal:8443", default_port=6333)[0].port == 8443


TRICKY = st.sampled_from(["a.example", "b.example", "@", ":", "\\", "/", "?", "#", "%2e", "%40", "[", "]", "::1",
                          "1", "80", " ", "\t", "..", ".", ";", "é", "%", "0x7f.1"])


@settings(max_examples=400, deadline=None)
@given(rest=st.lists(TRICKY, min_size=1, max_size=8).map("".join), scheme=st.sampled_from(["http://", "https://"]))
def test_every_accepted_http_url_is_read_alike_by_urllib_httpx_and_urllib3(scheme, rest):
    url = scheme + rest
    try:
        reached = destinations(url)[0]
    except UnreadableEndpoint:
        return
    default = 443 if url.startswith("https") else 80
    by_urllib3 = parse_url(url)
    by_httpx = httpx.URL(url)
    assert (reached.host, reached.port) == (urlsplit(url).hostname, urlsplit(url).port or default)
    assert (by_urllib3.host or "").strip("[]").lower() == reached.host
    assert (by_urllib3.port or default) == reached.port
    assert (by_httpx.host, by_httpx.port or default) == (reached.host, reached.port)
