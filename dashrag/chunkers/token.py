"""Windows of a fixed number of words: chunk size stays stable across languages and formatting.

Words are maximal runs of non-space characters, so no tokenizer model is needed;
a chunk spans from its first word's start to its last word's end.
"""

from __future__ import annotations

import re

from pydantic import Field

from dashrag.chunkers.base import Chunker, SizedChunkParams, sliding_windows
from dashrag.core.registry import register

WORD = re.compile(r"\S+")


class TokenChunkParams(SizedChunkParams):
    chunk_size: int = Field(200, ge=1, le=1_000_000, description="Largest chunk, in words.")
    chunk_overlap: int = Field(20, ge=0, le=1_000_000, description="Words shared by consecutive chunks.")


@register(kind="chunker", icon="Scissors", category="chunking",
          en=("Token chunker", "Cuts text into windows of a fixed number of words."),
          es=("Fragmentador por tokens", "Corta el texto en ventanas de un número fijo de palabras."),
          representation={"en": "{chunk_size} words, overlap {chunk_overlap}",
                           "es": "{chunk_size} palabras, solapamiento {chunk_overlap}"})
class TokenChunker(Chunker[TokenChunkParams]):
    def spans(self, text: str) -> list[tuple[int, int]]:
        words = [m.span() for m in WORD.finditer(text)]
        return [(words[a][0], words[b - 1][1]) for a, b in
                sliding_windows(len(words), self.params.chunk_size, self.params.chunk_overlap)]
