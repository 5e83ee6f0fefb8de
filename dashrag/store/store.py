"""The document store: one corpus's documents and chunks, plus retriever records.

A store is addressed by a SQLAlchemy URL (``sqlite:///path`` by default, any
other database SQLAlchemy speaks otherwise). ``write_corpus`` fills an *empty*
store in one transaction, so a failure leaves nothing half-written; a saved
retriever then reads its chunks back from here instead of re-chunking.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

from sqlalchemy import create_engine, func, insert, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from dashrag.documents.chunk_set import ChunkSet
from dashrag.documents.model import Chunk, SourceDocument
from dashrag.errors import PersistenceError
from dashrag.store.models import Base, ChunkRow, DocumentRow, RetrieverRecord, StoreInfo


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"


class Store:
    def __init__(self, url: str):
        self.url = url
        try:
            self.engine = create_engine(url)
            Base.metadata.create_all(self.engine)
        except SQLAlchemyError as exc:
            raise PersistenceError(f"cannot open the store {self.display_url}: {exc.__class__.__name__}") from None

    @property
    def display_url(self) -> str:
        """The URL with any password hidden: safe for messages and logs."""
        return self.engine.url.render_as_string(hide_password=True) if hasattr(self, "engine") else "<store>"

    def close(self) -> None:
        self.engine.dispose()

    def is_empty(self) -> bool:
        with Session(self.engine) as session:
            return session.scalar(select(func.count()).select_from(ChunkRow)) == 0

    def write_corpus(self, documents: Sequence[SourceDocument], chunks: Iterable[Chunk], fingerprint: str) -> None:
        if not self.is_empty():
            raise PersistenceError(f"the store {self.display_url} already holds a corpus")
        documents_rows = [{"id": d.id, "ordinal": i, "title": d.title, "text": d.text,
                           "categories": {k: list(v) for k, v in d.metadata.items()}, "source": d.source}
                          for i, d in enumerate(documents)]
        chunk_rows = [{"id": c.id, "document_id": c.document_id, "position": c.position, "text": c.text,
                       "start": c.start, "end": c.end} for c in chunks]
        with Session(self.engine) as session, session.begin():  # one transaction, bulk inserts
            session.execute(insert(DocumentRow), documents_rows)
            session.execute(insert(ChunkRow), chunk_rows)
            session.add(StoreInfo(key="fingerprint", value=fingerprint))

    def read_documents(self) -> list[SourceDocument]:
        with Session(self.engine) as session:
            rows = session.scalars(select(DocumentRow).order_by(DocumentRow.ordinal)).all()
            return [SourceDocument(id=r.id, title=r.title, text=r.text,
                                   metadata={k: tuple(v) for k, v in (r.categories or {}).items()}, source=r.source)
                    for r in rows]

    def read_chunk_set(self) -> ChunkSet:
        with Session(self.engine) as session:
            categories = {d: {k: tuple(v) for k, v in (c or {}).items()}
                          for d, c in session.execute(select(DocumentRow.id, DocumentRow.categories))}
            rows = session.execute(select(ChunkRow.id, ChunkRow.document_id, ChunkRow.position, ChunkRow.text,
                                          ChunkRow.start, ChunkRow.end).order_by(ChunkRow.id)).all()
        if not rows:
            raise PersistenceError(f"the store {self.display_url} holds no chunks")
        return ChunkSet(Chunk(id=r[0], document_id=r[1], position=r[2], text=r[3], start=r[4], end=r[5],
                              metadata=categories.get(r[1], {})) for r in rows)

    def add_retriever_record(self, name: str, config: dict, folder: str, fingerprint: str) -> int:
        """Record a saved retriever; returns the record's id (what ``Retriever.set_id`` ties a tree to)."""
        with Session(self.engine) as session, session.begin():
            record = RetrieverRecord(name=name, config=config, folder=folder, corpus_fingerprint=fingerprint)
            session.add(record)
            session.flush()
            return int(record.id)

    def retriever_record(self, record_id: int) -> RetrieverRecord | None:
        with Session(self.engine) as session:
            return session.get(RetrieverRecord, record_id)

    def retriever_records(self) -> list[RetrieverRecord]:
        with Session(self.engine) as session:
            return list(session.scalars(select(RetrieverRecord).order_by(RetrieverRecord.id)).all())
