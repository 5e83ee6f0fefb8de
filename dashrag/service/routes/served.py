"""Looking up what a request names, shared by the routes that build, update and learn from trees: the served tree
by its name, a corpus path under the data root. Each is an HTTP error a client can act on, never a traceback."""

from __future__ import annotations

from pathlib import Path

from fastapi import HTTPException
from fastapi.exceptions import RequestValidationError

from dashrag.errors import excerpt
from dashrag.service.collections import TreeCollection, UnavailableCollection
from dashrag.service.pipeline import StepFailure
from dashrag.service.state import Service


def served_tree(service: Service, name: str) -> TreeCollection:
    """The served tree ``name``: a 404 when there is none, the load step's failure when it is there but broken."""
    tree = service.registry.tree(name)
    unavailable = service.registry.get(name) if tree is None else None
    if isinstance(unavailable, UnavailableCollection):
        raise StepFailure("load", f"tree {name!r}: {unavailable.error}")
    if tree is None:
        raise HTTPException(404, f"no tree named {name!r}")
    return tree


def saved_tree(service: Service, name: str, step: str) -> Path:
    """The folder of the served tree ``name`` (:func:`served_tree`'s errors), for a route that changes or reads its
    saved folder: a 503 naming ``step`` when the service keeps no trees folder (``--trees``)."""
    if service.settings.trees_dir is None:
        raise HTTPException(503, f"{step}: the service has no trees folder (--trees)")
    served_tree(service, name)
    return service.registry.folder_of(name)


def corpus_under_root(service: Service, corpus_path: str) -> Path:
    """``corpus_path`` resolved under the data root (a 422 naming ``body.corpus_path`` otherwise): no client path
    reaches outside it."""
    root = service.settings.data_root
    if root is None:
        raise RequestValidationError([{"loc": ["body", "corpus_path"], "type": "value_error",
                                       "msg": "the service has no data root (--data-root): upload the corpus instead"}])
    path = _existing_under(Path(root), corpus_path)
    if path is None:
        raise RequestValidationError([{"loc": ["body", "corpus_path"], "type": "value_error",
                                       "msg": f"{excerpt(corpus_path)} is not a corpus under the data root"}])
    return path


def _existing_under(root: Path, relative: str) -> Path | None:
    """``root / relative`` resolved, when it exists inside ``root``; None otherwise, also for a name that is no
    file name (a NUL, more characters than the system takes), which the OS refuses with an error, not a 500."""
    if "\x00" in relative or len(relative) > 4096:
        return None
    try:
        path = (root / relative).resolve()
        return path if path.is_relative_to(root.resolve()) and path.exists() else None
    except (OSError, ValueError):
        return None


__all__ = ["corpus_under_root", "saved_tree", "served_tree"]
