"""The chunk set's columns saved in a snapshot, so that a load maps them instead of making them from the store's rows.

Why: a load read every chunk's row from the SQLite store (id, document, position, offsets) and every document's
metadata, one Python row each, and made the chunk set's arrays from them: at a million documents most of a load's
15 s and of an update's load (docs/scale.md, "Chunk columns in the snapshot"). A save now writes those arrays
beside the nodes' state, in the same snapshot, and a load maps them (``numpy.load(mmap_mode="r")``); the texts
stay in the store, read when shown, as before.

One source of truth. The store is what the corpus is; the columns are a copy of the chunk set the same save
fingerprinted, written into the snapshot that its manifest names (checked by size and checksum as every state
file). A load uses them only where it trusts the manifest's fingerprint for the store without re-hashing it (the
store file inside the folder, as the save recorded it: :func:`dashrag.core.saved_tree.load`); whatever sends a
load back to hashing the store (a store copied, edited or replaced, an explicit ``store_url``, ``full_check``)
sends it back to the store's rows too, and ``full_check`` compares the columns with those rows. A folder saved
without columns (before they existed, or with its store outside the folder) reads the rows, as it did.

Layout (``snapshot-<id>/chunks/``): ``columns.npy``, int64 of shape (5, chunks): the chunk ids (ascending), each
chunk's document number, position, start and end; ``documents.json`` (:class:`SavedDocuments`): the document ids
by number (a JSON list: ids are text, which ``.npy`` holds only as fixed-width or pickled arrays), the metadata of
the documents that have any and the chunks' own fields, by number and chunk id.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from dashrag.core.persistence import CHUNK_COLUMNS_FOLDER, atomic_write_text, load_array, save_array
from dashrag.documents.chunk_set import ChunkSet, ChunkTexts, HeldTexts, SparseMetadata
from dashrag.errors import PersistenceError

FOLDER = CHUNK_COLUMNS_FOLDER  # inside a snapshot, named by the manifest's ``chunk_columns``
COLUMNS_FILE = "columns.npy"
DOCUMENTS_FILE = "documents.json"
COLUMN_COUNT = 5  # ids, document numbers, positions, starts, ends: ChunkSet.column_arrays's rows


class SavedDocuments(BaseModel):
    """``documents.json``: what the columns' numbers refer to (the one schema its writer and its reader follow)."""

    model_config = ConfigDict(extra="forbid")

    ids: list[str]
    metadata: dict[int, dict[str, Any]]
    fields: dict[int, dict[str, Any]]


def write_chunk_columns(chunks: ChunkSet, snapshot: Path) -> None:
    """Write ``chunks``'s columns into the snapshot being written (its ``chunks/`` folder)."""
    folder = snapshot / FOLDER
    folder.mkdir()
    save_array(folder / COLUMNS_FILE, chunks.column_arrays())
    metadata = chunks.document_metadata
    listed = metadata.listed() if isinstance(metadata, SparseMetadata) else {n: m for n, m in enumerate(metadata) if m}
    documents = SavedDocuments(ids=chunks.document_ids, metadata={n: dict(m) for n, m in listed.items()},
                               fields={i: dict(f) for i, f in chunks.chunk_fields.items() if f})
    atomic_write_text(folder / DOCUMENTS_FILE, documents.model_dump_json())


def read_chunk_columns(snapshot: Path, texts: ChunkTexts, fingerprint: str, scheme: int) -> ChunkSet:
    """The chunk set whose columns the snapshot holds, mapped, its texts read from ``texts`` when shown, its
    fingerprint the manifest's (``scheme``: the folder's, ``documents/fingerprint.py``)."""
    folder = snapshot / FOLDER
    columns = np.asarray(load_array(folder / COLUMNS_FILE, mmap=True))  # a plain view: no Python per slice
    if columns.dtype != np.int64 or columns.ndim != 2 or columns.shape[0] != COLUMN_COUNT or not columns.shape[1]:
        raise PersistenceError(f"{folder / COLUMNS_FILE}: not the chunk columns ({COLUMN_COUNT} rows of int64)")
    try:
        documents = SavedDocuments.model_validate_json((folder / DOCUMENTS_FILE).read_bytes())
    except FileNotFoundError:
        raise PersistenceError(f"{folder / DOCUMENTS_FILE}: missing") from None
    except ValidationError as exc:
        raise PersistenceError(f"{folder / DOCUMENTS_FILE}: not the chunks' documents "
                               f"({exc.error_count()} problem(s), first: {exc.errors()[0]['msg']})") from None
    ids, document_index, positions, starts, ends = columns
    count = len(documents.ids)
    if int(document_index.min()) < 0 or int(document_index.max()) >= count:
        raise PersistenceError(f"{folder}: the chunk columns name documents that {DOCUMENTS_FILE} lacks")
    return ChunkSet.from_arrays(ids, documents.ids, document_index, positions, starts, ends,
                                SparseMetadata(count, documents.metadata), documents.fields, texts, fingerprint,
                                scheme)


def check_columns_agree(snapshot: Path, read: ChunkSet) -> None:
    """Refuse a snapshot whose columns are not those of the chunk set ``read`` from the store (a full check)."""
    mapped = read_chunk_columns(snapshot, HeldTexts({}), read.fingerprint, read.fingerprint_scheme)
    same = (np.array_equal(mapped.column_arrays(), read.column_arrays()) and mapped.document_ids == read.document_ids
            and list(mapped.document_metadata) == list(read.document_metadata)
            and dict(mapped.chunk_fields) == dict(read.chunk_fields))
    if not same:
        raise PersistenceError(f"{snapshot / FOLDER}: the saved chunk columns disagree with the store's chunks "
                               "(the folder was edited); save the tree again from its store, or rebuild it")
