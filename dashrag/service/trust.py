"""The trust boundary for configs that arrive over HTTP (docs/security.md).

A tree config sent to ``POST /trees`` (or ``/trees/validate``) is the client's, and the server
runs it: with the server's environment, network and disk. So such a config may name only

* credentials (a variable's name, :attr:`ParamKind.CREDENTIAL_NAME`) the operator allowed
  (``--allow-credential NAME``): otherwise any client could have the server read
  ``RAG_LLM_API_KEY`` and send it as a bearer token to a URL of its choosing. An allowed one that a
  run of the tree needs (:attr:`DeclaredValue.required`) must also be set in the server's
  environment, so the tree fails here, before a build embeds a corpus, and not at its first request
  (whether a variable that is *not* allowed is set is never said: that is the server's business);
* endpoints (:attr:`ParamKind.ENDPOINT`) under a URL prefix the operator allowed
  (``--allow-endpoint URL``); an endpoint left unset that still reaches somewhere (an LLM
  without ``api_base`` calls its provider) must be named, so it can be checked;
* storage paths (:attr:`ParamKind.STORAGE_PATH`) inside the tree's own folder: relative,
  without ``..``;
* model folders (:attr:`ParamKind.MODEL_SOURCE` naming a folder) under the data root (the
  folder the operator already opened to clients for corpora); a model *name* is looked up
  offline and is fine.

None are allowed by default. The check walks the validated tree by kind
(:func:`dashrag.core.declared.declared_values`), so it covers every component, defaults
included (``HttpReranker``'s default credential is checked like a given one). Configs the
operator wrote (settings, trees on disk) are not checked: the operator is trusted. The same goes
for the service's own outbound URLs, which come from the operator's environment, never from a
request (``RAG_LLM_ENDPOINT`` / ``LLM_ENDPOINT``, ``RAG_EMBED_URL``, ``RAG_RERANKER_URL``,
``QDRANT_URL``): they are allowed endpoints by construction and need no ``--allow-endpoint``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from dashrag.core.declared import DeclaredValue, declared_values
from dashrag.core.params import ParamKind
from dashrag.core.validation import validate_and_transform
from dashrag.embeddings.model_source import looks_like_path
from dashrag.errors import ConfigError, ConfigIssue, excerpt
from dashrag.service.endpoints import Endpoint, UnreadableEndpoint, destinations

if TYPE_CHECKING:
    from dashrag.service.settings import ServiceSettings


def allowed_endpoint(url: str) -> Endpoint:
    """The one destination of a setting's ``--allow-endpoint`` value; raises ValueError saying why not."""
    try:
        found = destinations(url.strip())
    except UnreadableEndpoint as exc:
        raise ValueError(f"{excerpt(url)} is not an endpoint to allow: {exc} (https://rerank.internal:8080, "
                         "postgresql+psycopg://db.internal:5432/papers)") from None
    if len(found) != 1:
        raise ValueError(f"{excerpt(url)} names {len(found)} hosts; allow each one by itself")
    return found[0]


def parse_allowed_endpoint(url: str) -> str:
    """A setting's ``--allow-endpoint`` value, checked (:func:`allowed_endpoint`)."""
    allowed_endpoint(url)
    return url


@dataclass(frozen=True)
class ClientConfigPolicy:
    """What a config from a client may reach; built from the settings (none of anything by default)."""

    credentials: frozenset[str] = frozenset()
    endpoints: tuple[Endpoint, ...] = ()
    data_root: Path | None = None

    @classmethod
    def of(cls, allow_credentials: Sequence[str], allow_endpoints: Sequence[str], data_root: Path | None
           ) -> ClientConfigPolicy:
        endpoints = tuple(allowed_endpoint(u) for u in allow_endpoints)
        return cls(frozenset(allow_credentials), endpoints, data_root)

    def problems(self, tree: dict[str, Any], where: str = "") -> list[ConfigIssue]:
        """Every value of ``tree`` (validated, normalised) this policy refuses, at its path."""
        found = []
        for item in declared_values(tree):
            problem = CHECKS[item.kind](self, item)
            if problem:
                found.append(ConfigIssue(f"{where}.{item.path}" if where else item.path, problem))
        return found

    def check(self, tree: dict[str, Any]) -> None:
        """Raise a ConfigError listing what ``tree`` may not reach (see the module docstring)."""
        issues = self.problems(tree)
        if issues:
            raise ConfigError(issues)

    # -- one check per kind ------------------------------------------------------------
    def _credential(self, item: DeclaredValue) -> str | None:
        if item.value is None:
            return None
        if item.value not in self.credentials:
            allowed = ", ".join(sorted(self.credentials)) or "none"
            return (f"the credential variable {item.value!r} is not one the service allows configs sent over HTTP "
                    f"to use (allowed: {allowed}; the operator adds one with --allow-credential)")
        if item.required and not (os.environ.get(str(item.value)) or "").strip():
            return (f"the environment variable {item.value} is not set on the server, and this tree reads its key "
                    "on every request (the operator sets it before starting dashrag serve)")
        return None

    def _endpoint(self, item: DeclaredValue) -> str | None:
        if item.value is None:
            return None if item.unset_reaches is None else (
                f"unset, this reaches {item.unset_reaches}; a config sent over HTTP names its endpoint, "
                "one the service allows (--allow-endpoint)")
        try:
            reached = destinations(str(item.value), item.default_port)
        except UnreadableEndpoint as exc:
            return f"{excerpt(str(item.value))} cannot be allowed: {exc}"
        outside = [e for e in reached if not any(e.within(prefix) for prefix in self.endpoints)]
        if not outside:
            return None
        return (f"{excerpt(str(item.value))} reaches {outside[0].shown()}, which is not under an endpoint the "
                "service allows configs sent over HTTP to reach (the operator adds one with --allow-endpoint)")

    def _storage_path(self, item: DeclaredValue) -> str | None:
        value = str(item.value)
        path = PurePosixPath(value)
        if value == ":memory:" or (value and not path.is_absolute() and ".." not in path.parts
                                   and "\\" not in value and "\x00" not in value and not value.startswith("~")):
            return None
        return (f"{excerpt(value)} leaves the tree's folder; a config sent over HTTP names a path relative to it, "
                "without '..'")

    def _model_source(self, item: DeclaredValue) -> str | None:
        return self.model_folder_problem(item.value)

    def model_folder_problem(self, value: Any) -> str | None:
        """Why ``value`` names a model folder outside the data root, or None. Only the path is looked at
        (symlinks followed), never the folder's files."""
        if value is None:
            return None
        value = str(value)
        if not looks_like_path(value) and not os.path.isdir(value):
            return None  # a model's name, looked up offline (a package's copy or the local hub cache)
        root = self.data_root.resolve() if self.data_root is not None else None
        if root is not None and "\x00" not in value and Path(value).expanduser().resolve().is_relative_to(root):
            return None
        return (f"{excerpt(value)} is a folder outside the data root; a config sent over HTTP may read model "
                "folders only under the data root (--data-root)")

    def screen(self, path: str, kind: ParamKind, value: Any) -> str | None:
        """What validation may not even look at (:func:`validate_and_transform`'s ``screen``): a model folder
        outside the data root is refused before a component looks for its weights there."""
        return self.model_folder_problem(value) if kind is ParamKind.MODEL_SOURCE else None


def client_policy(settings: ServiceSettings) -> ClientConfigPolicy:
    return ClientConfigPolicy.of(settings.allow_credentials, settings.allow_endpoints, settings.data_root)


def validate_client_config(raw: Any, kind: str, settings: ServiceSettings) -> dict[str, Any]:
    """``raw`` validated and normalised, then held to the policy: one ConfigError listing every problem.
    Model folders are screened during validation, before anything looks inside them."""
    policy = client_policy(settings)
    tree = validate_and_transform(raw, kind, screen=policy.screen)
    policy.check(tree)
    return tree


CHECKS: dict[ParamKind, Callable[[ClientConfigPolicy, DeclaredValue], str | None]] = {
    ParamKind.CREDENTIAL_NAME: ClientConfigPolicy._credential,
    ParamKind.ENDPOINT: ClientConfigPolicy._endpoint,
    ParamKind.STORAGE_PATH: ClientConfigPolicy._storage_path,
    ParamKind.MODEL_SOURCE: ClientConfigPolicy._model_source,
}
