"""A stable key for JSON-ready data: the embedding cache's keys and the engine indexes' identities use it."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def digest(data: Any) -> str:
    """sha256 of a canonical JSON rendering: the same data always gives the same key."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=True).encode("utf-8")).hexdigest()
