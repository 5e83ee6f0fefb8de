"""What the factory hands every node after building it: the infrastructure it runs on.

Building a tree is pure (validate, construct); only ``inject_infra`` connects it to
a corpus and a working folder. Keeping that separate is what lets the same JSON be
validated in a UI, built in a test, and fitted or loaded in a service.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dashrag.documents.chunk_set import ChunkSet


@dataclass(frozen=True)
class Infra:
    """``env_path``: a working folder for caches (embeddings); ``chunks``: the corpus's chunks;
    ``store_url``: the SQL store those chunks were read from or written to (None: in memory only)."""

    env_path: Path
    chunks: ChunkSet
    store_url: str | None = None
