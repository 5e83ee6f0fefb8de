"""Embedding components: texts → float32 vectors, one component per module.

``base`` fixes the contract (``embed_documents`` / ``embed_queries`` /
``dimension`` / ``cache_key``); ``cache`` stores a corpus's document vectors on
disk once per (chunk set, model, vector-changing params); ``model_source``
finds a model's files without touching the network.
"""
