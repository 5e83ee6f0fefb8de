"""Service settings: environment variables with the reference's ``RAG_*`` names, a settings file, flags.

Precedence, lowest first: the defaults below, the reference's shared fallbacks and unprefixed variables
(``LLM_ENDPOINT``, ``LLM_TIMEOUT_SEC``, ``EMBED_URL``, ``EMBEDDING_TIMEOUT_SEC``, ``QDRANT_URL``,
``LOG_LEVEL``, ``LOG_FORMAT``: :data:`REFERENCE_ENV`) and
the names used before the reference's (``RAG_LLM_TIMEOUT``, ...), the environment
(``RAG_PORT``, ``RAG_RETRIEVAL_SCORE_FLOOR``, ...: the field name upper-cased behind
``RAG_``), a settings file (JSON or TOML, the same field names), then command-line flags.
The field names are the reference's (``llm_timeout_sec``, ``embedding_timeout_sec``);
the names they had before still work everywhere (:data:`RENAMED`), so settings files
written for an older dashrag keep loading.

Secrets are never settings: ``llm_api_key_var``, ``llm_api_token_var``,
``reranker_api_key_var``, ``qdrant_api_key_var`` and ``auth_token_var`` hold the
*names* of the environment variables that hold them, read when a request needs them;
their defaults are the reference's variables (``RAG_LLM_API_TOKEN``, ``QDRANT_API_KEY``),
so setting those variables works as in the reference; the rewrite's token falls back to the shared
``LLM_API_TOKEN`` as the reference's does (:meth:`ServiceSettings.llm_token_vars`), and an empty
``QDRANT_API_KEY`` means no key.

Why not pydantic's ``AliasChoices`` for the old and unprefixed names: an alias is also
looked up in the environment without the ``RAG_`` prefix and case-insensitively, so
``llm_timeout`` would read a variable ``LLM_TIMEOUT`` nobody meant for this service;
two explicit tables say exactly which names are read where.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, SettingsError

from dashrag.errors import ConfigError, excerpt
from dashrag.llm.credential import ENV_VAR_PATTERN
from dashrag.service.trust import parse_allowed_endpoint
from dashrag.urls import url_secret_problem

ComponentConfig = dict[str, Any]

RENAMED: dict[str, str] = {  # a name used before -> the reference's, in settings files, flags and arguments
    "llm_timeout": "llm_timeout_sec",
    "reranker_timeout": "reranker_timeout_sec",
    "build_timeout_s": "build_timeout_sec",
}
FORMER_ENV: dict[str, tuple[str, ...]] = {new: (f"RAG_{old.upper()}",) for old, new in RENAMED.items()}
SHARED_ENV: dict[str, tuple[str, ...]] = {  # the reference's shared fallbacks of RAG_ names, and unprefixed names
    "llm_endpoint": ("LLM_ENDPOINT",),
    "llm_timeout_sec": ("LLM_TIMEOUT_SEC",),
    "embed_url": ("EMBED_URL",),
    "embedding_timeout_sec": ("EMBEDDING_TIMEOUT_SEC",),
    "qdrant": ("QDRANT_URL",),
    "log_level": ("LOG_LEVEL",),
    "log_format": ("LOG_FORMAT",),
}
REFERENCE_ENV: dict[str, tuple[str, ...]] = {  # field -> variables read when its RAG_ variable is unset, in order:
    field: FORMER_ENV.get(field, ()) + SHARED_ENV.get(field, ())  # a former RAG_ name before the shared fallback
    for field in {**FORMER_ENV, **SHARED_ENV}
}
#: read for the rewrite's bearer token when the variable ``llm_api_token_var`` names is unset (the reference's fallback)
SHARED_LLM_TOKEN_VAR = "LLM_API_TOKEN"


def canonical_names(values: dict[str, Any], where: str = "settings") -> dict[str, Any]:
    """``values`` with every old name replaced by the reference's; both names given is an error."""
    renamed = dict(values)
    for old, new in RENAMED.items():
        if old in renamed:
            if new in renamed:
                raise ConfigError(f"{where}: {old!r} and {new!r} are one setting ({old!r} is its former name); "
                                  f"give {new!r} only")
            renamed[new] = renamed.pop(old)
    return renamed


class RenamedInitSource(PydanticBaseSettingsSource):
    """The constructor's arguments (settings file and flags come that way) with the old names renamed."""

    def __init__(self, settings_cls: type[BaseSettings], inner: PydanticBaseSettingsSource):
        super().__init__(settings_cls)
        self.inner = inner

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return canonical_names(self.inner())


class ReferenceEnvSource(PydanticBaseSettingsSource):
    """:data:`REFERENCE_ENV`: the reference's unprefixed variables and the former ``RAG_`` names."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        found = {}
        for field, names in REFERENCE_ENV.items():
            value = next((os.environ[n] for n in names if os.environ.get(n)), None)
            if value is not None:
                found[field] = value
        return found


class ServiceSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAG_", extra="forbid", frozen=True)

    trees_dir: Path | None = Field(None, description="Folder whose sub-folders are saved trees (collections).")
    data_root: Path | None = Field(None, description="POST /trees may read corpora only under this folder.")
    tree_stores: dict[str, str] = Field(default_factory=dict, description=(
        "The store of each tree indexed with --store, by tree name: an SQLAlchemy URL without a password (the "
        "driver reads it from the environment, PGPASSWORD or ~/.pgpass). Such a tree is loaded, queried and "
        "updated on it (docs/updating.md, 'On an external store'); a saved folder never names one itself."))
    cache_dir: Path | None = Field(None, description="Embedding cache shared by tree builds.")
    host: str = "127.0.0.1"
    port: int = Field(8051, ge=0, le=65535)
    retrieval_score_floor: float = Field(0.3, ge=0, le=1)
    confidence_threshold: float = Field(0.5)
    budget_simple: int = Field(512, ge=1)
    budget_medium: int = Field(1024, ge=1)
    budget_complex: int = Field(2048, ge=1)
    llm_endpoint: str | None = Field(None, description=(
        "The reference's upstream rewrite endpoint (RAG_LLM_ENDPOINT or LLM_ENDPOINT): POST {prompt, system_prompt, "
        "temperature, max_tokens, stream: false}, answered {text}; it wins over llm_model and llm."))
    llm_api_token_var: str = Field("RAG_LLM_API_TOKEN", pattern=ENV_VAR_PATTERN, description=(
        "Name of the env variable holding llm_endpoint's bearer token (the reference's RAG_LLM_API_TOKEN)."))
    llm_model: str | None = Field(None, description="litellm model of the query rewrite; unset: no rewrite.")
    llm_api_base: str | None = Field(None, description="OpenAI-compatible server of the rewrite model.")
    llm_api_key_var: str = Field("RAG_LLM_API_KEY", pattern=ENV_VAR_PATTERN)
    llm_timeout_sec: float = Field(30.0, gt=0, description="Seconds the rewrite may take before falling back.")
    llm: ComponentConfig | None = Field(None, description="The rewrite LLM as a component config (instead of llm_*).")
    rewrite_enabled: bool = Field(True, description="False turns the rewrite off even when an LLM is configured.")
    rewrite_temperature: float = Field(0.0, ge=0, le=2, description="Temperature of the rewrite call.")
    rewrite_max_tokens: int = Field(128, ge=1, le=4096, description="Longest rewrite, in tokens.")
    rewrite_system_prompt: str | None = Field(None, description="The rewrite's system prompt (default: the built-in).")
    embed_url: str | None = Field(None, description=(
        "A Text Embeddings Inference server (POST /embed) that embeds the queries of the Qdrant collections "
        "instead of qdrant_embedding."))
    embedding_timeout_sec: float = Field(10.0, gt=0, description="Seconds per /embed request.")
    reranker_url: str | None = Field(None, description="Base URL of a TEI-style /rerank server.")
    reranker_api_key_var: str = Field("RAG_RERANKER_API_KEY", pattern=ENV_VAR_PATTERN)
    reranker_timeout_sec: float = Field(10.0, gt=0, description="Seconds per rerank request.")
    reranker: ComponentConfig | None = Field(None, description="A reranker component config (HttpReranker, ...).")
    cors_origins: list[str] = Field(default_factory=lambda: ["*"], description=(
        "Origins whose pages may read the answers (CORS). Routes that change state (POST /trees, reload, "
        "delete) answer a browser only from the service's own page or an origin listed here by name, never '*'."))
    allow_credentials: list[Annotated[str, Field(pattern=ENV_VAR_PATTERN)]] = Field(default_factory=list, description=(
        "Environment variables a config sent over HTTP may name as a credential (--allow-credential); none by "
        "default."))
    allow_endpoints: list[str] = Field(default_factory=list, description=(
        "URL prefixes a config sent over HTTP may send requests to (--allow-endpoint); none by default."))
    auth_token_var: str | None = Field(None, pattern=ENV_VAR_PATTERN,
                                       description="Name of the env variable holding the bearer token; unset: no auth.")
    max_request_bytes: int = Field(1 << 20, ge=1024, description="Largest JSON request body.")
    max_upload_bytes: int = Field(200 << 20, ge=1024, description="Largest multipart upload (POST /trees).")
    build_workers: int = Field(1, ge=1, description="Tree builds running at once.")
    max_pending_builds: int = Field(4, ge=1, description=(
        "Jobs queued or running at once, of every kind (builds, document additions and removals); 429 beyond it."))
    max_queued_upload_bytes: int = Field(400 << 20, ge=1024, description=(
        "Uploaded corpora waiting on disk for their jobs, in bytes; an upload beyond it is a 429 (one upload alone "
        "is bounded by max_upload_bytes)."))
    build_timeout_sec: float | None = Field(3600.0, gt=0, description=(
        "Seconds a build or document-update job may run; its worker process is killed then, whatever it is "
        "doing (None: no limit)."))
    build_memory_mb: int | None = Field(8192, ge=256, description=(
        "Address space in MiB a build or document-update job's worker process may take (RLIMIT_AS; None: no "
        "limit). Beyond it the job fails with 'over the memory limit'."))
    blas_threads: int = Field(1, ge=0, description=(
        "Threads of numpy's BLAS (vector products) in `dashrag serve`; 0: the library's own, one per core."))
    switch_interval_ms: float = Field(1.0, gt=0, le=100, description=(
        "The interpreter's switch interval in `dashrag serve`, in ms: the longest a request's event loop waits "
        "for the GIL behind a running query before it is handed over (Python's default is 5)."))
    qdrant: str | None = Field(None, description=(
        "Serve Qdrant collections directly: a server URL (http://host:6333) or an embedded storage folder."))
    qdrant_api_key_var: str | None = Field("QDRANT_API_KEY", pattern=ENV_VAR_PATTERN, description=(
        "Name of the env variable holding the Qdrant API key (the reference's QDRANT_API_KEY); unset: no key."))
    qdrant_embedding: ComponentConfig | None = Field(None, description=(
        "The embedding component that embeds queries for the Qdrant collections (default MiniLMEmbedding)."))
    qdrant_collections: list[str] | None = Field(None, description=(
        "Which Qdrant collections to serve (default: every one, listed when the service starts)."))
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = Field("INFO", description=(
        "RAG_LOG_LEVEL or LOG_LEVEL (any case)."))
    log_format: Literal["json", "text"] = Field("json", description=(
        "RAG_LOG_FORMAT or LOG_FORMAT: one JSON object a line, or plain text lines."))

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments (renamed), ``RAG_*`` variables, then the reference's and the former variables."""
        return RenamedInitSource(settings_cls, init_settings), env_settings, ReferenceEnvSource(settings_cls)

    @field_validator("log_level", "log_format", mode="before")
    @classmethod
    def _any_case(cls, value: Any, info: Any) -> Any:
        if not isinstance(value, str):
            return value
        return value.upper() if info.field_name == "log_level" else value.lower()

    @field_validator("tree_stores")
    @classmethod
    def _stores_hold_no_secret(cls, stores: dict[str, str]) -> dict[str, str]:
        for name, url in stores.items():
            if url_secret_problem(url) is not None:
                raise ValueError(f"the store URL of tree {excerpt(name)} holds a secret (a password or a secret "
                                 "query field); leave it out: the driver reads it from PGPASSWORD or ~/.pgpass")
        return stores

    @field_validator("allow_endpoints")
    @classmethod
    def _endpoints_are_urls(cls, urls: list[str]) -> list[str]:
        return [parse_allowed_endpoint(url) for url in urls]

    def llm_token_vars(self) -> tuple[str, ...]:
        """The variables the rewrite's bearer token is read from, the first one set winning."""
        return (self.llm_api_token_var, SHARED_LLM_TOKEN_VAR)

    def budgets(self) -> dict[str, int]:
        return {"simple": self.budget_simple, "medium": self.budget_medium, "complex": self.budget_complex}


def read_settings_file(path: Path) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the settings file ({exc.strerror})") from None
    try:
        data = tomllib.loads(text) if Path(path).suffix == ".toml" else json.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not valid {'TOML' if Path(path).suffix == '.toml' else 'JSON'} ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the settings file must hold an object")
    return data


def load_settings(settings_file: Path | None = None, **overrides: Any) -> ServiceSettings:
    """Defaults < environment < ``settings_file`` < ``overrides`` (flags; None means not given)."""
    values = canonical_names(read_settings_file(settings_file), str(settings_file)) if settings_file is not None else {}
    values.update(canonical_names({k: v for k, v in overrides.items() if v is not None}, "flags"))
    try:
        return ServiceSettings(**values)
    except SettingsError as exc:  # an environment variable of a list or object setting that is not JSON
        raise ConfigError(f"{exc}: a list or object setting from the environment is JSON, e.g. "
                          "RAG_CORS_ORIGINS='[\"https://app.example\"]'") from None
    except ValidationError as exc:
        where = str(settings_file) if settings_file else "settings"
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{where}: {problems}") from None
