"""Fixed-size character windows: the simplest chunker, predictable for any text."""

from __future__ import annotations

from dashrag.chunkers.base import Chunker, SizedChunkParams, sliding_windows
from dashrag.core.registry import register


class CharacterChunkParams(SizedChunkParams):
    """Sizes in characters."""


@register(kind="chunker", icon="Scissors", category="chunking",
          en=("Character chunker", "Cuts text into windows of a fixed number of characters."),
          es=("Fragmentador por caracteres", "Corta el texto en ventanas de un número fijo de caracteres."),
          representation={"en": "{chunk_size} chars, overlap {chunk_overlap}",
                           "es": "{chunk_size} caracteres, solapamiento {chunk_overlap}"})
class CharacterChunker(Chunker[CharacterChunkParams]):
    def spans(self, text: str) -> list[tuple[int, int]]:
        return sliding_windows(len(text), self.params.chunk_size, self.params.chunk_overlap)
