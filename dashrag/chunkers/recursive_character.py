"""Recursive character chunking: cut at the largest natural boundary that fits.

Paragraphs first, then lines, sentences, words, and only as a last resort in the
middle of a word (LangChain's RecursiveCharacterTextSplitter, with offsets kept).
Small pieces are then packed greedily into chunks of at most ``chunk_size``
characters; each new chunk starts with the trailing pieces of the previous one
that fit in ``chunk_overlap``.
"""

from __future__ import annotations

from pydantic import Field

from dashrag.chunkers.base import Chunker, SizedChunkParams, sliding_windows
from dashrag.core.registry import register

Span = tuple[int, int]


class RecursiveCharacterChunkParams(SizedChunkParams):
    separators: list[str] = Field(default_factory=lambda: ["\n\n", "\n", ". ", " ", ""],
                                  description="Boundaries to cut at, largest first; '' cuts anywhere.")


def split_pieces(text: str, span: Span, separators: list[str], size: int) -> list[Span]:
    """Contiguous pieces covering ``span``, each at most ``size`` long, cut at the first separator that occurs."""
    start, end = span
    if end - start <= size:
        return [span]
    for i, sep in enumerate(separators):
        if sep == "":
            return [(start + a, start + b) for a, b in sliding_windows(end - start, size, 0)]
        if sep in text[start:end]:
            pieces, cursor = [], start
            while cursor < end:
                hit = text.find(sep, cursor, end)
                stop = end if hit < 0 else hit + len(sep)
                pieces.append((cursor, stop))
                cursor = stop
            out: list[Span] = []
            for piece in pieces:
                out.extend(
                    split_pieces(text, piece, separators[i + 1 :], size) if piece[1] - piece[0] > size else [piece]
                )
            return out
    return [(start + a, start + b) for a, b in sliding_windows(end - start, size, 0)]


def pack(pieces: list[Span], size: int, overlap: int) -> list[Span]:
    """Greedily join contiguous pieces into spans of at most ``size``, overlapping by whole pieces."""
    chunks: list[Span] = []
    current: list[Span] = []
    for piece in pieces:
        if current and piece[1] - current[0][0] > size:
            chunks.append((current[0][0], current[-1][1]))
            kept: list[Span] = []
            for prev in reversed(current):
                if current[-1][1] - prev[0] > overlap or piece[1] - prev[0] > size:
                    break
                kept.insert(0, prev)
            current = kept
        current.append(piece)
    if current:
        chunks.append((current[0][0], current[-1][1]))
    return chunks


@register(
    kind="chunker",
    icon="Scissors",
    category="chunking",
    en=("Recursive character chunker", "Cuts at paragraphs, then lines, sentences and words, up to a size."),
    es=("Fragmentador recursivo", "Corta en párrafos, luego líneas, frases y palabras, hasta un tamaño."),
    representation={
        "en": "≤{chunk_size} chars, overlap {chunk_overlap}",
        "es": "≤{chunk_size} caracteres, solapamiento {chunk_overlap}",
    },
)
class RecursiveCharacterChunker(Chunker[RecursiveCharacterChunkParams]):
    def spans(self, text: str) -> list[Span]:
        p = self.params
        return pack(split_pieces(text, (0, len(text)), p.separators, p.chunk_size), p.chunk_size, p.chunk_overlap)
