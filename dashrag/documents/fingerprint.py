"""The fingerprint of a chunk set: what a saved folder, a store and an engine's index are checked against.

Each chunk is one JSON line ``[id, document, position, start, end, text, categories(, others)(, own)]``
(:func:`chunk_lines`). Two schemes combine the lines, one per saved-folder format version
(``core/persistence.py``: the manifest's ``format_version`` says which one its ``corpus_fingerprint`` is):

* **sequential** (format 1): sha256 over the lines in chunk order. Changing one chunk means hashing
  every line again: an update of a large tree re-hashed its whole corpus (docs/scale.md).
* **additive** (format 2): the sum, modulo 2**256, of each line's sha256 read as an integer (a
  multiset hash: Clarke et al.'s MSet-Add-Hash). Order-independent, and a change moves it by the
  digests of the lines that left and joined it, so an update hashes only the chunks it changed
  (:func:`shifted`). Chunk ids are unique and every line holds its id, so no line is counted twice.
  It identifies a corpus (a folder saved for another one is refused); it is no signature: whoever can
  write a folder's store can write its manifest.

A chunk set fingerprinted one way is never compared with a fingerprint of the other: a folder of format 1
loads and is verified under the sequential scheme; the first update of it fingerprints the new chunk set
additively and saves format 2 (docs/scale.md, "Decisions").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from dashrag.documents.model import Metadata, normalise_categories

SEQUENTIAL = 1  # the schemes, named by the saved-folder format version whose manifests use them
ADDITIVE = 2
SCHEMES = (SEQUENTIAL, ADDITIVE)
_MODULUS = 1 << 256

FingerprintRow = tuple[int, str, int, str, int, int]  # id, document id, position, text, start, end


def chunk_lines(rows: Iterable[FingerprintRow], metadata_of: Callable[[str], Metadata],
                own_fields: Mapping[int, Metadata]) -> Iterator[bytes]:
    """One UTF-8 line per row (the same bytes as ``json.dumps`` of the record, written field by field, the
    metadata's part once per document). The metadata enters as its categories (what stores written before
    metadata held), then the other fields only where there are any, so a corpus of categories has the
    fingerprint it had; a chunk's own fields (page, section) end its line as ``{"chunk": [[name, value], ...]}``,
    only where it has any."""
    encode = json.JSONEncoder(ensure_ascii=False).encode
    tails: dict[str, str] = {}
    for i, document_id, position, text, start, end in rows:
        tail = tails.get(document_id)
        if tail is None:
            tail = tails[document_id] = _metadata_tail(encode, metadata_of(document_id))
        fields = f", {encode({'chunk': sorted(own_fields[i].items())})}" if i in own_fields else ""
        yield f"[{i}, {encode(document_id)}, {position}, {start}, {end}, {encode(text)}, {tail}{fields}]\n".encode()


def fingerprint(lines: Iterable[bytes], scheme: int) -> str:
    """The fingerprint of a chunk set's lines (in chunk order) under ``scheme``: 64 hexadecimal digits."""
    if scheme == SEQUENTIAL:
        digest = hashlib.sha256()
        for line in lines:
            digest.update(line)
        return digest.hexdigest()
    return _hex(_digest_sum(lines))


def shifted(fingerprint_: str, gone: Iterable[bytes], joined: Iterable[bytes]) -> str:
    """The additive fingerprint of a chunk set whose additive fingerprint is ``fingerprint_`` once the lines
    ``gone`` left it and ``joined`` joined it: what the change costs, not the corpus."""
    return _hex(int(fingerprint_, 16) - _digest_sum(gone) + _digest_sum(joined))


def scheme_of_format(format_version: int) -> int:
    """The fingerprint scheme of a manifest of this format version."""
    return SEQUENTIAL if format_version < ADDITIVE else ADDITIVE


def _digest_sum(lines: Iterable[bytes]) -> int:
    """The sum of the lines' sha256 digests as integers: each digest cut into eight 32-bit words, each word
    summed down the lines in uint64 (no overflow below 2**32 lines), the eight sums then put together (a
    quarter faster than a Python integer per line, docs/scale.md)."""
    sha256 = hashlib.sha256
    digests = b"".join([sha256(line).digest() for line in lines])
    words = np.frombuffer(digests, dtype=">u4").reshape(-1, 8).sum(axis=0, dtype=np.uint64)
    return sum(int(word) << (32 * (7 - j)) for j, word in enumerate(words.tolist()))


def _hex(total: int) -> str:
    return f"{total % _MODULUS:064x}"


def _metadata_tail(encode: Any, metadata: Metadata) -> str:
    """A line's metadata fields: the categories, then the other fields where there are any."""
    if not metadata:
        return "[]"
    categories = normalise_categories(metadata)
    tail = encode(sorted((k, list(v)) for k, v in categories.items()))
    others = {k: v for k, v in metadata.items() if k not in categories or not isinstance(v, (list, tuple))}
    return f"{tail}, {encode(sorted(others.items()))}" if others else tail
