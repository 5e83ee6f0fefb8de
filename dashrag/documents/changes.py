"""How a corpus changes: documents added, replaced, skipped and removed, and the chunk set that results.

A living tree (docs/updating.md) changes by one :class:`CorpusChange` at a time. The
rule that makes an update *exact* (every query answers as a tree built from scratch on
the resulting documents) is the order of the result: the kept documents in their old
order, then the added and replaced ones in the order given. Kept chunks keep their ids;
new chunks get ids above every old one. So the kept chunks are the first rows of the
new chunk set, in their old order, and the new chunks follow: a rebuild on the
resulting documents has chunks in the same relative order (its ids are 0..n-1, ours
have gaps), so every score and every tie break is the same.

A document whose id is in the tree is *replaced* when its content (title, text,
metadata but its ``modified`` time: :func:`document_digest`) changed and *skipped* when it is identical.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from dashrag.documents.chunk_set import ChunkSet
from dashrag.documents.model import Chunk, SourceDocument
from dashrag.errors import ConfigError, excerpt

ChunkDocuments = Callable[[Sequence[SourceDocument]], list[Chunk]]  # a chunker's ``chunk``


WHEN_READ = "modified"  # a file's mtime (documents/folder.py): when it was written, not what it holds


def document_digest(document: SourceDocument) -> str:
    """sha256 of what a document contributes to a tree: its title, text and metadata (any JSON values, categories
    included; not where it was read), so a changed metadata value is a replace.

    Left out: the ``modified`` field, so a file copied or touched but not changed is *skipped*, not re-indexed
    (its stored ``modified`` stays the one of the content indexed; docs/documents.md)."""
    metadata = {k: v for k, v in document.metadata.items() if k != WHEN_READ}
    record = [document.title, document.text, metadata]
    return hashlib.sha256(json.dumps(record, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class UpdateReport:
    """What one update did, by document id."""

    added: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.added or self.replaced or self.removed)

    def counts(self) -> dict[str, int]:
        return {"added": len(self.added), "replaced": len(self.replaced), "skipped": len(self.skipped),
                "removed": len(self.removed)}


@dataclass(frozen=True)
class CorpusChange:
    """One change of a tree's corpus. ``new`` starts with the kept chunks (``old`` rows ``kept_rows``, in
    order) and ends with ``added`` (the chunks of the added and replaced documents), so a node's state per
    row becomes ``concatenate(state[kept_rows], state_of(added))``. The store changes by as much: the
    documents ``gone`` (removed and replaced) leave it, ``changed`` (added and replaced) join it at the end."""

    old: ChunkSet
    new: ChunkSet
    kept_rows: np.ndarray
    added: tuple[Chunk, ...]
    gone: tuple[str, ...]
    changed: tuple[SourceDocument, ...]
    report: UpdateReport

    @property
    def added_texts(self) -> list[str]:
        return [c.text for c in self.added]


def _checked_ids(documents: Sequence[SourceDocument]) -> None:
    seen: set[str] = set()
    for doc in documents:
        if not isinstance(doc, SourceDocument):
            raise ConfigError(f"documents to add must be SourceDocuments, got {type(doc).__name__}")
        if not isinstance(doc.id, str) or not doc.id.strip():
            where = f" ({doc.source})" if doc.source else ""
            raise ConfigError(f"a document to add has no id{where}: every document needs one to be replaced "
                              "or removed later")
        if doc.id in seen:
            raise ConfigError(f"document id {excerpt(doc.id)} is added twice")
        seen.add(doc.id)


def named_ids(add: Sequence[SourceDocument], remove: Sequence[str]) -> list[str]:
    """The document ids a change names: those of the stored documents :func:`plan_change` needs to see."""
    return list(dict.fromkeys([d.id for d in add if isinstance(d, SourceDocument)] + [str(i) for i in remove]))


def plan_change(stored: Mapping[str, SourceDocument], chunks: ChunkSet, add: Sequence[SourceDocument],
                remove: Sequence[str], chunk: ChunkDocuments) -> CorpusChange:
    """The change that adds ``add`` to and removes ``remove`` from the corpus chunked as ``chunks``, whose
    stored documents among the ids the change names (:func:`named_ids`) are ``stored``: the change costs what
    it names, not the corpus. ``chunk`` cuts the new documents (the tree's own chunker). Unknown ids to remove,
    a document without an id, an id added twice or both added and removed: a ConfigError, before anything is
    done."""
    _checked_ids(add)
    by_id = stored
    removing = list(dict.fromkeys(str(i) for i in remove))
    unknown = [i for i in removing if i not in by_id]
    if unknown:
        shown = ", ".join(excerpt(i) for i in unknown[:10]) + (" ..." if len(unknown) > 10 else "")
        raise ConfigError(f"cannot remove unknown document id(s): {shown} (the tree has "
                          f"{len(chunks.document_ids)} documents)")
    both = [d.id for d in add if d.id in set(removing)]
    if both:
        raise ConfigError(f"document id {excerpt(both[0])} is both added and removed; do one or the other")
    added: list[str] = []
    replaced: list[str] = []
    skipped: list[str] = []
    changed: list[SourceDocument] = []
    for doc in add:
        old = by_id.get(doc.id)
        if old is not None and document_digest(old) == document_digest(doc):
            skipped.append(doc.id)
            continue
        (added if old is None else replaced).append(doc.id)
        changed.append(doc)
    gone = set(removing) | set(replaced)
    kept_rows = chunks.rows_without(gone)
    next_id = int(chunks.ids[-1]) + 1  # ids ascend: above every old id, so an engine never sees a removed id again
    new_chunks = tuple(replace(c, id=next_id + i) for i, c in enumerate(chunk(changed)))
    report = UpdateReport(tuple(added), tuple(replaced), tuple(skipped), tuple(removing))
    return CorpusChange(chunks, chunks.changed(kept_rows, new_chunks), kept_rows, new_chunks,
                        tuple(removing) + tuple(replaced), tuple(changed), report)
