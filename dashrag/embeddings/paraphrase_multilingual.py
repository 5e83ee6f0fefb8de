"""ParaphraseMultilingualMiniLML12V2Embedding: the reference's (DashAI's) name for the multilingual MiniLM.

DashAI's default dense retriever names its embedding by this class name, so a
DashAI config loads unchanged. It is :class:`MultilingualMiniLMEmbedding` under
that name: the same params, the same model, the same validation (the weights
must be on this machine: ``local_dir`` or the local Hugging Face cache).
"""

from __future__ import annotations

from dashrag.core.registry import register
from dashrag.embeddings.multilingual_minilm import MultilingualMiniLMEmbedding


@register(kind="embedding", icon="Languages", category="semantic",
          en=("Paraphrase multilingual MiniLM-L12-v2",
              "DashAI's name for paraphrase-multilingual-MiniLM-L12-v2 (50+ languages). Needs its weights here."),
          es=("Paraphrase multilingual MiniLM-L12-v2",
              "El nombre de DashAI para paraphrase-multilingual-MiniLM-L12-v2 (más de 50 idiomas). "
              "Necesita sus pesos."),
          representation={"en": "paraphrase-multilingual-MiniLM-L12-v2 on {device}",
                          "es": "paraphrase-multilingual-MiniLM-L12-v2 en {device}"})
class ParaphraseMultilingualMiniLML12V2Embedding(MultilingualMiniLMEmbedding):
    """Registered under the reference's class name."""
