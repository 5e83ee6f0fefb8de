"""One chunk per document: for short documents (abstracts, claims) that need no cutting."""

from __future__ import annotations

from dashrag.chunkers.base import Chunker
from dashrag.core.params import NoParams
from dashrag.core.registry import register


@register(kind="chunker", icon="FileText", category="chunking",
          en=("Whole document", "Keeps every document as one chunk."),
          es=("Documento completo", "Mantiene cada documento como un solo fragmento."),
          representation={"en": "whole documents", "es": "documentos completos"})
class WholeDocumentChunker(Chunker[NoParams]):
    def spans(self, text: str) -> list[tuple[int, int]]:
        return [(0, len(text))]
