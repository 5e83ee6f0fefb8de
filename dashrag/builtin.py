"""Imports every built-in component module so that each registers itself.

This is the only place that lists them; ``core/`` never imports a concrete
component. Heavy libraries (torch, litellm) are imported inside the components'
methods, so importing dashrag stays fast.
"""

import dashrag.chunkers.character  # noqa: F401
import dashrag.chunkers.recursive_character  # noqa: F401
import dashrag.chunkers.structure  # noqa: F401
import dashrag.chunkers.token  # noqa: F401
import dashrag.chunkers.whole_document  # noqa: F401
import dashrag.embeddings.e5_small  # noqa: F401
import dashrag.embeddings.minilm_onnx  # noqa: F401
import dashrag.embeddings.multilingual_minilm  # noqa: F401
import dashrag.embeddings.paraphrase_multilingual  # noqa: F401
import dashrag.embeddings.sentence_transformer  # noqa: F401
import dashrag.indexes.in_memory  # noqa: F401
import dashrag.indexes.keyword_in_memory  # noqa: F401
import dashrag.indexes.pg_keyword  # noqa: F401
import dashrag.indexes.pgvector  # noqa: F401
import dashrag.indexes.qdrant  # noqa: F401
import dashrag.indexes.qdrant_keyword  # noqa: F401
import dashrag.llm.credential  # noqa: F401
import dashrag.llm.litellm_model  # noqa: F401
import dashrag.llm.prompt  # noqa: F401
import dashrag.retrievers.agentic  # noqa: F401
import dashrag.retrievers.bm25  # noqa: F401
import dashrag.retrievers.boolean_query  # noqa: F401
import dashrag.retrievers.cohere_reranker  # noqa: F401
import dashrag.retrievers.cross_encoder  # noqa: F401
import dashrag.retrievers.dense  # noqa: F401
import dashrag.retrievers.http_reranker  # noqa: F401
import dashrag.retrievers.jina_reranker  # noqa: F401
import dashrag.retrievers.mmr  # noqa: F401
import dashrag.retrievers.parallel  # noqa: F401
import dashrag.retrievers.rerank_cascade  # noqa: F401
import dashrag.retrievers.sequential  # noqa: F401
import dashrag.retrievers.tfidf  # noqa: F401
import dashrag.vectorizers.bag_of_words  # noqa: F401
