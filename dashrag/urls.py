"""Secrets inside URLs: found, refused where a config names a URL, hidden wherever one is shown or saved.

A URL carries a secret in two places: the userinfo (``scheme://user:password@host``) and the
query string (``?password=...``, ``?api_key=...``, ``?token=...``: libpq, SQLAlchemy and many
HTTP APIs read them there). A config holds secrets only by reference (docs/design.md), so a URL
parameter with either is refused (:func:`url_secret_problem`, checked for every parameter declared
an endpoint, core/params.py); a URL given some other way (``--store``) is shown and saved only
through :func:`hide_url_secrets`. Pure text, no parsing library beyond ``urllib.parse``: it must
never raise, a malformed URL (an unclosed IPv6 bracket) included.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

#: Query parameter names that hold secrets (case-insensitive): libpq's password and sslpassword,
#: and the usual API key and token spellings.
SECRET_QUERY_KEY = re.compile(
    r"^(.*pass(word|wd)?|pwd|.*secret.*|.*token.*|.*api[_-]?key|key|access[_-]?key|auth(orization)?|"
    r"credentials?|sig(nature)?)$", re.IGNORECASE)
HIDDEN = "***"


def _secret_keys(query: str) -> list[str]:
    return [key for key, _ in parse_qsl(query, keep_blank_values=True) if SECRET_QUERY_KEY.match(key)]


def url_secret_problem(url: str) -> str | None:
    """Why ``url`` may not stand in a config (a password in its userinfo or a secret in its query), or None."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return None  # not a URL this can read: whatever parses the value reports it
    if password:
        return ("the URL holds a password (user:password@); put the secret in an environment variable "
                "and reference it with the component's credential")
    keys = _secret_keys(parts.query)
    if keys:
        return (f"the URL's query holds a secret ({keys[0]}=...); put it in an environment variable "
                "and reference it with the component's credential")
    return None


def hide_url_secrets(url: str) -> str:
    """``url`` with the userinfo's password and every secret query value replaced by ``***``."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # unreadable: keep only what follows the last '@' and drop any query
        return url.rsplit("@", 1)[-1].split("?", 1)[0]
    keys = _secret_keys(parts.query)
    if password is None and not keys:
        return url  # nothing to hide: the text as given (urlunsplit would turn sqlite:////a into sqlite://a)
    netloc = parts.netloc
    if password is not None:
        userinfo, host = netloc.rsplit("@", 1)
        netloc = f"{userinfo.split(':', 1)[0]}:{HIDDEN}@{host}"
    query = parts.query
    if keys:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, HIDDEN if SECRET_QUERY_KEY.match(k) else v) for k, v in pairs], quote_via=quote,
                          safe="*")
    return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "") + (
        f"#{parts.fragment}" if parts.fragment else "")
