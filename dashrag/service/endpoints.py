"""Where a URL from a client's config really sends a request: read the way its client library will read it.

The allow-list (``--allow-endpoint``, :mod:`dashrag.service.trust`) compares destinations, not
text. A URL's text and its destination differ in three ways that a plain ``urlsplit`` misses
(issue 38), so each is read here as the library that connects reads it:

* **libpq's connection parameters override the authority.** ``postgresql+psycopg://allowed/db?host=other``
  connects to ``other``; so do ``hostaddr=``, ``port=``, a ``service=`` (a file on the server
  naming the host) and a comma list of hosts. A PostgreSQL URL is read through SQLAlchemy's own
  dialect (``create_connect_args``) and libpq's own parser (psycopg's ``conninfo_to_dict``): its
  destinations are every host (or ``hostaddr``) and port libpq may connect to, and its database.
  Parameters whose meaning lies in a file of the server (``service``, ``servicefile``,
  ``passfile``, the ``ssl*`` files, ``sslkeylogfile``) and Unix sockets (``host=/path``) are
  refused: no allowed prefix can say where they lead.
* **Dot segments and percent-encoding.** ``/team/../admin`` and ``/team/%2e%2e/admin`` reach
  ``/admin`` on a server that normalises, so a path is compared after decoding the unreserved
  characters and removing dot segments (RFC 3986, 6.2.2 and 5.2.4); an encoded ``/``, ``\\`` or
  ``%`` in a path, which servers decode differently, is refused.
* **Parsers that disagree.** ``urllib`` (the HTTP rerankers), ``httpx`` (litellm) and ``urllib3``
  (qdrant-client) read ``http://a\\@b/`` as different hosts; a URL with a backslash, whitespace,
  a control or a non-ASCII character is refused, and so is a host that is not a plain name or
  address (``%2e``, an empty label), which leaves URLs they all read alike (a property test holds it).

A URL without a port goes to its client's default port: the scheme's (80, 443, 5432) or the
component's own (qdrant-client's 6333, declared with the parameter: ``kind_field(default_port=...)``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443, "postgresql": 5432}
HTTP_SCHEMES = frozenset({"http", "https"})
#: SQLAlchemy drivers that connect through libpq, whose parameters this module reads.
LIBPQ_DRIVERS = frozenset({"psycopg", "psycopg2"})
#: libpq parameters whose value is a file on the server (so a destination no prefix can name).
LIBPQ_FILE_PARAMETERS = frozenset({"service", "servicefile", "passfile", "sslcert", "sslkey", "sslrootcert",
                                   "sslcrl", "sslcrldir", "sslkeylogfile"})
UNSAFE_CHARACTERS = re.compile(r"[\x00-\x20\x7f\\]|[^\x00-\x7f]")
ENCODED_UNSAFE = re.compile(r"%(2f|5c|25)", re.IGNORECASE)
PLAIN_HOST = re.compile(r"^([a-z0-9_-]+\.)*[a-z0-9_-]+$|^[0-9a-f:.]*:[0-9a-f:.]*$", re.IGNORECASE)
UNRESERVED_ENCODED = re.compile(r"%([0-9a-f]{2})", re.IGNORECASE)
UNRESERVED = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")


class UnreadableEndpoint(ValueError):
    """A URL whose destination cannot be told for sure; the message says which part and why."""


@dataclass(frozen=True)
class Endpoint:
    """One destination: scheme, host, port and the normalised path (a PostgreSQL database: ``/name``)."""

    scheme: str
    host: str
    port: int | None
    path: str

    def shown(self) -> str:
        """Where it goes, as a person reads it (``127.0.0.1:6543/postgres``): the host and port a URL's text hid."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.path}"

    def within(self, prefix: Endpoint) -> bool:
        """Same scheme, host and port, and the path is the prefix's or below it (segment-wise)."""
        return (self.scheme, self.host, self.port) == (prefix.scheme, prefix.host, prefix.port) and (
            self.path == prefix.path or self.path.startswith(prefix.path + "/"))


def destinations(url: str, default_port: int | None = None) -> list[Endpoint]:
    """Every place a request for ``url`` may go (libpq tries several hosts); raises UnreadableEndpoint."""
    unsafe = UNSAFE_CHARACTERS.search(url)
    if unsafe:
        raise UnreadableEndpoint(f"the URL holds {unsafe.group()!r} (a backslash, a space, a control or a "
                                 "non-ASCII character), which HTTP and database clients read differently")
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme in HTTP_SCHEMES:
        return [_http_destination(url, default_port)]
    if scheme == "postgresql" or scheme.startswith("postgresql+"):
        return _libpq_destinations(url)
    raise UnreadableEndpoint(f"the scheme {scheme or '(none)'!r} is not one of http, https, postgresql")


def _http_destination(url: str, default_port: int | None) -> Endpoint:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnreadableEndpoint(f"the URL's host or port cannot be read ({exc})") from None
    if not parts.hostname:
        raise UnreadableEndpoint("the URL names no host")
    if not PLAIN_HOST.match(parts.hostname):
        raise UnreadableEndpoint(f"the host {parts.hostname[:60]!r} is not a plain name or address (letters, digits, "
                                 "'.', '-', or an IPv6 address in brackets), which clients read alike")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    authority = parts.netloc.rpartition("@")[2].lower()
    if authority not in ({host, f"{host}:{port}"} if port is not None else {host}):  # urlsplit reads '][::1' as ::1
        raise UnreadableEndpoint(f"the URL's host and port {authority[:60]!r} are not a plain host[:port], which "
                                 "clients read alike")
    scheme = parts.scheme.lower()
    return Endpoint(scheme, parts.hostname.lower(), port or default_port or DEFAULT_PORTS[scheme],
                    normalised_path(parts.path))


def normalised_path(path: str) -> str:
    """``path`` as a normalising server reads it: unreserved characters decoded, dot segments removed, no
    trailing ``/``. An encoded ``/``, ``\\`` or ``%`` (servers decode them differently) is refused."""
    decoded = UNRESERVED_ENCODED.sub(
        lambda m: chr(int(m.group(1), 16)) if chr(int(m.group(1), 16)) in UNRESERVED else m.group(), path)
    encoded = ENCODED_UNSAFE.search(decoded)
    if encoded:
        raise UnreadableEndpoint(f"the path holds {encoded.group()!r} (an encoded '/', '\\' or '%'), which "
                                 "servers decode differently")
    kept: list[str] = []
    for segment in decoded.split("/")[1:]:
        bare = segment.split(";", 1)[0]  # a path parameter (``..;x``) does not stop a server reading ``..``
        if bare == "..":
            if kept:
                kept.pop()
        elif bare not in (".", ""):
            kept.append(segment)
    return "".join(f"/{s}" for s in kept)


def _libpq_destinations(url: str) -> list[Endpoint]:
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict, make_conninfo
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    try:
        parsed = make_url(url)
        dialect = parsed.get_dialect()
    except (ArgumentError, NoSuchModuleError, ValueError) as exc:
        raise UnreadableEndpoint(f"not a SQLAlchemy URL this server can read ({type(exc).__name__})") from None
    if dialect.driver not in LIBPQ_DRIVERS:
        raise UnreadableEndpoint(f"the driver {dialect.driver!r} is not one whose connection parameters the "
                                 "service reads (postgresql+psycopg://...)")
    try:
        args, kwargs = dialect().create_connect_args(parsed)
        params = conninfo_to_dict(make_conninfo(*args, **kwargs))
    except (ProgrammingError, ValueError, TypeError) as exc:
        raise UnreadableEndpoint(f"libpq cannot read the connection parameters ({str(exc).strip()[:120]})") from None
    files = sorted(LIBPQ_FILE_PARAMETERS & params.keys())
    if files:
        raise UnreadableEndpoint(f"the connection parameter {files[0]}= names a file on the server, which decides "
                                 "what the connection does; a config sent over HTTP may not use it")
    hosts = _libpq_list(params, "host")
    addresses = _libpq_list(params, "hostaddr")
    if not hosts and not addresses:
        raise UnreadableEndpoint("the URL names no host (libpq would use the server's default, a local socket)")
    sockets = [h for h in hosts if h.startswith(("/", "@"))]
    if sockets:
        raise UnreadableEndpoint(f"host={sockets[0]} is a Unix socket on the server, not an endpoint to allow")
    ports = _libpq_list(params, "port") or [str(DEFAULT_PORTS["postgresql"])]
    count = max(len(hosts), len(addresses))
    if len(ports) not in (1, count) or (hosts and addresses and len(hosts) != len(addresses)):
        raise UnreadableEndpoint("the lists of hosts, host addresses and ports differ in length")
    dbname = str(params.get("dbname") or "")  # none: libpq takes the user's name; a prefix without one allows any
    database = "/" + quote(dbname, safe="") if dbname else ""
    found = []
    for i in range(count):
        port = _libpq_port(ports[i if len(ports) > 1 else 0])
        # hostaddr is where libpq connects and host what it authenticates: both must be allowed
        for host in {h.lower() for h in (hosts[i:i + 1] + addresses[i:i + 1]) if h}:
            found.append(Endpoint("postgresql", host.removeprefix("[").removesuffix("]"), port, database))
    return found


def _libpq_list(params: Mapping[str, Any], key: str) -> list[str]:
    value = str(params.get(key) or "")
    return [v.strip() for v in value.split(",")] if value else []


def _libpq_port(value: str) -> int:
    if not value:
        return DEFAULT_PORTS["postgresql"]
    if not value.isdigit() or not 0 < int(value) < 65536:
        raise UnreadableEndpoint(f"port={value[:20]!r} is not a port number")
    return int(value)
