"""SQLAlchemy 2.x tables: documents, chunks, retriever records.

A document's ``metadata`` (any JSON object) is its own column; ``categories`` (its string and
list-of-string fields) is still written beside it, so code that predates metadata reads a
new store, and a store written before metadata existed (no ``metadata`` column) is read
through its categories (``store.py``, ``sqlite_reader.py``; no migration is needed).

Plain portable types only (no SQLite-specific SQL), so the same models run on
SQLite by default and on PostgreSQL where several processes share a store.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import JSON, DateTime, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class DocumentRow(Base):
    __tablename__ = "documents"

    id: Mapped[str] = mapped_column(String(512), primary_key=True)
    ordinal: Mapped[int] = mapped_column(Integer, index=True)  # corpus order
    title: Mapped[str] = mapped_column(Text, default="")
    text: Mapped[str] = mapped_column(Text)
    categories: Mapped[dict] = mapped_column(JSON, default=dict)
    metadata_: Mapped[dict | None] = mapped_column("metadata", JSON, nullable=True, default=dict)
    source: Mapped[str] = mapped_column(Text, default="")


class ChunkRow(Base):
    __tablename__ = "chunks"
    __table_args__ = (UniqueConstraint("document_id", "position"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    document_id: Mapped[str] = mapped_column(ForeignKey("documents.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    start: Mapped[int] = mapped_column(Integer)
    end: Mapped[int] = mapped_column(Integer)
    # the chunk's own fields (page, section), beside its document's metadata; null for most chunks. A store
    # written before chunks had fields has no such column: its chunks have none (store.py, sqlite_reader.py)
    fields: Mapped[dict | None] = mapped_column("fields", JSON(none_as_null=True), nullable=True, default=None)


class RetrieverRecord(Base):
    __tablename__ = "retrievers"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(256), index=True)
    config: Mapped[dict] = mapped_column(JSON)
    folder: Mapped[str] = mapped_column(Text)
    corpus_fingerprint: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=lambda: datetime.now(UTC))


class StoreInfo(Base):
    """One row: which corpus this store holds (its chunk-set fingerprint)."""

    __tablename__ = "store_info"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)
